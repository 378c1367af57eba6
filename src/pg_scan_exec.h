/*
 * pg_scan_exec.h
 *	  The batching scan's executor state, shared by its files:
 *	  pg_scan_exec.c (batches, binding, scoring, the executor methods),
 *	  pg_scan_topk.c (exact and approximate top-K under ORDER BY ... LIMIT)
 *	  pg_scan_rows.c (rows read lazily, and read again in full) and
 *	  pg_scan_share.c (the models, shared with parallel workers).
 */
#ifndef HB_PG_SCAN_EXEC_H
#define HB_PG_SCAN_EXEC_H

#include "access/parallel.h"
#include "lib/binaryheap.h"
#include "nodes/execnodes.h"

#include "hbird.h"
#include "pg_scan.h"
#include "topk.h"

#define HB_SCAN_MAX_ROWS 65536
#define HB_SCAN_APPROX_KEEP 200000	/* rows kept whatever their cheap score */

typedef struct ScoreCall
{
	HbCallKind	kind;
	bool		is_array;
	HbRowSource source;
	Oid			rowtype;		/* COLUMNS: the type the row binds as */
	Oid			relid;			/* COLUMNS: the relation of the input */
	bool		agg;			/* feeds a scoring aggregate's argument */
	const char *fn;				/* the function, in messages */
	ExprState  *name_es;
	ExprState  *arg_es;			/* DATUM: the row or array */

	/* resolved at the first row of every (re)scan */
	bool		resolved;
	MemoryContext cxt;			/* what resolving allocated */
	char	   *name;
	HbCacheEntry *e;
	HbCascade  *cascade;		/* hbird.cascade's tuned cascade, or NULL */
	bool		sparse;			/* rows bind to margins (e->sparse) */
	int			width;			/* doubles per bound row */
	int			nout;			/* doubles per row of out */
	HbBinding	bind;
	bool		bound;			/* bind is valid for the rows' type */
	int		   *colmap;			/* COLUMNS: input column of each attribute
								 * of rowtype, or NULL when the same */
	HbColumnReader rd;			/* COLUMNS: those columns in the input's rows */

	/*
	 * COLUMNS, approximate top-K or a cascade: rows are read for the cheap
	 * model only (a model without featurizers: its columns; with
	 * featurizers: the steps its features need, pg_lazy.c), and their
	 * tuples kept for the batch, so that the rows scored in full are read
	 * again in full (hb_scan_read_cheaply)
	 */
	bool		lazy_cols;
	MemoryContext lazy_cxt;		/* what hb_scan_read_cheaply allocated */
	HbColumnReader rd_cheap;
	HbBinding	bind_cheap;		/* bind, featurizing the cheap steps only */
	HbTupleStore tup;			/* the batch's tuples, per batch row (x_cap) */
	TupleDesc  *tup_desc;		/* the layout it came in (its slot's: with
								 * the defaults of columns added since) */
	Datum	   *rowvals;		/* ARGS: one row's values */
	bool	   *rownulls;

	/* ARGS (a pinned call, pg_pinned.c) */
	ExprState  *pin_es[4];		/* version, sha256, origin, columns */
	int			nvals;
	Oid		   *val_type;
	int32	   *val_typmod;
	struct HbPinRead *pin_read; /* values read as declared (pg_pinned.c) */
	int		   *val_col;		/* input column of a value that is a plain
								 * column, else -1 */
	ExprState **val_es;			/* the other values' expressions */

	/* per batch, cap rows (the scoring buffers: x_cap) */
	int			x_cap;
	double	   *x;
	double	   *scratch;
	double	   *out;
	int32	   *cls;
	int		   *rows;			/* batch row of each bound row */
	Datum	   *values;			/* the scores, per batch row */
	bool	   *isnull;
} ScoreCall;

typedef struct HbScoreState
{
	CustomScanState css;
	int			n_input;
	int			n_phys;			/* of them, the input's own columns; the
								 * others are its rows' ctid or tableoid */
	AttrNumber *sys_attno;		/* per input column from n_phys on */
	int			n_calls;
	ScoreCall  *calls;

	TupleTableSlot *rowslot;	/* one input row, to evaluate arguments */
	ExprContext *argcxt;
	MemoryContext batch_cxt;	/* the rows' by-reference values, scores */
	MemoryContext state_cxt;	/* what lives as long as the node */
	int16	   *typlen;			/* per input column */
	bool	   *typbyval;
	bool	   *keep;			/* input columns the expressions read */
	int		   *kept;			/* the same, as a list */
	int			n_kept;
	int			last_col;		/* deform the input up to it */
	TupleDesc	in_desc;		/* the input's rows */
	bool		any_columns;	/* a call binds the input's columns */
	bool		need_resolve;	/* a (re)scan starts: models at its first row */
	MemoryContextCallback unpin_cb;

	Datum	   *vals;			/* cap x n_input */
	bool	   *nulls;
	ItemPointerData *tids;		/* cap: the rows' ctids, when read */
	int			cap;
	int			nrows;
	int			pos;
	bool		eof;
	int			next_rows;		/* rows to read for the next batch */
	int			max_rows;
	Size		max_bytes;

	/* top-K */
	int			topk_call;		/* -1: none */
	int64		k;
	bool		descending;
	bool		topk_on;		/* decided at the first batch */
	ExprState  *limit_count;
	ExprState  *limit_offset;
	HbTopkBounds *bounds;
	binaryheap *best;			/* the k best (sign * margin) so far */
	double		kth;			/* the k-th best of them, or -Infinity */
	double		threshold;		/* sign * margin a row must reach: the end
								 * of the run of margins that score as the
								 * k-th best does (hb_link_tie_floor, or
								 * _ceil for ascending order) */
	binaryheap *rule_best;		/* the same of the rows the approximation's
								 * rule finishes (not those scored early
								 * because they outgrew work_mem): */
	double		rule_kth;
	double		rule_bar;		/* the bar its cut and its letting go of
								 * the waiting rows follow */
	int64		seen;			/* rows handed up before this batch */
	bool		skip_ok;		/* pruned rows need not be handed up */
	bool	   *skip;			/* per batch row: pruned, not handed up */
	bool		defer_rows;		/* the rows' values are taken from the kept
								 * tuples of the top-K call, and only for the
								 * rows handed up */
	Datum	   *row_values;		/* in_desc->natts: one row deformed */
	bool	   *row_nulls;

	/* approximate top-K (tuned cheap model), or approx == NULL */
	HbTuning	tuning;
	HbCacheEntry *tuned_entry;	/* the entry the tuning was loaded for */
	const HbApprox *approx;
	int64		approx_keep;	/* rows kept whatever their cheap score */
	double		cut;			/* and every row at or above this */
	binaryheap *cheap_best;		/* the keep best cheap scores so far */
	double	   *raw;			/* per bound row: what finishing continues */
	int		   *kept_at;		/* per kept row: its place among the rows */
	int		   *gate_at;		/* per row past the gate: its place in the batch */
	double	   *score2;			/* per row: its gate score (with a gate, once
								 * no row waits); then per kept row: its
								 * second-stage score */
	bool	   *refined;		/* per waiting row flushed: raw is the second
								 * stage's */
	int			raw_cap;
	bool		wait_ok;		/* rows below the cut wait (hb_topk's rule),
								 * else the running best `kept` are kept */
	int64		ordinal;		/* of the next row after the (2k+1)-th */
	HbWaiting	waiting;		/* rows below the cut that may still be
								 * owed a place (pg_waiting.c); each one's
								 * data a blob: its features bound in full,
								 * then the values handed up for it,
								 * by-reference ones copied after them */
	int			n_flushed;		/* at the end (or early): waiting rows
								 * handed up, */
	int			n_to_flush;		/* of these many (hb_waiting_in_order) */
	bool		flushing_early;	/* handing them up before the end: they
								 * outgrew work_mem */
	MemoryContext wait_cxt;		/* the waiting rows, reset per (re)scan */

	/* EXPLAIN ANALYZE */
	int64		batches;
	int64		rows_in;
	int64		rows_scored;
	int64		rows_pruned;
	int64		rows_refined;	/* through the second stage (approx.h) */
	int64		rows_waited;	/* below the cut, kept waiting (pg_waiting.c) */
	int64		rows_gated;		/* let go by the gate (approx.h), without
								 * the cheap model */
	int64		rows_lazy;		/* read for a cheap model only (lazy_cols) */
	List	   *shared;			/* the leader's entries in shared memory
								 * (pg_scan_share.c) */
} HbScoreState;

/* pg_scan_rows.c */
extern void hb_scan_read_cheaply(HbScoreState *st, ScoreCall *c,
								 const HbApprox *a, bool plain);
extern void hb_scan_read_row_full(ScoreCall *c, int b, double *x,
								  const double *src);
extern void hb_scan_row_values(HbScoreState *st, int i);

/* pg_scan_topk.c */
extern void hb_scan_topk_start(HbScoreState *st);
extern void hb_scan_score_topk(HbScoreState *st, ScoreCall *c, int nb);
extern void hb_scan_reset_waiting(HbScoreState *st);
extern bool hb_scan_flush_waiting(HbScoreState *st);
extern bool hb_scan_flush_early(HbScoreState *st);

/* pg_scan_share.c: the models, shared with parallel workers */
extern Size hb_score_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
extern void hb_score_init_dsm(CustomScanState *node, ParallelContext *pcxt,
							  void *coordinate);
extern void hb_score_reinit_dsm(CustomScanState *node, ParallelContext *pcxt,
								void *coordinate);
extern void hb_score_init_worker(CustomScanState *node, shm_toc *toc,
								 void *coordinate);

#endif							/* HB_PG_SCAN_EXEC_H */
