/*
 * fuzz_model_image.c
 *	  libFuzzer target: the model image reader (what a backend reads from
 *	  the catalog instead of the original bytes), then plans and scoring
 *	  (fuzz_common.h).  Also the read in two parts a backend's cache makes
 *	  (the model, then its pipeline): it must accept exactly what the whole
 *	  read accepts.
 */
#include "fuzz_common.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the split read of data: true where both parts read */
static bool
split_read(const uint8_t *data, size_t size)
{
	HbModel    *m = NULL;
	HbPipeline *p = NULL;
	size_t		at = 0;
	HbError		err = {0};
	bool		ok;

	if (!hb_model_image_read_split((const char *) data, size, &m, &at, &err))
	{
		if (m != NULL)
			abort();
		return false;
	}
	if (m->pipeline != NULL)
		abort();
	ok = at == 0 ||
		hb_model_image_read_pipeline((const char *) data, size, at, m->n_features, &p, &err);
	if (!ok && p != NULL)
		abort();
	hb_pipeline_free(p);
	hb_model_free(m);
	return ok;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	HbModel    *m = NULL;
	HbError		err = {0};
	bool		whole = hb_model_image_read((const char *) data, size, &m, &err);

	if (!whole && m != NULL)
		abort();
	if (split_read(data, size) != whole)
		abort();
	if (whole)
	{
		fuzz_exercise(m, data, size);
		hb_model_free(m);
	}
	return 0;
}
