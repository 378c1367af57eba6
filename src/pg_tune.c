/*
 * pg_tune.c
 *	  hb_tune, the tuning catalog (writing, hb_tune_drop), reading a
 *	  tuning back for scoring.
 *
 * hb_tune runs with the caller's rights: the sample query is the caller's
 * SQL and sees only what the caller may see.  Only who may change the
 * model (its owner's members, superusers) tunes it, and the write goes
 * through pg_owner.c like every catalog write.  Scoring reads tunings with
 * direct scans under the statement's snapshot, like the model catalog
 * (pg_models.c).
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "parser/parse_func.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "hbird.h"
#include "tune.h"

PG_FUNCTION_INFO_V1(hb_tune);
PG_FUNCTION_INFO_V1(hb_tune_store);
PG_FUNCTION_INFO_V1(hb_tune_drop);

/* Rows a sample may have: its feature matrix is held in memory. */
#define HB_TUNE_MAX_ROWS 4000000

/* ---- reading a tuning back ---- */

/* the column's number, or InvalidAttrNumber (a schema that predates it) */
static AttrNumber
column_if(TupleDesc desc, const char *colname)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		if (!a->attisdropped && strcmp(NameStr(a->attname), colname) == 0)
			return a->attnum;
	}
	return InvalidAttrNumber;
}

/* hbird.tuning, or InvalidOid (a schema that predates tunings) */
static Oid
tuning_relid(void)
{
	Oid			nsp = get_namespace_oid("hbird", true);

	return OidIsValid(nsp) ? get_relname_relid("tuning", nsp) : InvalidOid;
}

/*
 * hb_tune writes the columns of this library's catalog (the second stage,
 * the cut relative to the bar, the gate): a database whose extension was
 * not updated since the library was installed lacks them, and would find
 * out only after the whole tuning had run.  Said before any work.
 */
static void
check_tuning_columns(void)
{
	static const char *const cols[] = {"refine_trees", "bar_slope", "gate_features"};
	Oid			relid = tuning_relid();
	Relation	rel;
	const char *missing = NULL;

	if (!OidIsValid(relid))
		missing = "hbird.tuning";
	else
	{
		rel = table_open(relid, AccessShareLock);
		for (int i = 0; i < lengthof(cols) && missing == NULL; i++)
			if (column_if(RelationGetDescr(rel), cols[i]) == InvalidAttrNumber)
				missing = cols[i];
		table_close(rel, AccessShareLock);
	}
	if (missing != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("hbird's catalog in this database predates this version of hbird's tunings (it lacks %s)",
						missing),
				 errhint("Run ALTER EXTENSION hbird UPDATE.")));
}

static AttrNumber
column(TupleDesc desc, const char *colname)
{
	AttrNumber	att = column_if(desc, colname);

	if (att == InvalidAttrNumber)
		elog(ERROR, "hbird.tuning has no column %s", colname);
	return att;
}

static Datum
get(HeapTuple tup, TupleDesc desc, const char *colname, bool *isnull)
{
	return heap_getattr(tup, column(desc, colname), desc, isnull);
}

static double
get_float(HeapTuple tup, TupleDesc desc, const char *colname, double dflt)
{
	bool		isnull;
	Datum		d = get(tup, desc, colname, &isnull);

	return isnull ? dflt : DatumGetFloat8(d);
}

/*
 * An approximation's catalog form read back (hb_approx_from_params checks
 * it): the feature list and the doubles, a NULL element as -1 or NaN, which
 * the checks refuse.  In the current memory context.
 */
static void
catalog_arrays(Datum feats, Datum params, int32 **fv, int *nfeat,
			   double **pv, int *nparam)
{
	Datum	   *fd,
			   *pd;
	bool	   *fn,
			   *pn;

	deconstruct_array(DatumGetArrayTypeP(feats), INT4OID, 4, true, TYPALIGN_INT,
					  &fd, &fn, nfeat);
	deconstruct_array(DatumGetArrayTypeP(params), FLOAT8OID, 8, FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, &pd, &pn, nparam);
	*fv = palloc(sizeof(int32) * (*nfeat + 1));
	*pv = palloc(sizeof(double) * (*nparam + 1));
	for (int i = 0; i < *nfeat; i++)
		(*fv)[i] = fn[i] ? -1 : DatumGetInt32(fd[i]);
	for (int i = 0; i < *nparam; i++)
		(*pv)[i] = pn[i] ? NAN : DatumGetFloat8(pd[i]);
}

/*
 * The tuning of kind ("topk" / "cascade") for the entry's model version,
 * under the statement's snapshot; for top-K the one tuned for the
 * smallest k >= k_query, else the largest k.  False when there is none
 * (also when the extension's schema predates tunings).  The cheap model
 * is built in cxt and checked against the plan.
 */
bool
hb_tuning_load(const HbCacheEntry *e, const char *kind, int k_query,
			   MemoryContext cxt, HbTuning *out)
{
	Oid			relid = tuning_relid();
	Relation	rel;
	TupleDesc	desc;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	HeapTuple	best = NULL;
	int			best_k = 0;

	memset(out, 0, sizeof(*out));
	if (!OidIsValid(relid))
		return false;
	rel = table_open(relid, AccessShareLock);
	desc = RelationGetDescr(rel);
	ScanKeyInit(&key, column(desc, "name"), BTEqualStrategyNumber, F_TEXTEQ,
				CStringGetTextDatum(e->name));
	scan = systable_beginscan(rel, InvalidOid, false,
							  ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot(),
							  1, &key);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		int32		version = DatumGetInt32(get(tup, desc, "version", &isnull));
		char	   *tkind = TextDatumGetCString(get(tup, desc, "kind", &isnull));
		int32		k = DatumGetInt32(get(tup, desc, "k", &isnull));
		bool		better;

		if (version != e->version || strcmp(tkind, kind) != 0)
			continue;
		if (best == NULL)
			better = true;
		else if (best_k >= k_query)
			better = k >= k_query && k < best_k;
		else
			better = k > best_k;
		if (better)
		{
			if (best)
				heap_freetuple(best);
			best = heap_copytuple(tup);
			best_k = k;
		}
	}
	systable_endscan(scan);

	if (best != NULL)
	{
		bool		isnull;
		char	   *akind = TextDatumGetCString(get(best, desc, "approx_kind", &isnull));
		int32		ntrees = DatumGetInt32(get(best, desc, "approx_trees", &isnull));
		HbError		err = {0};
		MemoryContext old;
		int			nfeat,
					nparam;
		int32	   *fv;
		double	   *pv;
		bool		ok;

		catalog_arrays(get(best, desc, "approx_features", &isnull),
					   get(best, desc, "approx_params", &isnull),
					   &fv, &nfeat, &pv, &nparam);
		old = MemoryContextSwitchTo(cxt);
		ok = hb_approx_from_params(e->plan,
								   strcmp(akind, "prefix") == 0 ? HB_APPROX_PREFIX :
								   strcmp(akind, "linear") == 0 ? HB_APPROX_LINEAR :
								   strcmp(akind, "trees") == 0 ? HB_APPROX_TREES : 0,
								   ntrees, fv, nfeat, pv, nparam, &out->approx, &err);
		if (ok && column_if(desc, "refine_trees") != InvalidAttrNumber)
		{
			bool		rnull;
			Datum		rt = get(best, desc, "refine_trees", &rnull);

			if (!rnull)
				ok = hb_approx_set_refine(e->plan, out->approx, DatumGetInt32(rt),
										  get_float(best, desc, "refine_scale", NAN),
										  get_float(best, desc, "refine_shift", NAN),
										  get_float(best, desc, "refine_slack", NAN),
										  &err);
		}
		if (ok && column_if(desc, "gate_features") != InvalidAttrNumber)
		{
			bool		gnull;
			Datum		gf = get(best, desc, "gate_features", &gnull);

			if (!gnull && strcmp(kind, "topk") != 0)
				ok = hb_fail(&err, HB_ERR_INVALID, "only a top-K tuning has a gate");
			else if (!gnull)
			{
				bool		pnull;
				Datum		gpa = get(best, desc, "gate_params", &pnull);
				int			ngf = 0,
							ngp = 0;
				int32	   *gfv = NULL;
				double	   *gpv = NULL;

				/* the arrays in the caller's context, the gate in cxt */
				MemoryContextSwitchTo(old);
				if (!pnull)
					catalog_arrays(gf, gpa, &gfv, &ngf, &gpv, &ngp);
				MemoryContextSwitchTo(cxt);
				ok = hb_approx_set_gate(e->plan, out->approx, gfv, ngf, gpv, ngp,
										get_float(best, desc, "gate_slack", NAN), &err);
			}
		}
		MemoryContextSwitchTo(old);
		out->found = true;
		out->k = best_k;
		out->threshold = get_float(best, desc, "threshold", INFINITY);
		out->ratio = get_float(best, desc, "ratio", 1.0);
		out->kept = DatumGetInt32(get(best, desc, "kept", &isnull));
		if (isnull)
			out->kept = best_k;
		out->cheap_cut = get_float(best, desc, "cheap_cut", NAN);
		out->bar.slope = out->bar.floor = out->bar.margin = NAN;
		if (column_if(desc, "bar_slope") != InvalidAttrNumber)
		{
			out->bar.slope = get_float(best, desc, "bar_slope", NAN);
			out->bar.floor = get_float(best, desc, "bar_floor", NAN);
			out->bar.margin = get_float(best, desc, "bar_margin", NAN);
		}

		/*
		 * hb_tune writes a number for what its kind uses: a missing or NaN
		 * cut (every comparison false) or threshold would quietly change
		 * which rows are scored in full
		 */
		if (ok && strcmp(kind, "topk") == 0 &&
			(isnan(out->cheap_cut) || !(out->ratio >= 1.0) || out->kept < 1))
			ok = hb_fail(&err, HB_ERR_INVALID, "the cut, ratio or kept rows are missing or out of range");
		else if (ok && strcmp(kind, "topk") == 0 && !hb_bar_cut_check(&out->bar, &err))
			ok = false;
		else if (ok && strcmp(kind, "cascade") == 0 && isnan(out->threshold))
			ok = hb_fail(&err, HB_ERR_INVALID, "the threshold is missing or not a number");

		/*
		 * The cut relative to the bar is checked as stored, and rises only
		 * under hbird.topk_bar_cut: its statement rests on an assumption
		 * the sample cannot check (docs/willump.md).  Its floor, the full
		 * margin s* the fixed cut's statement starts at, still says when
		 * the answer lies where that statement holds (waiting rows go, the
		 * gate acts)
		 */
		if (ok && !hb_topk_bar_cut)
			out->bar.fixed = true;
		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("tuning of model \"%s\" version %d is invalid: %s",
							e->name, e->version, err.msg),
					 errhint("Run hb_tune again, or hb_tune_drop(%s).",
							 quote_literal_cstr(e->name))));
		heap_freetuple(best);
	}
	table_close(rel, NoLock);
	return out->found;
}

/*
 * The cascade of an entry's model version when hbird.cascade is on and one
 * is tuned; NULL otherwise.  What a class path (hb_predict_class) calls:
 *
 *		HbCascade *c = hb_cascade_for(e, cxt);
 *		if (c) hb_cascade_run(e->plan, c, x, n, HB_CASCADE_CLASS, out, NULL);
 */
HbCascade *
hb_cascade_for(const HbCacheEntry *e, MemoryContext cxt)
{
	HbTuning	t;
	HbCascade  *c;

	if (!hb_cascade_on || e->n_classes < 2)
		return NULL;
	if (!hb_tuning_load(e, "cascade", 0, cxt, &t))
		return NULL;
	c = MemoryContextAlloc(cxt, sizeof(HbCascade));
	c->approx = t.approx;
	c->threshold = t.threshold;
	return c;
}

/* ---- hb_tune ---- */

static void
progress_notice(void *arg, const char *msg)
{
	ereport(NOTICE, (errmsg("hb_tune \"%s\": %s", (const char *) arg, msg)));
}

static double
float_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	double		v;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
	v = PG_GETARG_FLOAT8(argno);
	if (!(v > 0.0 && v < 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between 0 and 1 (exclusive), not %g", what, v)));
	return v;
}

/*
 * Run the sample query (as the caller) and bind its rows to the model's
 * features by column name.  Returns the row-major matrix; *n its rows.
 */
/* Raw rows kept for timing the featurization of a pipeline's groups. */
#define HB_TUNE_TIMING_RAW 2048

typedef struct RawSample
{
	size_t		n;
	double	   *num;
	HbText	   *text;
} RawSample;

static void
keep_raw(RawSample *rs, const HbPipeline *p, const HbBinding *b)
{
	size_t		i = rs->n++;

	memcpy(rs->num + i * p->n_num_inputs, b->num, sizeof(double) * p->n_num_inputs);
	for (int t = 0; t < p->n_text_inputs; t++)
	{
		HbText	   *d = &rs->text[i * p->n_text_inputs + t];

		d->len = b->text[t].len;
		d->ptr = b->text[t].ptr ? pnstrdup(b->text[t].ptr, b->text[t].len) : NULL;
	}
}

static double *
read_sample(FunctionCallInfo fcinfo, HbCacheEntry *e, const char *query,
			size_t *n_out, RawSample *rs)
{
	Portal		portal;
	HbBinding	bind;
	size_t		n = 0,
				cap = 0;
	double	   *x = NULL;
	MemoryContext outer = CurrentMemoryContext;

	SPI_connect();
	portal = hb_open_query(query, "sample query");
	hb_bind_desc(&bind, e, portal->tupDesc, outer, e->name);
	bind.keep_texts = true;		/* keep_raw copies them after featurizing */
	memset(rs, 0, sizeof(*rs));
	if (e->pipeline)
	{
		rs->num = MemoryContextAlloc(outer, sizeof(double) * HB_TUNE_TIMING_RAW *
									 Max(e->pipeline->n_num_inputs, 1));
		rs->text = MemoryContextAlloc(outer, sizeof(HbText) * HB_TUNE_TIMING_RAW *
									  Max(e->pipeline->n_text_inputs, 1));
	}
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, 10000);
		if (SPI_processed == 0)
			break;
		if (n + SPI_processed > HB_TUNE_MAX_ROWS)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("sample of model \"%s\" has more than %d rows", e->name,
							HB_TUNE_MAX_ROWS),
					 errhint("A sample of 10,000 to 100,000 rows is plenty; use TABLESAMPLE or LIMIT.")));
		if (n + SPI_processed > cap)
		{
			size_t		ncap = Max(cap * 2, n + SPI_processed);
			Size		bytes = sizeof(double) * ncap * e->n_features;

			x = x ? repalloc_huge(x, bytes) : MemoryContextAllocHuge(outer, bytes);
			cap = ncap;
		}
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			hb_bind_tuple(&bind, e, SPI_tuptable->vals[i], x + (n + i) * e->n_features);
			if (e->pipeline && rs->n < HB_TUNE_TIMING_RAW)
			{
				MemoryContext o = MemoryContextSwitchTo(outer);

				keep_raw(rs, e->pipeline, &bind);
				MemoryContextSwitchTo(o);
			}
			hb_bind_free_texts(&bind);
		}
		n += SPI_processed;
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
	*n_out = n;
	return x;
}

/* what store() passes write_tuning; the caller's role name is added */
#define HB_TUNING_VALUES 31

static void write_tuning(const char *name, Oid *types, Datum *values,
						 char *nulls);

/* NaN for "not this kind's figure": stored as NULL. */
#define MEASURES 10

/*
 * Feature groups of a pipeline model and what each costs to featurize,
 * timed on the sample's raw rows.  Timing a few hundred nanoseconds is
 * noisy: the declared cost class adds a small prior, which also breaks
 * ties between groups that time alike in favour of the declared cheaper.
 */
typedef struct GroupCosts
{
	HbPipelineDeps deps;
	double	   *group_ns;
	double		all_ns;
	char	  **label;
} GroupCosts;

static const double class_prior_ns[] = {1.0, 1.0, 10.0, 100.0};
static const char *const class_name[] = {"unknown", "cheap", "medium", "expensive"};

static bool
group_costs(HbCacheEntry *e, const RawSample *rs, GroupCosts *gc)
{
	const HbPipeline *p = e->pipeline;
	HbRawRows	rows = {rs->n, rs->num, rs->text};
	HbError		err = {0};

	memset(gc, 0, sizeof(*gc));
	if (p == NULL || rs->n == 0 || p->n_inputs == 0)
		return false;
	if (!hb_pipeline_deps(p, &gc->deps, &err))
		hb_report(&err, "cannot tune model", e->name);
	gc->group_ns = palloc0(sizeof(double) * HB_MAX_FEATURE_GROUPS);
	gc->label = palloc0(sizeof(char *) * HB_MAX_FEATURE_GROUPS);
	if (!hb_pipeline_group_costs(p, &gc->deps, &rows, gc->group_ns, &gc->all_ns, &err))
		hb_report(&err, "cannot time the featurization of model", e->name);
	for (int g = 0; g < gc->deps.n_groups; g++)
	{
		int			worst = HB_COST_UNKNOWN;
		int			nfeat = 0;
		StringInfoData buf;

		initStringInfo(&buf);
		for (int i = 0; i < p->n_inputs; i++)
			if (hb_pipeline_input_group(p, i) == g)
			{
				if ((int) p->inputs[i].cost > worst)
					worst = (int) p->inputs[i].cost;
				if (buf.len > 0)
					appendStringInfoChar(&buf, ',');
				appendStringInfoString(&buf, p->inputs[i].name);
			}
		for (int j = 0; j < p->n_features; j++)
			if (gc->deps.feat_groups[j] & (UINT64_C(1) << g))
				nfeat++;
		gc->group_ns[g] += class_prior_ns[worst];
		gc->label[g] = buf.data;
		ereport(NOTICE,
				(errmsg("hb_tune \"%s\": feature group \"%s\" (%s, %d features): featurizing costs %.3f us/row",
						e->name, buf.data, class_name[worst], nfeat,
						gc->group_ns[g] / 1000.0)));
	}
	return true;
}

/* An approximation's catalog form: its feature list and its doubles. */
static void
catalog_form(const HbApprox *a, Datum *feats, Datum *params)
{
	int			np = hb_approx_n_params(a);
	double	   *pv = palloc(sizeof(double) * (np + 1));
	Datum	   *fd = palloc(sizeof(Datum) * (a->n_feat + 1));
	Datum	   *pd = palloc(sizeof(Datum) * (np + 1));

	hb_approx_params(a, pv);
	for (int j = 0; j < a->n_feat; j++)
		fd[j] = Int32GetDatum(a->feat[j]);
	for (int j = 0; j < np; j++)
		pd[j] = Float8GetDatum(pv[j]);
	*feats = PointerGetDatum(construct_array(fd, a->n_feat, INT4OID, 4, true, TYPALIGN_INT));
	*params = PointerGetDatum(construct_array(pd, np, FLOAT8OID, 8, FLOAT8PASSBYVAL,
											  TYPALIGN_DOUBLE));
}

static void
store(FunctionCallInfo fcinfo, HbCacheEntry *e, const char *kind, int k,
	  const HbTuneSpec *spec, int32 seed, size_t n, const HbTuneResult *res,
	  const GroupCosts *gc)
{
	const HbTuneCandidate *ch = &res->cand[res->chosen];
	Oid			types[HB_TUNING_VALUES] = {TEXTOID, INT4OID, TEXTOID, INT4OID, FLOAT8OID, FLOAT8OID,
		INT4OID, INT8OID, INT8OID, INT4OID, TEXTOID, INT4OID, INT4ARRAYOID,
		FLOAT8ARRAYOID, FLOAT8OID, FLOAT8OID, TEXTARRAYOID, FLOAT8ARRAYOID,
		TEXTARRAYOID, FLOAT8ARRAYOID, FLOAT8OID,
	INT4OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID,
	INT4ARRAYOID, FLOAT8ARRAYOID, FLOAT8OID};
	Datum		v[HB_TUNING_VALUES];
	char		vnulls[HB_TUNING_VALUES];
	const HbApprox *ca = ch->approx;
	int			i = 0;
	Datum	   *ld,
			   *md,
				afeats,
				aparams;
	int			dims[2] = {res->n_cand, MEASURES};
	int			lbs[2] = {1, 1};
	bool	   *mnulls;

	catalog_form(ch->approx, &afeats, &aparams);
	ld = palloc(sizeof(Datum) * res->n_cand);
	md = palloc(sizeof(Datum) * res->n_cand * MEASURES);
	mnulls = palloc0(sizeof(bool) * res->n_cand * MEASURES);
	for (int i = 0; i < res->n_cand; i++)
	{
		const HbTuneCandidate *c = &res->cand[i];
		double		m[MEASURES] = {
			spec->kind == HB_TUNE_TOPK ? c->ratio : NAN,
			spec->kind == HB_TUNE_TOPK ? c->kept : NAN,
			spec->kind == HB_TUNE_CASCADE && isfinite(c->threshold) ? c->threshold : NAN,
			c->accuracy,
			spec->kind == HB_TUNE_CASCADE ? 1.0 - c->bound : c->bound,
			c->coverage,
			c->cost_ns / 1000.0,
			c->speedup,
			c->chosen ? 1.0 : 0.0,
			spec->n_groups > 0 ? c->featurize_ns / 1000.0 : NAN
		};

		ld[i] = CStringGetTextDatum(c->label);
		for (int j = 0; j < MEASURES; j++)
		{
			md[i * MEASURES + j] = Float8GetDatum(isnan(m[j]) ? 0.0 : m[j]);
			mnulls[i * MEASURES + j] = isnan(m[j]);
		}
	}

	memset(vnulls, ' ', sizeof(vnulls));
	v[i++] = CStringGetTextDatum(e->name);
	v[i++] = Int32GetDatum(e->version);
	v[i++] = CStringGetTextDatum(kind);
	v[i++] = Int32GetDatum(k);
	v[i++] = Float8GetDatum(spec->target);
	v[i++] = Float8GetDatum(spec->confidence);
	v[i++] = Int32GetDatum(seed);
	v[i++] = Int64GetDatum((int64) n);
	v[i++] = Int64GetDatum(res->n_eval);
	v[i++] = Int32GetDatum(res->chosen + 1);
	v[i++] = CStringGetTextDatum(ch->approx->kind == HB_APPROX_PREFIX ? "prefix" :
								 ch->approx->kind == HB_APPROX_TREES ? "trees" : "linear");
	v[i++] = Int32GetDatum(ch->approx->n_trees);
	v[i++] = afeats;
	v[i++] = aparams;
	v[i++] = Float8GetDatum(spec->kind == HB_TUNE_TOPK ? ch->tau : 0.0);
	v[i++] = Float8GetDatum(res->full_ns / 1000.0);
	v[i++] = PointerGetDatum(construct_array(ld, res->n_cand, TEXTOID, -1, false, TYPALIGN_INT));
	v[i++] = PointerGetDatum(construct_md_array(md, mnulls, 2, dims, lbs, FLOAT8OID, 8,
												FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	if (gc)
	{
		int			ng = gc->deps.n_groups;
		Datum	   *gl = palloc(sizeof(Datum) * (ng + 1));
		Datum	   *gv = palloc(sizeof(Datum) * (ng + 1));

		for (int g = 0; g < ng; g++)
		{
			gl[g] = CStringGetTextDatum(gc->label[g]);
			gv[g] = Float8GetDatum(gc->group_ns[g] / 1000.0);
		}
		v[i++] = PointerGetDatum(construct_array(gl, ng, TEXTOID, -1, false, TYPALIGN_INT));
		v[i++] = PointerGetDatum(construct_array(gv, ng, FLOAT8OID, 8, FLOAT8PASSBYVAL,
												 TYPALIGN_DOUBLE));
		v[i++] = Float8GetDatum(gc->all_ns / 1000.0);
	}
	else
	{
		/* no feature groups: their labels, costs and the total are NULL */
		for (int j = 0; j < 3; j++)
		{
			vnulls[i] = 'n';
			v[i++] = (Datum) 0;
		}
	}
	/* the second stage, if any */
	vnulls[i] = vnulls[i + 1] = vnulls[i + 2] = vnulls[i + 3] =
		ca->refine_trees > 0 ? ' ' : 'n';
	v[i++] = Int32GetDatum(ca->refine_trees);
	v[i++] = Float8GetDatum(ca->refine_scale);
	v[i++] = Float8GetDatum(ca->refine_shift);
	v[i++] = Float8GetDatum(ca->refine_slack);
	/* the cut relative to the bar, if any (top-K) */
	vnulls[i] = vnulls[i + 1] = vnulls[i + 2] =
		spec->kind == HB_TUNE_TOPK && hb_bar_cut_on(&ch->bar) ? ' ' : 'n';
	v[i++] = Float8GetDatum(ch->bar.slope);
	v[i++] = Float8GetDatum(ch->bar.floor);
	v[i++] = Float8GetDatum(ch->bar.margin);
	/* the gate, if any (top-K) */
	vnulls[i] = vnulls[i + 1] = vnulls[i + 2] = ca->gate != NULL ? ' ' : 'n';
	if (ca->gate != NULL)
	{
		catalog_form(ca->gate, &v[i], &v[i + 1]);
		i += 2;
		v[i++] = Float8GetDatum(ca->gate_slack);
	}
	else
	{
		v[i++] = (Datum) 0;
		v[i++] = (Datum) 0;
		v[i++] = (Datum) 0;
	}
	if (i != lengthof(v))
		elog(ERROR, "a tuning is stored from %d values, %d were given",
			 (int) lengthof(v), i);

	write_tuning(e->name, types, v, vnulls);
}

static void
stored_context(void *arg)
{
	errcontext("reading back the tuning hb_tune stored for model \"%s\"", (const char *) arg);
}

/*
 * What was stored is what every later query loads: read it back as they
 * do, so that a tuning they would refuse (an infinite parameter, say) is
 * never left behind: the statement fails and nothing stays.
 */
static void
check_stored(HbCacheEntry *e, const char *kind, int k)
{
	HbTuning	t;
	ErrorContextCallback cb;

	CommandCounterIncrement();
	PushCopiedSnapshot(ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	cb.callback = stored_context;
	cb.arg = (void *) e->name;
	cb.previous = error_context_stack;
	error_context_stack = &cb;
	if (!hb_tuning_load(e, kind, k, CurrentMemoryContext, &t))
		elog(ERROR, "the tuning just stored was not found");
	error_context_stack = cb.previous;
	PopActiveSnapshot();
}

/* the columns of hb_tune(), in order (sql/hbird--*.sql) */
#define HB_TUNE_COLS 12

Datum
hb_tune(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HbCacheEntry *e;
	char	   *kind;
	char	   *query;
	HbTuneSpec	spec = {0};
	HbTuneResult res;
	HbError		err = {0};
	int32		seed;
	int			k = 0;
	size_t		n;
	double	   *x;
	RawSample	rs;
	GroupCosts	gc;
	bool		have_groups;
	MemoryContext work,
				old;

	query = text_to_cstring(hb_require_text(fcinfo, 1, "sample query"));
	kind = text_to_cstring(hb_require_text(fcinfo, 2, "kind"));
	if (strcmp(kind, "topk") == 0)
		spec.kind = HB_TUNE_TOPK;
	else if (strcmp(kind, "cascade") == 0)
		spec.kind = HB_TUNE_CASCADE;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown tuning kind \"%s\"", kind),
				 errhint("Kinds are 'topk' and 'cascade'.")));
	if (spec.kind == HB_TUNE_TOPK)
	{
		if (PG_ARGISNULL(3))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("top-K tuning needs k"),
					 errhint("Pass the k of the queries to speed up, as in k => 10.")));
		k = PG_GETARG_INT32(3);
		if (k <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("k must be positive, not %d", k)));
	}
	else if (!PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k applies to top-K tuning only")));
	spec.k = k;
	spec.target = float_arg(fcinfo, 4, "target");
	spec.confidence = float_arg(fcinfo, 5, "confidence");
	seed = PG_ARGISNULL(6) ? 0 : PG_GETARG_INT32(6);
	spec.seed = (uint64) (uint32) seed;

	check_tuning_columns();
	e = hb_resolve_model_arg(fcinfo, 0);
	if (spec.kind == HB_TUNE_CASCADE && e->n_classes < 2)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" is a %s model; cascades need a classifier",
						e->name, hb_task_name(e->task))));
	if (spec.kind == HB_TUNE_TOPK && e->n_outputs != 1)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" has %d outputs; top-K ranks models with one score per row",
						e->name, e->n_outputs)));
	if (hb_plan_n_trees(e->plan) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" is not a tree ensemble; only tree ensembles are approximated",
						e->name)));

	/*
	 * Only who may change the model tunes it: checked (and the model's row
	 * locked) before the sample is read, and again when the result is
	 * written.
	 */
	{
		HbCatalogWrite w;

		hb_write_begin(&w, "tune a model");
		if (!hb_write_lock_model(&w, e->name, NULL))
			hb_no_such_model(e->name);
		hb_write_end(&w);
	}

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != HB_TUNE_COLS)
		elog(ERROR, "incorrect number of output columns of hb_tune");
	work = AllocSetContextCreate(CurrentMemoryContext, "hbird tune",
								 ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	x = read_sample(fcinfo, e, query, &n, &rs);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sample query of model \"%s\" returned no rows", e->name)));
	have_groups = group_costs(e, &rs, &gc);
	if (have_groups)
	{
		spec.n_groups = gc.deps.n_groups;
		spec.feature_groups = gc.deps.feat_groups;
		spec.group_ns = gc.group_ns;
		spec.featurize_ns = gc.all_ns;
	}
	if (!hb_tune_run(e->plan, x, n, &spec, progress_notice, e->name, &res, &err))
		hb_report(&err, "cannot tune model", e->name);

	if (res.chosen >= 0)
	{
		const HbTuneCandidate *c = &res.cand[res.chosen];

		if (c->speedup < 1.0)
			ereport(NOTICE,
					(errmsg("hb_tune \"%s\": the best configuration (%s) is expected to be %.2fx as fast as the full model",
							e->name, c->label, c->speedup)));
		store(fcinfo, e, kind, k, &spec, seed, n, &res, have_groups ? &gc : NULL);
		check_stored(e, kind, k);
		if (spec.kind == HB_TUNE_TOPK)
			ereport(NOTICE,
					(errmsg("hb_tune \"%s\": version %d now ranks top-%d through %s, re-scoring %.2f%% of the rows, expected %.1fx",
							e->name, e->version, k, c->label, 100.0 * c->coverage, c->speedup),
					 errdetail("Precision@%d is at least %g with confidence %g (lower bound %.4f from the %d best of %lld held-out rows) on inputs of at least %lld rows like the sample.",
							   k, spec.target, spec.confidence, c->bound, c->tail,
							   (long long) res.n_eval,
							   (long long) ceil((double) k * res.n_eval / c->tail))));
		else
			ereport(NOTICE,
					(errmsg("hb_tune \"%s\": version %d now cascades through %s, deciding %.1f%% of the rows cheaply, expected %.1fx",
							e->name, e->version, c->label, 100.0 * c->coverage, c->speedup),
					 errdetail("The accuracy loss is at most %g with confidence %g (upper bound %.5f on %lld held-out rows); SET hbird.cascade = on to use it.",
							   spec.target, spec.confidence, c->bound, (long long) res.n_eval)));
	}
	else
		ereport(WARNING,
				(errmsg("no configuration of model \"%s\" meets the target on this sample; nothing was stored",
						e->name),
				 errhint("A larger sample tightens the bounds; a looser target or confidence helps too.")));

	MemoryContextSwitchTo(old);
	for (int i = 0; i < res.n_cand; i++)
	{
		const HbTuneCandidate *c = &res.cand[i];
		Datum		v[HB_TUNE_COLS];
		bool		nulls[HB_TUNE_COLS] = {0};
		int			col = 0;
		bool		topk = spec.kind == HB_TUNE_TOPK;

		v[col++] = Int32GetDatum(i + 1);
		v[col++] = CStringGetTextDatum(c->label);
		nulls[col] = !topk;
		v[col++] = Float8GetDatum(c->ratio);
		nulls[col] = !topk;
		v[col++] = Int32GetDatum(c->kept);
		nulls[col] = topk || !isfinite(c->threshold);
		v[col++] = Float8GetDatum(c->threshold);
		v[col++] = Float8GetDatum(c->accuracy);
		v[col++] = Float8GetDatum(topk ? c->bound : 1.0 - c->bound);
		v[col++] = Float8GetDatum(c->coverage);
		v[col++] = Float8GetDatum(c->cost_ns / 1000.0);
		v[col++] = Float8GetDatum(c->speedup);
		v[col++] = BoolGetDatum(c->chosen);
		nulls[col] = !have_groups;
		v[col++] = Float8GetDatum(c->featurize_ns / 1000.0);
		Assert(col == HB_TUNE_COLS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	hb_tune_result_free(&res);
	if (have_groups)
		hb_pipeline_deps_free(&gc.deps);
	MemoryContextDelete(work);
	return (Datum) 0;
}

/* ---- writing and dropping tunings ---- */

/*
 * Store a tuning: the arguments in the order of the columns below (name,
 * version, kind, k, target, confidence, seed, sample_rows, eval_rows,
 * chosen candidate, approximation kind, trees, features, parameters,
 * cheap cut, full cost, candidate labels, measures, feature groups, group
 * costs, featurization cost, the second stage's trees, scale, shift and
 * slack, the cut relative to the bar's slope, floor and margin).  The caller must be able to change the
 * model (pg_owner.c); it is recorded as the tuner.
 */
static void
write_tuning(const char *name, Oid *types, Datum *values, char *nulls)
{
	HbCatalogWrite w;
	Oid			t[HB_TUNING_VALUES + 1];
	Datum		v[HB_TUNING_VALUES + 1];
	char		n[HB_TUNING_VALUES + 2];

	hb_write_begin(&w, "store a tuning");
	if (!hb_write_lock_model(&w, name, NULL))
		hb_no_such_model(name);
	{
		Oid			vt[2] = {TEXTOID, INT4OID};
		Datum		vv[2] = {values[0], values[1]};

		hb_write_sql("SELECT 1 FROM hbird.model_version WHERE name = $1 AND version = $2",
					 2, vt, vv, NULL, SPI_OK_SELECT);
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("model \"%s\" has no version %d", name,
							DatumGetInt32(values[1]))));
	}
	hb_write_sql("DELETE FROM hbird.tuning WHERE name = $1 AND version = $2 AND kind = $3 AND k = $4",
				 4, types, values, NULL, SPI_OK_DELETE);

	memcpy(t, types, sizeof(Oid) * HB_TUNING_VALUES);
	memcpy(v, values, sizeof(Datum) * HB_TUNING_VALUES);
	memcpy(n, nulls, HB_TUNING_VALUES);
	t[HB_TUNING_VALUES] = TEXTOID;
	v[HB_TUNING_VALUES] = CStringGetTextDatum(GetUserNameFromId(w.caller, false));
	n[HB_TUNING_VALUES] = ' ';
	n[HB_TUNING_VALUES + 1] = '\0';
	/* the chosen candidate's row of the measures supplies its figures */
	hb_write_sql(psprintf("WITH m AS (SELECT $18::float8[] AS m, $17::text[] AS l), "
						  "c AS (SELECT i, l[i] AS approximation, m[i][1] AS ratio, m[i][2]::integer AS kept, "
						  "       m[i][3] AS threshold, m[i][4] AS accuracy, m[i][5] AS accuracy_bound, "
						  "       m[i][6] AS coverage, m[i][7] AS cost_us, m[i][8] AS expected_speedup, "
						  "       m[i][9] = 1 AS chosen, "
						  "       CASE WHEN array_length(m, 2) >= 10 THEN m[i][10] END AS featurize_us "
						  "       FROM m, generate_series(1, array_length(l, 1)) AS i), "
						  "t AS (INSERT INTO hbird.tuning (name, version, kind, k, target, confidence, seed, "
						  "       sample_rows, eval_rows, approximation, approx_kind, approx_trees, "
						  "       approx_features, approx_params, ratio, kept, cheap_cut, threshold, "
						  "       accuracy, accuracy_bound, coverage, full_cost_us, approx_cost_us, "
						  "       expected_speedup, featurize_us, feature_groups, group_cost_us, "
						  "       refine_trees, refine_scale, refine_shift, refine_slack, "
						  "       bar_slope, bar_floor, bar_margin, gate_features, gate_params, gate_slack, "
						  "       tuned_by) "
						  "     SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, c.approximation, $11, $12, $13, $14, "
						  "       c.ratio, c.kept, CASE WHEN $3 = 'topk' THEN $15 END, c.threshold, "
						  "       c.accuracy, c.accuracy_bound, c.coverage, $16, c.cost_us, c.expected_speedup, "
						  "       $21, $19, $20, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32::text::%s "
						  "     FROM c WHERE c.i = $10 RETURNING 1) "
						  "INSERT INTO hbird.tuning_candidate (name, version, kind, k, candidate, approximation, "
						  "  ratio, kept, threshold, accuracy, accuracy_bound, coverage, cost_us, "
						  "  expected_speedup, chosen, featurize_us) "
						  "SELECT $1, $2, $3, $4, c.i, c.approximation, c.ratio, c.kept, c.threshold, "
						  "  c.accuracy, c.accuracy_bound, c.coverage, c.cost_us, c.expected_speedup, c.chosen, "
						  "  c.featurize_us "
						  "FROM c WHERE (SELECT count(*) FROM t) = 1",
						  hb_role_column_type("tuning", "tuned_by")),
				 HB_TUNING_VALUES + 1, t, v, n, SPI_OK_INSERT);
	if (SPI_processed == 0)
		elog(ERROR, "chosen candidate %d of the tuning of model \"%s\" does not exist",
			 DatumGetInt32(values[9]), name);
	hb_write_end(&w);
}

/*
 * hbird 0.2.0's SQL entry for storing a tuning, which anyone could call.
 * 0.3.0 drops it (hb_tune writes itself); the symbol stays so that an
 * older extension version still installs, and refuses.
 */
Datum
hb_tune_store(PG_FUNCTION_ARGS)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("hb_tune_store is not callable"),
			 errhint("hb_tune stores the tuning it chooses; ALTER EXTENSION hbird UPDATE removes this function.")));
	PG_RETURN_VOID();
}

Datum
hb_tune_drop(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(hb_require_text(fcinfo, 0, "model name"));
	Oid			t[2] = {TEXTOID, TEXTOID};
	Datum		v[2] = {CStringGetTextDatum(name), PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1)};
	char		nulls[3] = {' ', PG_ARGISNULL(1) ? 'n' : ' ', '\0'};
	HbCatalogWrite w;
	int			n;

	if (!PG_ARGISNULL(1))
	{
		char	   *kind = text_to_cstring(PG_GETARG_TEXT_PP(1));

		if (strcmp(kind, "topk") != 0 && strcmp(kind, "cascade") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown tuning kind \"%s\"", kind),
					 errhint("Kinds are 'topk' and 'cascade'; NULL drops both.")));
	}
	hb_write_begin(&w, "drop tunings");
	if (!hb_write_lock_model(&w, name, NULL))
		hb_no_such_model(name);
	n = hb_write_sql("DELETE FROM hbird.tuning WHERE name = $1 AND ($2::text IS NULL OR kind = $2)",
					 2, t, v, nulls, SPI_OK_DELETE);
	hb_write_end(&w);
	PG_RETURN_INT32(n);
}
