/*
 * fuzz_model_image.c
 *	  libFuzzer target: the model image reader (what a backend reads from
 *	  the catalog instead of the original bytes), then plans and scoring
 *	  (fuzz_common.h).
 */
#include "fuzz_common.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	HbModel    *m = NULL;
	HbError		err = {0};

	if (hb_model_image_read((const char *) data, size, &m, &err))
	{
		fuzz_exercise(m, data, size);
		hb_model_free(m);
	}
	else if (m != NULL)
		abort();
	return 0;
}
