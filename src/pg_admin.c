/*
 * pg_admin.c
 *	  Model administration: upload, activate, drop, grant, revoke.
 *
 * These run with the caller's rights (SECURITY INVOKER, EXECUTE granted by
 * the DBA): the checks use the role executing, and the writes go through
 * pg_owner.c, which runs them as the catalog's owner with search_path
 * pinned.  A model is parsed and compiled before anything is written: a bad
 * upload errors out with the catalog untouched, and the transaction does
 * the rest.  Every operation starts by locking the model's row, which
 * serialises concurrent changes of one model, and checking that the caller
 * may change it (superusers and members of its owner role).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "hbird.h"
#include "pg_scaleout.h"

PG_FUNCTION_INFO_V1(hb_model_upload_bytea);
PG_FUNCTION_INFO_V1(hb_model_upload_text);
PG_FUNCTION_INFO_V1(hb_model_activate);
PG_FUNCTION_INFO_V1(hb_model_drop_all);
PG_FUNCTION_INFO_V1(hb_model_drop_version);
PG_FUNCTION_INFO_V1(hb_model_grant);
PG_FUNCTION_INFO_V1(hb_model_revoke);
PG_FUNCTION_INFO_V1(hb_model_reassign);

static char *
model_name_arg(FunctionCallInfo fcinfo)
{
	char	   *name = text_to_cstring(hb_require_text(fcinfo, 0, "model name"));

	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model name must not be empty")));
	if (strlen(name) > 200)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("model name is longer than 200 bytes")));
	return name;
}

static int32
version_arg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model version must not be null")));
	return PG_GETARG_INT32(argno);
}

static const char *
feature_type_name(HbFeatureType t)
{
	switch (t)
	{
		case HB_FEATURE_INTEGER:
			return "integer";
		case HB_FEATURE_CATEGORICAL:
			return "categorical";
		default:
			return "numeric";
	}
}

static char **
text_array_to_cstrings(ArrayType *arr, int *n, const char *what)
{
	Datum	   *elems;
	bool	   *nulls;
	char	  **out;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", what)));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, n);
	out = palloc0(sizeof(char *) * (*n + 1));
	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain nulls", what)));
		out[i] = TextDatumGetCString(elems[i]);
	}
	return out;
}

/*
 * Rows bind to columns by name, and a column name has at most
 * NAMEDATALEN - 1 bytes: a longer feature can be fed by an array only.
 */
static void
warn_long_names(const HbModel *m, const char *model)
{
	int			n = m->pipeline ? m->pipeline->n_inputs : m->n_features;

	for (int i = 0; i < n; i++)
	{
		const char *f = m->pipeline ? m->pipeline->inputs[i].name : m->features[i].name;

		if (strlen(f) >= NAMEDATALEN)
			ereport(WARNING,
					(errcode(ERRCODE_NAME_TOO_LONG),
					 errmsg("%s \"%s\" of model \"%s\" is longer than %d bytes and can never bind to a column",
							m->pipeline ? "input" : "feature", f, model, NAMEDATALEN - 1),
					 errhint("Rows bind to columns by name: upload with features => ARRAY[...] of shorter names, or score arrays.")));
	}
}

/* The SHA-256 of data, into out (HB_SHA256_LEN bytes). */
void
hb_sha256(const char *data, size_t len, uint8 *out)
{
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);

	if (pg_cryptohash_init(ctx) < 0)
		elog(ERROR, "could not compute SHA-256: %s", pg_cryptohash_error(ctx));
	/* in pieces, so that a large upload stays cancellable */
	for (size_t off = 0; off < len; off += 1024 * 1024)
	{
		size_t		n = Min(len - off, 1024 * 1024);

		CHECK_FOR_INTERRUPTS();
		if (pg_cryptohash_update(ctx, (const uint8 *) data + off, n) < 0)
			elog(ERROR, "could not compute SHA-256: %s", pg_cryptohash_error(ctx));
	}
	if (pg_cryptohash_final(ctx, out, PG_SHA256_DIGEST_LENGTH) < 0)
		elog(ERROR, "could not compute SHA-256: %s", pg_cryptohash_error(ctx));
	pg_cryptohash_free(ctx);
}

/*
 * A model version parsed, validated and compiled, ready to be written:
 * everything the catalog rows need, and nothing of the IR.
 */
struct HbVersionRows
{
	struct varlena *bytes;		/* as uploaded, stored verbatim */
	size_t		len;
	ArrayType  *features;		/* the upload's features argument, or NULL */
	uint8		digest[HB_SHA256_LEN];
	bytea	   *image;
	const char *format;
	const char *task;
	char	   *objective;
	int32		n_features;
	int32		n_outputs;
	int32		n_classes;
	int32		n_trees;
	int32		max_depth;
	bool		has_pipeline;
	int			n_listed;		/* what rows bind to: features or inputs */
	Datum	   *fnames;
	Datum	   *ftypes;
	Datum	   *fcosts;
	bool	   *fcost_nulls;
	MemoryContext work;			/* the parse's scratch, freed when done */
};

/*
 * Parse, validate and compile the model in varlena arg (a bytea or a text
 * argument: the same representation, stored as given) before anything is
 * written.  A model near hbird.max_model_bytes must not need several times
 * its size: the argument is stored as it came, the compiled plan (built
 * only to prove the model compiles) and the IR are freed as soon as they
 * are no longer needed, and the image is turned into a bytea in place.
 * digest is arg's SHA-256 when the caller has it already (the bytes are
 * hashed once), else NULL.
 */
HbVersionRows *
hb_version_prepare(const char *name, struct varlena *arg, HbFormat format,
				   ArrayType *features, const uint8 *digest)
{
	const char *bytes = VARDATA_ANY(arg);
	size_t		len = VARSIZE_ANY_EXHDR(arg);
	HbVersionRows *r = palloc0(sizeof(HbVersionRows));
	MemoryContext old;
	HbModel    *m = NULL;
	HbPlan	   *plan = NULL;
	HbError		err = {0};
	char	   *image;
	size_t		image_len;

	if (len > (size_t) hb_max_model_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("model \"%s\" is %zu bytes, more than hbird.max_model_bytes (%d)",
						name, len, hb_max_model_bytes)));
	r->bytes = arg;
	r->len = len;
	r->features = features;
	r->work = AllocSetContextCreate(CurrentMemoryContext, "hbird upload",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(r->work);
	if (!hb_model_read(bytes, len, format, &m, &err))
		hb_report(&err, "invalid model", name);
	if (features)
	{
		int			n;
		char	  **names = text_array_to_cstrings(features, &n, "features");

		if (!hb_model_set_feature_names(m, names, n, &err))
			hb_report(&err, "invalid features for model", name);
	}
	if (!hb_plan_build(m, &plan, &err))
		hb_report(&err, "could not compile model", name);
	hb_plan_free(plan);
	if (!hb_model_image_write(m, &image, &image_len, &err))
		hb_report(&err, "could not compile model", name);
	/* the image as a bytea, in place */
	image = repalloc_huge(image, image_len + VARHDRSZ);
	memmove(image + VARHDRSZ, image, image_len);
	SET_VARSIZE(image, image_len + VARHDRSZ);
	r->image = (bytea *) image;
	if (digest)
		memcpy(r->digest, digest, HB_SHA256_LEN);
	else
		hb_sha256(bytes, len, r->digest);
	MemoryContextSwitchTo(old);

	/* what rows bind to: the features, or a pipeline's raw inputs */
	r->n_listed = m->pipeline ? m->pipeline->n_inputs : m->n_features;
	r->fnames = palloc(sizeof(Datum) * r->n_listed);
	r->ftypes = palloc(sizeof(Datum) * r->n_listed);
	r->fcosts = palloc(sizeof(Datum) * r->n_listed);
	r->fcost_nulls = palloc(sizeof(bool) * r->n_listed);
	for (int i = 0; i < r->n_listed; i++)
	{
		if (m->pipeline)
		{
			const HbInput *in = &m->pipeline->inputs[i];
			static const char *const costs[] = {NULL, "cheap", "medium", "expensive"};

			r->fnames[i] = CStringGetTextDatum(in->name);
			r->ftypes[i] = CStringGetTextDatum(in->type == HB_INPUT_TEXT ? "text" : "numeric");
			r->fcost_nulls[i] = costs[in->cost] == NULL;
			r->fcosts[i] = r->fcost_nulls[i] ? (Datum) 0 : CStringGetTextDatum(costs[in->cost]);
		}
		else
		{
			r->fnames[i] = CStringGetTextDatum(m->features[i].name);
			r->ftypes[i] = CStringGetTextDatum(feature_type_name(m->features[i].type));
			r->fcost_nulls[i] = true;
			r->fcosts[i] = (Datum) 0;
		}
	}
	warn_long_names(m, name);
	r->format = hb_format_name(m->format);
	r->task = hb_task_name(m->task);
	r->objective = pstrdup(m->objective ? m->objective : "");
	r->n_features = m->n_features;
	r->n_outputs = m->n_outputs;
	r->n_classes = m->n_classes;
	r->n_trees = m->estimator == HB_EST_TREES ? m->n_trees : 0;
	r->max_depth = m->max_depth;
	/* everything the rows need is copied out: the IR can go */
	r->has_pipeline = m->pipeline != NULL;
	hb_model_free(m);
	return r;
}

/* The SHA-256 of the prepared version's bytes. */
const uint8 *
hb_version_sha256(const HbVersionRows *r)
{
	return r->digest;
}

/*
 * Write version (model_version and model_feature rows) of the locked
 * model name, inside hb_write_begin/hb_write_end; frees the preparation.
 */
void
hb_version_insert(HbCatalogWrite *w, const char *name, HbVersionRows *r,
				  int32 version)
{
	{
		Oid			t[16] = {TEXTOID, INT4OID, TEXTOID, TEXTOID, TEXTOID,
							 INT4OID, INT4OID, INT4OID, INT4OID, INT4OID,
		TEXTARRAYOID, BYTEAOID, BYTEAOID, INT8OID, TEXTOID, BYTEAOID};
		Datum		v[16];
		char		nulls[17] = "                ";
		bytea	   *hash = palloc(VARHDRSZ + HB_SHA256_LEN);

		SET_VARSIZE(hash, VARHDRSZ + HB_SHA256_LEN);
		memcpy(VARDATA(hash), r->digest, HB_SHA256_LEN);

		v[0] = CStringGetTextDatum(name);
		v[1] = Int32GetDatum(version);
		v[2] = CStringGetTextDatum(r->format);
		v[3] = CStringGetTextDatum(r->task);
		v[4] = CStringGetTextDatum(r->objective);
		v[5] = Int32GetDatum(r->n_features);
		v[6] = Int32GetDatum(r->n_outputs);
		v[7] = Int32GetDatum(r->n_classes);
		v[8] = Int32GetDatum(r->n_trees);
		v[9] = Int32GetDatum(r->max_depth);
		v[10] = r->features ? PointerGetDatum(r->features) : (Datum) 0;
		if (!r->features)
			nulls[10] = 'n';
		v[11] = PointerGetDatum(r->bytes);
		v[12] = PointerGetDatum(hash);
		v[13] = Int64GetDatum((int64) r->len);
		v[14] = CStringGetTextDatum(GetUserNameFromId(w->caller, false));
		v[15] = PointerGetDatum(r->image);
		hb_write_sql_large(psprintf("INSERT INTO hbird.model_version (name, version, format, task, objective, "
									"n_features, n_outputs, n_classes, n_trees, max_depth, feature_names, "
									"body, sha256, size_bytes, uploaded_by, image) "
									"VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6, $7, $8, $9, $10, $11, "
									"$12, $13, $14, $15::text::%s, $16)",
									hb_role_column_type("model_version", "uploaded_by")),
						   16, t, v, nulls, SPI_OK_INSERT);
	}
	{
		Oid			t[5] = {TEXTOID, INT4OID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID};
		Datum		v[5];
		int			dims[1] = {r->n_listed};
		int			lbs[1] = {1};

		v[0] = CStringGetTextDatum(name);
		v[1] = Int32GetDatum(version);
		v[2] = PointerGetDatum(construct_array(r->fnames, r->n_listed, TEXTOID,
											   -1, false, TYPALIGN_INT));
		v[3] = PointerGetDatum(construct_array(r->ftypes, r->n_listed, TEXTOID,
											   -1, false, TYPALIGN_INT));
		v[4] = PointerGetDatum(construct_md_array(r->fcosts, r->fcost_nulls, 1, dims, lbs,
												  TEXTOID, -1, false, TYPALIGN_INT));
		/* cost came with 0.2.0: a 0.1.0 catalog still takes other models */
		if (r->has_pipeline)
			hb_write_sql("INSERT INTO hbird.model_feature (name, version, position, feature, type, cost) "
						 "SELECT $1, $2, u.ord::integer, u.f, u.t, u.c "
						 "FROM unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS u(f, t, c, ord)",
						 5, t, v, NULL, SPI_OK_INSERT);
		else
			hb_write_sql("INSERT INTO hbird.model_feature (name, version, position, feature, type) "
						 "SELECT $1, $2, u.ord::integer, u.f, u.t "
						 "FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS u(f, t, ord)",
						 4, t, v, NULL, SPI_OK_INSERT);
	}
	MemoryContextDelete(r->work);
}

static HbFormat
format_arg(FunctionCallInfo fcinfo, int argno)
{
	HbFormat	format = HB_FORMAT_AUTO;

	if (!PG_ARGISNULL(argno))
	{
		char	   *f = text_to_cstring(PG_GETARG_TEXT_PP(argno));

		if (!hb_format_parse(f, &format))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown model format \"%s\"", f),
					 errhint("Known formats: auto, xgboost-json, xgboost-ubj, lightgbm-text, onnx.")));
	}
	return format;
}

/* Upload the model in varlena arg as the model's next version. */
static Datum
upload(FunctionCallInfo fcinfo, struct varlena *arg)
{
	size_t		len = VARSIZE_ANY_EXHDR(arg);
	char	   *name = model_name_arg(fcinfo);
	HbFormat	format = format_arg(fcinfo, 2);
	ArrayType  *features = NULL;
	HbVersionRows *r;
	int32		version;
	bool		isnull;
	bool		exists;
	HbCatalogWrite w;

	if (len > (size_t) hb_max_model_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("model \"%s\" is %zu bytes, more than hbird.max_model_bytes (%d)",
						name, len, hb_max_model_bytes)));
	if (!PG_ARGISNULL(3))
		features = PG_GETARG_ARRAYTYPE_P(3);

	/*
	 * Who may upload under this name, before the work of parsing: the
	 * owner of an existing model (whose row stays locked), anyone allowed
	 * to run this function for a new one.
	 */
	hb_write_begin(&w, "upload a model");
	exists = hb_write_lock_model(&w, name, NULL);
	hb_write_end(&w);
	if (!exists)
		hb_check_new_model_name(name);

	/* parse and compile first: nothing is written unless both succeed */
	r = hb_version_prepare(name, arg, format, features, NULL);

	hb_write_begin(&w, "upload a model");
	if (!exists)
	{
		Oid			t[2] = {TEXTOID, REGROLEOID};
		Datum		v[2] = {CStringGetTextDatum(name), ObjectIdGetDatum(w.caller)};

		/* a concurrent upload may create it first: then its owner decides */
		hb_write_sql("INSERT INTO hbird.model (name, owner, last_version) "
					 "VALUES ($1, $2, 0) ON CONFLICT (name) DO NOTHING",
					 2, t, v, NULL, SPI_OK_INSERT);
	}
	if (!hb_write_lock_model(&w, name, NULL))
		elog(ERROR, "model \"%s\" vanished while being uploaded", name);
	{
		Oid			t[1] = {TEXTOID};
		Datum		v[1] = {CStringGetTextDatum(name)};

		hb_write_sql("UPDATE hbird.model SET last_version = last_version + 1 "
					 "WHERE name = $1 RETURNING last_version",
					 1, t, v, NULL, SPI_OK_UPDATE_RETURNING);
		version = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 1, &isnull));
	}
	hb_version_insert(&w, name, r, version);
	{
		Oid			t[2] = {TEXTOID, INT4OID};
		Datum		v[2] = {CStringGetTextDatum(name), Int32GetDatum(version)};

		hb_write_sql("UPDATE hbird.model SET active_version = $2 WHERE name = $1",
					 2, t, v, NULL, SPI_OK_UPDATE);
	}
	hb_write_end(&w);
	PG_RETURN_INT32(version);
}

Datum
hb_model_upload_bytea(PG_FUNCTION_ARGS)
{
	bytea	   *b;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model bytes must not be null")));
	b = PG_GETARG_BYTEA_PP(1);
	return upload(fcinfo, b);
}

Datum
hb_model_upload_text(PG_FUNCTION_ARGS)
{
	text	   *t;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model text must not be null")));
	t = PG_GETARG_TEXT_PP(1);
	/* a model document is UTF-8; text comes in the database's encoding */
	if (GetDatabaseEncoding() != PG_UTF8)
	{
		char	   *u = pg_server_to_any(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), PG_UTF8);

		if (u != VARDATA_ANY(t))
			t = cstring_to_text(u);
	}
	return upload(fcinfo, t);
}

static bool
version_exists(const char *name, int32 version)
{
	Oid			t[2] = {TEXTOID, INT4OID};
	Datum		v[2] = {CStringGetTextDatum(name), Int32GetDatum(version)};

	hb_write_sql("SELECT 1 FROM hbird.model_version WHERE name = $1 AND version = $2",
				 2, t, v, NULL, SPI_OK_SELECT);
	return SPI_processed > 0;
}

/* Start changing an existing model: locked, and the caller may change it. */
static void
begin_change(HbCatalogWrite *w, const char *what, const char *name,
			 int32 *active)
{
	hb_write_begin(w, what);
	if (!hb_write_lock_model(w, name, active))
		hb_no_such_model(name);
}

Datum
hb_model_activate(PG_FUNCTION_ARGS)
{
	char	   *name = model_name_arg(fcinfo);
	int32		version = version_arg(fcinfo, 1);
	int32		active;
	HbCatalogWrite w;

	begin_change(&w, "activate a model version", name, &active);
	if (!version_exists(name, version))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" has no version %d", name, version)));
	{
		Oid			t[2] = {TEXTOID, INT4OID};
		Datum		v[2] = {CStringGetTextDatum(name), Int32GetDatum(version)};

		hb_write_sql("UPDATE hbird.model SET active_version = $2 WHERE name = $1",
					 2, t, v, NULL, SPI_OK_UPDATE);
	}
	hb_write_end(&w);
	PG_RETURN_VOID();
}

Datum
hb_model_drop_all(PG_FUNCTION_ARGS)
{
	char	   *name = model_name_arg(fcinfo);
	int32		active;
	int			dropped;
	Oid			t[1] = {TEXTOID};
	Datum		v[1] = {CStringGetTextDatum(name)};
	HbCatalogWrite w;

	begin_change(&w, "drop a model", name, &active);
	dropped = hb_write_sql("SELECT 1 FROM hbird.model_version WHERE name = $1",
						   1, t, v, NULL, SPI_OK_SELECT);
	hb_write_sql("DELETE FROM hbird.model WHERE name = $1", 1, t, v, NULL,
				 SPI_OK_DELETE);
	hb_write_end(&w);
	PG_RETURN_INT32(dropped);
}

Datum
hb_model_drop_version(PG_FUNCTION_ARGS)
{
	char	   *name = model_name_arg(fcinfo);
	int32		version = version_arg(fcinfo, 1);
	int32		active;
	Oid			t[2] = {TEXTOID, INT4OID};
	Datum		v[2] = {CStringGetTextDatum(name), Int32GetDatum(version)};
	bool		isnull;
	HbCatalogWrite w;

	begin_change(&w, "drop a model version", name, &active);
	if (hb_write_sql("DELETE FROM hbird.model_version WHERE name = $1 AND version = $2",
					 2, t, v, NULL, SPI_OK_DELETE) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" has no version %d", name, version)));

	if (active == version)
	{
		/* the newest remaining version takes over; none left, no model */
		int32		next;
		Datum		d;

		hb_write_sql("SELECT max(version) FROM hbird.model_version WHERE name = $1",
					 1, t, v, NULL, SPI_OK_SELECT);
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (isnull)
		{
			hb_write_sql("DELETE FROM hbird.model WHERE name = $1", 1, t, v, NULL,
						 SPI_OK_DELETE);
			ereport(NOTICE,
					(errmsg("model \"%s\" has no versions left and was dropped",
							name)));
		}
		else
		{
			next = DatumGetInt32(d);
			v[1] = Int32GetDatum(next);
			hb_write_sql("UPDATE hbird.model SET active_version = $2 WHERE name = $1",
						 2, t, v, NULL, SPI_OK_UPDATE);
			ereport(NOTICE,
					(errmsg("model \"%s\" now uses version %d", name, next)));
		}
	}
	hb_write_end(&w);
	PG_RETURN_INT32(1);
}

/*
 * 'public' means PUBLIC, stored as role 0: lower case only, as PostgreSQL
 * reserves it (has_table_privilege and the like), since a role "Public"
 * or "PUBLIC" may exist, and hb_model_receive reads the name so too.
 */
static Oid
role_arg(FunctionCallInfo fcinfo, int argno, bool public_ok)
{
	char	   *role;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("role must not be null")));
	role = NameStr(*PG_GETARG_NAME(argno));
	if (public_ok && strcmp(role, "public") == 0)
		return InvalidOid;
	return get_role_oid(role, false);
}

Datum
hb_model_grant(PG_FUNCTION_ARGS)
{
	char	   *name = model_name_arg(fcinfo);
	Oid			grantee = role_arg(fcinfo, 1, true);
	int32		active;
	HbCatalogWrite w;
	Oid			t[3] = {TEXTOID, REGROLEOID, TEXTOID};
	Datum		v[3];

	begin_change(&w, "grant a model", name, &active);
	v[0] = CStringGetTextDatum(name);
	v[1] = ObjectIdGetDatum(grantee);
	v[2] = CStringGetTextDatum(GetUserNameFromId(w.caller, false));
	hb_write_sql(psprintf("INSERT INTO hbird.model_grant (name, grantee, granted_by) "
						  "VALUES ($1, $2, $3::text::%s) ON CONFLICT (name, grantee) DO NOTHING",
						  hb_role_column_type("model_grant", "granted_by")),
				 3, t, v, NULL, SPI_OK_INSERT);
	hb_write_end(&w);
	PG_RETURN_VOID();
}

Datum
hb_model_revoke(PG_FUNCTION_ARGS)
{
	char	   *name = model_name_arg(fcinfo);
	Oid			grantee = role_arg(fcinfo, 1, true);
	int32		active;
	Oid			t[2] = {TEXTOID, REGROLEOID};
	Datum		v[2] = {CStringGetTextDatum(name), ObjectIdGetDatum(grantee)};
	HbCatalogWrite w;

	begin_change(&w, "revoke a model", name, &active);
	hb_write_sql("DELETE FROM hbird.model_grant WHERE name = $1 AND grantee = $2",
				 2, t, v, NULL, SPI_OK_DELETE);
	hb_write_end(&w);
	PG_RETURN_VOID();
}

/*
 * Give a model another owner, as ALTER ... OWNER TO does: the caller must
 * be able to change the model and be a member of the new owner role
 * (superusers may do both).  REASSIGN OWNED does this for all of a role's
 * models (pg_owner.c).
 */
Datum
hb_model_reassign(PG_FUNCTION_ARGS)
{
	char	   *name = model_name_arg(fcinfo);
	Oid			owner = role_arg(fcinfo, 1, false);
	int32		active;
	Oid			t[2] = {TEXTOID, REGROLEOID};
	Datum		v[2] = {CStringGetTextDatum(name), ObjectIdGetDatum(owner)};
	HbCatalogWrite w;

	begin_change(&w, "reassign a model", name, &active);
	if (!superuser_arg(w.caller) && !is_member_of_role(w.caller, owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be member of role \"%s\"", GetUserNameFromId(owner, false)),
				 errdetail("Only members of a role can make it the owner of model \"%s\".", name)));
	hb_write_sql("UPDATE hbird.model SET owner = $2 WHERE name = $1",
				 2, t, v, NULL, SPI_OK_UPDATE);
	hb_write_end(&w);
	PG_RETURN_VOID();
}
