/*
 * pg_scan.h
 *	  The batching scan: a custom plan node (HbirdScore) that the planner
 *	  hook puts where scoring calls are evaluated, so that plain SQL scores
 *	  rows in batches (pg_scan_plan.c builds it, pg_scan_exec.c runs it);
 *	  what the planner steps ask of a function (pg_scoring_funcs.c) and of
 *	  a node's expressions (pg_scan_calls.c).
 *
 * The node sits on one input plan (its outer plan).  Its scan tuple is the
 * input's columns followed by one column per scoring call it computes; its
 * target list and quals are the expressions the replaced node evaluated,
 * reading that tuple.  What the executor needs beyond the expressions
 * travels in custom_private as plain value nodes, so that the plan can be
 * copied and sent to parallel workers:
 *
 *	custom_private = (n_input, calls, topk, sys)
 *	  calls: one list per call (kind, is_array, source, rowtype, relid)
 *			 (a pinned call's arg is a RowExpr of its other arguments)
 *	  topk:  (call, k, descending) when the node feeds a bounded sort on
 *			 that call's score, else NIL
 *	  sys:   the system attribute numbers (ctid, tableoid) of the last
 *			 input columns, which the input's slots carry as their rows'
 *			 identity rather than as columns (a scan of a table's own
 *			 tuples, which does not project for them); NIL when none
 *	custom_exprs = (name_0, arg_0, name_1, arg_1, ...[, limit_count,
 *			 limit_offset]) in terms of the input's columns (OUTER_VAR)
 */
#ifndef HB_PG_SCAN_H
#define HB_PG_SCAN_H

#include "nodes/extensible.h"
#include "nodes/plannodes.h"

/* What a scoring call returns. */
typedef enum HbCallKind
{
	HB_CALL_NONE = 0,
	HB_CALL_PREDICT,			/* float8 */
	HB_CALL_PROBA,				/* float8[] */
	HB_CALL_MARGIN,				/* float8[] */
	HB_CALL_CLASS,				/* integer */
	HB_CALL_TARGETS				/* float8[] */
} HbCallKind;

/* Where a call's row comes from. */
typedef enum HbRowSource
{
	HB_SOURCE_DATUM = 0,		/* evaluate the argument: a row or an array */
	HB_SOURCE_COLUMNS,			/* the input's first columns are the columns
								 * of relation relid: bind them directly */
	HB_SOURCE_ARGS				/* a pinned call (pg_pinned.c): its argument
								 * is a RowExpr of (version, sha256, origin,
								 * columns, values...), the values bound by
								 * those names (or one array) */
} HbRowSource;

/* What one of hbird's functions is to the planner hook. */
typedef enum HbFuncRole
{
	HB_ROLE_NONE = 0,
	HB_ROLE_CALL,				/* scores the row it is given */
	HB_ROLE_AGG,				/* an aggregate of scores (hb_predict_agg) */
	HB_ROLE_BATCH				/* scores a query's rows (hb_predict_batch) */
} HbFuncRole;

extern const CustomScanMethods hb_score_scan_methods;
extern bool hb_batch_scan;
extern bool hb_share_plans;		/* read by pg_scan_share.c */
extern int	hb_share_plans_max;	/* kB; likewise */

/* pg_scoring_funcs.c: which of hbird's functions an OID is */
extern HbCallKind hb_scoring_call(Oid funcid, bool *is_array);
extern HbFuncRole hb_scoring_role(Oid funcid, HbCallKind *kind);
extern bool hb_pinned_function(Oid funcid);
extern Oid	hb_scoring_row_function(Oid aggfnoid);
extern const char *hb_call_function_name(HbCallKind kind, bool agg);
extern const char *hb_pinned_function_name(HbCallKind kind);

/* pg_scan_calls.c: the calls a node evaluates for every row */
typedef struct FoundCall
{
	FuncExpr   *expr;			/* the call, as the node evaluates it */
	HbCallKind	kind;
	bool		is_array;
	bool		agg;			/* a scoring aggregate's rows: expr calls
								 * the aggregate on one row's arguments */
	Oid			display_funcid; /* what EXPLAIN shows it as */
	bool		pinned;			/* hb_*_pinned: HB_SOURCE_ARGS */
} FoundCall;

extern List *hb_find_calls(Node *node, List *calls, bool outer_only);
extern List *hb_find_calls_or_agg(Node *node, List *calls, bool outer_only);
extern FuncExpr *hb_agg_call_expr(Aggref *a);
extern bool hb_is_agg_call(Node *node);
extern Node *hb_display_call(FoundCall *fc, Node *expr);
extern List *hb_pinned_calls_every_row(Node *node);

/* pg_scan_plan.c */
extern void hb_scan_init(void);

/* pg_batch_stream.c */
extern void hb_stream_init(void);
extern Plan *hb_stream_function_scan(FunctionScan *fs, int plan_node_id);

/* pg_scan_exec.c */
extern Node *hb_score_create_state(CustomScan *cscan);

#endif							/* HB_PG_SCAN_H */
