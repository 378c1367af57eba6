/*
 * pg_owner.c
 *	  Who may change a model, and how hbird writes its catalog.
 *
 * The rules (docs/reliability.md, "Privileges"):
 *
 *	- Every check uses the role actually executing, GetUserId().  The
 *	  administration functions are SECURITY INVOKER, so that role is the
 *	  caller's, also when the call comes from an index expression, a trigger
 *	  or a SECURITY DEFINER function someone else owns (where the session's
 *	  role, GetOuterUserId(), may well be a superuser running ANALYZE).
 *	- Nothing is written inside a security-restricted operation (maintenance
 *	  commands running a table owner's code), as PostgreSQL refuses its own
 *	  catalog changes there.
 *	- A model is changed only by superusers and roles with the privileges of
 *	  its owner, as PostgreSQL's objects are; a dropped owner is nobody.
 *	- The writes themselves run as the owner of hbird's catalog, with
 *	  search_path pinned, inside one SPI connection: the caller needs no
 *	  privilege on the tables and cannot redirect any name in the SQL.
 *
 * Roles that own models or hold their grants cannot be dropped while hbird
 * is loaded in the backend (it is in shared_preload_libraries wherever
 * hb_stat_models is used); REASSIGN OWNED and DROP OWNED move or drop
 * models as they do PostgreSQL's objects of the current database.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/indexing.h"
#include "catalog/pg_authid.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "hbird.h"

static ProcessUtility_hook_type prev_process_utility = NULL;

/* ---- ownership ---- */

/*
 * May role change a model owned by owner?  Superusers, and roles with the
 * privileges of the owner; an owner that no longer exists grants nothing
 * (its OID could one day name an unrelated role).
 */
bool
hb_may_change(Oid role, Oid owner)
{
	if (superuser_arg(role))
		return true;
	return hb_role_exists(owner) && has_privs_of_role(role, owner);
}

void
hb_check_owner(Oid role, Oid owner, const char *name)
{
	if (!hb_may_change(role, owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of model \"%s\"", name),
				 hb_role_exists(owner) ?
				 errdetail("Model \"%s\" is owned by role \"%s\".", name,
						   GetUserNameFromId(owner, false)) :
				 errdetail("The role that owned model \"%s\" no longer exists; only a superuser can change it.",
						   name),
				 errhint("Members of the owner role and superusers change a model; hb_model_reassign gives it another owner.")));
}

/* ---- model names ---- */

/*
 * Characters that would let a name look like another in a listing or a
 * log line: controls (C0, DEL, C1), and Unicode's default-ignorable code
 * points, which render as nothing (bidirectional marks, overrides and
 * isolates, zero-width joiners, the soft hyphen, the combining grapheme
 * joiner, variation selectors, fillers, tags), and noncharacters.
 */
static bool
deceptive_char(pg_wchar c)
{
	if (c < 0x20 || (c >= 0x7f && c <= 0x9f))
		return true;
	if (c < 0xad)
		return false;
	return c == 0x00ad || c == 0x034f || c == 0x061c ||
		c == 0x115f || c == 0x1160 || c == 0x17b4 || c == 0x17b5 ||
		(c >= 0x180b && c <= 0x180f) ||
		(c >= 0x200b && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) ||
		(c >= 0x2060 && c <= 0x206f) || c == 0x3164 ||
		(c >= 0xfdd0 && c <= 0xfdef) ||
		(c >= 0xfe00 && c <= 0xfe0f) || c == 0xfeff || c == 0xffa0 ||
		(c >= 0xfff0 && c <= 0xfff8) ||
		(c >= 0x1bca0 && c <= 0x1bca3) || (c >= 0x1d173 && c <= 0x1d17a) ||
		(c >= 0xe0000 && c <= 0xe0fff) ||
		(c & 0xfffe) == 0xfffe;
}

static bool
space_char(pg_wchar c)
{
	return c == ' ' || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
		c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/*
 * A new model's name: printable, not blank.  Names already in the catalog
 * are accepted by every other function as they are, so that a model
 * uploaded before these rules can still be dropped.
 */
void
hb_check_new_model_name(const char *name)
{
	int			enc = GetDatabaseEncoding();
	/* code points from UTF-8: another encoding's bytes are not Unicode */
	const char *u = enc == PG_UTF8 || enc == PG_SQL_ASCII ? name :
		pg_server_to_any(name, strlen(name), PG_UTF8);
	const unsigned char *p = (const unsigned char *) u;
	const unsigned char *end = p + strlen(u);
	bool		utf8 = enc != PG_SQL_ASCII;
	bool		blank = true;

	while (p < end)
	{
		pg_wchar	c;
		int			len = utf8 ? pg_utf_mblen(p) : 1;

		if (p + len > end)
			break;
		/* SQL_ASCII: bytes of no known encoding, only ASCII's controls */
		c = utf8 ? utf8_to_unicode(p) : (*p < 0x80 ? *p : 0x100);
		if (deceptive_char(c))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("model name must not contain control, formatting or invisible characters"),
					 errdetail("Character U+%04X at byte %d.", (unsigned) c,
							   (int) (p - (const unsigned char *) u))));
		if (!space_char(c))
			blank = false;
		p += len;
	}
	if (blank)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model name must not be blank")));
}

/* ---- writing the catalog ---- */

static Oid
catalog_owner(void)
{
	Oid			relid = hb_catalog_relid("model");
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * The version of hbird's catalog in this database (pg_extension's
 * extversion), palloc'd; NULL where the extension is not there.
 */
static char *
catalog_version(void)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *v = NULL;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("hbird"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			v = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return v;
}

/*
 * Whether the catalog predates 0.3.0, whose administration functions are
 * SECURITY DEFINER: GetUserId() inside them is their owner (a superuser),
 * not the caller, so no check of the library's would hold there.
 */
static bool
catalog_runs_as_definer(void)
{
	char	   *v = catalog_version();
	int			major = 0,
				minor = 0;

	if (v == NULL || sscanf(v, "%d.%d", &major, &minor) != 2)
		return false;
	return major == 0 && minor < 3;
}

/*
 * Start writing the catalog on behalf of the role executing now (w->caller
 * afterwards); what names the operation for the error inside a
 * security-restricted operation.  Connects SPI.
 */
void
hb_write_begin(HbCatalogWrite *w, const char *what)
{
	w->caller = GetUserId();
	if (InSecurityRestrictedOperation())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot %s within security-restricted operation", what),
				 errdetail("Maintenance commands such as ANALYZE, VACUUM and REINDEX run a table owner's code with restricted rights.")));
	/*
	 * A catalog older than its library (the library is installed, ALTER
	 * EXTENSION hbird UPDATE not yet run) calls this from SECURITY DEFINER
	 * functions, where the role executing is their owner: only a superuser
	 * session changes models until the update.
	 */
	if (catalog_runs_as_definer() && !superuser_arg(GetOuterUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot %s: hbird's catalog in this database is older than its library", what),
				 errdetail("Its administration functions run as their owner, so the role calling them cannot be checked."),
				 errhint("Run ALTER EXTENSION hbird UPDATE; until then only superusers change models.")));
	/* a standby or a read-only transaction: say what could not be done */
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot %s in a read-only transaction", what),
				 RecoveryInProgress() ?
				 errhint("This server is a standby: change models on the primary, whose catalog it replays.") : 0));
	GetUserIdAndSecContext(&w->save_userid, &w->save_sec_context);
	SPI_connect();
	w->guc_level = hb_pin_search_path();
	SetUserIdAndSecContext(catalog_owner(),
						   w->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
}

/*
 * search_path set to pg_catalog, pg_temp for SQL hbird runs itself, so
 * that the caller's schemas pick none of its operators or functions; the
 * GUC nest level to end with AtEOXact_GUC(false, level).
 */
int
hb_pin_search_path(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	return level;
}

void
hb_write_end(HbCatalogWrite *w)
{
	/*
	 * Plans that pinned a model version (pg_pushdown.c) depend on the
	 * catalog: a relcache message for hbird.model, sent at commit and
	 * replayed by standbys, makes them plan again.
	 */
	CacheInvalidateRelcacheByRelid(hb_catalog_relid("model"));
	SetUserIdAndSecContext(w->save_userid, w->save_sec_context);
	AtEOXact_GUC(false, w->guc_level);
	SPI_finish();
}

/* A catalog statement's SPI result code rc must be expect; rows it processed. */
static int
write_result(int rc, int expect, const char *sql)
{
	if (rc != expect)
		elog(ERROR, "hbird catalog statement failed (%s): %s",
			 SPI_result_code_string(rc), sql);
	return (int) SPI_processed;
}

/* Run one catalog statement; the SPI result code must be expect. */
int
hb_write_sql(const char *sql, int nargs, Oid *types, Datum *values,
			 const char *nulls, int expect)
{
	return write_result(SPI_execute_with_args(sql, nargs, types, values,
											  nulls, false, 0),
						expect, sql);
}

/*
 * hb_write_sql for a statement whose arguments are large (a model's bytes
 * and image): planned generically, so that its parameters are read where
 * they are, not copied into the plan as constants (a custom plan folds
 * them: tens of megabytes copied, uncancellably, before the row is even
 * formed).
 */
int
hb_write_sql_large(const char *sql, int nargs, Oid *types, Datum *values,
				   const char *nulls, int expect)
{
	SPIPlanPtr	plan = SPI_prepare_cursor(sql, nargs, types,
										  CURSOR_OPT_GENERIC_PLAN);
	int			n;

	if (plan == NULL)
		elog(ERROR, "hbird catalog statement failed to prepare (%s): %s",
			 SPI_result_code_string(SPI_result), sql);
	n = write_result(SPI_execute_plan(plan, values, nulls, false, 0),
					 expect, sql);
	SPI_freeplan(plan);
	return n;
}

/*
 * The SQL type of a role column that records who did something: name from
 * 0.3.0 on (what the role was called; it outlives the role), regrole in
 * older catalogs, which the library still writes until ALTER EXTENSION
 * UPDATE.
 */
const char *
hb_role_column_type(const char *relname, const char *colname)
{
	Oid			relid = hb_catalog_relid(relname);
	AttrNumber	att = get_attnum(relid, colname);

	return att != InvalidAttrNumber && get_atttype(relid, att) == REGROLEOID ?
		"regrole" : "name";
}

/*
 * Lock a model's row (serialising every change of one model) and check
 * that the caller may change it.  Returns false when there is no such
 * model; *active gets the active version (0 if none).
 */
bool
hb_write_lock_model(HbCatalogWrite *w, const char *name, int32 *active)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	bool		isnull;
	Oid			owner;
	Datum		d;

	hb_write_sql("SELECT owner, active_version FROM hbird.model WHERE name = $1 FOR UPDATE",
				 1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 1, &isnull));
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	if (active)
		*active = isnull ? 0 : DatumGetInt32(d);
	hb_check_owner(w->caller, owner, name);
	return true;
}

void
hb_no_such_model(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("model \"%s\" does not exist", name)));
}

/* ---- roles: DROP ROLE, REASSIGN OWNED, DROP OWNED ---- */

static bool
extension_here(void)
{
	return IsTransactionState() && OidIsValid(get_extension_oid("hbird", true)) &&
		OidIsValid(get_namespace_oid("hbird", true));
}

static List *
role_oids(List *rolespecs, bool missing_ok)
{
	List	   *oids = NIL;
	ListCell   *lc;

	foreach(lc, rolespecs)
	{
		Oid			r = get_rolespec_oid(lfirst(lc), missing_ok);

		if (OidIsValid(r))
			oids = lappend_oid(oids, r);
	}
	return oids;
}

/*
 * What of this database's catalog depends on role: the lines of a DETAIL,
 * as PostgreSQL lists "owner of table t" and "privileges for table t".
 */
static int
role_dependents(Oid role, StringInfo detail)
{
	int			n = 0;
	static const char *const what[2][2] = {{"model", "owner"}, {"model_grant", "grantee"}};

	for (int t = 0; t < 2; t++)
	{
		Relation	rel = table_open(hb_catalog_relid(what[t][0]), AccessShareLock);
		TupleDesc	desc = RelationGetDescr(rel);
		AttrNumber	name_att = InvalidAttrNumber;
		AttrNumber	role_att = InvalidAttrNumber;
		SysScanDesc scan;
		Snapshot	snap;
		HeapTuple	tup;

		for (int i = 0; i < desc->natts; i++)
		{
			const char *a = NameStr(TupleDescAttr(desc, i)->attname);

			if (strcmp(a, "name") == 0)
				name_att = i + 1;
			else if (strcmp(a, what[t][1]) == 0)
				role_att = i + 1;
		}
		snap = RegisterSnapshot(GetLatestSnapshot());
		scan = systable_beginscan(rel, InvalidOid, false, snap, 0, NULL);
		while ((tup = systable_getnext(scan)) != NULL)
		{
			bool		isnull;
			Oid			r = DatumGetObjectId(heap_getattr(tup, role_att, desc, &isnull));

			if (isnull || r != role)
				continue;
			if (n++ < 10)
				appendStringInfo(detail, "%s%s model \"%s\"", detail->len ? "\n" : "",
								 t == 0 ? "owner of" : "privileges for",
								 TextDatumGetCString(heap_getattr(tup, name_att, desc, &isnull)));
		}
		systable_endscan(scan);
		UnregisterSnapshot(snap);
		table_close(rel, AccessShareLock);
	}
	if (n > 10)
		appendStringInfo(detail, "\nand %d other models", n - 10);
	return n;
}

static void
check_drop_role(DropRoleStmt *stmt)
{
	ListCell   *lc;

	if (!extension_here())
		return;
	foreach(lc, role_oids(stmt->roles, true))
	{
		Oid			role = lfirst_oid(lc);
		StringInfoData detail;

		initStringInfo(&detail);
		if (role_dependents(role, &detail) > 0)
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("role \"%s\" cannot be dropped because some objects depend on it",
							GetUserNameFromId(role, false)),
					 errdetail("%s", detail.data),
					 errhint("REASSIGN OWNED BY or DROP OWNED BY in this database moves or drops its models and their grants; hb_model_reassign gives one model another owner.")));
	}
}

static ArrayType *
oid_array(List *oids)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(list_length(oids), 1));
	int			n = 0;
	ListCell   *lc;

	foreach(lc, oids)
		d[n++] = ObjectIdGetDatum(lfirst_oid(lc));
	return construct_array(d, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
}

/* After PostgreSQL's REASSIGN OWNED (its privilege checks passed). */
static void
reassign_owned(ReassignOwnedStmt *stmt)
{
	HbCatalogWrite w;
	Oid			types[2] = {OIDARRAYOID, OIDOID};
	Datum		values[2];
	int			n;

	if (!extension_here())
		return;
	values[0] = PointerGetDatum(oid_array(role_oids(stmt->roles, false)));
	values[1] = ObjectIdGetDatum(get_rolespec_oid(stmt->newrole, false));
	hb_write_begin(&w, "reassign models");
	n = hb_write_sql("UPDATE hbird.model SET owner = $2::oid::regrole "
					 "WHERE owner::oid = ANY ($1)", 2, types, values, NULL,
					 SPI_OK_UPDATE);
	hb_write_end(&w);
	if (n > 0)
		ereport(NOTICE,
				(errmsg_plural("%d model reassigned", "%d models reassigned", n, n)));
}

/* After PostgreSQL's DROP OWNED: the roles' models go, and their grants. */
static void
drop_owned(DropOwnedStmt *stmt)
{
	HbCatalogWrite w;
	Oid			types[1] = {OIDARRAYOID};
	Datum		values[1];
	int			n;

	if (!extension_here())
		return;
	values[0] = PointerGetDatum(oid_array(role_oids(stmt->roles, false)));
	hb_write_begin(&w, "drop models");
	n = hb_write_sql("DELETE FROM hbird.model WHERE owner::oid = ANY ($1)",
					 1, types, values, NULL, SPI_OK_DELETE);
	hb_write_sql("DELETE FROM hbird.model_grant WHERE grantee::oid = ANY ($1)",
				 1, types, values, NULL, SPI_OK_DELETE);
	hb_write_end(&w);
	if (n > 0)
		ereport(NOTICE,
				(errmsg_plural("%d model dropped", "%d models dropped", n, n)));
}

static void
hb_process_utility(PlannedStmt *pstmt, const char *queryString,
				   bool readOnlyTree, ProcessUtilityContext context,
				   ParamListInfo params, QueryEnvironment *queryEnv,
				   DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (IsA(parsetree, DropRoleStmt))
		check_drop_role((DropRoleStmt *) parsetree);

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context,
							 params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);

	if (IsA(parsetree, ReassignOwnedStmt))
		reassign_owned((ReassignOwnedStmt *) parsetree);
	else if (IsA(parsetree, DropOwnedStmt))
		drop_owned((DropOwnedStmt *) parsetree);
}

void
hb_owner_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = hb_process_utility;
}
