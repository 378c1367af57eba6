/*
 * fuzz_lightgbm.c
 *	  libFuzzer target: the LightGBM text reader, then plans and scoring
 *	  (fuzz_common.h).
 */
#include "fuzz_common.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_read(data, size, HB_FORMAT_LIGHTGBM_TEXT);
	return 0;
}
