/*
 * pg_scoring_funcs.c
 *	  Which of hbird's functions a function OID is: a scoring call (and
 *	  its kind: value, probabilities, margins, class, targets; row or
 *	  array; plain or pinned), a scoring aggregate, a batched function, or
 *	  none of them; and the SQL name of each kind's functions.
 *
 * The planner steps (pg_scan_plan.c, pg_pushdown.c, pg_partsplit.c) all ask
 * this, so it sits below them and calls no other glue file.  A function is
 * hbird's when it is a C function of this library with one of the symbols
 * below, whatever its name or schema, so a function of the same name
 * elsewhere is never taken for one.  Answers are cached per backend; any
 * change to pg_proc clears the cache.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "hbird.h"
#include "pg_scan.h"

typedef struct CallKindEntry
{
	Oid			funcid;			/* hash key */
	HbCallKind	kind;
	bool		is_array;
	HbFuncRole	role;
	Oid			row_funcid;		/* an aggregate: the function of one row */
	bool		pinned;			/* hb_*_pinned (pg_pinned.c) */
} CallKindEntry;

static HTAB *call_kinds = NULL;

static const struct
{
	const char *symbol;
	HbCallKind	kind;
	bool		is_array;
	HbFuncRole	role;
}			scoring_symbols[] =
{
	{"hb_predict_record", HB_CALL_PREDICT, false, HB_ROLE_CALL},
	{"hb_predict_array", HB_CALL_PREDICT, true, HB_ROLE_CALL},
	{"hb_predict_proba_record", HB_CALL_PROBA, false, HB_ROLE_CALL},
	{"hb_predict_proba_array", HB_CALL_PROBA, true, HB_ROLE_CALL},
	{"hb_predict_margin_record", HB_CALL_MARGIN, false, HB_ROLE_CALL},
	{"hb_predict_margin_array", HB_CALL_MARGIN, true, HB_ROLE_CALL},
	{"hb_predict_class_record", HB_CALL_CLASS, false, HB_ROLE_CALL},
	{"hb_predict_class_array", HB_CALL_CLASS, true, HB_ROLE_CALL},
	{"hb_predict_targets_record", HB_CALL_TARGETS, false, HB_ROLE_CALL},
	{"hb_predict_targets_array", HB_CALL_TARGETS, true, HB_ROLE_CALL},
	/* aggregates, by their transition functions */
	{"hb_predict_agg_sfunc", HB_CALL_PREDICT, false, HB_ROLE_AGG},
	{"hb_predict_class_agg_sfunc", HB_CALL_CLASS, false, HB_ROLE_AGG},
	{"hb_predict_targets_agg_sfunc", HB_CALL_TARGETS, false, HB_ROLE_AGG},
	{"hb_predict_batch", HB_CALL_PREDICT, false, HB_ROLE_BATCH},
	{"hb_predict_class_batch", HB_CALL_CLASS, false, HB_ROLE_BATCH},
	{"hb_predict_targets_batch", HB_CALL_TARGETS, false, HB_ROLE_BATCH},
	/* pinned forms: is_array depends on the call (columns NULL) */
	{"hb_predict_pinned", HB_CALL_PREDICT, false, HB_ROLE_CALL},
	{"hb_predict_proba_pinned", HB_CALL_PROBA, false, HB_ROLE_CALL},
	{"hb_predict_margin_pinned", HB_CALL_MARGIN, false, HB_ROLE_CALL},
	{"hb_predict_class_pinned", HB_CALL_CLASS, false, HB_ROLE_CALL},
	{"hb_predict_targets_pinned", HB_CALL_TARGETS, false, HB_ROLE_CALL},
};

/*
 * The SQL names of each kind's functions: the row-at-a-time call, the
 * aggregate (only some kinds have one) and the pinned form.
 */
static const struct
{
	const char *row;
	const char *agg;
	const char *pinned;
}			call_names[] =
{
	[HB_CALL_NONE] = {"hb_predict", NULL, NULL},
	[HB_CALL_PREDICT] = {"hb_predict", "hb_predict_agg", "hb_predict_pinned"},
	[HB_CALL_PROBA] = {"hb_predict_proba", NULL, "hb_predict_proba_pinned"},
	[HB_CALL_MARGIN] = {"hb_predict_margin", NULL, "hb_predict_margin_pinned"},
	[HB_CALL_CLASS] = {"hb_predict_class", "hb_predict_class_agg",
	"hb_predict_class_pinned"},
	[HB_CALL_TARGETS] = {"hb_predict_targets", "hb_predict_targets_agg",
	"hb_predict_targets_pinned"},
};

/*
 * The function a call of that kind stands for, as checks and errors name
 * it: the aggregate's name when agg and the kind has one, else the
 * row-at-a-time function's.
 */
const char *
hb_call_function_name(HbCallKind kind, bool agg)
{
	if ((unsigned) kind >= lengthof(call_names))
		kind = HB_CALL_NONE;
	return agg && call_names[kind].agg ? call_names[kind].agg : call_names[kind].row;
}

/* The SQL name of the pinned form of a kind's call; NULL for none. */
const char *
hb_pinned_function_name(HbCallKind kind)
{
	if ((unsigned) kind >= lengthof(call_names))
		return NULL;
	return call_names[kind].pinned;
}

static void
call_kinds_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	if (call_kinds != NULL)
	{
		hash_destroy(call_kinds);
		call_kinds = NULL;
	}
}

static CallKindEntry *scoring_entry(Oid funcid);

/* The entry of one of scoring_symbols that a C function of hbird's is. */
static int
symbol_of(HeapTuple proctup)
{
	Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(proctup);
	bool		isnull;
	Datum		bin;
	char	   *path;
	size_t		len;
	char	   *sym;

	if (proc->prolang != ClanguageId)
		return -1;
	bin = SysCacheGetAttr(PROCOID, proctup, Anum_pg_proc_probin, &isnull);
	if (isnull)
		return -1;
	path = TextDatumGetCString(bin);
	len = strlen(path);
	/* '$libdir/hbird', or a full path to it */
	if (!(len >= 5 && strcmp(path + len - 5, "hbird") == 0 &&
		  (len == 5 || path[len - 6] == '/')))
		return -1;
	sym = TextDatumGetCString(SysCacheGetAttr(PROCOID, proctup, Anum_pg_proc_prosrc, &isnull));
	if (isnull)
		return -1;
	for (int i = 0; i < lengthof(scoring_symbols); i++)
		if (strcmp(sym, scoring_symbols[i].symbol) == 0)
			return i;
	return -1;
}

/*
 * The function that scores one row as an aggregate of that kind does
 * (hb_predict for hb_predict_agg, ...), beside it in its schema.
 */
static Oid
row_function(Oid nsp, HbCallKind kind)
{
	const char *name = hb_call_function_name(kind, false);
	Oid			argtypes[2] = {TEXTOID, RECORDOID};
	char	   *nspname = get_namespace_name(nsp);
	Oid			f;
	bool		is_array;

	if (nspname == NULL)
		return InvalidOid;
	f = LookupFuncName(list_make2(makeString(nspname), makeString(pstrdup(name))),
					   2, argtypes, true);
	/* it must be hbird's own, of the same kind */
	if (!OidIsValid(f) || scoring_entry(f)->role != HB_ROLE_CALL ||
		hb_scoring_call(f, &is_array) != kind || is_array)
		return InvalidOid;
	return f;
}

/*
 * What a function is to the planner hook: one of hbird's scoring
 * functions (a C function of this library with one of the symbols above),
 * an aggregate whose transition function is one of them, or nothing.
 * Cached per backend; any change to pg_proc clears it.
 *
 * The answer is worked out before it is entered: reading the catalog may
 * process invalidations, which destroy the cache (call_kinds_invalidate),
 * so no entry may be held across those reads.
 */
static CallKindEntry *
scoring_entry(Oid funcid)
{
	CallKindEntry *ent;
	CallKindEntry answer;
	bool		found;
	HeapTuple	tup;

	if (call_kinds != NULL)
	{
		ent = hash_search(call_kinds, &funcid, HASH_FIND, NULL);
		if (ent != NULL)
			return ent;
	}
	answer.funcid = funcid;
	answer.kind = HB_CALL_NONE;
	answer.is_array = false;
	answer.role = HB_ROLE_NONE;
	answer.row_funcid = InvalidOid;
	answer.pinned = false;
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (HeapTupleIsValid(tup))
	{
		int			i = -1;

		if (((Form_pg_proc) GETSTRUCT(tup))->prokind == PROKIND_AGGREGATE)
		{
			HeapTuple	aggtup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(funcid));

			if (HeapTupleIsValid(aggtup))
			{
				HeapTuple	transtup = SearchSysCache1(PROCOID,
													   ObjectIdGetDatum(((Form_pg_aggregate) GETSTRUCT(aggtup))->aggtransfn));

				if (HeapTupleIsValid(transtup))
				{
					i = symbol_of(transtup);
					if (i >= 0 && scoring_symbols[i].role != HB_ROLE_AGG)
						i = -1;
					ReleaseSysCache(transtup);
				}
				ReleaseSysCache(aggtup);
			}
		}
		else
		{
			i = symbol_of(tup);
			if (i >= 0 && scoring_symbols[i].role == HB_ROLE_AGG)
				i = -1;
		}
		if (i >= 0)
		{
			answer.kind = scoring_symbols[i].kind;
			answer.is_array = scoring_symbols[i].is_array;
			answer.role = scoring_symbols[i].role;
			answer.pinned = strstr(scoring_symbols[i].symbol, "_pinned") != NULL;
		}
		if (answer.role == HB_ROLE_AGG)
			answer.row_funcid = row_function(((Form_pg_proc) GETSTRUCT(tup))->pronamespace,
											 answer.kind);
		ReleaseSysCache(tup);
	}

	if (call_kinds == NULL)
	{
		static bool registered = false;
		HASHCTL		ctl;

		/* once per backend, as ri_triggers.c registers its own */
		if (!registered)
		{
			CacheRegisterSyscacheCallback(PROCOID, call_kinds_invalidate, (Datum) 0);
			registered = true;
		}

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(CallKindEntry);
		ctl.hcxt = TopMemoryContext;
		call_kinds = hash_create("hbird scoring functions", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	ent = hash_search(call_kinds, &funcid, HASH_ENTER, &found);
	*ent = answer;
	return ent;
}

/* A function that scores the row it is given, with its kind; else HB_CALL_NONE. */
HbCallKind
hb_scoring_call(Oid funcid, bool *is_array)
{
	CallKindEntry *ent = scoring_entry(funcid);

	if (ent->role != HB_ROLE_CALL)
	{
		*is_array = false;
		return HB_CALL_NONE;
	}
	*is_array = ent->is_array;
	return ent->kind;
}

/* Is funcid one of the pinned scoring functions? */
bool
hb_pinned_function(Oid funcid)
{
	return scoring_entry(funcid)->pinned;
}

HbFuncRole
hb_scoring_role(Oid funcid, HbCallKind *kind)
{
	CallKindEntry *ent = scoring_entry(funcid);

	*kind = ent->kind;
	return ent->role;
}

/*
 * The function that scores one row as the scoring aggregate aggfnoid does
 * (hb_predict for hb_predict_agg), beside it in its schema; InvalidOid for
 * any other function, or when that function is missing.
 */
Oid
hb_scoring_row_function(Oid aggfnoid)
{
	return scoring_entry(aggfnoid)->row_funcid;
}
