/*
 * fuzz_onnx.c
 *	  libFuzzer target: the ONNX-ML reader (protobuf-c decoding under a
 *	  memory budget, graph lowering), then plans and scoring
 *	  (fuzz_common.h).
 */
#include "fuzz_common.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_read(data, size, HB_FORMAT_ONNX);
	return 0;
}
