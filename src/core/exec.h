/*
 * exec.h
 *	  The core's executor: the one entry every scoring path runs trees
 *	  through.
 *
 * Full scoring (hb_plan_margins), top-K blocks, the early exit, prefix
 * approximations, cascades, tuning and the device all come here with the
 * same question: "add trees [t0, t1) of this plan to these rows' sums".
 * Below this entry sit the strategies (exec_tt.c, strategy_ptt.c,
 * strategy_gemm.c) and the device (device.c); they are handed rows and a
 * tree range and never call back up.  Every path sums leaves per row in
 * model tree order, so any split of [0, T) into ranges, any strategy and
 * the device give the same bits as one full call.
 *
 * Inputs are row-major doubles, n_features per row, NaN for missing; sums
 * are n x n_outputs doubles (float32 values for float32 models).
 */
#ifndef HB_EXEC_H
#define HB_EXEC_H

#include "plan.h"

/* flags of hb_exec_trees */
#define HB_EXEC_INIT		0x01	/* acc starts at the base margins */
#define HB_EXEC_DEVICE		0x02	/* the device may take the call */
#define HB_EXEC_DEVICE_ONLY 0x04	/* the device or nothing: false if not */
#define HB_EXEC_SNAPPED		0x08	/* x is zero-snapped already (LightGBM) */

/*
 * Trees [t0, t1) of p for the n rows of x, added to acc; with HB_EXEC_INIT
 * acc is first set to the base margins (then trees [0, T) are full
 * scoring, and a linear model, which has no trees, gets its margins).
 * strategy AUTO chooses per batch (hb_plan_strategy); a strategy the plan
 * lacks, or one without tree ranges (GEMM), runs as TT.  The device takes
 * only full scoring (HB_EXEC_INIT over every tree) and only when asked and
 * hbird.device wants the batch.  Returns false only under
 * HB_EXEC_DEVICE_ONLY when the device did not take the call (acc is then
 * untouched).
 */
extern bool hb_exec_trees(const HbPlan *p, HbStrategy strategy,
						  const double *x, size_t n, int t0, int t1,
						  int flags, double *acc);

/* acc (n x n_outputs) set to the base margins, float-rounded for float32 */
extern void hb_exec_base(const HbPlan *p, size_t n, double *acc);

/* The strategy hbird.tree_strategy forces, or AUTO */
extern HbStrategy hb_exec_forced(void);

/*
 * Row sets scored tree range by tree range (top-K, the class early exit):
 * rows loaded once, trees added range by range, rows that are settled
 * dropped.  With strategy PTT, PTT's compact chunk (HbPttChunk: it ranks
 * the rows once per load) serves when the plan has its layout and it pays
 * over the whole model; otherwise the chunk is plain: it keeps copies of
 * the rows and their sums here, and every run goes through hb_exec_trees
 * with the strategy given.  Either way a row's sums are its trees in model
 * order: once it has run them all, hb_plan_margins's bits.  x must be
 * zero-snapped already and stay the caller's while the chunk holds rows.
 */
typedef struct HbExecChunk HbExecChunk;

/*
 * NULL when out of memory.  cap: the rows per load of a plain chunk (a
 * compact one sizes itself to its rank buffer: see hb_exec_chunk_cap).
 */
extern HbExecChunk *hb_exec_chunk_new(const HbPlan *p, HbStrategy strategy,
									  int cap);
extern void hb_exec_chunk_free(HbExecChunk *c);
/* does a load rank the rows once, so that many short runs cost no more? */
extern bool hb_exec_chunk_compact(const HbExecChunk *c);
extern int	hb_exec_chunk_cap(const HbExecChunk *c);
/* n rows of x (n <= cap), ids first_id.., sums at the base margins */
extern void hb_exec_chunk_load(HbExecChunk *c, const double *x, int n,
							   size_t first_id);
/* add trees [t0, t1) to the sums of the first nr rows held */
extern void hb_exec_chunk_run(HbExecChunk *c, int nr, int t0, int t1);
/* keep rows[0..m), distinct indexes of rows held, in that order */
extern void hb_exec_chunk_select(HbExecChunk *c, const int32_t *rows, int m);
/*
 * drop the rows whose keep[] is 0; keep[] follows (all 1 on the rows
 * held after).  A compact chunk moves the last rows into the places freed,
 * a plain one keeps the order.
 */
extern void hb_exec_chunk_drop(HbExecChunk *c, uint8_t *keep);
/* running sums of the rows held, rows x n_outputs */
extern void hb_exec_chunk_margins(const HbExecChunk *c, double *out);
extern const size_t *hb_exec_chunk_ids(const HbExecChunk *c);

#endif							/* HB_EXEC_H */
