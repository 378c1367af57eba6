/*
 * onnx_none.c
 *	  The ONNX entry points for test/gpu/run.sh, which builds the core on
 *	  GPU hosts that may lack protobuf-c: the GPU checks read XGBoost and
 *	  LightGBM models only, so ONNX is left out of that build.
 */
#include "model.h"

bool
hb_read_onnx(const char *bytes, size_t len, HbModel **out, HbError *err)
{
	(void) bytes;
	(void) len;
	*out = NULL;
	return hb_fail(err, HB_ERR_UNSUPPORTED,
				   "ONNX is not built into this program (test/gpu/run.sh)");
}

bool
hb_onnx_detect(const char *bytes, size_t len)
{
	(void) bytes;
	(void) len;
	return false;
}
