/*
 * pg_pinned.c
 *	  The pinned scoring functions (hb_predict_pinned and its kin): the form
 *	  of a scoring call that a coordinator ships to its shards.
 *
 * The planner (pg_pushdown.c) rewrites hb_predict('m', t) over a foreign
 * table into hb_predict_pinned('m', <version>, <sha256>, <server>,
 * '{c1,c2,...}', t.c1, t.c2, ...), which postgres_fdw deparses into the
 * shard's SQL.  What must hold:
 *
 *	- the row binds by the column names carried in the call, as the
 *	  coordinator's row would bind, never by position: the values become a
 *	  row of those names and the plain form's binding takes it;
 *	- the model is the version the coordinator planned with: the active
 *	  version where the call runs must have that number and SHA-256, or the
 *	  call fails with an error naming the server and both versions (a
 *	  silently different answer is the one outcome not allowed);
 *	- the answer is exact: a tuned cascade is not used, as the coordinator
 *	  only ships calls when its own session does not use one.
 *
 *	- the values are read as the coordinator reads them: its foreign
 *	  table may declare a column with another type than the shard's
 *	  (numeric(6,1) over a float8, float8 over a real).  postgres_fdw
 *	  fetches a value as text in its session (extra_float_digits 3) and
 *	  the coordinator reads that text with the declared type's input
 *	  function and typmod: float8 0.04999999999999999 becomes 0.0.  So the
 *	  columns argument also carries the declared types, and a value of
 *	  another type or typmod goes the same way here, through its output
 *	  function and the declared type's input function (hb_pinned_read):
 *	  a cast would not give the same value (0.04999999999999999 casts to
 *	  0.1, real 0.1 to 0.10000000149011612 where the text "0.1" reads as
 *	  0.1).  This holds for every form that evaluates the call here,
 *	  postgres_fdw's own (a shipped sum or filter) included.
 *
 * Given its arguments the answer is fixed, which is why the functions are
 * IMMUTABLE: postgres_fdw ships no other kind.  The batching scan
 * (pg_scan_exec.c) evaluates the same calls in batches through
 * hb_pinned_resolve.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_type.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "hbird.h"
#include "pg_scaleout.h"

PG_FUNCTION_INFO_V1(hb_predict_pinned);
PG_FUNCTION_INFO_V1(hb_predict_proba_pinned);
PG_FUNCTION_INFO_V1(hb_predict_margin_pinned);
PG_FUNCTION_INFO_V1(hb_predict_class_pinned);
PG_FUNCTION_INFO_V1(hb_predict_targets_pinned);

/* the plain forms, which do the scoring (pg_predict.c, pg_class.c) */
extern Datum hb_predict_record(PG_FUNCTION_ARGS);
extern Datum hb_predict_array(PG_FUNCTION_ARGS);
extern Datum hb_predict_proba_record(PG_FUNCTION_ARGS);
extern Datum hb_predict_proba_array(PG_FUNCTION_ARGS);
extern Datum hb_predict_margin_record(PG_FUNCTION_ARGS);
extern Datum hb_predict_margin_array(PG_FUNCTION_ARGS);
extern Datum hb_predict_class_record(PG_FUNCTION_ARGS);
extern Datum hb_predict_class_array(PG_FUNCTION_ARGS);
extern Datum hb_predict_targets_record(PG_FUNCTION_ARGS);
extern Datum hb_predict_targets_array(PG_FUNCTION_ARGS);

#define PIN_VALUES 5			/* the first value argument */

/* "shard "s1"", or how this server would be recognised when unnamed */
static char *
server_words(const char *origin)
{
	const char *cluster;

	if (origin != NULL && origin[0] != '\0')
		return psprintf("shard \"%s\"", origin);
	cluster = GetConfigOption("cluster_name", true, false);
	if (cluster != NULL && cluster[0] != '\0')
		return psprintf("server \"%s\"", cluster);
	return psprintf("the server on port %d", PostPortNumber);
}

static void
sha_hex(const uint8 *sha, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < HB_SHA256_LEN; i++)
	{
		out[2 * i] = hex[sha[i] >> 4];
		out[2 * i + 1] = hex[sha[i] & 15];
	}
	out[2 * HB_SHA256_LEN] = '\0';
}

/* The active version's SHA-256 as 64 lower-case hex digits. */
char *
hb_sha256_hex(const uint8 *sha)
{
	char	   *s = palloc(2 * HB_SHA256_LEN + 1);

	sha_hex(sha, s);
	return s;
}

/*
 * What a pinned call pins: the version's SHA-256 and, when the upload
 * named the features, the first 16 hex digits of the SHA-256 of those
 * names (they decide how a row binds, and the same bytes can be uploaded
 * with other names on a shard), as "<sha256>+<names>".
 */
char *
hb_pin_identity(const uint8 *sha, const char *names_key)
{
	uint8		names[HB_SHA256_LEN];
	char		hex[2 * HB_SHA256_LEN + 1];

	if (names_key == NULL)
		return hb_sha256_hex(sha);
	hb_sha256(names_key, strlen(names_key), names);
	sha_hex(names, hex);
	return psprintf("%s+%.16s", hb_sha256_hex(sha), hex);
}

/*
 * The active version here (version, sha, feature names) must be the pinned
 * one; else an error that names the server and both versions.
 */
void
hb_pin_check(const char *name, int32 version, const uint8 *sha,
			 const char *names_key, int32 pin_version, const char *pin_sha,
			 const char *origin)
{
	char	   *have = hb_pin_identity(sha, names_key);

	if (version == pin_version && pin_sha != NULL &&
		pg_strcasecmp(have, pin_sha) == 0)
		return;
	if (version == pin_version && pin_sha != NULL &&
		pg_strncasecmp(have, pin_sha, 2 * HB_SHA256_LEN) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" on %s is version %d with other feature names than the coordinator's",
						name, server_words(origin), version),
				 errdetail("The same bytes were uploaded here with other feature names than on the coordinator, and the names decide how a row binds."),
				 errhint("Drop version %d here with hb_model_drop(%s, %d), then run hb_model_distribute(%s) on the coordinator.",
						 version, quote_literal_cstr(name), version,
						 quote_literal_cstr(name))));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("model \"%s\" on %s is at version %d (sha256 %.12s), but the coordinator scores version %d (sha256 %.12s)",
					name, server_words(origin), version, have, pin_version,
					pin_sha ? pin_sha : "?"),
			 errhint("Run hb_model_distribute(%s) on the coordinator; hb_model_shards() shows every shard's version.",
					 quote_literal_cstr(name))));
}

static void pinned_missing(const char *name, int32 pin_version,
						   const char *pin_sha, const char *origin)
			pg_attribute_noreturn();

static void
pinned_missing(const char *name, int32 pin_version, const char *pin_sha,
			   const char *origin)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("model \"%s\" does not exist on %s, but the coordinator scores version %d (sha256 %.12s)",
					name, server_words(origin), pin_version,
					pin_sha ? pin_sha : "?"),
			 errhint("Run hb_model_distribute(%s) on the coordinator.",
					 quote_literal_cstr(name))));
}

/*
 * The right to score on the shard, of the role the coordinator's user
 * mapping connects as.  A grant made here lasts until the next
 * hb_model_distribute, which makes the grants the coordinator's: the hint
 * says where a grant that lasts is made.
 */
static void
pinned_privilege(const HbCatalogRef *ref, const char *origin)
{
	const char *role;

	if (hb_may_score(ref))
		return;
	role = GetUserNameFromId(GetUserId(), false);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to score model \"%s\" on %s",
					ref->name, server_words(origin)),
			 errdetail("The coordinator's user mapping connects as role \"%s\" here.", role),
			 errhint("Grants come from the coordinator: there the model's owner can run hb_model_grant(%s, %s) (the role must exist there too), then hb_model_distribute(%s).",
					 quote_literal_cstr(ref->name), quote_literal_cstr(role),
					 quote_literal_cstr(ref->name))));
}

HbCacheEntry *
hb_pinned_resolve(const char *name, int32 pin_version, const char *pin_sha,
				  const char *origin)
{
	HbCatalogRef ref;

	if (!hb_catalog_lookup(name, &ref))
		pinned_missing(name, pin_version, pin_sha, origin);
	hb_pin_check(name, ref.version, ref.sha256, ref.names_key, pin_version, pin_sha,
				 origin);
	pinned_privilege(&ref, origin);
	return hb_cache_acquire(&ref);
}

/* a constant argument of a pinned call, or NULL */
static Const *
const_arg(FuncExpr *f, int n)
{
	Node	   *a = list_nth(f->args, n);

	return IsA(a, Const) && !((Const *) a)->constisnull ? (Const *) a : NULL;
}

/*
 * A pinned call in a query level that reads a foreign table, as the
 * planner sees it (after views are expanded and SQL functions inlined).
 * postgres_fdw ships such a call to the shard whenever its arguments can
 * go (a column of the foreign table among the values gives the strings an
 * input collation), and the shard then checks the right of the user this
 * one is mapped to.  So whoever wrote the call (the planner's pinning, the
 * query itself, a view, a function), the right to score is checked here,
 * as the role planning, before the call can leave; the plan depends on
 * that role (pg_pushdown.c).  A name that is not a constant cannot be
 * checked, and the planner never pins one: refused.
 */
void
hb_pinned_check_shipped(FuncExpr *f)
{
	Node	   *name = linitial(f->args);
	HbCatalogRef ref;
	char	   *s;

	if (!IsA(name, Const))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the model name of %s over a foreign table must be a constant",
						get_func_name(f->funcid)),
				 errhint("Write hb_predict and its kin: the planner pins them to the shards itself.")));
	if (((Const *) name)->constisnull)
		return;					/* a null name: the call's own error */
	s = TextDatumGetCString(((Const *) name)->constvalue);
	if (!hb_catalog_lookup(s, &ref))
	{
		Const	   *v = const_arg(f, 1),
				   *sha = const_arg(f, 2),
				   *origin = const_arg(f, 3);

		pinned_missing(s, v ? DatumGetInt32(v->constvalue) : 0,
					   sha ? TextDatumGetCString(sha->constvalue) : NULL,
					   origin ? TextDatumGetCString(origin->constvalue) : "");
	}
	hb_check_score_privilege(&ref);
}

/* ---- the row-at-a-time functions ---- */

typedef enum PinKind
{
	PIN_PREDICT,
	PIN_PROBA,
	PIN_MARGIN,
	PIN_CLASS,
	PIN_TARGETS
} PinKind;

static const PGFunction plain_record[] = {
	hb_predict_record, hb_predict_proba_record, hb_predict_margin_record,
	hb_predict_class_record, hb_predict_targets_record
};
static const PGFunction plain_array[] = {
	hb_predict_array, hb_predict_proba_array, hb_predict_margin_array,
	hb_predict_class_array, hb_predict_targets_array
};

/* Per call site: the plain function's own call site, the row's shape. */
typedef struct PinnedSite
{
	FmgrInfo	plain;			/* its fn_extra is the plain form's state */
	bool		by_name;		/* columns given: a row of those names */
	int			nvals;
	TupleDesc	desc;			/* by_name: the names, the values' types */
	HbPinRead  *read;			/* by_name: values read as declared, or NULL */
	Datum	   *values;
	bool	   *nulls;
	char	   *origin;
	int32		version;
	char	   *sha;
	char	   *name;			/* the model name of the last row */
	size_t		name_len;
	HbCacheEntry *checked;		/* the entry last found to be the pinned one */
} PinnedSite;

static char *
text_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	return text_to_cstring(hb_require_text(fcinfo, argno, what));
}

/*
 * How a pinned call's values are read where their types are not the ones
 * the coordinator declares (the top of the file): per value, whether it
 * is converted, and the functions that convert it.
 */
struct HbPinRead
{
	int			nvals;
	bool	   *convert;
	FmgrInfo   *out;			/* the value's output function */
	FmgrInfo   *in;				/* the declared type's input function */
	Oid		   *ioparam;
	int32	   *typmod;			/* the declared typmod */
};

/*
 * Can a column of this type be read on a shard as the coordinator reads
 * it?  A built-in type only: a shard may not have a domain or type of the
 * coordinator's, or have one of that name over another type.  Not a
 * length-limited string or bit string either, whose too-long values the
 * coordinator's read refuses (those are read as they are, as before).
 */
bool
hb_pin_reads_as(Oid type, int32 typmod)
{
	if (type >= FirstGenbkiObjectId)
		return false;
	return typmod < 0 ||
		(type != BPCHAROID && type != VARCHAROID &&
		 type != BITOID && type != VARBITOID);
}

/*
 * The columns argument of a pinned call over n columns: their names and
 * the types they are declared with ('' for one read as it is), as a
 * two-dimensional array of the names and then the types.  (A
 * one-dimensional array of names alone reads every value as it is.)
 */
ArrayType *
hb_pin_columns(Datum *names, const Oid *types, const int32 *typmods, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * 2 * Max(n, 1));
	int			dims[2] = {2, n};
	int			lbs[2] = {1, 1};

	for (int i = 0; i < n; i++)
	{
		d[i] = names[i];
		d[n + i] = CStringGetTextDatum(hb_pin_reads_as(types[i], typmods[i]) ?
									   format_type_extended(types[i], typmods[i],
															FORMAT_TYPE_TYPEMOD_GIVEN) : "");
	}
	return construct_md_array(d, NULL, 2, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT);
}

/*
 * The row a pinned call's values bind as: a tuple descriptor (not blessed)
 * of the column names in cols, which must be as many as the nvals values,
 * and the values' types (InvalidOid where the call's type is unknown) and
 * typmods, or the declared types where cols gives them and a value must
 * be read as one (*read, NULL where none is: hb_pinned_read).
 */
TupleDesc
hb_pinned_desc(ArrayType *cols, int nvals, const Oid *types, const int32 *typmods,
			   HbPinRead **read)
{
	Datum	   *names;
	bool	   *nn;
	int			n;
	int			ncols;
	TupleDesc	desc;
	HbPinRead  *r = NULL;

	*read = NULL;
	if (ARR_NDIM(cols) > 2 || (ARR_NDIM(cols) == 2 && ARR_DIMS(cols)[0] != 2))
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("columns must be an array of names, or of names and then their types")));
	deconstruct_array(cols, TEXTOID, -1, false, TYPALIGN_INT, &names, &nn, &n);
	ncols = ARR_NDIM(cols) == 2 ? n / 2 : n;
	if (ncols != nvals)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a pinned call has %d column names for %d values",
						ncols, nvals)));
	desc = CreateTemplateTupleDesc(ncols);
	for (int i = 0; i < ncols; i++)
	{
		Oid			type = types[i];
		int32		typmod = -1;

		if (nn[i] || (ncols < n && nn[ncols + i]))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("columns must not contain nulls")));
		if (!OidIsValid(type))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("could not determine the type of value %d of a pinned call",
							i + 1)));
		if (ncols < n && VARSIZE_ANY_EXHDR(DatumGetPointer(names[ncols + i])) > 0)
		{
			Oid			decl;
			int32		decl_typmod;
			Oid			fn;
			bool		varlena;

			parseTypeString(TextDatumGetCString(names[ncols + i]), &decl, &decl_typmod, false);
			if (decl != type || (decl_typmod >= 0 && decl_typmod != typmods[i]))
			{
				if (r == NULL)
				{
					r = palloc0(sizeof(HbPinRead));
					r->nvals = ncols;
					r->convert = palloc0(sizeof(bool) * ncols);
					r->out = palloc0(sizeof(FmgrInfo) * ncols);
					r->in = palloc0(sizeof(FmgrInfo) * ncols);
					r->ioparam = palloc0(sizeof(Oid) * ncols);
					r->typmod = palloc0(sizeof(int32) * ncols);
				}
				r->convert[i] = true;
				getTypeOutputInfo(type, &fn, &varlena);
				fmgr_info(fn, &r->out[i]);
				getTypeInputInfo(decl, &fn, &r->ioparam[i]);
				fmgr_info(fn, &r->in[i]);
				r->typmod[i] = decl_typmod;
				type = decl;
				typmod = decl_typmod;
			}
		}
		TupleDescInitEntry(desc, i + 1, TextDatumGetCString(names[i]), type, typmod, 0);
	}
	*read = r;
	return desc;
}

/*
 * A row of a pinned call's values read as the coordinator reads them
 * (hb_pinned_desc's read), in place, in the current memory context.
 */
void
hb_pinned_read(const HbPinRead *r, Datum *values, const bool *nulls)
{
	for (int i = 0; i < r->nvals; i++)
		if (r->convert[i] && !nulls[i])
			values[i] = InputFunctionCall(&r->in[i],
										  OutputFunctionCall(&r->out[i], values[i]),
										  r->ioparam[i], r->typmod[i]);
}

/* The typmod of argument i of a call, -1 where it is not known. */
int32
hb_arg_typmod(FmgrInfo *flinfo, int i)
{
	Node	   *e = flinfo->fn_expr;

	if (e == NULL || !IsA(e, FuncExpr) || list_length(((FuncExpr *) e)->args) <= i)
		return -1;
	return exprTypmod((Node *) list_nth(((FuncExpr *) e)->args, i));
}

/*
 * Whether a value of type t can be a pinned call's one array (columns NULL):
 * an array or a domain over one.  Its elements are checked where the array
 * binds (hb_array_row).
 */
bool
hb_pin_array_type(Oid t)
{
	return OidIsValid(t) && OidIsValid(get_element_type(getBaseType(t)));
}

static PinnedSite *
site_prepare(FunctionCallInfo fcinfo, PinKind kind)
{
	PinnedSite *s = (PinnedSite *) fcinfo->flinfo->fn_extra;
	MemoryContext old;
	int			nargs = PG_NARGS();

	if (s != NULL)
		return s;
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("pinned model version must not be null")));
	old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	s = palloc0(sizeof(PinnedSite));
	s->version = PG_GETARG_INT32(1);
	s->sha = text_arg(fcinfo, 2, "pinned sha256");
	s->origin = PG_ARGISNULL(3) ? pstrdup("") : text_to_cstring(PG_GETARG_TEXT_PP(3));
	s->nvals = nargs - PIN_VALUES;
	s->by_name = !PG_ARGISNULL(4);
	if (s->nvals < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a pinned call needs the row's values")));
	if (s->by_name)
	{
		Oid		   *types = palloc(sizeof(Oid) * s->nvals);
		int32	   *typmods = palloc(sizeof(int32) * s->nvals);

		for (int i = 0; i < s->nvals; i++)
		{
			types[i] = get_fn_expr_argtype(fcinfo->flinfo, PIN_VALUES + i);
			typmods[i] = hb_arg_typmod(fcinfo->flinfo, PIN_VALUES + i);
		}
		s->desc = hb_pinned_desc(PG_GETARG_ARRAYTYPE_P(4), s->nvals, types, typmods,
								 &s->read);
		pfree(types);
		pfree(typmods);
		s->desc = BlessTupleDesc(s->desc);
		s->values = palloc(sizeof(Datum) * s->nvals);
		s->nulls = palloc(sizeof(bool) * s->nvals);
	}
	else
	{
		/* the plain array form reads the value as an array: it must be one */
		Oid			t = get_fn_expr_argtype(fcinfo->flinfo, PIN_VALUES);

		if (s->nvals != 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a pinned call without column names takes one array")));
		if (!hb_pin_array_type(t))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("a pinned call without column names takes one array, not %s",
							OidIsValid(t) ? format_type_be(t) : "a value of unknown type")));
	}
	/* not looked up in pg_proc: the plain form is this library's own */
	MemSet(&s->plain, 0, sizeof(FmgrInfo));
	s->plain.fn_addr = s->by_name ? plain_record[kind] : plain_array[kind];
	s->plain.fn_oid = InvalidOid;
	s->plain.fn_nargs = 2;
	s->plain.fn_mcxt = fcinfo->flinfo->fn_mcxt;
	MemoryContextSwitchTo(old);
	fcinfo->flinfo->fn_extra = s;
	return s;
}

/*
 * The model name of this row, made a C string only when it is not the
 * previous row's (a call site's name is nearly always a constant).
 */
static const char *
site_name(FunctionCallInfo fcinfo, PinnedSite *s)
{
	text	   *t = hb_require_text(fcinfo, 0, "model name");
	size_t		len = VARSIZE_ANY_EXHDR(t);

	if (s->name == NULL || s->name_len != len ||
		memcmp(s->name, VARDATA_ANY(t), len) != 0)
	{
		char	   *name = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, len + 1);

		memcpy(name, VARDATA_ANY(t), len);
		name[len] = '\0';
		if (s->name != NULL)
			pfree(s->name);
		s->name = name;
		s->name_len = len;
	}
	return s->name;
}

typedef struct PinContext
{
	PinnedSite *site;
	const char *name;
} PinContext;

/* Errors of the plain form (no such model, ...) say whose call it was. */
static void
pin_error_context(void *arg)
{
	PinContext *c = arg;

	errcontext("pinned call for %s, where the coordinator scores version %d of model \"%s\"",
			   server_words(c->site->origin), c->site->version, c->name);
}

/*
 * Pinned calls run by this backend, so far: the planner hook compares it
 * before and after planning to see a call computed while planning (a
 * constant folded, pg_pushdown.c).
 */
uint64		hb_pinned_runs = 0;

static Datum
pinned(FunctionCallInfo fcinfo, PinKind kind)
{
	PinnedSite *s = site_prepare(fcinfo, kind);
	LOCAL_FCINFO(plain, 2);
	HbCallState *st;
	ErrorContextCallback errcb;
	PinContext	pc;
	Datum		result;
	bool		cascade = hb_cascade_on;

	hb_pinned_runs++;
	pc.site = s;
	pc.name = site_name(fcinfo, s);
	errcb.callback = pin_error_context;
	errcb.arg = &pc;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	InitFunctionCallInfoData(*plain, &s->plain, 2, InvalidOid, NULL, NULL);
	plain->args[0] = fcinfo->args[0];
	if (s->by_name)
	{
		HeapTuple	tup;

		for (int i = 0; i < s->nvals; i++)
		{
			s->values[i] = PG_GETARG_DATUM(PIN_VALUES + i);
			s->nulls[i] = PG_ARGISNULL(PIN_VALUES + i);
		}
		if (s->read)
			hb_pinned_read(s->read, s->values, s->nulls);
		tup = heap_form_tuple(s->desc, s->values, s->nulls);
		plain->args[1].value = HeapTupleGetDatum(tup);
		plain->args[1].isnull = false;
	}
	else
		plain->args[1] = fcinfo->args[PIN_VALUES];

	/*
	 * no such model here, or no right to score it: say whose call it was,
	 * in the message itself
	 */
	if (s->checked == NULL)
	{
		HbCatalogRef ref;

		if (!hb_catalog_lookup(pc.name, &ref))
			(void) hb_pinned_resolve(pc.name, s->version, s->sha, s->origin);
		pinned_privilege(&ref, s->origin);
	}
	/* the model the plain form will score with: the pinned one? */
	st = hb_call_prepare(plain, 0, kind == PIN_PROBA);
	if (st->entry != s->checked)
	{
		hb_pin_check(pc.name, st->entry->version, st->entry->sha256,
					 st->entry->names_key,
					 s->version, s->sha, s->origin);
		s->checked = st->entry;
	}

	if (plain->args[1].isnull)
	{
		error_context_stack = errcb.previous;
		PG_RETURN_NULL();
	}
	/* exact, as the coordinator asked: no cascade */
	if (cascade)
	{
		hb_cascade_on = false;
		PG_TRY();
		{
			result = FunctionCallInvoke(plain);
		}
		PG_FINALLY();
		{
			hb_cascade_on = cascade;
		}
		PG_END_TRY();
	}
	else
		result = FunctionCallInvoke(plain);
	error_context_stack = errcb.previous;
	if (plain->isnull)
		PG_RETURN_NULL();
	return result;
}

Datum
hb_predict_pinned(PG_FUNCTION_ARGS)
{
	return pinned(fcinfo, PIN_PREDICT);
}

Datum
hb_predict_proba_pinned(PG_FUNCTION_ARGS)
{
	return pinned(fcinfo, PIN_PROBA);
}

Datum
hb_predict_margin_pinned(PG_FUNCTION_ARGS)
{
	return pinned(fcinfo, PIN_MARGIN);
}

Datum
hb_predict_class_pinned(PG_FUNCTION_ARGS)
{
	return pinned(fcinfo, PIN_CLASS);
}

Datum
hb_predict_targets_pinned(PG_FUNCTION_ARGS)
{
	return pinned(fcinfo, PIN_TARGETS);
}
