/*
 * pg_scaleout.h
 *	  Scoring on shards and models on every node (docs/scale-out.md):
 *	  which servers are shards (pg_shard_map.c), the pinned calls
 *	  (pg_pinned.c), the planner step that ships them (pg_pushdown.c,
 *	  pg_partsplit.c) and the model distribution (pg_shards.c).
 */
#ifndef HB_PG_SCALEOUT_H
#define HB_PG_SCALEOUT_H

#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"

#include "hbird.h"
#include "utils/array.h"

/* pg_shard_map.c: which servers are shards, which tables are on them */
extern bool hb_server_ships_hbird(Oid serverid);
extern bool hb_shard_table(Oid relid, Oid *serverid);
extern List *hb_leaf_partitions(Oid relid);
extern bool hb_distributed_rel(Oid relid);

/* pg_pinned.c */
extern char *hb_sha256_hex(const uint8 *sha);
extern char *hb_pin_identity(const uint8 *sha, const char *names_key);
extern void hb_pin_check(const char *name, int32 version, const uint8 *sha,
						 const char *names_key, int32 pin_version,
						 const char *pin_sha, const char *origin);
extern void hb_pinned_check_shipped(FuncExpr *f);
extern HbCacheEntry *hb_pinned_resolve(const char *name, int32 pin_version,
									   const char *pin_sha, const char *origin);
typedef struct HbPinRead HbPinRead;
extern bool hb_pin_reads_as(Oid type, int32 typmod);
extern bool hb_pin_array_type(Oid t);
extern uint64 hb_pinned_runs;	/* pinned calls run by this backend */
extern ArrayType *hb_pin_columns(Datum *names, const Oid *types,
								 const int32 *typmods, int n);
extern TupleDesc hb_pinned_desc(ArrayType *cols, int nvals, const Oid *types,
								const int32 *typmods, HbPinRead **read);
extern void hb_pinned_read(const HbPinRead *r, Datum *values, const bool *nulls);
extern int32 hb_arg_typmod(FmgrInfo *flinfo, int i);

/* pg_pushdown.c: around standard_planner, from the planner hook */
typedef struct HbPushdown
{
	bool		depends;		/* the plan depends on the model catalog */
	bool		folded_pinned;	/* the planner ran a pinned call */
	List	   *topk_relids;	/* partitions of a distributed top-K */
	List	   *keep;			/* plan nodes the batching scan leaves alone */
	List	   *replaced;		/* OIDs of the functions pinned calls replace */
} HbPushdown;

extern bool hb_pushdown_on;		/* hbird.pushdown (pg_guc.c) */
extern void hb_pushdown_init(void);
extern void hb_pushdown_prepare(Query *parse, HbPushdown *pd);
extern void hb_pushdown_finish(PlannedStmt *stmt, HbPushdown *pd);
extern bool hb_pushdown_keeps(const HbPushdown *pd, const Plan *plan);
extern bool hb_topk_on_shards(FunctionCallInfo fcinfo, HbCacheEntry *e, int k,
							  Oid rowtype);

/* pg_remote_scores.c: scores in a foreign scan's output, from its shard */
extern void hb_remote_scores(PlannedStmt *stmt);

/* pg_partsplit.c: aggregates and top-K over partitions, per partition */
extern bool hb_split_per_partition(Query *q, HbPushdown *pd);
extern void hb_topk_scans_fix(PlannedStmt *stmt, HbPushdown *pd);
extern int	hb_plan_next_node_id(PlannedStmt *stmt);
extern List *hb_plan_children(Plan *plan);

/* pg_admin.c: writing a version (upload, and receiving from a coordinator) */
typedef struct HbVersionRows HbVersionRows;

extern void hb_sha256(const char *data, size_t len, uint8 *out);
extern HbVersionRows *hb_version_prepare(const char *name, struct varlena *arg,
										 HbFormat format, ArrayType *features,
										 const uint8 *digest);
extern const uint8 *hb_version_sha256(const HbVersionRows *r);
extern void hb_version_insert(HbCatalogWrite *w, const char *name,
							  HbVersionRows *r, int32 version);

#endif							/* HB_PG_SCALEOUT_H */
