/*
 * pg_shards.c
 *	  Models on every node (docs/scale-out.md): hb_model_distribute on the
 *	  coordinator, hb_model_receive on a shard, and hb_model_shards, the
 *	  check of every shard's versions.
 *
 * A shard is a postgres_fdw server whose extensions option lists hbird
 * (pg_shard_map.c): exactly the servers the planner ships scoring calls to
 * (pg_pushdown.c).
 * The model travels through the foreign servers themselves, with the
 * caller's user mappings, over postgres_fdw's own connections: the remote
 * work is part of the remote transactions postgres_fdw opens for the
 * coordinator's transaction and commits just before it (and rolls back
 * with it), so a distribution that fails on one shard leaves no shard
 * changed.  What must hold:
 *
 *	- only the model's owner (its members) and superusers distribute it;
 *	  the checks use the role executing, nothing runs in a
 *	  security-restricted operation, and each shard applies its own rules
 *	  again (hb_model_receive: the same as hb_model_upload);
 *	- a version keeps its number everywhere, and a version number never
 *	  names other bytes: a shard holding a different version under that
 *	  number refuses it;
 *	- the caller needs USAGE on each server, as for creating a foreign
 *	  table on it.
 *
 * postgres_fdw's connection functions are found in its library at first
 * use (hbird does not need postgres_fdw otherwise); their signatures are
 * those of PostgreSQL 15's contrib/postgres_fdw/postgres_fdw.h.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"

#include "hbird.h"
#include "pg_scaleout.h"

PG_FUNCTION_INFO_V1(hb_model_distribute);
PG_FUNCTION_INFO_V1(hb_model_receive);
PG_FUNCTION_INFO_V1(hb_model_shards);

static int
server_name_cmp(const ListCell *a, const ListCell *b)
{
	return strcmp(((ForeignServer *) lfirst(a))->servername,
				  ((ForeignServer *) lfirst(b))->servername);
}

/* Every shard, by name. */
static List *
shard_servers(void)
{
	Relation	rel = table_open(ForeignServerRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	HeapTuple	tup;
	List	   *servers = NIL;

	while ((tup = systable_getnext(scan)) != NULL)
	{
		Oid			id = ((Form_pg_foreign_server) GETSTRUCT(tup))->oid;

		if (hb_server_ships_hbird(id))
			servers = lappend(servers, GetForeignServer(id));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	list_sort(servers, server_name_cmp);
	return servers;
}

/* ---- postgres_fdw's connections ---- */

typedef PGconn *(*GetConnection_f) (UserMapping *user, bool will_prep_stmt,
									void **state);
typedef PGresult *(*get_result_f) (PGconn *conn, const char *query);
typedef void (*report_error_f) (int elevel, PGresult *res, PGconn *conn,
								bool clear, const char *sql);
typedef void (*process_pending_f) (void *areq);

static struct
{
	GetConnection_f get_connection;
	get_result_f get_result;
	report_error_f report_error;
	process_pending_f process_pending;
}			fdw;

static void
load_fdw(void)
{
	const char *lib = "$libdir/postgres_fdw";

	if (fdw.get_connection)
		return;
	fdw.get_result = (get_result_f) load_external_function(lib, "pgfdw_get_result", true, NULL);
	fdw.report_error = (report_error_f) load_external_function(lib, "pgfdw_report_error", true, NULL);
	fdw.process_pending = (process_pending_f) load_external_function(lib, "process_pending_request",
																	 true, NULL);
	fdw.get_connection = (GetConnection_f) load_external_function(lib, "GetConnection", true, NULL);
}

/* A shard's connection, in the coordinator's transaction. */
typedef struct Shard
{
	ForeignServer *server;
	PGconn	   *conn;
	void	  **state;			/* PgFdwConnState: its first field is the
								 * pending asynchronous request */
	char	   *nsp;			/* hbird's schema there, quoted */
} Shard;

/* Run sql with text parameters (binary where formats says) and rows back. */
static PGresult *
shard_query(Shard *s, const char *sql, int n, const char *const *values,
			const int *lengths, const int *formats)
{
	PGresult   *res;

	/* a scan of the same statement may wait for rows on this connection */
	if (s->state && *s->state)
		fdw.process_pending(*s->state);
	if (!PQsendQueryParams(s->conn, sql, n, NULL, values, lengths, formats, 0))
		fdw.report_error(ERROR, NULL, s->conn, false, sql);
	res = fdw.get_result(s->conn, sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		fdw.report_error(ERROR, res, s->conn, true, sql);
	return res;
}

static void
shard_error_context(void *arg)
{
	errcontext("shard \"%s\"", ((Shard *) arg)->server->servername);
}

/*
 * Open (or reuse) the connection to a shard as the caller: USAGE on the
 * server and a user mapping are needed; hbird must be installed there.
 */
static void
shard_connect(Shard *s, ForeignServer *server)
{
	Oid			user = GetUserId();
	AclResult	acl = pg_foreign_server_aclcheck(server->serverid, user, ACL_USAGE);
	UserMapping *um;
	PGresult   *res;

	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_FOREIGN_SERVER, server->servername);
	load_fdw();
	s->server = server;
	um = GetUserMapping(user, server->serverid);
	s->conn = fdw.get_connection(um, false, (void **) &s->state);
	res = shard_query(s, "SELECT n.nspname FROM pg_catalog.pg_extension e "
					  "JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace "
					  "WHERE e.extname = 'hbird'", 0, NULL, NULL, NULL);
	if (PQntuples(res) != 1)
	{
		PQclear(res);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("hbird is not installed on shard \"%s\"", server->servername),
				 errhint("Run CREATE EXTENSION hbird there, in the schema it has here.")));
	}
	s->nsp = pstrdup(quote_identifier(PQgetvalue(res, 0, 0)));
	PQclear(res);
}

/* ---- hb_model_distribute ---- */

static char *
model_name(FunctionCallInfo fcinfo)
{
	char	   *name = text_to_cstring(hb_require_text(fcinfo, 0, "model name"));

	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model name must not be empty")));
	return name;
}

/* Column col of SPI row 0 as text in cxt, or NULL. */
static char *
spi_text(int col, MemoryContext cxt)
{
	char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);

	return v ? MemoryContextStrdup(cxt, v) : NULL;
}

/*
 * What a shard is sent: one version of one model, as the parameters of
 * hb_model_receive, in its order.
 */
typedef struct Sent
{
	char	   *values[11];
	int			lengths[11];
	int			formats[11];
	bytea	   *body;
	int32		version;
	char	   *sha;
} Sent;

/*
 * Read the version to send under the locked model row (as the catalog's
 * owner: the caller needs no privilege on the tables).
 */
static void
read_version(const char *name, int32 version, Sent *m, MemoryContext cxt)
{
	Oid			t[2] = {TEXTOID, INT4OID};
	Datum		v[2] = {CStringGetTextDatum(name), Int32GetDatum(version)};
	bool		isnull;
	Datum		d;
	int			i = 0;

	hb_write_sql("SELECT v.format, v.feature_names, v.body, encode(v.sha256, 'hex'), "
				 "pg_get_userbyid(m.owner)::text, (m.active_version IS NOT DISTINCT FROM v.version)::text "
				 "FROM hbird.model m JOIN hbird.model_version v ON v.name = m.name "
				 "WHERE v.name = $1 AND v.version = $2",
				 2, t, v, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" has no version %d", name, version)));
	memset(m, 0, sizeof(*m));
	m->version = version;
	m->values[i++] = MemoryContextStrdup(cxt, name);
	m->values[i++] = MemoryContextStrdup(cxt, psprintf("%d", version));
	m->values[i++] = spi_text(1, cxt);
	m->values[i++] = spi_text(2, cxt);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull);
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		m->body = DatumGetByteaPCopy(d);
		MemoryContextSwitchTo(old);
	}
	m->lengths[i] = VARSIZE(m->body) - VARHDRSZ;
	m->formats[i] = 1;			/* binary: the bytes as they are */
	m->values[i++] = VARDATA(m->body);
	m->values[i++] = m->sha = spi_text(4, cxt);
	m->values[i++] = spi_text(5, cxt);
	m->values[i++] = spi_text(6, cxt);

	/* role names as they are (regrole's text quotes them), 'public' for 0 */
	hb_write_sql("SELECT coalesce(array_agg(CASE WHEN grantee::oid = 0 THEN 'public' "
				 "ELSE pg_get_userbyid(grantee)::text END ORDER BY 1), '{}')::text "
				 "FROM hbird.model_grant WHERE name = $1",
				 1, t, v, NULL, SPI_OK_SELECT);
	m->values[i++] = spi_text(1, cxt);
	hb_write_sql("SELECT coalesce(json_agg(t), '[]')::text FROM hbird.tuning t "
				 "WHERE name = $1 AND version = $2", 2, t, v, NULL, SPI_OK_SELECT);
	m->values[i++] = spi_text(1, cxt);
	hb_write_sql("SELECT coalesce(json_agg(t), '[]')::text FROM hbird.tuning_candidate t "
				 "WHERE name = $1 AND version = $2", 2, t, v, NULL, SPI_OK_SELECT);
	m->values[i++] = spi_text(1, cxt);
	if (i != lengthof(m->values))
		elog(ERROR, "hb_model_receive takes %d arguments, %d were read",
			 (int) lengthof(m->values), i);
}

/* the columns of hb_model_distribute(), in order (sql/hbird--*.sql) */
#define HB_DISTRIBUTE_COLS 4

Datum
hb_model_distribute(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = model_name(fcinfo);
	int32		active;
	int32		version;
	HbCatalogWrite w;
	MemoryContext keep = CurrentMemoryContext;
	Sent		m;
	List	   *servers;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != HB_DISTRIBUTE_COLS)
		elog(ERROR, "incorrect number of output columns of hb_model_distribute");

	/* the owner's (or a superuser's) to distribute; the row stays locked */
	hb_write_begin(&w, "distribute a model");
	if (!hb_write_lock_model(&w, name, &active))
		hb_no_such_model(name);
	version = PG_ARGISNULL(1) ? active : PG_GETARG_INT32(1);
	/* SPI's memory goes at hb_write_end: what is sent is copied to keep */
	read_version(name, version, &m, keep);
	hb_write_end(&w);

	servers = shard_servers();
	if (servers == NIL)
		ereport(NOTICE,
				(errmsg("no foreign server lists hbird in its extensions option"),
				 errhint("Shards are postgres_fdw servers created with OPTIONS (extensions 'hbird').")));
	foreach(lc, servers)
	{
		Shard		s;
		ErrorContextCallback errcb;
		PGresult   *res;
		char	   *sql;
		Datum		values[HB_DISTRIBUTE_COLS];
		bool		nulls[HB_DISTRIBUTE_COLS] = {0};
		int			col = 0;

		errcb.callback = shard_error_context;
		errcb.arg = &s;
		errcb.previous = error_context_stack;
		memset(&s, 0, sizeof(s));
		s.server = lfirst(lc);
		error_context_stack = &errcb;
		shard_connect(&s, lfirst(lc));
		sql = psprintf("SELECT %s.hb_model_receive($1::text, $2::integer, $3::text, $4::text[], "
					   "$5::bytea, $6::text, $7::name, $8::boolean, $9::name[], $10::json, $11::json)",
					   s.nsp);
		res = shard_query(&s, sql, lengthof(m.values), (const char *const *) m.values,
						  m.lengths, m.formats);
		values[col++] = DirectFunctionCall1(namein, CStringGetDatum(s.server->servername));
		values[col++] = Int32GetDatum(version);
		values[col++] = CStringGetTextDatum(m.sha);
		values[col++] = CStringGetTextDatum(PQgetvalue(res, 0, 0));
		Assert(col == HB_DISTRIBUTE_COLS);
		PQclear(res);
		error_context_stack = errcb.previous;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* ---- hb_model_receive ---- */

static char *
text_or_null(FunctionCallInfo fcinfo, int argno)
{
	return PG_ARGISNULL(argno) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

static void
require(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
}

/* The grantees' role OIDs ('public': 0); every role must exist here. */
static ArrayType *
grantee_oids(ArrayType *grants)
{
	Datum	   *names;
	bool	   *nn;
	int			n;
	Datum	   *oids;

	deconstruct_array(grants, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR, &names, &nn, &n);
	oids = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		char	   *r;

		if (nn[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("grants must not contain nulls")));
		r = NameStr(*DatumGetName(names[i]));
		/* no role is named "public"; a role "Public" is a role */
		oids[i] = ObjectIdGetDatum(strcmp(r, "public") == 0 ?
								   InvalidOid : get_role_oid(r, false));
	}
	return construct_array(oids, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
}

Datum
hb_model_receive(PG_FUNCTION_ARGS)
{
	char	   *name = model_name(fcinfo);
	int32		version;
	char	   *format;
	ArrayType  *features;
	bytea	   *body;
	char	   *sha;
	uint8		digest[HB_SHA256_LEN];
	char	   *owner_name;
	Oid			owner;
	bool		active;
	ArrayType  *grants;
	char	   *have = NULL;
	bool		same_names = true;
	bool		exists;
	int32		active_now;
	HbCatalogWrite w;
	HbVersionRows *rows = NULL;
	HbFormat	fmt = HB_FORMAT_AUTO;
	StringInfoData action;
	MemoryContext caller;

	for (int i = 1; i <= 10; i++)
		if (i != 3)
			require(fcinfo, i, i == 1 ? "version" : i == 2 ? "format" : i == 4 ? "body" :
					i == 5 ? "sha256" : i == 6 ? "owner" : i == 7 ? "active" :
					i == 8 ? "grants" : i == 9 ? "tunings" : "tuning_candidates");
	version = PG_GETARG_INT32(1);
	if (version <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model version must be positive")));
	format = text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (!hb_format_parse(format, &fmt))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown model format \"%s\"", format)));
	features = PG_ARGISNULL(3) ? NULL : PG_GETARG_ARRAYTYPE_P(3);
	body = PG_GETARG_BYTEA_PP(4);
	sha = text_or_null(fcinfo, 5);
	owner_name = NameStr(*PG_GETARG_NAME(6));
	active = PG_GETARG_BOOL(7);
	grants = PG_GETARG_ARRAYTYPE_P(8);

	/* the bytes are the ones hashed on the coordinator */
	hb_sha256(VARDATA_ANY(body), VARSIZE_ANY_EXHDR(body), digest);
	if (pg_strcasecmp(hb_sha256_hex(digest), sha) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the bytes received for version %d of model \"%s\" do not have sha256 %s",
						version, name, sha)));
	owner = get_role_oid(owner_name, true);
	if (!OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role \"%s\", the owner of model \"%s\", does not exist on this server",
						owner_name, name),
				 errhint("Models keep their owner on every node: create the role here.")));

	caller = CurrentMemoryContext;
	hb_write_begin(&w, "receive a model");
	exists = hb_write_lock_model(&w, name, &active_now);
	/* making a role the owner takes what hb_model_reassign takes */
	if (!superuser_arg(w.caller) && !is_member_of_role(w.caller, owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be member of role \"%s\"", owner_name),
				 errdetail("Model \"%s\" is owned by role \"%s\" on the coordinator.",
						   name, owner_name)));
	if (exists)
	{
		Oid			t[3] = {TEXTOID, INT4OID, TEXTARRAYOID};
		Datum		v[3] = {CStringGetTextDatum(name), Int32GetDatum(version),
		PointerGetDatum(features)};

		hb_write_sql("SELECT encode(sha256, 'hex'), feature_names IS NOT DISTINCT FROM $3 "
					 "FROM hbird.model_version WHERE name = $1 AND version = $2",
					 3, t, v, features ? NULL : "  n", SPI_OK_SELECT);
		if (SPI_processed > 0)
		{
			bool		isnull;

			have = MemoryContextStrdup(caller,
									   SPI_getvalue(SPI_tuptable->vals[0],
													SPI_tuptable->tupdesc, 1));
			same_names = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
													SPI_tuptable->tupdesc, 2, &isnull));
		}
	}
	hb_write_end(&w);
	if (have != NULL && pg_strcasecmp(have, sha) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("model \"%s\" has another version %d on this server (sha256 %.12s), not the coordinator's (sha256 %.12s)",
						name, version, have, sha),
				 errhint("Drop it here with hb_model_drop(%s, %d), then distribute again.",
						 quote_literal_cstr(name), version)));
	/* the same bytes with other feature names bind rows otherwise */
	if (have != NULL && !same_names)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("model \"%s\" has version %d on this server with other feature names than the coordinator's",
						name, version),
				 errhint("Drop it here with hb_model_drop(%s, %d), then distribute again.",
						 quote_literal_cstr(name), version)));
	if (!exists)
		hb_check_new_model_name(name);
	/* parse and compile before writing, as hb_model_upload does */
	if (have == NULL)
		rows = hb_version_prepare(name, (struct varlena *) body, fmt, features,
								  digest);

	initStringInfo(&action);
	hb_write_begin(&w, "receive a model");
	{
		Oid			t[3] = {TEXTOID, REGROLEOID, INT4OID};
		Datum		v[3] = {CStringGetTextDatum(name), ObjectIdGetDatum(owner),
		Int32GetDatum(version)};

		if (!exists)
			hb_write_sql("INSERT INTO hbird.model (name, owner, last_version) "
						 "VALUES ($1, $2, 0) ON CONFLICT (name) DO NOTHING",
						 2, t, v, NULL, SPI_OK_INSERT);
		if (!hb_write_lock_model(&w, name, &active_now))
			elog(ERROR, "model \"%s\" vanished while being received", name);
		if (hb_write_sql("UPDATE hbird.model SET owner = $2 WHERE name = $1 AND owner <> $2",
						 2, t, v, NULL, SPI_OK_UPDATE) > 0)
			appendStringInfoString(&action, "owner, ");
		if (rows)
		{
			hb_version_insert(&w, name, rows, version);
			appendStringInfoString(&action, "stored");
		}
		else
			appendStringInfoString(&action, "present");
		hb_write_sql("UPDATE hbird.model SET last_version = greatest(last_version, $3) "
					 "WHERE name = $1", 3, t, v, NULL, SPI_OK_UPDATE);
		if (active && active_now != version)
		{
			hb_write_sql("UPDATE hbird.model SET active_version = $3 WHERE name = $1",
						 3, t, v, NULL, SPI_OK_UPDATE);
			appendStringInfoString(&action, ", activated");
		}
		else if (active)
			appendStringInfoString(&action, ", active");
	}
	{
		/* the grants become the coordinator's */
		Oid			t[3] = {TEXTOID, OIDARRAYOID, TEXTOID};
		Datum		v[3] = {CStringGetTextDatum(name),
			PointerGetDatum(grantee_oids(grants)),
		CStringGetTextDatum(GetUserNameFromId(w.caller, false))};

		hb_write_sql("DELETE FROM hbird.model_grant WHERE name = $1 AND grantee::oid <> ALL ($2)",
					 2, t, v, NULL, SPI_OK_DELETE);
		hb_write_sql(psprintf("INSERT INTO hbird.model_grant (name, grantee, granted_by) "
							  "SELECT $1, g::regrole, $3::text::%s FROM unnest($2) g "
							  "ON CONFLICT (name, grantee) DO NOTHING",
							  hb_role_column_type("model_grant", "granted_by")),
					 3, t, v, NULL, SPI_OK_INSERT);
	}
	{
		/* and the version's tunings too */
		Oid			t[4] = {TEXTOID, INT4OID, JSONOID, JSONOID};
		Datum		v[4] = {CStringGetTextDatum(name), Int32GetDatum(version),
			PG_GETARG_DATUM(9), PG_GETARG_DATUM(10)};

		hb_write_sql("DELETE FROM hbird.tuning WHERE name = $1 AND version = $2",
					 2, t, v, NULL, SPI_OK_DELETE);
		if (hb_write_sql("INSERT INTO hbird.tuning SELECT r.* FROM "
						 "json_populate_recordset(NULL::hbird.tuning, $3) r "
						 "WHERE r.name = $1 AND r.version = $2",
						 4, t, v, NULL, SPI_OK_INSERT) > 0)
			appendStringInfoString(&action, ", tunings");
		hb_write_sql("INSERT INTO hbird.tuning_candidate SELECT r.* FROM "
					 "json_populate_recordset(NULL::hbird.tuning_candidate, $4) r "
					 "WHERE r.name = $1 AND r.version = $2",
					 4, t, v, NULL, SPI_OK_INSERT);
	}
	if (!superuser_arg(w.caller))
	{
		/*
		 * Who tuned, and when, as the coordinator recorded it, where the
		 * caller could have tuned as that role; otherwise the caller, now
		 * (as the grants record who received them): a model administrator
		 * does not put another role's name on a tuning
		 */
		const char *type = hb_role_column_type("tuning", "tuned_by");
		Oid			t[3] = {TEXTOID, INT4OID, TEXTOID};
		Datum		v[3] = {CStringGetTextDatum(name), Int32GetDatum(version),
		CStringGetTextDatum(GetUserNameFromId(w.caller, false))};

		hb_write_sql(psprintf("UPDATE hbird.tuning u SET tuned_by = $3::text::%s, tuned_at = now() "
							  "WHERE u.name = $1 AND u.version = $2 AND NOT EXISTS "
							  "(SELECT 1 FROM pg_roles r WHERE r.rolname = u.tuned_by::text "
							  "AND pg_has_role($3::text::name, r.oid, 'MEMBER'))", type),
					 3, t, v, NULL, SPI_OK_UPDATE);
	}
	hb_write_end(&w);
	PG_RETURN_TEXT_P(cstring_to_text(action.data));
}

/* ---- hb_model_shards ---- */

typedef struct ActiveModel
{
	char	   *name;
	int32		version;
	char	   *sha;
	char	   *names;			/* the upload's feature names as text, or NULL */
} ActiveModel;

/* The active versions here (of one model, or all), by name. */
static List *
local_active(const char *name, Oid nsp)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *sql = psprintf("SELECT name, version, sha256, feature_names::text FROM %s.hb_models "
							   "WHERE active AND ($1 IS NULL OR name = $1) ORDER BY name",
							   quote_identifier(get_namespace_name(nsp)));
	Oid			t[1] = {TEXTOID};
	Datum		v[1] = {name ? CStringGetTextDatum(name) : (Datum) 0};
	List	   *out = NIL;
	int			guc_level;

	SPI_connect();
	guc_level = hb_pin_search_path();
	if (SPI_execute_with_args(sql, 1, t, v, name ? NULL : "n", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read hb_models");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);
		ActiveModel *a = palloc(sizeof(ActiveModel));

		a->name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		a->version = atoi(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
		a->sha = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3);
		a->names = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 4);
		out = lappend(out, a);
		MemoryContextSwitchTo(old);
	}
	AtEOXact_GUC(false, guc_level);
	SPI_finish();
	return out;
}

static List *
shard_active(Shard *s, const char *name)
{
	char	   *sql = psprintf("SELECT name, version, sha256, feature_names::text FROM %s.hb_models "
							   "WHERE active AND ($1::text IS NULL OR name = $1::text) ORDER BY name",
							   s->nsp);
	const char *values[1] = {name};
	PGresult   *res = shard_query(s, sql, 1, values, NULL, NULL);
	List	   *out = NIL;

	for (int i = 0; i < PQntuples(res); i++)
	{
		ActiveModel *a = palloc(sizeof(ActiveModel));

		a->name = pstrdup(PQgetvalue(res, i, 0));
		a->version = atoi(PQgetvalue(res, i, 1));
		a->sha = pstrdup(PQgetvalue(res, i, 2));
		a->names = PQgetisnull(res, i, 3) ? NULL : pstrdup(PQgetvalue(res, i, 3));
		out = lappend(out, a);
	}
	PQclear(res);
	return out;
}

/*
 * A shard's active versions; a shard that cannot be read (down, no user
 * mapping, no hbird) is a warning and no rows of its own, so that the
 * others are still shown: this is where one looks for what is wrong.
 */
static List *
shard_active_or_warn(Shard *s, ForeignServer *server, const char *name)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	List	   *volatile there = NIL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		shard_connect(s, server);
		there = shard_active(s, name);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		/* a cancel or a statement timeout ends the function, as before */
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
			ReThrowError(edata);
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("could not read the models of shard \"%s\": %s",
						server->servername, edata->message),
				 edata->hint ? errhint("%s", edata->hint) : 0));
		FreeErrorData(edata);
		there = NIL;
	}
	PG_END_TRY();
	return there;
}

static ActiveModel *
find_model(List *models, const char *name)
{
	ListCell   *lc;

	foreach(lc, models)
		if (strcmp(((ActiveModel *) lfirst(lc))->name, name) == 0)
			return lfirst(lc);
	return NULL;
}

/* the columns of hb_model_shards(), in order (sql/hbird--*.sql) */
#define HB_SHARDS_COLS 7

Datum
hb_model_shards(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
	List	   *here;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != HB_SHARDS_COLS)
		elog(ERROR, "incorrect number of output columns of hb_model_shards");
	/* hb_models is where this function is: in the extension's schema */
	here = local_active(name, get_func_namespace(fcinfo->flinfo->fn_oid));
	foreach(lc, shard_servers())
	{
		Shard		s;
		ErrorContextCallback errcb;
		List	   *there;
		List	   *names = NIL;
		ListCell   *ln;

		memset(&s, 0, sizeof(s));
		s.server = lfirst(lc);
		errcb.callback = shard_error_context;
		errcb.arg = &s;
		errcb.previous = error_context_stack;
		error_context_stack = &errcb;
		there = shard_active_or_warn(&s, lfirst(lc), name);
		error_context_stack = errcb.previous;

		foreach(ln, here)
			names = lappend(names, ((ActiveModel *) lfirst(ln))->name);
		foreach(ln, there)
			if (find_model(here, ((ActiveModel *) lfirst(ln))->name) == NULL)
				names = lappend(names, ((ActiveModel *) lfirst(ln))->name);
		foreach(ln, names)
		{
			ActiveModel *h = find_model(here, lfirst(ln));
			ActiveModel *t = find_model(there, lfirst(ln));
			Datum		values[HB_SHARDS_COLS];
			bool		nulls[HB_SHARDS_COLS] = {0};
			int			col = 0;

			values[col++] = DirectFunctionCall1(namein, CStringGetDatum(s.server->servername));
			values[col++] = CStringGetTextDatum(lfirst(ln));
			/* the coordinator's version and SHA-256, then the shard's */
			nulls[col] = h == NULL;
			values[col++] = h ? Int32GetDatum(h->version) : (Datum) 0;
			nulls[col] = h == NULL;
			values[col++] = h ? CStringGetTextDatum(h->sha) : (Datum) 0;
			nulls[col] = t == NULL;
			values[col++] = t ? Int32GetDatum(t->version) : (Datum) 0;
			nulls[col] = t == NULL;
			values[col++] = t ? CStringGetTextDatum(t->sha) : (Datum) 0;
			/* in sync: what a pinned call checks (hb_pin_identity) */
			values[col++] = BoolGetDatum(h && t && h->version == t->version &&
										 strcmp(h->sha, t->sha) == 0 &&
										 (h->names == NULL) == (t->names == NULL) &&
										 (h->names == NULL || strcmp(h->names, t->names) == 0));
			Assert(col == HB_SHARDS_COLS);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}
