/*
 * pg_models.c
 *	  Reading hbird's model catalog (its tables in schema hbird).
 *
 * Scoring reads the catalog with direct scans under the statement's active
 * snapshot: no SQL is run (so search_path can't redirect anything), the
 * scorer needs no privilege on the tables (the model's grants are checked
 * here instead), and every call in a statement, parallel workers included,
 * sees the same model version.  Whether a model's owner still exists is
 * answered here too, as both the score and the change privileges
 * (pg_owner.c) depend on it.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "hbird.h"

Oid
hb_catalog_relid(const char *relname)
{
	Oid			nsp = get_namespace_oid("hbird", true);
	Oid			relid = InvalidOid;

	if (OidIsValid(nsp))
		relid = get_relname_relid(relname, nsp);
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("hbird catalog table hbird.%s is missing", relname),
				 errhint("Is the hbird extension installed in this database?")));
	return relid;
}

static AttrNumber
attnum_of(Relation rel, const char *colname)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		if (!a->attisdropped && strcmp(NameStr(a->attname), colname) == 0)
			return a->attnum;
	}
	elog(ERROR, "hbird catalog table %s has no column %s",
		 RelationGetRelationName(rel), colname);
	return InvalidAttrNumber;	/* keep compiler quiet */
}

static Snapshot
scan_snapshot(void)
{
	return ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
}

/* Join the upload's feature names into one string: part of the cache key. */
static char *
names_key(ArrayType *arr)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	StringInfoData buf;

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	initStringInfo(&buf);
	for (int i = 0; i < n; i++)
	{
		if (!nulls[i])
			appendStringInfoString(&buf, TextDatumGetCString(elems[i]));
		appendStringInfoChar(&buf, '\x1f');
	}
	return buf.data;
}

/*
 * Find a model's active version.  Returns false when there is no such model
 * (or it has no active version) under the statement's snapshot.
 */
bool
hb_catalog_lookup(const char *name, HbCatalogRef *ref)
{
	Snapshot	snap = scan_snapshot();
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key[2];
	HeapTuple	tup;
	bool		found = false;
	bool		isnull;

	memset(ref, 0, sizeof(*ref));
	ref->name = pstrdup(name);

	/*
	 * The catalog's tables stay locked until the transaction ends (closed
	 * with NoLock here and below), as a SELECT would leave them: what
	 * rewrites them (ALTER EXTENSION hbird UPDATE) is not MVCC-safe and
	 * must wait for a transaction that still reads them.
	 */
	rel = table_open(hb_catalog_relid("model"), AccessShareLock);
	ScanKeyInit(&key[0], attnum_of(rel, "name"), BTEqualStrategyNumber,
				F_TEXTEQ, CStringGetTextDatum(name));
	scan = systable_beginscan(rel, InvalidOid, false, snap, 1, key);
	if ((tup = systable_getnext(scan)) != NULL)
	{
		Datum		d;

		ref->owner = DatumGetObjectId(heap_getattr(tup, attnum_of(rel, "owner"),
												   RelationGetDescr(rel), &isnull));
		d = heap_getattr(tup, attnum_of(rel, "active_version"),
						 RelationGetDescr(rel), &isnull);
		if (!isnull)
		{
			ref->version = DatumGetInt32(d);
			found = true;
		}
	}
	systable_endscan(scan);
	table_close(rel, NoLock);
	if (!found)
		return false;

	found = false;
	rel = table_open(hb_catalog_relid("model_version"), AccessShareLock);
	ScanKeyInit(&key[0], attnum_of(rel, "name"), BTEqualStrategyNumber,
				F_TEXTEQ, CStringGetTextDatum(name));
	ScanKeyInit(&key[1], attnum_of(rel, "version"), BTEqualStrategyNumber,
				F_INT4EQ, Int32GetDatum(ref->version));
	scan = systable_beginscan(rel, InvalidOid, false, snap, 2, key);
	if ((tup = systable_getnext(scan)) != NULL)
	{
		TupleDesc	desc = RelationGetDescr(rel);
		bytea	   *sha;
		Datum		d;

		sha = DatumGetByteaPP(heap_getattr(tup, attnum_of(rel, "sha256"),
										   desc, &isnull));
		if (!isnull && VARSIZE_ANY_EXHDR(sha) == HB_SHA256_LEN)
			memcpy(ref->sha256, VARDATA_ANY(sha), HB_SHA256_LEN);
		ref->format = TextDatumGetCString(heap_getattr(tup, attnum_of(rel, "format"),
													   desc, &isnull));
		d = heap_getattr(tup, attnum_of(rel, "feature_names"), desc, &isnull);
		if (!isnull)
		{
			ref->feature_names = DatumGetArrayTypePCopy(d);
			ref->names_key = names_key(ref->feature_names);
		}
		found = true;
	}
	systable_endscan(scan);
	table_close(rel, NoLock);
	return found;
}

/*
 * One bytea column of one version ("body" or "image"), detoasted into the
 * current context; NULL when the column is NULL.
 */
bytea *
hb_catalog_bytes(const char *name, int32 version, const char *column)
{
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key[2];
	HeapTuple	tup;
	bytea	   *body = NULL;
	bool		found = false;
	bool		isnull;

	rel = table_open(hb_catalog_relid("model_version"), AccessShareLock);
	ScanKeyInit(&key[0], attnum_of(rel, "name"), BTEqualStrategyNumber,
				F_TEXTEQ, CStringGetTextDatum(name));
	ScanKeyInit(&key[1], attnum_of(rel, "version"), BTEqualStrategyNumber,
				F_INT4EQ, Int32GetDatum(version));
	scan = systable_beginscan(rel, InvalidOid, false, scan_snapshot(), 2, key);
	if ((tup = systable_getnext(scan)) != NULL)
	{
		Datum		d = heap_getattr(tup, attnum_of(rel, column),
									 RelationGetDescr(rel), &isnull);

		found = true;
		if (!isnull)
			body = DatumGetByteaPCopy(d);
	}
	systable_endscan(scan);
	table_close(rel, NoLock);
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" has no version %d", name, version)));
	return body;
}

/*
 * Does the role still exist?  A model's owner that was dropped (its OID
 * could one day name an unrelated role) grants nothing: not scoring here,
 * not changing the model (pg_owner.c).
 */
bool
hb_role_exists(Oid role)
{
	return OidIsValid(role) &&
		SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role));
}

/*
 * May the current user score this model?  Superusers, members of the
 * model's owner role (while it exists), and grantees (PUBLIC included)
 * may.
 */
bool
hb_may_score(const HbCatalogRef *ref)
{
	Oid			user = GetUserId();
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	bool		ok = false;
	bool		isnull;
	Snapshot	snap;

	if (superuser() || (hb_role_exists(ref->owner) && has_privs_of_role(user, ref->owner)))
		return true;

	/*
	 * The grants as they are now, as PostgreSQL reads its own privileges
	 * (the catalog's latest state): a revoke committed after a REPEATABLE
	 * READ transaction began applies to it.  In parallel mode (a parallel
	 * plan's leader too) no new snapshot can be taken: the statement's.
	 */
	snap = RegisterSnapshot(IsInParallelMode() ? scan_snapshot() : GetLatestSnapshot());
	rel = table_open(hb_catalog_relid("model_grant"), AccessShareLock);
	ScanKeyInit(&key, attnum_of(rel, "name"), BTEqualStrategyNumber,
				F_TEXTEQ, CStringGetTextDatum(ref->name));
	scan = systable_beginscan(rel, InvalidOid, false, snap, 1, &key);
	while (!ok && (tup = systable_getnext(scan)) != NULL)
	{
		Oid			grantee = DatumGetObjectId(heap_getattr(tup, attnum_of(rel, "grantee"),
															RelationGetDescr(rel), &isnull));

		if (!OidIsValid(grantee) || has_privs_of_role(user, grantee))
			ok = true;
	}
	systable_endscan(scan);
	UnregisterSnapshot(snap);
	table_close(rel, NoLock);
	return ok;
}

void
hb_check_score_privilege(const HbCatalogRef *ref)
{
	Oid			user = GetUserId();

	if (!hb_may_score(ref))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to score model \"%s\"", ref->name),
				 errhint("The model's owner can run hb_model_grant(%s, %s).",
						 quote_literal_cstr(ref->name),
						 quote_literal_cstr(GetUserNameFromId(user, false)))));
}
