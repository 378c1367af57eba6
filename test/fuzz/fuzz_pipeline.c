/*
 * fuzz_pipeline.c
 *	  libFuzzer target: the hbird pipeline JSON reader; a pipeline that reads
 *	  is run on awkward raw rows (missing values, zeros, huge numbers, empty,
 *	  non-ASCII and malformed UTF-8 text, NULL text), then the model goes
 *	  through plans and scoring like every other (fuzz_common.h).
 */
#include "fuzz_common.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
run_pipeline(const HbPipeline *p, const uint8_t *data, size_t size)
{
	static const double nums[] = {NAN, 0.0, -0.0, 1.0, -1.5, 1e308, -1e308, 3.0, 1e-320};
	static const char *const texts[] = {
		NULL, "", "a", "Paris", "good bad good", "ΟΔΟΣ Σ ΑΣ", "\xff\xfe broken \xc3",
		"  many   spaces\t\there  ", "İstanbul straße ǅ", "x_y 42 A1"
	};
	enum
	{
		ROWS = 12
	};
	double	   *num = hb_alloc_must(sizeof(double) * ROWS * (p->n_num_inputs + 1));
	HbText	   *txt = hb_alloc_must(sizeof(HbText) * ROWS * (p->n_text_inputs + 1));
	double	   *x = hb_alloc_must(sizeof(double) * ROWS * p->n_features);
	HbRawRows	raw = {ROWS, num, txt};
	HbError		err = {0};

	for (int r = 0; r < ROWS; r++)
	{
		for (int i = 0; i < p->n_num_inputs; i++)
			num[r * p->n_num_inputs + i] = nums[(r + i) % (sizeof(nums) / sizeof(nums[0]))];
		for (int i = 0; i < p->n_text_inputs; i++)
		{
			HbText	   *t = &txt[r * p->n_text_inputs + i];

			if (r == ROWS - 1)
			{
				/* the input's own bytes as a document */
				t->ptr = (const char *) data;
				t->len = (int32_t) (size > 4096 ? 4096 : size);
				continue;
			}
			t->ptr = texts[(r + i) % (sizeof(texts) / sizeof(texts[0]))];
			t->len = t->ptr ? (int32_t) strlen(t->ptr) : 0;
		}
	}
	/* an unknown category may be an error; anything else must not be */
	if (!hb_pipeline_run(p, &raw, x, &err) &&
		(err.code != HB_ERR_ARGUMENT || err.msg[0] == '\0'))
	{
		fprintf(stderr, "hbird fuzz: pipeline run failed: %s\n", err.msg);
		abort();
	}
	hb_free(num);
	hb_free(txt);
	hb_free(x);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	HbModel    *m = NULL;
	HbError		err = {0};

	if (hb_model_read((const char *) data, size, HB_FORMAT_HBIRD_PIPELINE, &m, &err))
	{
		if (m->pipeline)
			run_pipeline(m->pipeline, data, size);
		fuzz_exercise(m, data, size);
		hb_model_free(m);
	}
	else if (err.code == HB_OK || err.msg[0] == '\0' || m != NULL)
	{
		fprintf(stderr, "hbird fuzz: refused without an error message\n");
		abort();
	}
	return 0;
}
