/*
 * pg_predict.c
 *	  Row-at-a-time scoring: hb_predict, hb_predict_proba, hb_predict_margin.
 *
 * Everything that does not depend on the row (model version, plan, column
 * mapping, buffers) is resolved on a call site's first call and kept in
 * fn_extra for the rest of the statement.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "hbird.h"

PG_FUNCTION_INFO_V1(hb_predict_record);
PG_FUNCTION_INFO_V1(hb_predict_array);
PG_FUNCTION_INFO_V1(hb_predict_proba_record);
PG_FUNCTION_INFO_V1(hb_predict_proba_array);
PG_FUNCTION_INFO_V1(hb_predict_margin_record);
PG_FUNCTION_INFO_V1(hb_predict_margin_array);

typedef enum ScoreKind
{
	SCORE_PREDICT,
	SCORE_PROBA,
	SCORE_MARGIN
} ScoreKind;


/*
 * The call site's state for this statement: model resolved from argument
 * name_arg, one-row buffers sized for it.
 */
HbCallState *
hb_call_prepare(FunctionCallInfo fcinfo, int name_arg, bool classifier)
{
	HbCallState *st = (HbCallState *) fcinfo->flinfo->fn_extra;
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
	text	   *name = hb_require_text(fcinfo, name_arg, "model name");
	HbCacheEntry *e;

	if (st == NULL)
	{
		st = MemoryContextAllocZero(mcxt, sizeof(HbCallState));
		fcinfo->flinfo->fn_extra = st;
	}
	e = hb_stmt_resolve(&st->model, mcxt, name);
	if (e != st->entry)
	{
		int			nout = Max(e->n_outputs, Max(e->n_classes, 1));

		if (classifier && e->n_classes < 2)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("model \"%s\" is a %s model; hb_predict_proba needs a classifier",
							e->name, hb_task_name(e->task)),
					 errhint("Use hb_predict for its value.")));
		st->x = MemoryContextAlloc(mcxt, sizeof(double) * e->n_features);
		st->scratch = MemoryContextAlloc(mcxt, sizeof(double) * nout);
		st->out = MemoryContextAlloc(mcxt, sizeof(double) * nout);
		st->entry = e;
		st->bound = false;
	}
	return st;
}

/* Bind the row in argument row_arg into st->x. */
void
hb_call_load_record(FunctionCallInfo fcinfo, HbCallState *st, int row_arg)
{
	HeapTupleHeader td = PG_GETARG_HEAPTUPLEHEADER(row_arg);

	if (!st->bound ||
		st->bind.tupType != HeapTupleHeaderGetTypeId(td) ||
		st->bind.tupTypmod != HeapTupleHeaderGetTypMod(td))
	{
		hb_bind_record(&st->bind, st->entry, td, fcinfo->flinfo->fn_mcxt,
					   st->entry->name);
		st->bound = true;
	}
	hb_bind_row(&st->bind, st->entry, td, st->x);
}

static Datum
float8_array(const double *v, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * n);

	for (int i = 0; i < n; i++)
		d[i] = Float8GetDatum(v[i]);
	return PointerGetDatum(construct_array(d, n, FLOAT8OID, sizeof(float8),
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

static Datum
score(FunctionCallInfo fcinfo, ScoreKind kind, bool record)
{
	HbCallState *st;
	HbCacheEntry *e;

	st = hb_call_prepare(fcinfo, 0, kind == SCORE_PROBA);
	if (PG_ARGISNULL(1))
		PG_RETURN_NULL();
	e = st->entry;
	if (record)
		hb_call_load_record(fcinfo, st, 1);
	else
		hb_array_row(PG_GETARG_ARRAYTYPE_P(1), e, st->x, e->name);

	switch (kind)
	{
		case SCORE_PREDICT:
			hb_plan_predict(e->plan, st->x, 1, st->scratch, st->out);
			PG_RETURN_FLOAT8(st->out[0]);
		case SCORE_PROBA:
			hb_plan_proba(e->plan, st->x, 1, st->scratch, st->out);
			return float8_array(st->out, e->n_classes);
		case SCORE_MARGIN:
			hb_plan_margins(e->plan, st->x, 1, st->out);
			return float8_array(st->out, e->n_outputs);
	}
	pg_unreachable();
}

Datum
hb_predict_record(PG_FUNCTION_ARGS)
{
	return score(fcinfo, SCORE_PREDICT, true);
}

Datum
hb_predict_array(PG_FUNCTION_ARGS)
{
	return score(fcinfo, SCORE_PREDICT, false);
}

Datum
hb_predict_proba_record(PG_FUNCTION_ARGS)
{
	return score(fcinfo, SCORE_PROBA, true);
}

Datum
hb_predict_proba_array(PG_FUNCTION_ARGS)
{
	return score(fcinfo, SCORE_PROBA, false);
}

Datum
hb_predict_margin_record(PG_FUNCTION_ARGS)
{
	return score(fcinfo, SCORE_MARGIN, true);
}

Datum
hb_predict_margin_array(PG_FUNCTION_ARGS)
{
	return score(fcinfo, SCORE_MARGIN, false);
}
