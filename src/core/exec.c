/*
 * exec.c
 *	  The executor entry (exec.h): trees [t0, t1) of a plan for a batch of
 *	  rows, on the device or with the strategy the batch calls for.
 *
 * Everything that scores trees comes through hb_exec_trees, and it is the
 * only caller of the strategies' kernels (hb_tt_*, hb_ptt_*, hb_gemm_*)
 * and of the device's dispatch outside tests and benchmarks.  Here too:
 * the strategy choice, row sets for top-K and the early exit
 * (HbExecChunk), the public scoring forms of plan.h (margins, then the
 * links of plan.c) and the op listing of hb_compile.  What must
 * hold: whatever path is taken, a row's sums are its trees' leaves added
 * in model order from the base margin, so the bits never depend on the
 * path (test/core/test_strategies.c, test_tune.c compare with memcmp).
 */
#include "plan_int.h"
#include "device.h"
#include "exec.h"

#include <math.h>
#include <string.h>

/*
 * Strategy choice.
 *
 * Hummingbird picks by depth alone (GEMM up to 3, PTT up to 10, TT beyond).
 * hbird also looks at the batch and at how full the trees are:
 *
 *	- a few rows: TT.  It visits only the nodes on the path, with no
 *	  per-batch set-up; PTT and GEMM pay for their blocking (at one row TT
 *	  is 2-5x faster than PTT).
 *	- GEMM costs about I*L multiply-adds per tree and row (I internal nodes,
 *	  L leaves: 4^depth for full trees) against depth steps for a traversal,
 *	  so it only wins for very shallow trees (depth 2: 1.6x PTT) and batches
 *	  big enough for OpenBLAS; by depth 4 it is at half PTT's speed.
 *	- PTT walks every tree to its full depth D, branch-free, on integer keys.
 *	  It beats TT by 2-9x at every depth measured (2-10) for batches of 64
 *	  and more.  When trees are sparse (mean leaf depth well below D) TT does
 *	  much less work, so very unbalanced ensembles stay on TT.
 *
 * The thresholds (plan_int.h) come from bench/strategies.sh on this
 * project's reference machine (docs/strategies.md) and can be re-measured
 * anywhere; hbird.tree_strategy overrides the choice.
 */
static HbStrategy strategy_override = HB_STRATEGY_AUTO;

void
hb_set_strategy_override(HbStrategy s)
{
	strategy_override = s;
}

HbStrategy
hb_exec_forced(void)
{
	return strategy_override;
}

HbStrategy
hb_plan_strategy(const HbPlan *p, size_t n)
{
	HbStrategy	s = strategy_override;

	if (p->estimator != HB_EST_TREES)
		return HB_STRATEGY_TT;
	if (s == HB_STRATEGY_AUTO)
	{
		double		fullness = p->max_depth > 0 ?
			p->avg_leaf_depth / p->max_depth : 1.0;
		bool		ptt_fits = p->ptt && p->max_depth <= HB_AUTO_PTT_DEPTH &&
			fullness >= HB_AUTO_PTT_FULLNESS;

		if (n < HB_AUTO_MIN_BATCH)
			s = ptt_fits && hb_ptt_small_pays(p, n) ? HB_STRATEGY_PTT : HB_STRATEGY_TT;
		else if (p->gemm && p->max_depth <= HB_AUTO_GEMM_DEPTH &&
				 (p->n_trees <= HB_AUTO_GEMM_TREES || !ptt_fits) &&
				 n >= HB_AUTO_GEMM_MIN_BATCH)
			s = HB_STRATEGY_GEMM;
		else if (ptt_fits)
			s = HB_STRATEGY_PTT;
		else
			s = HB_STRATEGY_TT;
	}
	if ((s == HB_STRATEGY_PTT && !p->ptt) || (s == HB_STRATEGY_GEMM && !p->gemm))
		s = HB_STRATEGY_TT;
	return s;
}

void
hb_exec_base(const HbPlan *p, size_t n, double *acc)
{
	int			k = p->n_outputs;

	for (size_t r = 0; r < n; r++)
		for (int g = 0; g < k; g++)
			acc[r * k + g] = p->sum_f32 ?
				(double) (float) p->base_margin[g] : p->base_margin[g];
}

/*
 * The CPU below the entry, on snapped rows.  Full scoring takes each
 * strategy's whole-model kernel; a tree range takes PTT's range kernel
 * or TT's (GEMM has none: its trees are fused into one product).
 */
static void
run_cpu(const HbPlan *p, HbStrategy s, const double *x, size_t n, int t0,
		int t1, bool init, double *acc)
{
	if (p->estimator == HB_EST_LINEAR)
	{
		if (init)
			hb_linear_margins(p, x, n, acc);
		return;
	}
	if (init && t0 == 0 && t1 == p->n_trees)
	{
		switch (s)
		{
			case HB_STRATEGY_PTT:
				hb_ptt_margins(p, x, n, acc);
				break;
			case HB_STRATEGY_GEMM:
				hb_gemm_margins(p, x, n, acc);
				break;
			default:
				hb_tt_margins(p, x, n, acc);
				break;
		}
		return;
	}
	if (init)
		hb_exec_base(p, n, acc);
	if (t1 <= t0)
		return;
	if (s == HB_STRATEGY_PTT)
		hb_ptt_accumulate(p, x, n, t0, t1, acc);
	else
		hb_tt_accumulate(p, x, n, t0, t1, acc);
}

#define SNAP_ROWS 4096

bool
hb_exec_trees(const HbPlan *p, HbStrategy s, const double *x, size_t n,
			  int t0, int t1, int flags, double *acc)
{
	bool		init = (flags & HB_EXEC_INIT) != 0;
	bool		all = init && t0 <= 0 && t1 >= p->n_trees;

	if (t0 < 0)
		t0 = 0;
	if (t1 > p->n_trees)
		t1 = p->n_trees;
	if (n == 0)
		return !(flags & HB_EXEC_DEVICE_ONLY);
	if (!init && t1 <= t0)
		return !(flags & HB_EXEC_DEVICE_ONLY);

	/* batches go to the GPU when hbird.device says so (device.h) */
	if (all && (flags & (HB_EXEC_DEVICE | HB_EXEC_DEVICE_ONLY)) &&
		hb_device_try_margins(p, x, n, acc))
		return true;
	if (flags & HB_EXEC_DEVICE_ONLY)
		return false;

	if (s == HB_STRATEGY_AUTO)
		s = hb_plan_strategy(p, n);
	else if ((s == HB_STRATEGY_PTT && !p->ptt) ||
			 (s == HB_STRATEGY_GEMM && !p->gemm))
		s = HB_STRATEGY_TT;

	if (p->zero_snap && !(flags & HB_EXEC_SNAPPED))
	{
		/*
		 * LightGBM turns inputs within its zero threshold into zero before
		 * any comparison; do it once per block of rows instead of per node,
		 * with blocks big enough that PTT and GEMM still see whole batches.
		 * A tree range (top-K, prefixes) snaps its rows in one piece.
		 */
		size_t		per = n < SNAP_ROWS || !all ? n : SNAP_ROWS;
		int			nf = p->n_features;
		double	   *buf = hb_alloc_must(sizeof(double) * per * nf);

		for (size_t r0 = 0; r0 < n; r0 += per)
		{
			size_t		nb = n - r0 < per ? n - r0 : per;
			const double *src = x + r0 * nf;

			for (size_t i = 0; i < nb * nf; i++)
				buf[i] = fabs(src[i]) <= HB_ZERO_THRESHOLD ? 0.0 : src[i];
			run_cpu(p, s, buf, nb, t0, t1, init, acc + r0 * p->n_outputs);
		}
		hb_free(buf);
		return true;
	}
	run_cpu(p, s, x, n, t0, t1, init, acc);
	return true;
}

/* ---------- row sets ---------- */

struct HbExecChunk
{
	const HbPlan *p;
	HbStrategy	strategy;		/* a plain chunk's runs */
	HbPttChunk *ptt;			/* the compact chunk, or NULL: plain */
	int			cap;
	int			n;				/* rows held */
	/* plain: the rows held, their sums and ids; [1] for select */
	double	   *x[2];
	double	   *acc[2];
	size_t	   *ids[2];
};

HbExecChunk *
hb_exec_chunk_new(const HbPlan *p, HbStrategy strategy, int cap)
{
	HbExecChunk *c = hb_alloc0(sizeof(HbExecChunk));

	if (c == NULL)
		return NULL;
	c->p = p;
	c->strategy = strategy;
	if (strategy == HB_STRATEGY_PTT && hb_ptt_chunk_usable(p, 0, p->n_trees))
	{
		c->ptt = hb_ptt_chunk_new(p);
		if (c->ptt == NULL)
		{
			hb_free(c);
			return NULL;
		}
		c->cap = hb_ptt_chunk_cap(c->ptt);
		return c;
	}
	c->cap = cap;
	c->x[0] = hb_alloc(sizeof(double) * cap * p->n_features);
	c->acc[0] = hb_alloc(sizeof(double) * cap * p->n_outputs);
	c->ids[0] = hb_alloc(sizeof(size_t) * cap);
	if (!c->x[0] || !c->acc[0] || !c->ids[0])
	{
		hb_exec_chunk_free(c);
		return NULL;
	}
	return c;
}

void
hb_exec_chunk_free(HbExecChunk *c)
{
	if (c == NULL)
		return;
	hb_ptt_chunk_free(c->ptt);
	for (int b = 0; b < 2; b++)
	{
		hb_free(c->x[b]);
		hb_free(c->acc[b]);
		hb_free(c->ids[b]);
	}
	hb_free(c);
}

bool
hb_exec_chunk_compact(const HbExecChunk *c)
{
	return c->ptt != NULL;
}

int
hb_exec_chunk_cap(const HbExecChunk *c)
{
	return c->cap;
}

void
hb_exec_chunk_load(HbExecChunk *c, const double *x, int n, size_t first_id)
{
	if (c->ptt)
	{
		hb_ptt_chunk_load(c->ptt, x, n, first_id);
		return;
	}
	memcpy(c->x[0], x, sizeof(double) * n * c->p->n_features);
	hb_exec_base(c->p, n, c->acc[0]);
	for (int i = 0; i < n; i++)
		c->ids[0][i] = first_id + i;
	c->n = n;
}

void
hb_exec_chunk_run(HbExecChunk *c, int nr, int t0, int t1)
{
	if (c->ptt)
		hb_ptt_chunk_run(c->ptt, nr, t0, t1);
	else if (nr > 0)
		hb_exec_trees(c->p, c->strategy, c->x[0], nr, t0, t1, HB_EXEC_SNAPPED,
					  c->acc[0]);
}

void
hb_exec_chunk_select(HbExecChunk *c, const int32_t *rows, int m)
{
	int			nf = c->p->n_features;
	int			k = c->p->n_outputs;
	double	   *tx;
	double	   *ta;
	size_t	   *ti;

	if (c->ptt)
	{
		hb_ptt_chunk_select(c->ptt, rows, m);
		return;
	}
	/* built in a second copy, so any order works */
	if (c->x[1] == NULL)
	{
		c->x[1] = hb_alloc_must(sizeof(double) * c->cap * nf);
		c->acc[1] = hb_alloc_must(sizeof(double) * c->cap * k);
		c->ids[1] = hb_alloc_must(sizeof(size_t) * c->cap);
	}
	for (int j = 0; j < m; j++)
	{
		int			r = rows[j];

		memcpy(c->x[1] + (size_t) j * nf, c->x[0] + (size_t) r * nf,
			   sizeof(double) * nf);
		memcpy(c->acc[1] + (size_t) j * k, c->acc[0] + (size_t) r * k,
			   sizeof(double) * k);
		c->ids[1][j] = c->ids[0][r];
	}
	tx = c->x[0], ta = c->acc[0], ti = c->ids[0];
	c->x[0] = c->x[1], c->acc[0] = c->acc[1], c->ids[0] = c->ids[1];
	c->x[1] = tx, c->acc[1] = ta, c->ids[1] = ti;
	c->n = m;
}

void
hb_exec_chunk_drop(HbExecChunk *c, uint8_t *keep)
{
	int			nf = c->p->n_features;
	int			k = c->p->n_outputs;
	int			kept = 0;

	if (c->ptt)
	{
		hb_ptt_chunk_drop(c->ptt, keep);
		return;
	}
	for (int i = 0; i < c->n; i++)
	{
		if (!keep[i])
			continue;
		if (kept != i)
		{
			memcpy(c->x[0] + (size_t) kept * nf, c->x[0] + (size_t) i * nf,
				   sizeof(double) * nf);
			memcpy(c->acc[0] + (size_t) kept * k, c->acc[0] + (size_t) i * k,
				   sizeof(double) * k);
			c->ids[0][kept] = c->ids[0][i];
		}
		kept++;
	}
	memset(keep, 1, kept);
	if (c->n > kept)
		memset(keep + kept, 0, c->n - kept);
	c->n = kept;
}

void
hb_exec_chunk_margins(const HbExecChunk *c, double *out)
{
	if (c->ptt)
		hb_ptt_chunk_margins(c->ptt, out);
	else
		memcpy(out, c->acc[0], sizeof(double) * c->n * c->p->n_outputs);
}

const size_t *
hb_exec_chunk_ids(const HbExecChunk *c)
{
	return c->ptt ? hb_ptt_chunk_ids(c->ptt) : c->ids[0];
}

/* ---------- the public forms (plan.h) ---------- */

void
hb_plan_margins(const HbPlan *p, const double *x, size_t n, double *margins)
{
	hb_exec_trees(p, HB_STRATEGY_AUTO, x, n, 0, p->n_trees,
				  HB_EXEC_INIT | HB_EXEC_DEVICE, margins);
}

void
hb_plan_margins_with(const HbPlan *p, HbStrategy s, const double *x,
					 size_t n, double *margins)
{
	hb_exec_trees(p, s, x, n, 0, p->n_trees, HB_EXEC_INIT, margins);
}

void
hb_plan_accumulate(const HbPlan *p, const double *x, size_t n, int t0, int t1,
				   double *margins)
{
	if (t1 <= t0)
		return;
	hb_exec_trees(p, HB_STRATEGY_AUTO, x, n, t0, t1, 0, margins);
}

void
hb_plan_base_margins(const HbPlan *p, size_t n, double *margins)
{
	hb_exec_base(p, n, margins);
}

/*
 * Scores: the margins, then the link (plan.c), which is below this file
 * and calls nothing back.
 */
void
hb_plan_predict(const HbPlan *p, const double *x, size_t n, double *scratch,
				double *out)
{
	hb_plan_margins(p, x, n, scratch);
	hb_link_predict(p, scratch, n, out);
}

void
hb_plan_targets(const HbPlan *p, const double *x, size_t n, double *scratch,
				double *out)
{
	hb_plan_margins(p, x, n, scratch);
	hb_link_targets(p, scratch, n, out);
}

void
hb_plan_proba(const HbPlan *p, const double *x, size_t n, double *scratch,
			  double *out)
{
	hb_plan_margins(p, x, n, scratch);
	hb_link_proba(p, scratch, n, out);
}

/*
 * The ops of a batch with the strategy it would run with: the rows the
 * strategy describes, then the link's.
 */
int
hb_plan_ops(const HbPlan *p, size_t n, HbPlanOp *ops, int max_ops)
{
	HbStrategy	s = hb_plan_strategy(p, n);
	int			k = 0;

	if (p->estimator == HB_EST_LINEAR)
	{
		if (max_ops < 1)
			return 0;
		ops[0].op = p->sum_f32 ? "dot" : "gemm";
		snprintf(ops[0].in_shape, sizeof(ops[0].in_shape), "%zux%d", n, p->n_features);
		snprintf(ops[0].out_shape, sizeof(ops[0].out_shape), "%zux%d", n, p->n_outputs);
		ops[0].param_bytes = (int64_t) sizeof(double) * (p->n_features + 1) * p->n_outputs;
		ops[0].flops = 2.0 * n * p->n_features * p->n_outputs;
		k = 1;
	}
	else if (s == HB_STRATEGY_PTT)
		k = hb_ptt_ops(p, n, ops, max_ops);
	else if (s == HB_STRATEGY_GEMM)
		k = hb_gemm_ops(p, n, ops, max_ops);
	else
		k = hb_tt_ops(p, n, ops, max_ops);
	if (k < max_ops)
	{
		ops[k].op = p->link == HB_LINK_SOFTMAX || p->link == HB_LINK_SOFTMAX_PAIR ?
			"softmax" :
			p->link == HB_LINK_SIGMOID || p->link == HB_LINK_LOGISTIC ? "sigmoid" :
			p->link == HB_LINK_EXP ? "exp" :
			p->link == HB_LINK_SOFTMAX_ZERO ? "softmax_zero" :
			p->link == HB_LINK_PROBIT ? "probit" :
			p->link == HB_LINK_SIGMOID_L1 ? "sigmoid_l1" :
			p->link == HB_LINK_SIGMOID_SUM ? "sigmoid_sum" :
			p->link == HB_LINK_SOFTPLUS ? "softplus" :
			p->link == HB_LINK_MEAN ? "mean" :
			p->link == HB_LINK_L1 ? "l1" : "identity";
		snprintf(ops[k].in_shape, sizeof(ops[k].in_shape), "%zux%d", n, p->n_outputs);
		snprintf(ops[k].out_shape, sizeof(ops[k].out_shape), "%zux%d", n,
				 p->n_classes > 1 ? p->n_classes :
				 hb_plan_is_multi_target(p) ? p->n_outputs : 1);
		ops[k].param_bytes = (int64_t) sizeof(double) * p->n_outputs;
		ops[k].flops = (double) n * p->n_outputs * 4;
		k++;
	}
	for (int i = 0; i < k; i++)
		ops[i].strategy = s;
	return k;
}
