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

/* the columns of hb_device(), in order (sql/hbird--*.sql) */
#define HB_DEVICE_COLS 10

/*
 * One row: the setting, whether the library was built with CUDA, whether a
 * device is usable (probing it at the first call), its name or the reason
 * there is none, and the device memory this backend holds.
 */
Datum
hb_device(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[HB_DEVICE_COLS];
	bool		nulls[HB_DEVICE_COLS] = {0};
	int			i = 0;
	HbError		err = {0};
	HbDeviceStats st;
	bool		ok;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "hb_device must return a row");
	if (desc->natts != HB_DEVICE_COLS)
		elog(ERROR, "incorrect number of output columns of hb_device");
	desc = BlessTupleDesc(desc);

	ok = hb_device_available(&err);
	hb_device_stats(&st);
	values[i++] = CStringGetTextDatum(mode_name(hb_device_mode()));
	values[i++] = BoolGetDatum(hb_device_built());
	values[i++] = BoolGetDatum(ok);
	if (ok)
		values[i++] = CStringGetTextDatum(hb_device_name());
	else
		nulls[i++] = true;
	if (ok)
		nulls[i++] = true;
	else
		values[i++] = CStringGetTextDatum(err.msg);
	values[i++] = Int64GetDatum(st.min_batch);
	values[i++] = Int64GetDatum((int64) st.budget);
	values[i++] = Int64GetDatum((int64) (st.resident_bytes + st.buffer_bytes));
	values[i++] = Int64GetDatum(st.batches);
	values[i++] = Int64GetDatum(st.fallbacks);
	Assert(i == HB_DEVICE_COLS);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
