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
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "hbird.h"

PG_FUNCTION_INFO_V1(hb_predict_record);
PG_FUNCTION_INFO_V1(hb_predict_array);
PG_FUNCTION_INFO_V1(hb_predict_proba_record);
PG_FUNCTION_INFO_V1(hb_predict_proba_array);
PG_FUNCTION_INFO_V1(hb_predict_margin_record);
PG_FUNCTION_INFO_V1(hb_predict_margin_array);
PG_FUNCTION_INFO_V1(hb_predict_targets_record);
PG_FUNCTION_INFO_V1(hb_predict_targets_array);

typedef enum ScoreKind
{
	SCORE_PREDICT,
	SCORE_PROBA,
	SCORE_MARGIN,
	SCORE_TARGETS
} ScoreKind;

/*
 * One value per row cannot say what a model of several targets predicts:
 * its first target alone would be a silently partial answer.
 */
/* Targets are what a regression (or ranking) model predicts. */
void
hb_check_regression(const HbCacheEntry *e, const char *fn)
{
	if (e->n_classes >= 2)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" is a %s model; %s needs a regression model",
						e->name, hb_task_name(e->task), fn),
				 errhint("Use hb_predict_proba for the probability of each class.")));
}

void
hb_check_single_target(const HbCacheEntry *e, const char *fn)
{
	if (hb_plan_is_multi_target(e->plan))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" predicts %d targets; %s returns one value per row",
						e->name, e->n_outputs, fn),
				 errhint("Use hb_predict_targets for every target, as an array.")));
}


/*
 * A key of the role executing and the snapshot's contents.  Two snapshots
 * with the same contents see the same catalog rows, so the models a call
 * site resolved stay right exactly as long as the key stays the same: for
 * a whole statement, and across PL/pgSQL's cached simple expressions until
 * something commits (or the transaction's own command counter moves).  The
 * role is in it because resolving checks the right to score: a function's
 * cached expression called by a SECURITY DEFINER function, then by its
 * own caller, or across SET ROLE, is resolved (and checked) again.
 */
static uint64
snapshot_key(void)
{
	Snapshot	s = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
	uint64		h = 1469598103934665603ull;

#define MIX(v) (h = (h ^ (uint64) (v)) * 1099511628211ull)
	MIX(GetUserId());
	MIX(s->xmin);
	MIX(s->xmax);
	MIX(s->curcid);
	MIX(s->xcnt);
	MIX(s->subxcnt);
	MIX(s->suboverflowed);
	for (uint32 i = 0; i < s->xcnt; i++)
		MIX(s->xip[i]);
	for (int32 i = 0; i < s->subxcnt; i++)
		MIX(s->subxip[i]);
#undef MIX
	return h;
}

static void
release_slots(HbCallState *st)
{
	for (int i = 0; i < st->nslots; i++)
	{
		if (st->slots[i].entry)
			hb_cache_unpin(st->slots[i].entry);
		st->slots[i].entry = NULL;
		MemoryContextReset(st->slots[i].cxt);
	}
	st->nslots = 0;
	st->cur = NULL;
}

static void
call_state_release(void *arg)
{
	HbCallState *st = (HbCallState *) arg;

	for (int i = 0; i < st->nslots; i++)
		if (st->slots[i].entry)
			hb_cache_unpin(st->slots[i].entry);
	st->nslots = 0;
	st->cur = NULL;
}

static void
use_slot(HbCallState *st, HbCallSlot *slot)
{
	slot->used = ++st->tick;
	st->cur = slot;
	st->entry = slot->entry;
	st->x = slot->x;
	st->scratch = slot->scratch;
	st->out = slot->out;
}

/*
 * The call site's state for this call: the model named by argument
 * name_arg, with one-row buffers sized for it.
 */
HbCallState *
hb_call_prepare(FunctionCallInfo fcinfo, int name_arg, bool classifier)
{
	HbCallState *st = (HbCallState *) fcinfo->flinfo->fn_extra;
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
	text	   *name = hb_require_text(fcinfo, name_arg, "model name");
	size_t		len = VARSIZE_ANY_EXHDR(name);
	uint64		key = snapshot_key();
	HbCallSlot *slot = NULL;
	HbCacheEntry *e;
	char	   *cname;

	if (st == NULL)
	{
		st = MemoryContextAllocZero(mcxt, sizeof(HbCallState));
		st->cb.func = call_state_release;
		st->cb.arg = st;
		MemoryContextRegisterResetCallback(mcxt, &st->cb);
		fcinfo->flinfo->fn_extra = st;
	}
	if (!st->snap_set || st->snap_key != key)
	{
		release_slots(st);
		st->snap_key = key;
		st->snap_set = true;
	}

	/* the common case: the same name as the previous call */
	if (st->cur && strlen(st->cur->name) == len &&
		memcmp(st->cur->name, VARDATA_ANY(name), len) == 0)
		return st;
	for (int i = 0; i < st->nslots; i++)
		if (strlen(st->slots[i].name) == len &&
			memcmp(st->slots[i].name, VARDATA_ANY(name), len) == 0)
		{
			use_slot(st, &st->slots[i]);
			return st;
		}

	cname = text_to_cstring(name);
	e = hb_resolve_model(cname);
	if (classifier && e->n_classes < 2)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" is a %s model; hb_predict_proba needs a classifier",
						e->name, hb_task_name(e->task)),
				 errhint("Use hb_predict for its value.")));

	/* a free slot, else the least recently used one */
	if (st->nslots < HB_CALL_SLOTS)
	{
		slot = &st->slots[st->nslots++];
		if (slot->cxt == NULL)
			slot->cxt = AllocSetContextCreate(mcxt, "hbird call site",
											  ALLOCSET_SMALL_SIZES);
	}
	else
	{
		slot = &st->slots[0];
		for (int i = 1; i < HB_CALL_SLOTS; i++)
			if (st->slots[i].used < slot->used)
				slot = &st->slots[i];
		hb_cache_unpin(slot->entry);
		MemoryContextReset(slot->cxt);
	}
	{
		int			nout = Max(e->n_outputs, Max(e->n_classes, 1));

		slot->name = MemoryContextStrdup(slot->cxt, cname);
		slot->entry = e;
		hb_cache_pin(e);
		slot->bound = false;
		slot->cascade_loaded = false;
		slot->cascade = NULL;
		slot->lazy = NULL;
		slot->x = MemoryContextAlloc(slot->cxt, sizeof(double) * e->n_features);
		slot->scratch = MemoryContextAlloc(slot->cxt, sizeof(double) * nout);
		slot->out = MemoryContextAlloc(slot->cxt, sizeof(double) * nout);
	}
	use_slot(st, slot);
	return st;
}

/* The row in argument row_arg, with the slot bound to its row type. */
static HeapTupleHeader
call_bind(FunctionCallInfo fcinfo, HbCallState *st, int row_arg)
{
	HeapTupleHeader td = PG_GETARG_HEAPTUPLEHEADER(row_arg);
	HbCallSlot *slot = st->cur;

	if (!slot->bound ||
		slot->bind.tupType != HeapTupleHeaderGetTypeId(td) ||
		slot->bind.tupTypmod != HeapTupleHeaderGetTypMod(td))
	{
		if (slot->bound)
			hb_bind_release(&slot->bind);
		hb_bind_record(&slot->bind, slot->entry, td, slot->cxt, slot->entry->name);
		slot->bound = true;
	}
	return td;
}

/* Bind the row in argument row_arg into st->x. */
void
hb_call_load_record(FunctionCallInfo fcinfo, HbCallState *st, int row_arg)
{
	HeapTupleHeader td = call_bind(fcinfo, st, row_arg);
	HbCallSlot *slot = st->cur;

	/*
	 * Lazily for the slot's cascade while hbird.cascade is on (what the
	 * cascade check of the same call sees), or for an aggregate's cheap
	 * model (set by the aggregate).
	 */
	slot->bind.steps = hb_lazy_steps(hb_cascade_on || !slot->cascade_loaded ?
									 slot->lazy : NULL);
	hb_bind_row(&slot->bind, st->entry, td, st->x);
}

/* The raw margins of the row in argument row_arg; st->entry->sparse only. */
void
hb_call_load_margins(FunctionCallInfo fcinfo, HbCallState *st, int row_arg,
					 double *margins)
{
	HeapTupleHeader td = call_bind(fcinfo, st, row_arg);

	hb_bind_row_margins(&st->cur->bind, st->entry, td, margins);
}

/*
 * The cascade of a call site's current model (hbird.cascade, a tuned
 * cascade), looked up once per slot.
 */
HbCascade *
hb_call_cascade(HbCallState *st)
{
	HbCallSlot *slot = st->cur;

	if (!hb_cascade_on)
		return NULL;
	if (!slot->cascade_loaded)
	{
		slot->cascade = hb_cascade_for(slot->entry, slot->cxt);
		if (slot->cascade)
			slot->lazy = hb_lazy_for(slot->entry, slot->cascade->approx, false, slot->cxt);
		slot->cascade_loaded = true;
	}
	return slot->cascade;
}

/*
 * The call's row through its cascade.  A row bound lazily (row is its
 * datum) is featurized in full only if the cheap model cannot decide it.
 */
void
hb_call_cascade_run(HbCallState *st, Datum row, HbCascadeOut what, double *out)
{
	HbCallSlot *slot = st->cur;

	if (slot->bind.steps != NULL && row != (Datum) 0)
	{
		hb_lazy_set_rows(slot->lazy, &row);
		hb_cascade_run_lazy(slot->entry->plan, slot->cascade, st->x, 1, what,
							out, NULL, hb_lazy_complete, slot->lazy);
		hb_lazy_set_rows(slot->lazy, NULL);
	}
	else
		hb_cascade_run(slot->entry->plan, slot->cascade, st->x, 1, what, out, NULL);
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
	Datum		result = (Datum) 0;
	instr_time	start;			/* hb_stat_models */
	bool		timed = HB_STAT_SAMPLE();

	st = hb_call_prepare(fcinfo, 0, kind == SCORE_PROBA);
	if (kind == SCORE_PREDICT)
		hb_check_single_target(st->entry, "hb_predict");
	else if (kind == SCORE_TARGETS)
		hb_check_regression(st->entry, "hb_predict_targets");
	if (PG_ARGISNULL(1))
		PG_RETURN_NULL();
	if (timed)
		INSTR_TIME_SET_CURRENT(start);
	e = st->entry;

	/* a linear model over text: margins from the tokens (featurize_sparse.h) */
	if (record && hb_entry_sparse(e) &&
		!(kind == SCORE_PREDICT && hb_cascade_on && hb_call_cascade(st) != NULL))
	{
		hb_call_load_margins(fcinfo, st, 1, st->scratch);
		switch (kind)
		{
			case SCORE_PREDICT:
				hb_link_predict(e->plan, st->scratch, 1, st->out);
				result = Float8GetDatum(st->out[0]);
				break;
			case SCORE_PROBA:
				hb_link_proba(e->plan, st->scratch, 1, st->out);
				result = float8_array(st->out, e->n_classes);
				break;
			case SCORE_MARGIN:
				result = float8_array(st->scratch, e->n_outputs);
				break;
			case SCORE_TARGETS:
				hb_link_targets(e->plan, st->scratch, 1, st->out);
				result = float8_array(st->out, e->n_outputs);
				break;
		}
		hb_stat_row(e, timed ? &start : NULL);
		return result;
	}

	if (record)
		hb_call_load_record(fcinfo, st, 1);
	else
		hb_array_row(PG_GETARG_ARRAYTYPE_P(1), e, st->x, e->name);

	switch (kind)
	{
		case SCORE_PREDICT:
			if (hb_cascade_on && hb_call_cascade(st) != NULL)
				hb_call_cascade_run(st, record ? PG_GETARG_DATUM(1) : (Datum) 0,
									HB_CASCADE_PREDICT, st->out);
			else
				hb_plan_predict(e->plan, st->x, 1, st->scratch, st->out);
			result = Float8GetDatum(st->out[0]);
			break;
		case SCORE_PROBA:
			hb_plan_proba(e->plan, st->x, 1, st->scratch, st->out);
			result = float8_array(st->out, e->n_classes);
			break;
		case SCORE_MARGIN:
			hb_plan_margins(e->plan, st->x, 1, st->out);
			result = float8_array(st->out, e->n_outputs);
			break;
		case SCORE_TARGETS:
			hb_plan_targets(e->plan, st->x, 1, st->scratch, st->out);
			result = float8_array(st->out, e->n_outputs);
			break;
	}
	hb_stat_row(e, timed ? &start : NULL);
	return result;
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

/*
 * Every target of a regression model, after its link: n_outputs values
 * (one for a model of one target, so the function serves every model).
 */
Datum
hb_predict_targets_record(PG_FUNCTION_ARGS)
{
	return score(fcinfo, SCORE_TARGETS, true);
}

Datum
hb_predict_targets_array(PG_FUNCTION_ARGS)
{
	return score(fcinfo, SCORE_TARGETS, false);
}
