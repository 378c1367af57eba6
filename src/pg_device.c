/*
 * pg_device.c
 *	  hb_device(): where batches run in this backend, and why.
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "hbird.h"
#include "device.h"

PG_FUNCTION_INFO_V1(hb_device);

static const char *
mode_name(HbDeviceMode m)
{
	switch (m)
	{
		case HB_DEVICE_AUTO:
			return "auto";
		case HB_DEVICE_CPU:
			return "cpu";
		case HB_DEVICE_GPU:
			return "gpu";
	}
	return "unknown";
}

/*
 * One row: the setting, whether the library was built with CUDA, whether a
 * device is usable (probing it at the first call), its name or the reason
 * there is none, and the device memory this backend holds.
 */
Datum
hb_device(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[10];
	bool		nulls[10] = {0};
	HbError		err = {0};
	HbDeviceStats st;
	bool		ok;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "hb_device must return a row");
	desc = BlessTupleDesc(desc);

	ok = hb_device_available(&err);
	hb_device_stats(&st);
	values[0] = CStringGetTextDatum(mode_name(hb_device_mode()));
	values[1] = BoolGetDatum(hb_device_built());
	values[2] = BoolGetDatum(ok);
	if (ok)
		values[3] = CStringGetTextDatum(hb_device_name());
	else
		nulls[3] = true;
	if (ok)
		nulls[4] = true;
	else
		values[4] = CStringGetTextDatum(err.msg);
	values[5] = Int64GetDatum(st.min_batch);
	values[6] = Int64GetDatum((int64) st.budget);
	values[7] = Int64GetDatum((int64) (st.resident_bytes + st.buffer_bytes));
	values[8] = Int64GetDatum(st.batches);
	values[9] = Int64GetDatum(st.fallbacks);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
