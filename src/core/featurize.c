/*
 * featurize.c
 *	  Checking, running and freeing featurizer pipelines (featurize.h).
 *
 * The executor follows scikit-learn's arithmetic where it matters for exact
 * agreement: the order of scaling operations, NaN handling, dense versus
 * sparse zero-norm rules, and the text analysers (tokenizer, n-grams,
 * hashing) of sklearn.feature_extraction.text.
 */
#include "featurize.h"
#include "featurize_int.h"
#include "unicode_tables.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HB_MAX_SLOTS 16000000
#define HB_MAX_NGRAM 16
#define HB_MAX_POWER 32

static int32_t murmur3_32(const char *key, size_t len, uint32_t seed);

/*
 * Strings -> their index in a list, by hashing: a vocabulary's terms (a
 * tf-idf row looks up every token and n-gram, and a binary search over
 * 20,000 terms was most of a row's cost) and a pipeline's input names
 * (read_pipeline.c).  Open addressing, at most half full.
 */
#define NAME_INDEX_SEED 0x9747b28cu

typedef struct HbNameIndex
{
	uint32_t	mask;
	int32_t    *entry;			/* list index, -1 empty */
	uint32_t   *hash;
	int32_t    *len;			/* per string */
} HbNameIndex;

void
hb_name_index_free(HbNameIndex *v)
{
	if (v == NULL)
		return;
	hb_free(v->entry);
	hb_free(v->hash);
	hb_free(v->len);
	hb_free(v);
}

HbNameIndex *
hb_name_index_build(char *const *terms, int32_t n)
{
	HbNameIndex *v = hb_alloc0(sizeof(HbNameIndex));
	size_t		size = 16;

	if (v == NULL)
		return NULL;
	while (size < (size_t) n * 2)
		size *= 2;
	v->mask = (uint32_t) (size - 1);
	v->entry = hb_alloc(sizeof(int32_t) * size);
	v->hash = hb_alloc(sizeof(uint32_t) * size);
	v->len = hb_alloc(sizeof(int32_t) * (n > 0 ? n : 1));
	if (!v->entry || !v->hash || !v->len)
	{
		hb_name_index_free(v);
		return NULL;
	}
	for (size_t i = 0; i < size; i++)
		v->entry[i] = -1;
	for (int32_t i = 0; i < n; i++)
	{
		size_t		len = strlen(terms[i]);
		uint32_t	h = (uint32_t) murmur3_32(terms[i], len, NAME_INDEX_SEED);
		uint32_t	j = h & v->mask;

		while (v->entry[j] >= 0)
			j = (j + 1) & v->mask;
		v->entry[j] = i;
		v->hash[j] = h;
		v->len[i] = (int32_t) len;
	}
	return v;
}

int32_t
hb_name_index_find(const HbNameIndex *v, char *const *terms, const char *s,
				   size_t len)
{
	uint32_t	h = (uint32_t) murmur3_32(s, len, NAME_INDEX_SEED);

	for (uint32_t j = h & v->mask; v->entry[j] >= 0; j = (j + 1) & v->mask)
	{
		int32_t		i = v->entry[j];

		if (v->hash[j] == h && (size_t) v->len[i] == len &&
			memcmp(terms[i], s, len) == 0)
			return i;
	}
	return -1;
}

/* ---------------------------------------------------------------- freeing */

static void
free_strings(char **s, int32_t n)
{
	if (s == NULL)
		return;
	for (int32_t i = 0; i < n; i++)
		hb_free(s[i]);
	hb_free(s);
}

static void
free_step(HbStep *s)
{
	hb_free(s->name);
	hb_free(s->in);
	hb_free(s->sub);
	hb_free(s->mul);
	hb_free(s->add);
	hb_free(s->value);
	hb_free(s->constant);
	hb_free(s->powers);
	hb_free(s->edges);
	hb_free(s->categories_num);
	free_strings(s->categories_text, s->n_categories);
	hb_free(s->category_pos);
	hb_free(s->label_values);
	free_strings(s->tok.stop_words, s->tok.n_stop_words);
	free_strings(s->vocab_terms, s->n_vocab);
	hb_free(s->vocab_cols);
	hb_name_index_free(s->vocab_index);
	hb_free(s->idf);
	hb_free(s->used_cols);
}

void
hb_pipeline_free(HbPipeline *p)
{
	if (p == NULL)
		return;
	if (p->inputs)
	{
		for (int32_t i = 0; i < p->n_inputs; i++)
			hb_free(p->inputs[i].name);
		hb_free(p->inputs);
	}
	if (p->steps)
	{
		for (int32_t i = 0; i < p->n_steps; i++)
			free_step(&p->steps[i]);
		hb_free(p->steps);
	}
	hb_free(p->feature_slot);
	hb_free(p);
}

size_t
hb_pipeline_row_slots(const HbPipeline *p)
{
	return p->n_slots > 0 ? (size_t) p->n_slots : 1;
}

/* ---------------------------------------------------------------- naming */

static const char *
step_kind_name(HbStepKind k)
{
	static const char *const names[] = {
		"affine", "impute", "missing_indicator", "binarize", "cast_f32",
		"arith", "clip", "normalize", "poly", "kbins", "onehot_num",
		"onehot_text", "label_text", "hashing", "tfidf", "label_num",
		"missing_below"
	};

	return (unsigned) k <= HB_STEP_KIND_MAX ? names[k] : "unknown";
}

/* The input a step reads, for messages. */
static const char *
step_input_name(const HbPipeline *p, const HbStep *s, char *buf, size_t len)
{
	bool		text = hb_step_reads_text(s);

	if (s->name)
		return s->name;
	for (int32_t i = 0; i < p->n_inputs; i++)
	{
		const HbInput *in = &p->inputs[i];

		if (text && in->type == HB_INPUT_TEXT && in->index == s->text_input)
			return in->name;
		if (!text && in->type == HB_INPUT_NUMERIC && s->n_in > 0 &&
			in->index == s->in[0])
			return in->name;
	}
	snprintf(buf, len, "slot %d", s->n_in > 0 ? s->in[0] : -1);
	return buf;
}

/* -------------------------------------------------------------- validation */

typedef struct CatSort
{
	double		num;
	const char *text;
	int32_t		pos;
	double		label;
	int32_t		orig;
} CatSort;

/* NULL (the missing category) first, then bytewise = code point order */
static int
cmp_text_nullable(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

static int
cmp_cat_text(const void *a, const void *b)
{
	return cmp_text_nullable(((const CatSort *) a)->text, ((const CatSort *) b)->text);
}

/* NaN (the missing category) last */
static int
cmp_cat_num(const void *a, const void *b)
{
	double		x = ((const CatSort *) a)->num;
	double		y = ((const CatSort *) b)->num;

	if (isnan(x) || isnan(y))
		return isnan(x) - isnan(y);
	return (x > y) - (x < y);
}

static int
cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * Sort a step's category table for binary search, carrying positions and
 * label values along, and turn drop_first into a dropped position.
 */
static bool
sort_categories(const HbPipeline *p, HbStep *s, bool text, HbError *err)
{
	int32_t		n = s->n_categories;
	CatSort    *cs;
	char		nbuf[32];

	if (n < 0 || n > HB_MAX_SLOTS)
		return hb_fail(err, HB_ERR_INVALID, "step %s has %d categories",
					   step_kind_name(s->kind), n);
	if (n == 0)
		return true;
	if (text ? s->categories_text == NULL : s->categories_num == NULL)
		return hb_fail(err, HB_ERR_INVALID, "step %s has no category table",
					   step_kind_name(s->kind));
	if (s->category_pos == NULL)
	{
		s->category_pos = hb_alloc(sizeof(int32_t) * n);
		if (s->category_pos == NULL)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		for (int32_t i = 0; i < n; i++)
			s->category_pos[i] = i;
	}
	if (s->drop_first)
	{
		int32_t		first = 0;

		for (int32_t i = 0; i < n; i++)
			if (s->category_pos[i] == 0)
				first = i;
		for (int32_t i = 0; i < n; i++)
			s->category_pos[i] = i == first ? -1 : s->category_pos[i] - (s->category_pos[i] > 0);
		s->drop_first = false;
	}
	cs = hb_alloc(sizeof(CatSort) * n);
	if (cs == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	for (int32_t i = 0; i < n; i++)
	{
		cs[i].num = text ? 0 : s->categories_num[i];
		cs[i].text = text ? s->categories_text[i] : NULL;
		cs[i].pos = s->category_pos[i];
		cs[i].label = s->label_values ? s->label_values[i] : 0;
		cs[i].orig = i;
	}
	qsort(cs, n, sizeof(CatSort), text ? cmp_cat_text : cmp_cat_num);
	for (int32_t i = 0; i < n; i++)
	{
		if (text)
			s->categories_text[i] = (char *) cs[i].text;
		else
			s->categories_num[i] = cs[i].num;
		s->category_pos[i] = cs[i].pos;
		if (s->label_values)
			s->label_values[i] = cs[i].label;
	}
	/* only once every entry is written back: the table owns its strings */
	for (int32_t i = 0; i < n; i++)
	{
		if (i > 0 && (text ? cmp_cat_text(&cs[i - 1], &cs[i]) == 0 :
					  cmp_cat_num(&cs[i - 1], &cs[i]) == 0))
		{
			hb_free(cs);
			return hb_fail(err, HB_ERR_INVALID,
						   "step %s over \"%s\" lists a category twice",
						   step_kind_name(s->kind),
						   step_input_name(p, s, nbuf, sizeof(nbuf)));
		}
		if (!text && isinf(cs[i].num))
		{
			hb_free(cs);
			return hb_fail(err, HB_ERR_INVALID, "step %s has an infinite category",
						   step_kind_name(s->kind));
		}
	}
	hb_free(cs);
	for (int32_t i = 0; i < n; i++)
		if (s->category_pos[i] < -1 ||
			(s->onehot && s->category_pos[i] >= s->n_out) ||
			(!s->onehot && s->category_pos[i] >= n))
			return hb_fail(err, HB_ERR_INVALID,
						   "step %s has a category position out of range",
						   step_kind_name(s->kind));
	return true;
}

static bool
all_finite(const double *v, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		if (!isfinite(v[i]))
			return false;
	return true;
}

static bool
validate_step(const HbPipeline *p, HbStep *s, int32_t k, int32_t next,
			  HbError *err)
{
	const char *kn = step_kind_name(s->kind);
	bool		text_step = false;
	int32_t		want_in = -1;	/* -1: any */
	int32_t		want_out = -1;

	if ((unsigned) s->kind > HB_STEP_KIND_MAX)
		return hb_fail(err, HB_ERR_INVALID, "step %d has an unknown kind", k);
	if (s->out != next)
		return hb_fail(err, HB_ERR_INVALID,
					   "step %d (%s) writes slot %d, but the next free slot is %d",
					   k, kn, s->out, next);
	if (s->n_in < 0 || s->n_out < 0 || s->n_in > HB_MAX_SLOTS ||
		s->n_out > HB_MAX_SLOTS - next)
		return hb_fail(err, HB_ERR_LIMIT, "step %d (%s) has too many slots",
					   k, kn);
	if (s->n_in > 0 && s->in == NULL)
		return hb_fail(err, HB_ERR_INVALID, "step %d (%s) has no input list",
					   k, kn);
	for (int32_t i = 0; i < s->n_in; i++)
		if (s->in[i] < 0 || s->in[i] >= next)
			return hb_fail(err, HB_ERR_INVALID,
						   "step %d (%s) reads slot %d, which is not written before it",
						   k, kn, s->in[i]);

	switch (s->kind)
	{
		case HB_STEP_AFFINE:
		case HB_STEP_IMPUTE:
		case HB_STEP_MISSING_IND:
		case HB_STEP_BINARIZE:
		case HB_STEP_CAST_F32:
		case HB_STEP_ARITH:
		case HB_STEP_CLIP:
		case HB_STEP_MISSING_BELOW:
		case HB_STEP_NORMALIZE:
			want_out = s->n_in;
			break;
		case HB_STEP_POLY:
			break;
		case HB_STEP_KBINS:
		case HB_STEP_ONEHOT_NUM:
		case HB_STEP_LABEL_NUM:
			want_in = 1;
			break;
		case HB_STEP_ONEHOT_TEXT:
		case HB_STEP_LABEL_TEXT:
		case HB_STEP_HASHING:
		case HB_STEP_TFIDF:
			text_step = true;
			break;
	}
	if (want_in >= 0 && s->n_in != want_in)
		return hb_fail(err, HB_ERR_INVALID, "step %d (%s) takes %d input, not %d",
					   k, kn, want_in, s->n_in);
	if (want_out >= 0 && s->n_out != want_out)
		return hb_fail(err, HB_ERR_INVALID,
					   "step %d (%s) has %d inputs but %d outputs",
					   k, kn, s->n_in, s->n_out);
	if (text_step && (s->text_input < 0 || s->text_input >= p->n_text_inputs))
		return hb_fail(err, HB_ERR_INVALID,
					   "step %d (%s) reads text input %d, but there are %d",
					   k, kn, s->text_input, p->n_text_inputs);

	switch (s->kind)
	{
		case HB_STEP_AFFINE:
			if ((unsigned) s->order > HB_AFFINE_MUL_ADD)
				return hb_fail(err, HB_ERR_INVALID, "step %d (affine) has an unknown order", k);
			if ((s->sub && !all_finite(s->sub, s->n_in)) ||
				(s->mul && !all_finite(s->mul, s->n_in)) ||
				(s->add && !all_finite(s->add, s->n_in)))
				return hb_fail(err, HB_ERR_INVALID,
							   "step %d (affine) has a non-finite parameter", k);
			if (s->order == HB_AFFINE_SUB_DIV && s->mul)
				for (int32_t i = 0; i < s->n_in; i++)
					if (s->mul[i] == 0)
						return hb_fail(err, HB_ERR_INVALID,
									   "step %d (affine) divides by zero", k);
			break;
		case HB_STEP_IMPUTE:
			if (s->n_in > 0 && s->value == NULL)
				return hb_fail(err, HB_ERR_INVALID, "step %d (impute) has no values", k);
			if (s->value)
				for (int32_t i = 0; i < s->n_in; i++)
					if (isinf(s->value[i]))
						return hb_fail(err, HB_ERR_INVALID,
									   "step %d (impute) has an infinite value", k);
			break;
		case HB_STEP_BINARIZE:
		case HB_STEP_MISSING_BELOW:
			if (isnan(s->threshold))
				return hb_fail(err, HB_ERR_INVALID, "step %d (%s) has a NaN threshold", k, kn);
			break;
		case HB_STEP_ARITH:
			if ((unsigned) s->arith > HB_ARITH_TRUNC)
				return hb_fail(err, HB_ERR_INVALID, "step %d (arith) has an unknown operator", k);
			if (s->arith <= HB_ARITH_POW && s->n_in > 0 &&
				(s->constant == NULL || !all_finite(s->constant, s->n_in)))
				return hb_fail(err, HB_ERR_INVALID,
							   "step %d (arith) has a missing or non-finite constant", k);
			break;
		case HB_STEP_CLIP:
			if (isnan(s->lo) || isnan(s->hi) || s->lo > s->hi)
				return hb_fail(err, HB_ERR_INVALID, "step %d (clip) has bad bounds", k);
			break;
		case HB_STEP_NORMALIZE:
			if (s->norm < HB_NORM_L1 || s->norm > HB_NORM_MAX)
				return hb_fail(err, HB_ERR_INVALID, "step %d (normalize) has no norm", k);
			break;
		case HB_STEP_POLY:
			if (s->n_out > 0 && s->powers == NULL)
				return hb_fail(err, HB_ERR_INVALID, "step %d (poly) has no powers", k);
			if ((int64_t) s->n_out * s->n_in > HB_MAX_SLOTS)
				return hb_fail(err, HB_ERR_LIMIT, "step %d (poly) is too large", k);
			for (int64_t i = 0; i < (int64_t) s->n_out * s->n_in; i++)
				if (s->powers[i] < 0 || s->powers[i] > HB_MAX_POWER)
					return hb_fail(err, HB_ERR_INVALID,
								   "step %d (poly) has a power out of range", k);
			break;
		case HB_STEP_KBINS:
			if (s->n_edges < 0 || s->n_edges > HB_MAX_SLOTS ||
				(s->n_edges > 0 && s->edges == NULL))
				return hb_fail(err, HB_ERR_INVALID, "step %d (kbins) has no edges", k);
			if (!all_finite(s->edges, s->n_edges))
				return hb_fail(err, HB_ERR_INVALID, "step %d (kbins) has a non-finite edge", k);
			for (int32_t i = 1; i < s->n_edges; i++)
				if (s->edges[i] < s->edges[i - 1])
					return hb_fail(err, HB_ERR_INVALID,
								   "step %d (kbins) has edges out of order", k);
			if (s->n_out != (s->onehot ? s->n_edges + 1 : 1))
				return hb_fail(err, HB_ERR_INVALID,
							   "step %d (kbins) has %d edges but %d outputs",
							   k, s->n_edges, s->n_out);
			break;
		case HB_STEP_ONEHOT_NUM:
		case HB_STEP_ONEHOT_TEXT:
		case HB_STEP_LABEL_NUM:
		case HB_STEP_LABEL_TEXT:
			{
				bool		label = s->kind == HB_STEP_LABEL_NUM ||
					s->kind == HB_STEP_LABEL_TEXT;

				if (label)
				{
					s->onehot = false;
					if (s->n_categories > 0 && s->label_values == NULL)
						return hb_fail(err, HB_ERR_INVALID,
									   "step %d (%s) has no label values", k, kn);
				}
				if ((unsigned) s->unknown > HB_UNKNOWN_VALUE)
					return hb_fail(err, HB_ERR_INVALID,
								   "step %d (%s) has an unknown unknown-category rule", k, kn);
				if (!s->onehot && s->n_out != 1)
					return hb_fail(err, HB_ERR_INVALID,
								   "step %d (%s) is ordinal but has %d outputs", k, kn, s->n_out);
				if (!sort_categories(p, s, s->kind == HB_STEP_ONEHOT_TEXT ||
									 s->kind == HB_STEP_LABEL_TEXT, err))
					return false;
				if (s->label_values)
					for (int32_t i = 0; i < s->n_categories; i++)
						if (isinf(s->label_values[i]))
							return hb_fail(err, HB_ERR_INVALID,
										   "step %d (%s) has an infinite label value", k, kn);
				break;
			}
		case HB_STEP_HASHING:
		case HB_STEP_TFIDF:
			{
				HbTokenizer *t = &s->tok;

				if (t->ngram_min < 1 || t->ngram_max < t->ngram_min ||
					t->ngram_max > HB_MAX_NGRAM || t->min_token_len < 1 ||
					t->strip_accents > HB_STRIP_ASCII || (t->char_wb && !t->char_ngrams) ||
					t->n_stop_words < 0 || (t->n_stop_words > 0 && t->stop_words == NULL))
					return hb_fail(err, HB_ERR_INVALID,
								   "step %d (%s) has a bad tokenizer", k, kn);
				for (int32_t i = 0; i < t->n_stop_words; i++)
					if (t->stop_words[i] == NULL)
						return hb_fail(err, HB_ERR_INVALID,
									   "step %d (%s) has a NULL stop word", k, kn);
				if (t->n_stop_words > 1)
					qsort(t->stop_words, t->n_stop_words, sizeof(char *), cmp_str_ptr);
				if (s->n_cols < 1 || s->n_cols > INT32_MAX)
					return hb_fail(err, HB_ERR_INVALID,
								   "step %d (%s) has %lld columns", k, kn,
								   (long long) s->n_cols);
				if ((unsigned) s->norm > HB_NORM_MAX)
					return hb_fail(err, HB_ERR_INVALID, "step %d (%s) has an unknown norm", k, kn);
				if (s->n_used != s->n_out || (s->n_used > 0 && s->used_cols == NULL))
					return hb_fail(err, HB_ERR_INVALID,
								   "step %d (%s) keeps %d columns but has %d outputs",
								   k, kn, s->n_used, s->n_out);
				for (int32_t i = 0; i < s->n_used; i++)
					if (s->used_cols[i] < 0 || s->used_cols[i] >= s->n_cols ||
						(i > 0 && s->used_cols[i] <= s->used_cols[i - 1]))
						return hb_fail(err, HB_ERR_INVALID,
									   "step %d (%s) has kept columns out of range or order",
									   k, kn);
				if (s->kind == HB_STEP_TFIDF)
				{
					CatSort    *cs;

					if (s->n_vocab < 0 || s->n_vocab > HB_MAX_SLOTS ||
						(s->n_vocab > 0 && (s->vocab_terms == NULL || s->vocab_cols == NULL)))
						return hb_fail(err, HB_ERR_INVALID,
									   "step %d (tfidf) has no vocabulary", k);
					if (s->idf && !all_finite(s->idf, s->n_cols))
						return hb_fail(err, HB_ERR_INVALID,
									   "step %d (tfidf) has a non-finite idf", k);
					cs = hb_alloc(sizeof(CatSort) * (s->n_vocab > 0 ? s->n_vocab : 1));
					if (cs == NULL)
						return hb_fail(err, HB_ERR_NOMEM, "out of memory");
					for (int32_t i = 0; i < s->n_vocab; i++)
					{
						cs[i].text = s->vocab_terms[i];
						cs[i].pos = s->vocab_cols[i];
						if (cs[i].text == NULL || cs[i].pos < 0 || cs[i].pos >= s->n_cols)
						{
							hb_free(cs);
							return hb_fail(err, HB_ERR_INVALID,
										   "step %d (tfidf): vocabulary entry %d is bad", k, i);
						}
					}
					qsort(cs, s->n_vocab, sizeof(CatSort), cmp_cat_text);
					for (int32_t i = 0; i < s->n_vocab; i++)
					{
						s->vocab_terms[i] = (char *) cs[i].text;
						s->vocab_cols[i] = cs[i].pos;
					}
					for (int32_t i = 0; i < s->n_vocab; i++)
					{
						if (i > 0 && strcmp(cs[i - 1].text, cs[i].text) == 0)
						{
							hb_fail(err, HB_ERR_INVALID,
									"step %d (tfidf): term \"%.100s\" appears twice", k,
									cs[i].text);
							hb_free(cs);
							return false;
						}
					}
					hb_free(cs);
					hb_name_index_free(s->vocab_index);
					s->vocab_index = hb_name_index_build(s->vocab_terms, s->n_vocab);
					if (s->vocab_index == NULL)
						return hb_fail(err, HB_ERR_NOMEM, "out of memory");
				}
				break;
			}
		default:
			break;
	}
	return true;
}

bool
hb_pipeline_validate(HbPipeline *p, int32_t model_n_features, HbError *err)
{
	int32_t		n_num = 0,
				n_text = 0,
				next;
	uint8_t    *seen;

	if (p == NULL)
		return true;
	if (p->n_inputs < 0 || p->n_inputs > HB_MAX_SLOTS || p->n_steps < 0 ||
		p->n_steps > HB_MAX_SLOTS)
		return hb_fail(err, HB_ERR_INVALID, "pipeline has %d inputs and %d steps",
					   p->n_inputs, p->n_steps);
	if ((p->n_inputs > 0 && p->inputs == NULL) || (p->n_steps > 0 && p->steps == NULL))
		return hb_fail(err, HB_ERR_INVALID, "pipeline has no input or step list");
	for (int32_t i = 0; i < p->n_inputs; i++)
	{
		HbInput    *in = &p->inputs[i];

		if (in->name == NULL || in->name[0] == '\0')
			return hb_fail(err, HB_ERR_INVALID, "pipeline input %d has no name", i);
		if ((unsigned) in->type > HB_INPUT_TEXT || (unsigned) in->cost > HB_COST_EXPENSIVE)
			return hb_fail(err, HB_ERR_INVALID,
						   "pipeline input \"%s\" has an unknown type or cost", in->name);
		if (in->type == HB_INPUT_NUMERIC)
			n_num++;
		else
			n_text++;
	}
	if (p->n_inputs > 1)
	{
		const char **names = hb_alloc(sizeof(char *) * p->n_inputs);
		const char *twice;

		if (names == NULL)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		for (int32_t i = 0; i < p->n_inputs; i++)
			names[i] = p->inputs[i].name;
		twice = hb_sort_find_repeat(names, p->n_inputs);
		if (twice != NULL)
			hb_fail(err, HB_ERR_INVALID, "pipeline input \"%s\" appears twice", twice);
		hb_free(names);
		if (twice != NULL)
			return false;
	}
	if (n_num != p->n_num_inputs || n_text != p->n_text_inputs)
		return hb_fail(err, HB_ERR_INVALID,
					   "pipeline counts %d numeric and %d text inputs, but lists %d and %d",
					   p->n_num_inputs, p->n_text_inputs, n_num, n_text);
	seen = hb_alloc0(p->n_inputs + 1);
	if (seen == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	for (int32_t i = 0; i < p->n_inputs; i++)
	{
		HbInput    *in = &p->inputs[i];
		int32_t		lim = in->type == HB_INPUT_NUMERIC ? n_num : n_text;
		int32_t		at = (in->type == HB_INPUT_NUMERIC ? 0 : n_num) + in->index;

		if (in->index < 0 || in->index >= lim || seen[at])
		{
			hb_free(seen);
			return hb_fail(err, HB_ERR_INVALID,
						   "pipeline input \"%s\" has a bad index %d", in->name, in->index);
		}
		seen[at] = 1;
	}
	hb_free(seen);

	next = p->n_num_inputs;
	for (int32_t k = 0; k < p->n_steps; k++)
	{
		if (!validate_step(p, &p->steps[k], k, next, err))
			return false;
		next += p->steps[k].n_out;
	}
	if (p->n_slots != next)
	{
		if (p->n_slots != 0)
			return hb_fail(err, HB_ERR_INVALID,
						   "pipeline declares %d slots but its steps make %d",
						   p->n_slots, next);
		p->n_slots = next;
	}
	if (p->n_features <= 0 || p->feature_slot == NULL)
		return hb_fail(err, HB_ERR_INVALID, "pipeline selects no features");
	if (model_n_features >= 0 && p->n_features != model_n_features)
		return hb_fail(err, HB_ERR_INVALID,
					   "pipeline gives %d features but the model takes %d",
					   p->n_features, model_n_features);
	for (int32_t j = 0; j < p->n_features; j++)
		if (p->feature_slot[j] < 0 || p->feature_slot[j] >= p->n_slots)
			return hb_fail(err, HB_ERR_INVALID,
						   "pipeline feature %d refers to slot %d, but there are %d",
						   j, p->feature_slot[j], p->n_slots);
	return true;
}

/* ------------------------------------------------------------- text tools */

static bool
in_ranges(const HbCpRange *r, int n, uint32_t c)
{
	int			lo = 0,
				hi = n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (c < r[mid].lo)
			hi = mid - 1;
		else if (c > r[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

static inline bool
is_word_cp(uint32_t c)
{
	if (c < 128)
		return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			(c >= 'A' && c <= 'Z') || c == '_';
	return in_ranges(hb_uc_word, hb_uc_word_n, c);
}

static inline bool
is_space_cp(uint32_t c)
{
	return in_ranges(hb_uc_space, hb_uc_space_n, c);
}

/* Growable scratch of one run. */
typedef struct HbTextScratch
{
	uint32_t   *cps;			/* decoded text */
	size_t		cps_cap;
	uint32_t   *low;			/* lower-cased / space-collapsed */
	size_t		low_cap;
	char	   *utf8;			/* low re-encoded */
	size_t		utf8_cap;
	size_t	   *off;			/* byte offset of low[i] in utf8, n + 1 */
	size_t		off_cap;
	int32_t    *tok;			/* token start/end (code point index) pairs */
	size_t		tok_cap;
	char	   *gram;			/* one joined word n-gram */
	size_t		gram_cap;
	int64_t    *cols;			/* touched columns */
	double	   *vals;
	size_t		cols_cap;
	size_t		vals_cap;
	size_t		n_cols;
	HbTextTerm *terms;			/* merged, weighted, normalised */
	size_t		terms_cap;
} TextScratch;

static void
scratch_free(TextScratch *t)
{
	hb_free(t->cps);
	hb_free(t->low);
	hb_free(t->utf8);
	hb_free(t->off);
	hb_free(t->tok);
	hb_free(t->gram);
	hb_free(t->cols);
	hb_free(t->vals);
	hb_free(t->terms);
}

HbTextScratch *
hb_text_scratch_new(void)
{
	return hb_alloc0(sizeof(HbTextScratch));
}

void
hb_text_scratch_free(HbTextScratch *t)
{
	if (t == NULL)
		return;
	scratch_free(t);
	hb_free(t);
}

#define GROW(arr, cap, need) \
	do { \
		void	   *g_ = hb_grow((arr), &(cap), (need), sizeof(*(arr))); \
		if (g_ == NULL) \
			return false; \
		(arr) = g_; \
	} while (0)

/* UTF-8 to code points; a malformed sequence's first byte becomes U+FFFD. */
static bool
decode_utf8(TextScratch *t, const char *s, int32_t len, size_t *n_out)
{
	const unsigned char *u = (const unsigned char *) s;
	size_t		n = 0;
	int32_t		i = 0;

	GROW(t->cps, t->cps_cap, (size_t) len + 1);
	while (i < len)
	{
		uint32_t	c = u[i];
		int			extra;
		bool		bad = false;

		if (c < 0x80)
		{
			t->cps[n++] = c;
			i++;
			continue;
		}
		extra = c < 0xC2 ? -1 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : c < 0xF5 ? 3 : -1;
		bad = extra < 0 || i + extra >= len;
		if (!bad)
		{
			c &= 0x3F >> extra;
			for (int k = 1; k <= extra; k++)
			{
				if ((u[i + k] & 0xC0) != 0x80)
				{
					bad = true;
					break;
				}
				c = (c << 6) | (u[i + k] & 0x3F);
			}
		}
		if (!bad && ((extra == 2 && c < 0x800) ||
					 (extra == 3 && (c < 0x10000 || c > 0x10FFFF)) ||
					 (c >= 0xD800 && c <= 0xDFFF)))
			bad = true;
		if (bad)
		{
			t->cps[n++] = 0xFFFD;
			i++;
			continue;
		}
		t->cps[n++] = c;
		i += extra + 1;
	}
	*n_out = n;
	return true;
}

static size_t
encode_cp(uint32_t c, char *o)
{
	if (c < 0x80)
	{
		o[0] = (char) c;
		return 1;
	}
	if (c < 0x800)
	{
		o[0] = (char) (0xC0 | (c >> 6));
		o[1] = (char) (0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000)
	{
		o[0] = (char) (0xE0 | (c >> 12));
		o[1] = (char) (0x80 | ((c >> 6) & 0x3F));
		o[2] = (char) (0x80 | (c & 0x3F));
		return 3;
	}
	o[0] = (char) (0xF0 | (c >> 18));
	o[1] = (char) (0x80 | ((c >> 12) & 0x3F));
	o[2] = (char) (0x80 | ((c >> 6) & 0x3F));
	o[3] = (char) (0x80 | (c & 0x3F));
	return 4;
}

static const HbCpLower *
lower_entry(uint32_t c)
{
	int			lo = 0,
				hi = hb_uc_lower_n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (c < hb_uc_lower[mid].cp)
			hi = mid - 1;
		else if (c > hb_uc_lower[mid].cp)
			lo = mid + 1;
		else
			return &hb_uc_lower[mid];
	}
	return NULL;
}

/* Python's Final_Sigma rule for U+03A3 at position i of cps[0..n). */
static uint32_t
lower_sigma(const uint32_t *cps, size_t n, size_t i)
{
	size_t		j;
	bool		final;

	for (j = i; j > 0; j--)
		if (!in_ranges(hb_uc_case_ignorable, hb_uc_case_ignorable_n, cps[j - 1]))
			break;
	final = j > 0 && in_ranges(hb_uc_cased, hb_uc_cased_n, cps[j - 1]);
	if (final && i + 1 < n)
	{
		for (j = i + 1; j < n; j++)
			if (!in_ranges(hb_uc_case_ignorable, hb_uc_case_ignorable_n, cps[j]))
				break;
		final = j == n || !in_ranges(hb_uc_cased, hb_uc_cased_n, cps[j]);
	}
	return final ? 0x3C2 : 0x3C3;
}

static const HbCpStrip *
strip_entry(uint32_t c)
{
	int			lo = 0,
				hi = hb_uc_strip_n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (c < hb_uc_strip[mid].cp)
			hi = mid - 1;
		else if (c > hb_uc_strip[mid].cp)
			lo = mid + 1;
		else
			return &hb_uc_strip[mid];
	}
	return NULL;
}

/* longest NFKD of one character (U+FDFA) */
#define STRIP_MAX_LEN 18

/*
 * sklearn's strip_accents over t->low[0..*m): 'unicode' is NFKD without the
 * combining characters, 'ascii' NFKD without anything non-ASCII.  NFKD's
 * canonical reordering moves only combining characters, which both drop,
 * so character-by-character decomposition gives the same string.
 */
static bool
strip_accents(TextScratch *t, HbStripAccents mode, size_t *m_io)
{
	size_t		m = *m_io,
				w = 0;
	bool		uni = mode == HB_STRIP_UNICODE;

	GROW(t->cps, t->cps_cap, m * STRIP_MAX_LEN + 1);
	for (size_t i = 0; i < m; i++)
	{
		uint32_t	c = t->low[i];
		const HbCpStrip *e;

		if (c < 128)
			t->cps[w++] = c;
		else if (c >= 0xAC00 && c <= 0xD7A3)
		{
			/* Hangul syllable: leading, vowel and trailing jamo */
			uint32_t	sidx = c - 0xAC00;

			if (!uni)
				continue;
			t->cps[w++] = 0x1100 + sidx / 588;
			t->cps[w++] = 0x1161 + (sidx % 588) / 28;
			if (sidx % 28 != 0)
				t->cps[w++] = 0x11A7 + sidx % 28;
		}
		else if (in_ranges(hb_uc_strip_empty, hb_uc_strip_empty_n, c))
			continue;
		else if ((e = strip_entry(c)) != NULL)
		{
			for (int k = 0; k < e->len; k++)
			{
				uint32_t	d = hb_uc_strip_pool[e->off + k];

				if (uni || d < 128)
					t->cps[w++] = d;
			}
		}
		else if (uni)
			t->cps[w++] = c;
	}
	{
		uint32_t   *tmp = t->low;
		size_t		cap = t->low_cap;

		t->low = t->cps;
		t->low_cap = t->cps_cap;
		t->cps = tmp;
		t->cps_cap = cap;
	}
	*m_io = w;
	return true;
}

/* What sklearn's preprocessor and analyser see: t->low[0..*n) */
static bool
prepare_text(TextScratch *t, const HbTokenizer *tok, const HbText *txt,
			 size_t *n_out)
{
	size_t		n,
				m = 0;

	if (!decode_utf8(t, txt->ptr, txt->len, &n))
		return false;
	GROW(t->low, t->low_cap, n * 3 + 1);
	for (size_t i = 0; i < n; i++)
	{
		uint32_t	c = t->cps[i];

		if (!tok->lowercase)
			t->low[m++] = c;
		else if (c < 128)
			t->low[m++] = (c >= 'A' && c <= 'Z') ? c + 32 : c;
		else if (c == 0x3A3)
			t->low[m++] = lower_sigma(t->cps, n, i);
		else
		{
			const HbCpLower *e = lower_entry(c);

			if (e == NULL)
				t->low[m++] = c;
			else
				for (int k = 0; k < 3 && e->to[k] != 0; k++)
					t->low[m++] = e->to[k];
		}
	}
	if (tok->strip_accents != HB_STRIP_NONE &&
		!strip_accents(t, (HbStripAccents) tok->strip_accents, &m))
		return false;
	if (tok->char_ngrams)
	{
		/* re.sub(r"\s\s+", " ", text): runs of two or more become one space */
		size_t		w = 0;

		for (size_t i = 0; i < m;)
		{
			if (is_space_cp(t->low[i]) && i + 1 < m && is_space_cp(t->low[i + 1]))
			{
				while (i < m && is_space_cp(t->low[i]))
					i++;
				t->low[w++] = ' ';
			}
			else
				t->low[w++] = t->low[i++];
		}
		m = w;
	}
	GROW(t->utf8, t->utf8_cap, m * 4 + 1);
	GROW(t->off, t->off_cap, m + 1);
	{
		size_t		b = 0;

		for (size_t i = 0; i < m; i++)
		{
			t->off[i] = b;
			b += encode_cp(t->low[i], t->utf8 + b);
		}
		t->off[m] = b;
	}
	*n_out = m;
	return true;
}

/* MurmurHash3_x86_32, as scikit-learn's murmurhash3_32 (signed result) */
static int32_t
murmur3_32(const char *key, size_t len, uint32_t seed)
{
	const uint8_t *data = (const uint8_t *) key;
	const size_t nblocks = len / 4;
	uint32_t	h1 = seed;
	const uint32_t c1 = 0xcc9e2d51;
	const uint32_t c2 = 0x1b873593;
	uint32_t	k1;

	for (size_t i = 0; i < nblocks; i++)
	{
		memcpy(&k1, data + i * 4, 4);
		k1 *= c1;
		k1 = (k1 << 15) | (k1 >> 17);
		k1 *= c2;
		h1 ^= k1;
		h1 = (h1 << 13) | (h1 >> 19);
		h1 = h1 * 5 + 0xe6546b64;
	}
	{
		const uint8_t *tail = data + nblocks * 4;

		k1 = 0;
		switch (len & 3)
		{
			case 3:
				k1 ^= (uint32_t) tail[2] << 16;
				/* FALLTHROUGH */
			case 2:
				k1 ^= (uint32_t) tail[1] << 8;
				/* FALLTHROUGH */
			case 1:
				k1 ^= tail[0];
				k1 *= c1;
				k1 = (k1 << 15) | (k1 >> 17);
				k1 *= c2;
				h1 ^= k1;
		}
	}
	h1 ^= (uint32_t) len;
	h1 ^= h1 >> 16;
	h1 *= 0x85ebca6b;
	h1 ^= h1 >> 13;
	h1 *= 0xc2b2ae35;
	h1 ^= h1 >> 16;
	return (int32_t) h1;
}

/* bytes vs NUL-terminated string, in strcmp order */
static int
cmp_bytes_str(const char *a, size_t alen, const char *b)
{
	size_t		blen = strlen(b);
	int			c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

static int32_t
find_term(char *const *terms, int32_t n, const char *s, size_t len)
{
	int32_t		lo = 0,
				hi = n - 1;

	while (lo <= hi)
	{
		int32_t		mid = lo + (hi - lo) / 2;
		int			c = cmp_bytes_str(s, len, terms[mid]);

		if (c == 0)
			return mid;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

/* One token or n-gram of a row: its column and value, if any. */
static bool
emit_term(TextScratch *t, const HbStep *s, const char *g, size_t len)
{
	int64_t		col;
	double		v = 1.0;

	if (s->kind == HB_STEP_HASHING)
	{
		int32_t		h = murmur3_32(g, len, 0);

		if (h == INT32_MIN)
			col = (2147483647LL - (s->n_cols - 1)) % s->n_cols;
		else
			col = (h < 0 ? -(int64_t) h : h) % s->n_cols;
		if (s->alternate_sign && h < 0)
			v = -1.0;
	}
	else
	{
		int32_t		i = s->vocab_index ?
			hb_name_index_find(s->vocab_index, s->vocab_terms, g, len) :
			find_term(s->vocab_terms, s->n_vocab, g, len);

		if (i < 0)
			return true;
		col = s->vocab_cols[i];
	}
	GROW(t->cols, t->cols_cap, t->n_cols + 1);
	GROW(t->vals, t->vals_cap, t->n_cols + 1);
	t->cols[t->n_cols] = col;
	t->vals[t->n_cols] = v;
	t->n_cols++;
	return true;
}

static int
cmp_int64(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a;
	int64_t		y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

static int
cmp_colval(const void *a, const void *b)
{
	return cmp_int64(&((const HbTextTerm *) a)->col, &((const HbTextTerm *) b)->col);
}

/*
 * analyzer='char_wb': each maximal run of non-space characters, padded with
 * one space on both sides, gives its character n-grams; a padded word no
 * longer than n gives itself once and no longer n-grams (sklearn's
 * _char_wb_ngrams).
 */
static bool
char_wb_ngrams(TextScratch *t, const HbStep *s, size_t n)
{
	const HbTokenizer *tok = &s->tok;

	for (size_t i = 0; i < n;)
	{
		size_t		j,
					wl,
					wb;

		if (is_space_cp(t->low[i]))
		{
			i++;
			continue;
		}
		for (j = i; j < n && !is_space_cp(t->low[j]); j++)
			;
		/* " " word " " in t->gram; padded character p starts at byte
		 * p == 0 ? 0 : 1 + off[i + p - 1] - off[i] */
		wl = j - i + 2;
		wb = t->off[j] - t->off[i];
		GROW(t->gram, t->gram_cap, wb + 3);
		t->gram[0] = ' ';
		memcpy(t->gram + 1, t->utf8 + t->off[i], wb);
		t->gram[wb + 1] = ' ';
#define WB_OFF(p) ((p) == 0 ? 0 : (p) == wl ? wb + 2 : 1 + t->off[i + (p) - 1] - t->off[i])
		for (int32_t g = tok->ngram_min; g <= tok->ngram_max; g++)
		{
			size_t		gl = (size_t) g < wl ? (size_t) g : wl;
			size_t		o = 0;

			if (!emit_term(t, s, t->gram, WB_OFF(gl)))
				return false;
			while (o + g < wl)
			{
				o++;
				if (!emit_term(t, s, t->gram + WB_OFF(o), WB_OFF(o + g) - WB_OFF(o)))
					return false;
			}
			if (o == 0)
				break;
		}
#undef WB_OFF
		i = j;
	}
	return true;
}

/*
 * Analyse one document (sklearn's build_analyzer, then the hasher or the
 * vocabulary), into t->cols / t->vals.
 */
static bool
analyse(TextScratch *t, const HbStep *s, const HbText *txt)
{
	const HbTokenizer *tok = &s->tok;
	size_t		n;
	size_t		n_tok = 0;

	t->n_cols = 0;
	if (txt->ptr == NULL || txt->len <= 0)
		return true;
	if (!prepare_text(t, tok, txt, &n))
		return false;

	if (tok->char_wb)
		return char_wb_ngrams(t, s, n);
	if (tok->char_ngrams)
	{
		for (int32_t g = tok->ngram_min; g <= tok->ngram_max && (size_t) g <= n; g++)
			for (size_t i = 0; i + g <= n; i++)
				if (!emit_term(t, s, t->utf8 + t->off[i], t->off[i + g] - t->off[i]))
					return false;
		return true;
	}

	/* tokens: maximal runs of word characters, at least min_token_len long */
	for (size_t i = 0; i < n;)
	{
		size_t		j = i;

		while (j < n && is_word_cp(t->low[j]))
			j++;
		if (j - i >= (size_t) tok->min_token_len)
		{
			bool		stop = tok->n_stop_words > 0 &&
				find_term(tok->stop_words, tok->n_stop_words, t->utf8 + t->off[i],
						  t->off[j] - t->off[i]) >= 0;

			if (!stop)
			{
				GROW(t->tok, t->tok_cap, 2 * n_tok + 2);
				t->tok[2 * n_tok] = (int32_t) i;
				t->tok[2 * n_tok + 1] = (int32_t) j;
				n_tok++;
			}
		}
		i = j > i ? j : i + 1;
	}
	for (int32_t g = tok->ngram_min; g <= tok->ngram_max && (size_t) g <= n_tok; g++)
		for (size_t i = 0; i + g <= n_tok; i++)
		{
			if (g == 1)
			{
				size_t		a = t->off[t->tok[2 * i]],
							b = t->off[t->tok[2 * i + 1]];

				if (!emit_term(t, s, t->utf8 + a, b - a))
					return false;
			}
			else
			{
				size_t		len = 0;

				for (int32_t k = 0; k < g; k++)
				{
					size_t		a = t->off[t->tok[2 * (i + k)]],
								b = t->off[t->tok[2 * (i + k) + 1]];

					GROW(t->gram, t->gram_cap, len + (b - a) + 2);
					if (k > 0)
						t->gram[len++] = ' ';
					memcpy(t->gram + len, t->utf8 + a, b - a);
					len += b - a;
				}
				if (!emit_term(t, s, t->gram, len))
					return false;
			}
		}
	return true;
}

/*
 * One document's non-zero columns: analysed, counts merged per column,
 * weighted (binary, sublinear tf, idf) and normalised, ascending by column.
 * The dense and the sparse executors both read this, so they see the same
 * values bit for bit.
 */
bool
hb_text_terms(HbTextScratch *t, const HbStep *s, const HbText *txt,
			  const HbTextTerm **terms, size_t *n_terms)
{
	HbTextTerm *cv;
	size_t		m = 0;
	double		norm = 0.0;

	*terms = NULL;
	*n_terms = 0;
	if (!analyse(t, s, txt))
		return false;
	if (t->n_cols == 0)
		return true;
	GROW(t->terms, t->terms_cap, t->n_cols);
	cv = t->terms;
	for (size_t i = 0; i < t->n_cols; i++)
	{
		cv[i].col = t->cols[i];
		cv[i].val = t->vals[i];
	}
	qsort(cv, t->n_cols, sizeof(HbTextTerm), cmp_colval);
	for (size_t i = 0; i < t->n_cols; i++)
	{
		if (m > 0 && cv[m - 1].col == cv[i].col)
			cv[m - 1].val += cv[i].val;
		else
			cv[m++] = cv[i];
	}
	for (size_t i = 0; i < m; i++)
	{
		double		v = cv[i].val;

		if (s->binary)
			v = 1.0;
		if (s->kind == HB_STEP_TFIDF)
		{
			if (s->sublinear_tf && v != 0)
				v = log(v) + 1.0;
			if (s->idf)
				v *= s->idf[cv[i].col];
		}
		cv[i].val = v;
	}
	/* sparse rows: a zero norm leaves the row as it is */
	if (s->norm == HB_NORM_L1)
		for (size_t i = 0; i < m; i++)
			norm += fabs(cv[i].val);
	else if (s->norm == HB_NORM_L2)
	{
		for (size_t i = 0; i < m; i++)
			norm += cv[i].val * cv[i].val;
		norm = sqrt(norm);
	}
	else if (s->norm == HB_NORM_MAX)
		for (size_t i = 0; i < m; i++)
			if (fabs(cv[i].val) > norm)
				norm = fabs(cv[i].val);
	if (norm != 0.0)
		for (size_t i = 0; i < m; i++)
			cv[i].val = cv[i].val / norm;
	*terms = cv;
	*n_terms = m;
	return true;
}

/* Write a document's kept columns into the step's slots. */
static bool
text_vector(TextScratch *t, const HbStep *s, const HbText *txt, double *slots)
{
	const HbTextTerm *cv;
	size_t		m;
	double	   *out = slots + s->out;

	for (int32_t i = 0; i < s->n_used; i++)
		out[i] = 0.0;
	if (!hb_text_terms(t, s, txt, &cv, &m))
		return false;
	for (size_t i = 0, u = 0; i < m && u < (size_t) s->n_used; i++)
	{
		while (u < (size_t) s->n_used && s->used_cols[u] < cv[i].col)
			u++;
		if (u < (size_t) s->n_used && s->used_cols[u] == cv[i].col)
			out[u] = cv[i].val;
	}
	return true;
}

/* ---------------------------------------------------------------- running */

static inline bool
is_missing(const HbStep *s, double x)
{
	return (isnan(x) && !s->nan_kept) ||
		(s->has_missing_value && x == s->missing_value);
}

static double
arith(HbArithOp op, double x, double c)
{
	switch (op)
	{
		case HB_ARITH_ADD:
			return x + c;
		case HB_ARITH_SUB:
			return x - c;
		case HB_ARITH_MUL:
			return x * c;
		case HB_ARITH_DIV:
			return x / c;
		case HB_ARITH_RSUB:
			return c - x;
		case HB_ARITH_RDIV:
			return c / x;
		case HB_ARITH_POW:
			return pow(x, c);
		case HB_ARITH_ABS:
			return fabs(x);
		case HB_ARITH_NEG:
			return -x;
		case HB_ARITH_SQRT:
			return sqrt(x);
		case HB_ARITH_EXP:
			return exp(x);
		case HB_ARITH_LOG:
			return log(x);
		case HB_ARITH_TRUNC:
			return trunc(x);
	}
	return NAN;
}

static float
arith_f(HbArithOp op, float x, float c)
{
	switch (op)
	{
		case HB_ARITH_ADD:
			return x + c;
		case HB_ARITH_SUB:
			return x - c;
		case HB_ARITH_MUL:
			return x * c;
		case HB_ARITH_DIV:
			return x / c;
		case HB_ARITH_RSUB:
			return c - x;
		case HB_ARITH_RDIV:
			return c / x;
		case HB_ARITH_POW:
			return powf(x, c);
		case HB_ARITH_ABS:
			return fabsf(x);
		case HB_ARITH_NEG:
			return -x;
		case HB_ARITH_SQRT:
			return sqrtf(x);
		case HB_ARITH_EXP:
			return expf(x);
		case HB_ARITH_LOG:
			return logf(x);
		case HB_ARITH_TRUNC:
			return truncf(x);
	}
	return NAN;
}

static double
affine(const HbStep *s, int32_t i, double x)
{
	double		sub = s->sub ? s->sub[i] : 0.0;
	double		mul = s->mul ? s->mul[i] : 1.0;
	double		add = s->add ? s->add[i] : 0.0;

	if (s->f32)
	{
		float		xf = (float) x;

		switch (s->order)
		{
			case HB_AFFINE_SUB_MUL_ADD:
				return (double) (((xf - (float) sub) * (float) mul) + (float) add);
			case HB_AFFINE_SUB_DIV:
				return (double) ((xf - (float) sub) / (float) mul);
			case HB_AFFINE_MUL_ADD:
				return (double) (xf * (float) mul + (float) add);
		}
	}
	switch (s->order)
	{
		case HB_AFFINE_SUB_MUL_ADD:
			return ((x - sub) * mul) + add;
		case HB_AFFINE_SUB_DIV:
			return (x - sub) / mul;
		case HB_AFFINE_MUL_ADD:
			return x * mul + add;
	}
	return NAN;
}

static int32_t
find_num_category(const HbStep *s, double x)
{
	int32_t		n = s->n_categories;
	int32_t		lo = 0,
				hi;

	if (n == 0)
		return -1;
	if (isnan(x))
		return isnan(s->categories_num[n - 1]) ? n - 1 : -1;
	hi = isnan(s->categories_num[n - 1]) ? n - 2 : n - 1;
	while (lo <= hi)
	{
		int32_t		mid = lo + (hi - lo) / 2;
		double		c = s->categories_num[mid];

		if (x == c)
			return mid;
		if (x < c)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

static int32_t
find_text_category(const HbStep *s, const HbText *t)
{
	int32_t		n = s->n_categories;
	int32_t		lo,
				hi = n - 1;

	if (n == 0)
		return -1;
	if (t->ptr == NULL)
		return s->categories_text[0] == NULL ? 0 : -1;
	lo = s->categories_text[0] == NULL ? 1 : 0;
	while (lo <= hi)
	{
		int32_t		mid = lo + (hi - lo) / 2;
		int			c = cmp_bytes_str(t->ptr, (size_t) t->len, s->categories_text[mid]);

		if (c == 0)
			return mid;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

/* A category lookup's outputs; false on an unknown category set to error. */
static bool
write_category(const HbPipeline *p, const HbStep *s, int32_t ci, double *slots,
			   const HbText *txt, double x, HbError *err)
{
	double	   *out = slots + s->out;

	if (ci < 0 && s->unknown == HB_UNKNOWN_ERROR)
	{
		char		nbuf[32];
		const char *name = step_input_name(p, s, nbuf, sizeof(nbuf));

		if (txt && txt->ptr == NULL)
			return hb_fail(err, HB_ERR_ARGUMENT,
						   "input \"%s\" is NULL, which is not a known category", name);
		if (txt)
			return hb_fail(err, HB_ERR_ARGUMENT,
						   "input \"%s\" has an unknown category \"%.*s\"", name,
						   txt->len > 200 ? 200 : (int) txt->len, txt->ptr);
		if (isnan(x))
			return hb_fail(err, HB_ERR_ARGUMENT,
						   "input \"%s\" is NULL, which is not a known category", name);
		return hb_fail(err, HB_ERR_ARGUMENT,
					   "input \"%s\" has an unknown category %.17g", name, x);
	}
	if (s->kind == HB_STEP_LABEL_NUM || s->kind == HB_STEP_LABEL_TEXT)
	{
		out[0] = ci >= 0 ? s->label_values[ci] :
			s->unknown == HB_UNKNOWN_VALUE ? s->unknown_value : NAN;
		return true;
	}
	if (s->onehot)
	{
		for (int32_t i = 0; i < s->n_out; i++)
			out[i] = 0.0;
		if (ci >= 0 && s->category_pos[ci] >= 0)
			out[s->category_pos[ci]] = 1.0;
		return true;
	}
	if (ci >= 0)
		out[0] = s->label_values ? s->label_values[ci] : (double) s->category_pos[ci];
	else
		out[0] = s->unknown == HB_UNKNOWN_VALUE ? s->unknown_value : NAN;
	return true;
}

static bool
run_step(const HbPipeline *p, const HbStep *s, double *slots,
		 const HbText *texts, TextScratch *ts, HbError *err)
{
	double	   *out = slots + s->out;

	switch (s->kind)
	{
		case HB_STEP_AFFINE:
			for (int32_t i = 0; i < s->n_in; i++)
				out[i] = affine(s, i, slots[s->in[i]]);
			break;
		case HB_STEP_IMPUTE:
			for (int32_t i = 0; i < s->n_in; i++)
			{
				double		x = slots[s->in[i]];

				out[i] = is_missing(s, x) ? s->value[i] : x;
			}
			break;
		case HB_STEP_MISSING_IND:
			for (int32_t i = 0; i < s->n_in; i++)
				out[i] = is_missing(s, slots[s->in[i]]) ? 1.0 : 0.0;
			break;
		case HB_STEP_BINARIZE:
			for (int32_t i = 0; i < s->n_in; i++)
			{
				double		x = slots[s->in[i]];

				out[i] = isnan(x) ? x : (x > s->threshold ? 1.0 : 0.0);
			}
			break;
		case HB_STEP_MISSING_BELOW:
			for (int32_t i = 0; i < s->n_in; i++)
			{
				double		x = slots[s->in[i]];

				out[i] = x < s->threshold ? NAN : x;
			}
			break;
		case HB_STEP_CAST_F32:
			for (int32_t i = 0; i < s->n_in; i++)
				out[i] = (double) (float) slots[s->in[i]];
			break;
		case HB_STEP_ARITH:
			for (int32_t i = 0; i < s->n_in; i++)
			{
				double		c = s->constant ? s->constant[i] : 0.0;
				double		x = slots[s->in[i]];

				out[i] = s->f32 ? (double) arith_f(s->arith, (float) x, (float) c) :
					arith(s->arith, x, c);
			}
			break;
		case HB_STEP_CLIP:
			for (int32_t i = 0; i < s->n_in; i++)
			{
				double		x = slots[s->in[i]];

				out[i] = isnan(x) ? x : x < s->lo ? s->lo : x > s->hi ? s->hi : x;
			}
			break;
		case HB_STEP_NORMALIZE:
			{
				double		norm = 0.0;

				for (int32_t i = 0; i < s->n_in; i++)
				{
					double		x = slots[s->in[i]];

					if (s->norm == HB_NORM_L1)
						norm += fabs(x);
					else if (s->norm == HB_NORM_L2)
						norm += x * x;
					else if (fabs(x) > norm || isnan(x))
						norm = fabs(x);
				}
				if (s->norm == HB_NORM_L2)
					norm = sqrt(norm);
				/* dense rows: scikit-learn treats near-zero norms as 1 */
				if (norm < 10 * DBL_EPSILON)
					norm = 1.0;
				for (int32_t i = 0; i < s->n_in; i++)
					out[i] = slots[s->in[i]] / norm;
				break;
			}
		case HB_STEP_POLY:
			for (int32_t k = 0; k < s->n_out; k++)
			{
				const int32_t *pw = s->powers + (size_t) k * s->n_in;
				double		v = 1.0;
				bool		first = true;

				for (int32_t i = 0; i < s->n_in; i++)
					for (int32_t e = 0; e < pw[i]; e++)
					{
						v = first ? slots[s->in[i]] : v * slots[s->in[i]];
						first = false;
					}
				out[k] = v;
			}
			break;
		case HB_STEP_KBINS:
			{
				double		x = slots[s->in[0]];
				int32_t		lo = 0,
							hi = s->n_edges;

				/* searchsorted(edges, x, side="right") */
				while (lo < hi)
				{
					int32_t		mid = lo + (hi - lo) / 2;

					if (s->edges[mid] <= x)
						lo = mid + 1;
					else
						hi = mid;
				}
				if (!s->onehot)
					out[0] = isnan(x) ? NAN : (double) lo;
				else
					for (int32_t i = 0; i < s->n_out; i++)
						out[i] = isnan(x) ? NAN : (i == lo ? 1.0 : 0.0);
				break;
			}
		case HB_STEP_ONEHOT_NUM:
		case HB_STEP_LABEL_NUM:
			{
				double		x = slots[s->in[0]];

				return write_category(p, s, find_num_category(s, x), slots, NULL, x, err);
			}
		case HB_STEP_ONEHOT_TEXT:
		case HB_STEP_LABEL_TEXT:
			{
				const HbText *t = &texts[s->text_input];

				return write_category(p, s, find_text_category(s, t), slots, t, NAN, err);
			}
		case HB_STEP_HASHING:
		case HB_STEP_TFIDF:
			if (!text_vector(ts, s, &texts[s->text_input], slots))
				return hb_fail(err, HB_ERR_NOMEM, "out of memory");
			break;
	}
	return true;
}

bool
hb_step_run(const HbPipeline *p, const HbStep *s, double *slots,
			const HbText *texts, HbTextScratch *ts, HbError *err)
{
	return run_step(p, s, slots, texts, ts, err);
}

bool
hb_pipeline_run(const HbPipeline *p, const HbRawRows *rows, double *x,
				HbError *err)
{
	double	   *slots = hb_alloc(sizeof(double) * hb_pipeline_row_slots(p));
	bool		ok;

	if (slots == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	ok = hb_pipeline_run_with(p, rows, x, slots, err);
	hb_free(slots);
	return ok;
}

bool
hb_pipeline_run_with(const HbPipeline *p, const HbRawRows *rows, double *x,
					 double *slots, HbError *err)
{
	return hb_pipeline_run_steps(p, rows, x, slots, NULL, NULL, 0, err);
}

/* A slot's value as the model's feature (HbPipeline.zero_is_missing). */
static inline double
feature_value(const HbPipeline *p, double v)
{
	return p->zero_is_missing && v == 0.0 ? NAN : v;
}

bool
hb_pipeline_run_steps(const HbPipeline *p, const HbRawRows *rows, double *x,
					  double *slots, const bool *step_on, const int32_t *feats,
					  int32_t n_feats, HbError *err)
{
	TextScratch ts;
	bool		ok = true;
	static const HbText no_text = {NULL, 0};

	memset(&ts, 0, sizeof(ts));
	if (p->n_text_inputs > 0 && rows->text == NULL)
		return hb_fail(err, HB_ERR_ARGUMENT, "pipeline has text inputs but none were bound");
	for (size_t r = 0; r < rows->n && ok; r++)
	{
		const double *num = rows->num ? rows->num + r * p->n_num_inputs : NULL;
		const HbText *texts = rows->text ? rows->text + r * p->n_text_inputs : &no_text;
		double	   *xr = x + r * p->n_features;

		if ((r & 1023) == 1023)
			hb_check_interrupts();
		for (int32_t i = 0; i < p->n_num_inputs; i++)
			slots[i] = num ? num[i] : NAN;
		for (int32_t k = 0; k < p->n_steps && ok; k++)
			if (step_on == NULL || step_on[k])
				ok = run_step(p, &p->steps[k], slots, texts, &ts, err);
		if (ok && feats == NULL)
			for (int32_t j = 0; j < p->n_features; j++)
				xr[j] = feature_value(p, slots[p->feature_slot[j]]);
		else if (ok)
			for (int32_t i = 0; i < n_feats; i++)
				xr[feats[i]] = feature_value(p, slots[p->feature_slot[feats[i]]]);
	}
	scratch_free(&ts);
	return ok;
}
