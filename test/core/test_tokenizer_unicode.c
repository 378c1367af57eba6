/*
 * test_tokenizer_unicode.c
 *	  The text analysers over the whole of Unicode against scikit-learn:
 *	  test/fixtures/pipelines/unicode_docs.txt holds every character that
 *	  str.lower() or strip_accents changes or drops, every white-space
 *	  character and a sample of Hangul syllables; unicode_docs.expected holds,
 *	  per analyser and document, the number of non-zero columns of
 *	  scikit-learn's HashingVectorizer(n_features=2^18, norm=None,
 *	  alternate_sign=False) and a checksum of them (gen_pipelines.py).  TAP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "test_util.h"

#define DIR "test/fixtures/pipelines/"
#define NCOLS (1 << 18)

static const struct
{
	const char *mode;
	const char *fields;
}			modes[] = {
	{"wb_unicode", "\"analyzer\": \"char_wb\", \"ngram_range\": [1, 1], \"strip_accents\": \"unicode\""},
	{"char_ascii", "\"analyzer\": \"char\", \"ngram_range\": [1, 1], \"strip_accents\": \"ascii\", \"lowercase\": false"},
	{"word_unicode", "\"analyzer\": \"word\", \"strip_accents\": \"unicode\", \"token_pattern\": \"(?u)\\\\b\\\\w+\\\\b\""},
};

static HbModel *
hashing_model(const char *fields)
{
	size_t		cap = (size_t) NCOLS * 2 + 4096;
	char	   *js = malloc(cap);
	size_t		n;
	HbModel    *m = NULL;
	HbError		err = {0};

	n = (size_t) snprintf(js, cap,
						  "{\"format\": \"hbird-pipeline\", \"version\": 1, "
						  "\"inputs\": [{\"name\": \"t\", \"type\": \"text\"}], "
						  "\"steps\": [{\"op\": \"hashing_vectorizer\", \"name\": \"h\", \"input\": \"t\", "
						  "\"n_features\": %d, \"norm\": null, \"alternate_sign\": false, %s}], "
						  "\"features\": [\"h\"], \"model\": {\"kind\": \"linear\", \"coef\": [[",
						  NCOLS, fields);
	for (int j = 0; j < NCOLS; j++)
	{
		js[n++] = j ? ',' : '0';
		if (j)
			js[n++] = '0';
	}
	n += (size_t) snprintf(js + n, cap - n, "]]}}");
	if (!hb_model_read(js, n, HB_FORMAT_AUTO, &m, &err))
		tu_report(false, "reader: %s", err.msg);
	free(js);
	return m;
}

int
main(void)
{
	size_t		dlen,
				elen;
	char	   *docs = tu_read_file(DIR "unicode_docs.txt", &dlen);
	char	   *exp = tu_read_file(DIR "unicode_docs.expected", &elen);
	char	  **lines;
	int			n_docs = 0;
	double	   *x = malloc(sizeof(double) * NCOLS);

	if (docs == NULL || exp == NULL)
	{
		printf("1..0 # SKIP %sunicode_docs.* missing\n", DIR);
		return 0;
	}
	lines = malloc(sizeof(char *) * (dlen + 1));
	for (char *p = docs; p < docs + dlen;)
	{
		char	   *e = memchr(p, '\n', docs + dlen - p);

		if (e == NULL)
			e = docs + dlen;
		*e = '\0';
		lines[n_docs++] = p;
		p = e + 1;
	}

	for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++)
	{
		HbModel    *m = hashing_model(modes[k].fields);
		int			checked = 0,
					bad = 0;
		char	   *save = NULL;
		char	   *copy = strdup(exp);

		if (m == NULL)
			continue;
		for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		{
			char		mode[32];
			int			doc;
			long long	want_nnz;
			unsigned long long want_sum;
			long long	nnz = 0;
			unsigned long long sum = 0;
			HbText		t;
			HbRawRows	raw;
			double		num[1] = {0};
			HbError		err = {0};

			if (line[0] == '#' ||
				sscanf(line, "%31s %d %lld %llu", mode, &doc, &want_nnz, &want_sum) != 4 ||
				strcmp(mode, modes[k].mode) != 0)
				continue;
			if (doc < 0 || doc >= n_docs)
			{
				bad++;
				continue;
			}
			t.ptr = lines[doc];
			t.len = (int32_t) strlen(lines[doc]);
			raw.n = 1;
			raw.num = num;
			raw.text = &t;
			if (!hb_pipeline_run(m->pipeline, &raw, x, &err))
			{
				tu_report(false, "%s doc %d: %s", modes[k].mode, doc, err.msg);
				bad++;
				continue;
			}
			for (int j = 0; j < NCOLS; j++)
				if (x[j] != 0)
				{
					nnz++;
					sum += (unsigned long long) x[j] *
						(((unsigned long long) j * 2654435761ULL) % 4294967296ULL);
				}
			if (nnz != want_nnz || sum != want_sum)
			{
				if (bad < 3)
					fprintf(stderr, "  %s doc %d: %lld columns (checksum %llu), scikit-learn %lld (%llu)\n",
							modes[k].mode, doc, nnz, sum, want_nnz, want_sum);
				bad++;
			}
			checked++;
		}
		tu_report(checked > 0 && bad == 0,
				  "%s: %d documents (%d bytes of UTF-8) equal scikit-learn's HashingVectorizer",
				  modes[k].mode, checked, (int) dlen);
		free(copy);
		hb_model_free(m);
	}
	free(lines);
	free(docs);
	free(exp);
	free(x);
	printf("1..%d\n", tu_n_test);
	return tu_n_fail ? 1 : 0;
}
