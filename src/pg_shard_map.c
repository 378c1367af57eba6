/*
 * pg_shard_map.c
 *	  Which foreign servers are shards and which tables live on them
 *	  (docs/scale-out.md).
 *
 * A shard is a postgres_fdw server whose extensions option lists hbird:
 * postgres_fdw ships hbird's functions only there.  The planner steps
 * (pg_pushdown.c, pg_partsplit.c), hb_topk and the model distribution
 * (pg_shards.c) all ask this, so it sits below them and calls no other
 * glue file.
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "partitioning/partdesc.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/varlena.h"

#include "hbird.h"
#include "pg_scaleout.h"

/* ---- servers ---- */

/*
 * Does the server ship hbird's functions: a postgres_fdw server whose
 * extensions option lists hbird?
 */
bool
hb_server_ships_hbird(Oid serverid)
{
	ForeignServer *server = GetForeignServer(serverid);
	ForeignDataWrapper *fdw = GetForeignDataWrapper(server->fdwid);
	char	   *handler;
	ListCell   *lc;

	if (!OidIsValid(fdw->fdwhandler) ||
		(handler = get_func_name(fdw->fdwhandler)) == NULL ||
		strcmp(handler, "postgres_fdw_handler") != 0)
		return false;
	foreach(lc, server->options)
	{
		DefElem    *d = lfirst(lc);
		List	   *names;
		ListCell   *ln;

		if (strcmp(d->defname, "extensions") != 0)
			continue;
		/* parsed as postgres_fdw parses it */
		if (!SplitIdentifierString(pstrdup(defGetString(d)), ',', &names))
			return false;
		foreach(ln, names)
			if (strcmp(lfirst(ln), "hbird") == 0)
				return true;
	}
	return false;
}

/* ---- tables ---- */

/* A foreign table on a server that ships hbird's functions. */
bool
hb_shard_table(Oid relid, Oid *serverid)
{
	ForeignTable *ft;

	if (get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE)
		return false;
	ft = GetForeignTable(relid);
	if (serverid)
		*serverid = ft->serverid;
	return hb_server_ships_hbird(ft->serverid);
}

/*
 * The leaf partitions of a partitioned table, in partition bound order,
 * locked as the planner locks them.
 */
List *
hb_leaf_partitions(Oid relid)
{
	Relation	rel = table_open(relid, NoLock);
	PartitionDesc pd = RelationGetPartitionDesc(rel, true);
	List	   *leaves = NIL;

	for (int i = 0; i < pd->nparts; i++)
	{
		Oid			child = pd->oids[i];

		LockRelationOid(child, AccessShareLock);
		if (get_rel_relkind(child) == RELKIND_PARTITIONED_TABLE)
			leaves = list_concat(leaves, hb_leaf_partitions(child));
		else
			leaves = lappend_oid(leaves, child);
	}
	table_close(rel, NoLock);
	return leaves;
}

/*
 * Is relid a foreign table of an hbird server, or a partitioned table with
 * at least one leaf that is?  (Locks the partitions.)
 */
bool
hb_distributed_rel(Oid relid)
{
	char		kind = get_rel_relkind(relid);
	ListCell   *lc;

	if (kind == RELKIND_FOREIGN_TABLE)
		return hb_shard_table(relid, NULL);
	if (kind != RELKIND_PARTITIONED_TABLE)
		return false;
	foreach(lc, hb_leaf_partitions(relid))
		if (hb_shard_table(lfirst_oid(lc), NULL))
			return true;
	return false;
}
