/*
 * fuzz_onnx.c
 *	  libFuzzer target: the ONNX-ML reader (protobuf-c decoding under a
 *	  memory budget, graph lowering, featurizer pipelines), then plans and
 *	  scoring (fuzz_common.h).
 */
#include "fuzz_common.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Featurize a few awkward raw rows (numbers and strings) through the
 * model's pipeline. */
static void
fuzz_pipeline(const HbModel *m, const uint8_t *data, size_t size)
{
	const HbPipeline *p = m->pipeline;
	static const double vals[] = {0.0, -0.0, 1.0, -1.5, 3.0, 1e30, -1e-30,
	NAN, INFINITY, 2.0};
	static const char *const texts[] = {NULL, "", "a", "str0", "\xff\xfe \xc3", "ΟΔΟΣ"};
	int			rows = 4;
	double	   *raw;
	HbText	   *txt;
	double	   *x;
	HbRawRows	rr = {0};
	HbError		err = {0};

	if (p == NULL || p->n_num_inputs > FUZZ_MAX_WIDE || p->n_text_inputs > FUZZ_MAX_WIDE ||
		p->n_features > FUZZ_MAX_WIDE)
		return;
	raw = malloc(sizeof(double) * rows * (p->n_num_inputs + 1));
	txt = calloc((size_t) rows * (p->n_text_inputs + 1), sizeof(HbText));
	x = malloc(sizeof(double) * rows * p->n_features);
	for (int i = 0; i < rows * p->n_num_inputs; i++)
		raw[i] = vals[(i * 7 + i / 3) % (sizeof(vals) / sizeof(vals[0]))];
	for (int i = 0; i < rows * p->n_text_inputs; i++)
	{
		if (i == rows * p->n_text_inputs - 1)
		{
			/* the input's own bytes */
			txt[i].ptr = (const char *) data;
			txt[i].len = (int32_t) (size > 256 ? 256 : size);
			continue;
		}
		txt[i].ptr = texts[(i * 5 + i / 2) % (sizeof(texts) / sizeof(texts[0]))];
		txt[i].len = txt[i].ptr ? (int32_t) strlen(txt[i].ptr) : 0;
	}
	rr.n = rows;
	rr.num = raw;
	rr.text = txt;
	if (!hb_pipeline_run(p, &rr, x, &err) && err.msg[0] == '\0')
	{
		fprintf(stderr, "hbird fuzz: pipeline failed without an error message\n");
		abort();
	}
	free(raw);
	free(txt);
	free(x);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	HbModel    *m = NULL;
	HbError		err = {0};

	if (hb_model_read((const char *) data, size, HB_FORMAT_ONNX, &m, &err))
	{
		fuzz_pipeline(m, data, size);
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
