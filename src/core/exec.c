/*
 * exec.c
 *	  The executor entry (exec.h): trees [t0, t1) of a plan for a batch of
 *	  rows, on the device or with the strategy the batch calls for.
 *
 * Everything that scores trees comes through hb_exec_trees, and it is the
 * only caller of the strategies' kernels (hb_tt_*, hb_ptt_*, hb_gemm_*)
 * and of the device's dispatch outside tests and benchmarks.  What must
 * hold: whatever path is taken, a row's sums are its trees' leaves added
 * in model order from the base margin, so the bits never depend on the
 * path (tests/core/test_strategies.c, test_tune.c compare with memcmp).
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
hb_exec_strategy(const HbPlan *p, size_t n)
{
	HbStrategy	s = strategy_override;

	if (p->estimator != HB_EST_TREES)
		return HB_STRATEGY_TT;
	if (s == HB_STRATEGY_AUTO)
	{
		double		fullness = p->max_depth > 0 ?
			p->avg_leaf_depth / p->max_depth : 1.0;

		if (n < HB_AUTO_MIN_BATCH)
			s = HB_STRATEGY_TT;
		else if (p->gemm && p->max_depth <= HB_AUTO_GEMM_DEPTH &&
				 n >= HB_AUTO_GEMM_MIN_BATCH)
			s = HB_STRATEGY_GEMM;
		else if (p->ptt && p->max_depth <= HB_AUTO_PTT_DEPTH &&
				 fullness >= HB_AUTO_PTT_FULLNESS)
			s = HB_STRATEGY_PTT;
		else
			s = HB_STRATEGY_TT;
	}
	if ((s == HB_STRATEGY_PTT && !p->ptt) || (s == HB_STRATEGY_GEMM && !p->gemm))
		s = HB_STRATEGY_TT;
	return s;
}

HbStrategy
hb_plan_strategy(const HbPlan *p, size_t n)
{
	return hb_exec_strategy(p, n);
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
		s = hb_exec_strategy(p, n);
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
