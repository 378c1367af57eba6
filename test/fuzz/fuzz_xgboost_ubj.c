/*
 * fuzz_xgboost_ubj.c
 *	  libFuzzer target: the UBJSON parser (every accessor on every value)
 *	  and the XGBoost reader on UBJSON, then plans and scoring
 *	  (fuzz_common.h).
 */
#include "fuzz_common.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	HbJsonDoc  *doc = NULL;
	HbError		err = {0};

	if (hb_ubjson_parse((const char *) data, size, &doc, &err))
	{
		fuzz_walk(hb_json_root(doc), 0);
		hb_json_free(doc);
	}
	else if (err.code == HB_OK || doc != NULL)
		abort();
	fuzz_read(data, size, HB_FORMAT_XGBOOST_UBJSON);
	return 0;
}
