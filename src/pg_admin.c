/*
 * pg_admin.c
 *	  Model administration: upload, activate, drop, grant, revoke.
 *
 * These run as SECURITY DEFINER with search_path pinned to pg_catalog (see
 * the extension script), so their SQL is schema-qualified and immune to the
 * caller's search_path.  A model is parsed and compiled before anything is
 * written: a bad upload errors out with the catalog untouched, and the
 * transaction does the rest.  Every operation starts by locking the model's
 * row, which serialises concurrent changes of one model.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "hbird.h"

PG_FUNCTION_INFO_V1(hb_model_upload_bytea);
PG_FUNCTION_INFO_V1(hb_model_upload_text);
PG_FUNCTION_INFO_V1(hb_model_activate);
PG_FUNCTION_INFO_V1(hb_model_drop_all);
PG_FUNCTION_INFO_V1(hb_model_drop_version);
PG_FUNCTION_INFO_V1(hb_model_grant);
PG_FUNCTION_INFO_V1(hb_model_revoke);

/* The role on whose behalf the SECURITY DEFINER function runs. */
static Oid
calling_role(void)
{
	return GetOuterUserId();
}

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
	for (const char *c = name; *c; c++)
		if ((unsigned char) *c < 0x20)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("model name must not contain control characters")));
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

/* SPI helpers: run a statement with parameters, error on failure. */
static int
run_sql(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls,
		int expect)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, values, nulls,
										   false, 0);

	if (rc != expect)
		elog(ERROR, "hbird catalog statement failed (%s): %s",
			 SPI_result_code_string(rc), sql);
	return (int) SPI_processed;
}

/*
 * Lock a model's row; returns false if there is none.  *active gets the
 * active version (0 if none).
 */
static bool
lock_model(const char *name, int32 *active)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	bool		isnull;

	run_sql("SELECT active_version FROM hbird.model WHERE name = $1 FOR UPDATE",
			1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	*active = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull));
	if (isnull)
		*active = 0;
	return true;
}

static void
no_such_model(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("model \"%s\" does not exist", name)));
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

static void
sha256(const char *data, size_t len, uint8 *out)
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

static Datum
upload(FunctionCallInfo fcinfo, const char *bytes, size_t len)
{
	char	   *name = model_name_arg(fcinfo);
	HbFormat	format = HB_FORMAT_AUTO;
	ArrayType  *features = NULL;
	MemoryContext work;
	MemoryContext old;
	HbModel    *m = NULL;
	HbPlan	   *plan = NULL;
	HbError		err = {0};
	uint8		digest[HB_SHA256_LEN];
	char	   *image;
	size_t		image_len;
	int32		version;
	Datum	   *fnames;
	Datum	   *ftypes;
	Datum	   *fcosts;
	bool	   *fcost_nulls;
	int			n_listed;
	bool		isnull;

	if (!PG_ARGISNULL(2))
	{
		char	   *f = text_to_cstring(PG_GETARG_TEXT_PP(2));

		if (!hb_format_parse(f, &format))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown model format \"%s\"", f),
					 errhint("Known formats: auto, xgboost-json, xgboost-ubj, lightgbm-text, onnx.")));
	}
	if (len > (size_t) hb_max_model_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("model \"%s\" is %zu bytes, more than hbird.max_model_bytes (%d)",
						name, len, hb_max_model_bytes)));
	if (!PG_ARGISNULL(3))
		features = PG_GETARG_ARRAYTYPE_P(3);

	/* parse and compile first: nothing is written unless both succeed */
	work = AllocSetContextCreate(CurrentMemoryContext, "hbird upload",
								 ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
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
	if (!hb_model_image_write(m, &image, &image_len, &err))
		hb_report(&err, "could not compile model", name);
	sha256(bytes, len, digest);
	MemoryContextSwitchTo(old);

	/* what rows bind to: the features, or a pipeline's raw inputs */
	n_listed = m->pipeline ? m->pipeline->n_inputs : m->n_features;
	fnames = palloc(sizeof(Datum) * n_listed);
	ftypes = palloc(sizeof(Datum) * n_listed);
	fcosts = palloc(sizeof(Datum) * n_listed);
	fcost_nulls = palloc(sizeof(bool) * n_listed);
	for (int i = 0; i < n_listed; i++)
	{
		if (m->pipeline)
		{
			const HbInput *in = &m->pipeline->inputs[i];
			static const char *const costs[] = {NULL, "cheap", "medium", "expensive"};

			fnames[i] = CStringGetTextDatum(in->name);
			ftypes[i] = CStringGetTextDatum(in->type == HB_INPUT_TEXT ? "text" : "numeric");
			fcost_nulls[i] = costs[in->cost] == NULL;
			fcosts[i] = fcost_nulls[i] ? (Datum) 0 : CStringGetTextDatum(costs[in->cost]);
		}
		else
		{
			fnames[i] = CStringGetTextDatum(m->features[i].name);
			ftypes[i] = CStringGetTextDatum(feature_type_name(m->features[i].type));
			fcost_nulls[i] = true;
			fcosts[i] = (Datum) 0;
		}
	}

	SPI_connect();
	{
		Oid			t[3] = {TEXTOID, REGROLEOID};
		Datum		v[3] = {CStringGetTextDatum(name), ObjectIdGetDatum(calling_role())};

		run_sql("INSERT INTO hbird.model AS m (name, owner, last_version) "
				"VALUES ($1, $2, 1) "
				"ON CONFLICT (name) DO UPDATE SET last_version = m.last_version + 1 "
				"RETURNING last_version",
				2, t, v, NULL, SPI_OK_INSERT_RETURNING);
		version = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 1, &isnull));
	}
	{
		Oid			t[16] = {TEXTOID, INT4OID, TEXTOID, TEXTOID, TEXTOID,
							 INT4OID, INT4OID, INT4OID, INT4OID, INT4OID,
		TEXTARRAYOID, BYTEAOID, BYTEAOID, INT8OID, REGROLEOID, BYTEAOID};
		Datum		v[16];
		char		nulls[17] = "                ";
		bytea	   *body = palloc(VARHDRSZ + len);
		bytea	   *hash = palloc(VARHDRSZ + HB_SHA256_LEN);
		bytea	   *img = palloc_extended(VARHDRSZ + image_len, MCXT_ALLOC_HUGE);

		SET_VARSIZE(body, VARHDRSZ + len);
		memcpy(VARDATA(body), bytes, len);
		SET_VARSIZE(hash, VARHDRSZ + HB_SHA256_LEN);
		memcpy(VARDATA(hash), digest, HB_SHA256_LEN);

		v[0] = CStringGetTextDatum(name);
		v[1] = Int32GetDatum(version);
		v[2] = CStringGetTextDatum(hb_format_name(m->format));
		v[3] = CStringGetTextDatum(hb_task_name(m->task));
		v[4] = CStringGetTextDatum(m->objective ? m->objective : "");
		v[5] = Int32GetDatum(m->n_features);
		v[6] = Int32GetDatum(m->n_outputs);
		v[7] = Int32GetDatum(m->n_classes);
		v[8] = Int32GetDatum(m->estimator == HB_EST_TREES ? m->n_trees : 0);
		v[9] = Int32GetDatum(m->max_depth);
		v[10] = features ? PointerGetDatum(features) : (Datum) 0;
		if (!features)
			nulls[10] = 'n';
		v[11] = PointerGetDatum(body);
		v[12] = PointerGetDatum(hash);
		v[13] = Int64GetDatum((int64) len);
		v[14] = ObjectIdGetDatum(calling_role());
		SET_VARSIZE(img, VARHDRSZ + image_len);
		memcpy(VARDATA(img), image, image_len);
		v[15] = PointerGetDatum(img);
		run_sql("INSERT INTO hbird.model_version (name, version, format, task, objective, "
				"n_features, n_outputs, n_classes, n_trees, max_depth, feature_names, "
				"body, sha256, size_bytes, uploaded_by, image) "
				"VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6, $7, $8, $9, $10, $11, "
				"$12, $13, $14, $15, $16)",
				16, t, v, nulls, SPI_OK_INSERT);
	}
	{
		Oid			t[5] = {TEXTOID, INT4OID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID};
		Datum		v[5];
		int			dims[1] = {n_listed};
		int			lbs[1] = {1};

		v[0] = CStringGetTextDatum(name);
		v[1] = Int32GetDatum(version);
		v[2] = PointerGetDatum(construct_array(fnames, n_listed, TEXTOID,
											   -1, false, TYPALIGN_INT));
		v[3] = PointerGetDatum(construct_array(ftypes, n_listed, TEXTOID,
											   -1, false, TYPALIGN_INT));
		v[4] = PointerGetDatum(construct_md_array(fcosts, fcost_nulls, 1, dims, lbs,
												  TEXTOID, -1, false, TYPALIGN_INT));
		/* cost came with 0.2.0: a 0.1.0 catalog still takes other models */
		if (m->pipeline)
			run_sql("INSERT INTO hbird.model_feature (name, version, position, feature, type, cost) "
					"SELECT $1, $2, u.ord::integer, u.f, u.t, u.c "
					"FROM unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS u(f, t, c, ord)",
					5, t, v, NULL, SPI_OK_INSERT);
		else
			run_sql("INSERT INTO hbird.model_feature (name, version, position, feature, type) "
					"SELECT $1, $2, u.ord::integer, u.f, u.t "
					"FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS u(f, t, ord)",
					4, t, v, NULL, SPI_OK_INSERT);
	}
	{
		Oid			t[2] = {TEXTOID, INT4OID};
		Datum		v[2] = {CStringGetTextDatum(name), Int32GetDatum(version)};

		run_sql("UPDATE hbird.model SET active_version = $2 WHERE name = $1",
				2, t, v, NULL, SPI_OK_UPDATE);
	}
	SPI_finish();

	MemoryContextDelete(work);
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
	return upload(fcinfo, VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b));
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
	return upload(fcinfo, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
}

static bool
version_exists(const char *name, int32 version)
{
	Oid			t[2] = {TEXTOID, INT4OID};
	Datum		v[2] = {CStringGetTextDatum(name), Int32GetDatum(version)};

	run_sql("SELECT 1 FROM hbird.model_version WHERE name = $1 AND version = $2",
			2, t, v, NULL, SPI_OK_SELECT);
	return SPI_processed > 0;
}

Datum
hb_model_activate(PG_FUNCTION_ARGS)
{
	char	   *name = model_name_arg(fcinfo);
	int32		version = version_arg(fcinfo, 1);
	int32		active;

	SPI_connect();
	if (!lock_model(name, &active))
		no_such_model(name);
	if (!version_exists(name, version))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" has no version %d", name, version)));
	{
		Oid			t[2] = {TEXTOID, INT4OID};
		Datum		v[2] = {CStringGetTextDatum(name), Int32GetDatum(version)};

		run_sql("UPDATE hbird.model SET active_version = $2 WHERE name = $1",
				2, t, v, NULL, SPI_OK_UPDATE);
	}
	SPI_finish();
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

	SPI_connect();
	if (!lock_model(name, &active))
		no_such_model(name);
	dropped = run_sql("SELECT 1 FROM hbird.model_version WHERE name = $1",
					  1, t, v, NULL, SPI_OK_SELECT);
	run_sql("DELETE FROM hbird.model WHERE name = $1", 1, t, v, NULL,
			SPI_OK_DELETE);
	SPI_finish();
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

	SPI_connect();
	if (!lock_model(name, &active))
		no_such_model(name);
	if (run_sql("DELETE FROM hbird.model_version WHERE name = $1 AND version = $2",
				2, t, v, NULL, SPI_OK_DELETE) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" has no version %d", name, version)));

	if (active == version)
	{
		/* the newest remaining version takes over; none left, no model */
		int32		next;
		Datum		d;

		run_sql("SELECT max(version) FROM hbird.model_version WHERE name = $1",
				1, t, v, NULL, SPI_OK_SELECT);
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (isnull)
		{
			run_sql("DELETE FROM hbird.model WHERE name = $1", 1, t, v, NULL,
					SPI_OK_DELETE);
			ereport(NOTICE,
					(errmsg("model \"%s\" has no versions left and was dropped",
							name)));
		}
		else
		{
			next = DatumGetInt32(d);
			v[1] = Int32GetDatum(next);
			run_sql("UPDATE hbird.model SET active_version = $2 WHERE name = $1",
					2, t, v, NULL, SPI_OK_UPDATE);
			ereport(NOTICE,
					(errmsg("model \"%s\" now uses version %d", name, next)));
		}
	}
	SPI_finish();
	PG_RETURN_INT32(1);
}

/* 'public' (any case) means PUBLIC, stored as role 0. */
static Oid
grantee_arg(FunctionCallInfo fcinfo)
{
	char	   *role;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("role must not be null")));
	role = NameStr(*PG_GETARG_NAME(1));
	if (pg_strcasecmp(role, "public") == 0)
		return InvalidOid;
	return get_role_oid(role, false);
}

Datum
hb_model_grant(PG_FUNCTION_ARGS)
{
	char	   *name = model_name_arg(fcinfo);
	Oid			grantee = grantee_arg(fcinfo);
	int32		active;
	Oid			t[3] = {TEXTOID, REGROLEOID, REGROLEOID};
	Datum		v[3] = {CStringGetTextDatum(name), ObjectIdGetDatum(grantee),
	ObjectIdGetDatum(calling_role())};

	SPI_connect();
	if (!lock_model(name, &active))
		no_such_model(name);
	run_sql("INSERT INTO hbird.model_grant (name, grantee, granted_by) "
			"VALUES ($1, $2, $3) ON CONFLICT (name, grantee) DO NOTHING",
			3, t, v, NULL, SPI_OK_INSERT);
	SPI_finish();
	PG_RETURN_VOID();
}

Datum
hb_model_revoke(PG_FUNCTION_ARGS)
{
	char	   *name = model_name_arg(fcinfo);
	Oid			grantee = grantee_arg(fcinfo);
	int32		active;
	Oid			t[2] = {TEXTOID, REGROLEOID};
	Datum		v[2] = {CStringGetTextDatum(name), ObjectIdGetDatum(grantee)};

	SPI_connect();
	if (!lock_model(name, &active))
		no_such_model(name);
	run_sql("DELETE FROM hbird.model_grant WHERE name = $1 AND grantee = $2",
			2, t, v, NULL, SPI_OK_DELETE);
	SPI_finish();
	PG_RETURN_VOID();
}
