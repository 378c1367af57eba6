/*
 * test_strategies.c
 *	  TreeTraversal, PerfectTreeTraversal and GEMM must give bit-identical
 *	  margins, on random IR models and on the XGBoost fixtures.
 *
 * TT (hb_tt_margins) over the whole input is the reference; every strategy,
 * TT included, then scores the same rows in batches of 1, 7, 64 and 1000
 * and must reproduce it byte for byte (memcmp of the doubles), because
 * float32 sums depend on the order of the additions and every strategy
 * promises model tree order.  The fixtures also check TT against XGBoost's
 * own margins.  The tree models of the shared conformance corpus (XGBoost
 * and LightGBM: categorical sets, zero-as-missing, double thresholds) are
 * compared across strategies too, when the corpus is there
 * ($HB_CONFORMANCE, else ../shared/conformance).
 *
 * Build (from the repository root) with every .c file of src/core:
 *	 gcc -std=gnu11 -O2 -Wall -Wextra -Isrc/core test/core/test_strategies.c
 *		 src/core/[a-z]*.c -lopenblas -lm
 *
 * Run from the repository root (fixtures: test/fixtures, or $HB_FIXTURES).
 * TAP output; exit status 1 when a test fails.
 */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "plan_int.h"
#include "test_util.h"
#include "test_models.h"

#define N_ROWS		1000		/* rows scored per model */
#define BIG_BYTES	((size_t) 1 << 30)

static const size_t batches[] = {1, 7, 13, 64, 1000};

/* ---------- comparing strategies ---------- */

typedef void (*MarginsFn) (const HbPlan *p, const double *x, size_t n,
						   double *margins);

/* Score n rows in batches of b. */
static void
score(MarginsFn fn, const HbPlan *p, const double *x, size_t n, size_t b,
	  double *out)
{
	int			nf = p->n_features;
	int			k = p->n_outputs;

	for (size_t r0 = 0; r0 < n; r0 += b)
	{
		size_t		nb = n - r0 < b ? n - r0 : b;

		fn(p, x + r0 * nf, nb, out + r0 * k);
	}
}

/*
 * The strategy must give the reference's bytes for every batch size.
 * Returns true when it does; describes the first difference otherwise.
 */
static bool
same_bits(const char *what, MarginsFn fn, const HbPlan *p, const double *x,
		  size_t n, const double *ref, char *why, size_t whylen)
{
	size_t		cells = n * p->n_outputs;
	double	   *got = malloc(sizeof(double) * cells);

	for (size_t bi = 0; bi < sizeof(batches) / sizeof(batches[0]); bi++)
	{
		size_t		b = batches[bi];

		/* garbage first: every cell must be written */
		memset(got, 0x7f, sizeof(double) * cells);
		score(fn, p, x, n, b, got);
		if (memcmp(got, ref, sizeof(double) * cells) != 0)
		{
			for (size_t i = 0; i < cells; i++)
				if (memcmp(&got[i], &ref[i], sizeof(double)) != 0)
				{
					snprintf(why, whylen,
							 "%s batch %zu: row %zu output %zu: got %.17g, TT %.17g",
							 what, b, i / p->n_outputs, i % p->n_outputs,
							 got[i], ref[i]);
					break;
				}
			free(got);
			return false;
		}
	}
	free(got);
	return true;
}

/* What a strategy's build must do for a model. */
typedef enum Expect
{
	REFUSE,						/* HB_ERR_LIMIT */
	BUILD,
	EITHER						/* real models: a refusal is a skip */
} Expect;

/* GEMM costs about I x L multiply-adds per tree and row: skip the huge */
#define GEMM_TEST_BUDGET 3e8

static void
skip(const char *fmt,...)
{
	va_list		ap;

	tu_n_test++;
	printf("ok %d - ", tu_n_test);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/*
 * Build the PTT and GEMM layouts (with room to spare) and compare all
 * three strategies with TT on the whole input.
 */
static Expect expect_compact = EITHER;	/* set around a call */
static int	blocks_seen[2];			/* plans with columns ranked by blocks:
										 * f64, f32 thresholds */

static void
check_strategies(const char *name, HbModel *m, const double *x, size_t n,
				 Expect expect_ptt, Expect expect_gemm)
{
	HbPlan	   *p = NULL;
	HbError		err = {0};
	double	   *ref;
	char		why[512];
	HbPlanOp	ops[256];
	double		gemm_cost = 0;
	bool		ok;

	if (!hb_plan_build(m, &p, &err))
	{
		tu_report(false, "%s: plan: %s", name, err.msg);
		return;
	}
	ref = malloc(sizeof(double) * n * p->n_outputs);
	hb_tt_margins(p, x, n, ref);

	why[0] = '\0';
	ok = same_bits("tt", hb_tt_margins, p, x, n, ref, why, sizeof(why));
	tu_report(ok, "%s: tt in batches of 1/7/13/64/1000 %s", name, why);

	memset(&err, 0, sizeof(err));
	ok = hb_ptt_build(p, m, BIG_BYTES, &err);
	if (expect_ptt == REFUSE)
		tu_report(!ok && err.code == HB_ERR_LIMIT && p->ptt == NULL,
				  "%s: ptt refuses (%s)", name, err.msg);
	else if (!ok && expect_ptt == EITHER && err.code == HB_ERR_LIMIT)
		skip("%s: ptt # SKIP layout refused: %s", name, err.msg);
	else if (!ok)
		tu_report(false, "%s: ptt build: %s", name, err.msg);
	else
	{
		/* every kernel of PTT: the choice, the eight-row walk, compact */
		static const struct
		{
			HbPttKernel k;
			bool		blocks;
			const char *what;
		}			kernels[] = {
			{HB_PTT_KERNEL_AUTO, true, "ptt"},
			{HB_PTT_KERNEL_WALK8, true, "ptt walk8"},
			{HB_PTT_KERNEL_COMPACT, true, "ptt compact"},
			{HB_PTT_KERNEL_COMPACT, false, "ptt compact, search-tree ranks"},
			{HB_PTT_KERNEL_PORTABLE, true, "ptt compact portable"},
		};
		int			blocks = hb_ptt_block_columns(p);

		ok = hb_ptt_ops(p, 1024, ops, 256) >= 2 && hb_ptt_bytes(p->ptt) > 0;
		why[0] = '\0';
		for (size_t ki = 0; ki < sizeof(kernels) / sizeof(kernels[0]) && ok; ki++)
		{
			hb_ptt_set_kernel(kernels[ki].k);
			hb_ptt_set_block_ranks(kernels[ki].blocks);
			ok = same_bits(kernels[ki].what, hb_ptt_margins, p, x, n, ref, why,
						   sizeof(why));
		}
		hb_ptt_set_kernel(HB_PTT_KERNEL_AUTO);
		hb_ptt_set_block_ranks(true);
		blocks_seen[p->cmp == HB_CMP_LT_F32] += blocks > 0;
		tu_report(ok, "%s: ptt == tt, bit for bit, every kernel (%zu layout bytes%s, %d columns ranked by blocks) %s",
				  name, hb_ptt_bytes(p->ptt),
				  hb_ptt_has_compact(p) ? ", compact" : "", blocks, why);
		if (expect_compact != EITHER)
			tu_report(hb_ptt_has_compact(p) == (expect_compact == BUILD),
					  "%s: compact layout %s", name,
					  expect_compact == BUILD ? "built" : "refused");
	}

	for (int t = 0; t < m->n_trees; t++)
		gemm_cost += (double) m->trees[t].n_leaves * (m->trees[t].n_leaves - 1);
	gemm_cost *= n;
	memset(&err, 0, sizeof(err));
	if (expect_gemm == EITHER && gemm_cost > GEMM_TEST_BUDGET)
	{
		skip("%s: gemm # SKIP %.2g multiply-adds per pass, too slow for a unit test",
			 name, gemm_cost);
		goto done;
	}
	ok = hb_gemm_build(p, m, BIG_BYTES, &err);
	if (expect_gemm == REFUSE)
		tu_report(!ok && err.code == HB_ERR_LIMIT && p->gemm == NULL,
				  "%s: gemm refuses (%s)", name, err.msg);
	else if (!ok && expect_gemm == EITHER && err.code == HB_ERR_LIMIT)
		skip("%s: gemm # SKIP layout refused: %s", name, err.msg);
	else if (!ok)
		tu_report(false, "%s: gemm build: %s", name, err.msg);
	else
	{
		why[0] = '\0';
		ok = same_bits("gemm", hb_gemm_margins, p, x, n, ref, why, sizeof(why)) &&
			hb_gemm_ops(p, 1024, ops, 256) >= 3 && hb_gemm_bytes(p->gemm) > 0;
		tu_report(ok, "%s: gemm == tt, bit for bit (%zu layout bytes) %s", name,
				  hb_gemm_bytes(p->gemm), why);
	}
done:
	free(ref);
	hb_plan_free(p);
}

static void
test_random_models(void)
{
	static const int depths[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

	for (size_t di = 0; di < sizeof(depths) / sizeof(depths[0]); di++)
	{
		for (int variant = 0; variant < 4; variant++)
		{
			GenOpts		o;
			HbModel    *m;
			double	   *x;
			char		name[128];

			memset(&o, 0, sizeof(o));
			o.depth = depths[di];
			o.cmp = (variant & 1) ? HB_CMP_LE_F64 : HB_CMP_LT_F32;
			o.n_outputs = (variant & 2) ? 3 : 1;
			o.n_features = 3 + irand(30);
			/* deep trees thin out, so that GEMM products stay small */
			o.p_leaf = o.depth <= 6 ? 0.15 : 0.45;
			o.n_trees = o.depth <= 8 ? 25 + irand(20) : 8 + irand(6);
			o.default_left = -1;
			o.kinds = false;
			m = random_model(&o);
			snprintf(name, sizeof(name), "random depth %d %s %d output%s, %d trees",
					 o.depth, o.cmp == HB_CMP_LT_F32 ? "f32 <" : "f64 <=",
					 o.n_outputs, o.n_outputs > 1 ? "s" : "", o.n_trees);
			if (m == NULL)
			{
				tu_report(false, "%s: generator", name);
				continue;
			}
			x = random_inputs(o.n_features, N_ROWS);
			expect_compact = BUILD;
			check_strategies(name, m, x, N_ROWS, BUILD, BUILD);
			expect_compact = EITHER;
			free(x);
			hb_model_free(m);
		}
	}
}

/* All-left and all-right NaN directions, categorical and ZERO/NONE nodes. */
static void
test_node_kinds(void)
{
	for (int variant = 0; variant < 8; variant++)
	{
		GenOpts		o;
		HbModel    *m;
		double	   *x;
		char		name[128];

		memset(&o, 0, sizeof(o));
		o.depth = 3 + variant;
		o.cmp = (variant & 1) ? HB_CMP_LE_F64 : HB_CMP_LT_F32;
		o.n_outputs = 1 + (variant % 3);
		o.n_features = 4 + variant;
		o.p_leaf = 0.3;
		o.n_trees = 20;
		o.default_left = variant < 2 ? variant : -1;
		o.kinds = variant >= 2;
		m = random_model(&o);
		snprintf(name, sizeof(name), "%s depth %d %s",
				 o.kinds ? "categorical/ZERO/NONE nodes," :
				 o.default_left ? "NaN always left," : "NaN always right,",
				 o.depth, o.cmp == HB_CMP_LT_F32 ? "f32 <" : "f64 <=");
		if (m == NULL)
		{
			tu_report(false, "%s: generator", name);
			continue;
		}
		x = random_inputs(o.n_features, N_ROWS);
		expect_compact = BUILD;
		check_strategies(name, m, x, N_ROWS, BUILD, BUILD);
		expect_compact = EITHER;
		free(x);
		hb_model_free(m);
	}
}

/*
 * Wide models: PTT's blocks get fewer rows than usual (keys for 100-150
 * features), or none at all (900 features: keys computed per step); a
 * 5000-feature model whose few trees use a few dozen of them gets keys
 * (and GEMM transposes) for those alone.
 */
static void
test_wide_models(void)
{
	static const struct
	{
		int			nf;
		HbCmp		cmp;
		int			trees;
	}			cases[] = {
		{900, HB_CMP_LT_F32, 30}, {900, HB_CMP_LE_F64, 30},
		{150, HB_CMP_LT_F32, 30}, {100, HB_CMP_LE_F64, 30},
		{5000, HB_CMP_LT_F32, 3}, {5000, HB_CMP_LE_F64, 3},
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		GenOpts		o;
		HbModel    *m;
		double	   *x;
		char		name[128];

		memset(&o, 0, sizeof(o));
		o.depth = 6;
		o.cmp = cases[c].cmp;
		o.n_outputs = 2;
		o.n_features = cases[c].nf;
		o.p_leaf = 0.2;
		o.n_trees = cases[c].trees;
		o.default_left = -1;
		o.kinds = c == 1;
		m = random_model(&o);
		snprintf(name, sizeof(name), "%d features, %s%s", o.n_features,
				 o.cmp == HB_CMP_LT_F32 ? "f32 <" : "f64 <=",
				 o.kinds ? ", categorical/ZERO/NONE nodes" : "");
		x = random_inputs(o.n_features, N_ROWS);
		check_strategies(name, m, x, N_ROWS, BUILD, BUILD);
		free(x);
		hb_model_free(m);
	}
}

/*
 * The compact kernel's limits: a column with HB_PTT_C_MAX_RANK distinct
 * thresholds still gets it (ranks up to 32767, NaN on the right side ranks
 * 32767), one more and the plan keeps the eight-row walk; likewise a model
 * whose trees use more than 1024 columns.  Inputs hit the thresholds, their
 * neighbours, NaN and the infinities.
 */
static void
test_compact_limits(void)
{
	static const int distinct[] = {32767, 32768};

	for (int variant = 0; variant < 4; variant++)
	{
		GenOpts		o;
		HbModel    *m;
		double	   *x,
				   *thr;
		int			nd = distinct[variant & 1];
		int64_t		k = 0;
		char		name[128];

		memset(&o, 0, sizeof(o));
		o.depth = 12;
		o.cmp = (variant & 2) ? HB_CMP_LE_F64 : HB_CMP_LT_F32;
		o.n_outputs = 1;
		o.n_features = 1;
		o.p_leaf = 0.0;
		o.full = true;
		o.n_trees = 9;			/* 9 x 4095 nodes: room for 32768 values */
		o.default_left = -1;
		m = random_model(&o);
		if (m == NULL)
		{
			tu_report(false, "compact limits: generator");
			continue;
		}
		/* nd distinct thresholds, every one used, each a float */
		thr = malloc(sizeof(double) * nd);
		for (int i = 0; i < nd; i++)
			thr[i] = (double) (float) (-20.0 + i * (40.0 / nd));
		for (int t = 0; t < m->n_trees; t++)
			for (int i = 0; i < m->trees[t].n_nodes; i++)
				if (m->trees[t].nodes[i].left != HB_LEAF)
					m->trees[t].nodes[i].threshold = thr[(k++ * 7919) % nd];
		x = malloc(sizeof(double) * N_ROWS);
		for (int r = 0; r < N_ROWS; r++)
		{
			double		v = thr[irand(nd)];

			switch (irand(6))
			{
				case 0:
					v = nextafter(v, -INFINITY);
					break;
				case 1:
					v = nextafter(v, INFINITY);
					break;
				case 2:
					v = irand(4) == 0 ? NAN : irand(2) ? INFINITY : -INFINITY;
					break;
				default:
					break;
			}
			x[r] = v;
		}
		snprintf(name, sizeof(name), "%d distinct thresholds on a column, %s", nd,
				 o.cmp == HB_CMP_LT_F32 ? "f32 <" : "f64 <=");
		expect_compact = nd <= 32767 ? BUILD : REFUSE;
		check_strategies(name, m, x, N_ROWS, BUILD, EITHER);
		expect_compact = EITHER;
		free(thr);
		free(x);
		hb_model_free(m);
	}

	/* 40 trees over 5000 features use about 2000 columns: too many */
	{
		GenOpts		o;
		HbModel    *m;
		double	   *x;

		memset(&o, 0, sizeof(o));
		o.depth = 6;
		o.cmp = HB_CMP_LT_F32;
		o.n_outputs = 1;
		o.n_features = 5000;
		o.p_leaf = 0.0;
		o.full = true;
		o.n_trees = 40;
		o.default_left = -1;
		m = random_model(&o);
		x = random_inputs(o.n_features, 200);
		expect_compact = REFUSE;
		check_strategies("40 trees over 5000 features", m, x, 200, BUILD, EITHER);
		expect_compact = EITHER;
		free(x);
		hb_model_free(m);
	}
}

/* A 64-level chain: PTT must refuse (2^64 slots), GEMM handles it. */
static void
test_deep_chain(void)
{
	for (int variant = 0; variant < 2; variant++)
	{
		GenOpts		o;
		HbModel    *m;
		double	   *x;
		char		name[128];

		memset(&o, 0, sizeof(o));
		o.depth = variant ? HB_MAX_DEPTH : 40;
		o.cmp = variant ? HB_CMP_LE_F64 : HB_CMP_LT_F32;
		o.n_outputs = 1;
		o.n_features = 5;
		o.n_trees = 6;
		o.default_left = -1;
		o.chain = true;
		m = random_model(&o);
		snprintf(name, sizeof(name), "chain of depth %d", o.depth);
		if (m == NULL)
		{
			tu_report(false, "%s: generator", name);
			continue;
		}
		x = random_inputs(o.n_features, N_ROWS);
		check_strategies(name, m, x, N_ROWS, REFUSE, BUILD);
		free(x);
		hb_model_free(m);
	}
}

/*
 * The strategy AUTO picks (hb_plan_strategy) follows the calibrated rules
 * of docs/strategies.md, "Choosing a strategy": GEMM only at depth <= 2
 * and HB_AUTO_GEMM_MIN_BATCH rows, with at most HB_AUTO_GEMM_TREES trees
 * (any number where PTT does not fit), PTT for other full trees up to its
 * depth, TT for sparse or too deep trees; below HB_AUTO_MIN_BATCH rows
 * never GEMM.
 */
static void
test_auto_choice(void)
{
	static const struct
	{
		int			depth;
		int			trees;
		bool		sparse;			/* one chain of the depth, the rest
									 * single leaves: mean leaf depth far
									 * below it */
		size_t		batch;
		HbStrategy	want;
	}			cases[] = {
		{2, 10, false, 64, HB_STRATEGY_GEMM},
		{2, 10, false, 65536, HB_STRATEGY_GEMM},
		{2, HB_AUTO_GEMM_TREES, false, 1024, HB_STRATEGY_GEMM},
		{2, HB_AUTO_GEMM_TREES + 1, false, 1024, HB_STRATEGY_PTT},
		{2, 100, false, 64, HB_STRATEGY_PTT},
		{2, 500, false, 65536, HB_STRATEGY_PTT},
		{1, 10, false, 1024, HB_STRATEGY_GEMM},
		{2, 10, false, HB_AUTO_GEMM_MIN_BATCH - 1, HB_STRATEGY_PTT},
		{3, 10, false, 1024, HB_STRATEGY_PTT},
		{8, 100, false, 1024, HB_STRATEGY_PTT},
		{HB_AUTO_PTT_DEPTH + 1, 2, false, 1024, HB_STRATEGY_TT},
		{10, 50, true, 1024, HB_STRATEGY_TT},
		/* shallow but too sparse for PTT: GEMM however many trees */
		{2, 50, true, 1024, HB_STRATEGY_GEMM},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		GenOpts		o;
		HbModel    *m;
		HbPlan	   *p = NULL;
		HbError		err = {0};
		HbStrategy	got;

		memset(&o, 0, sizeof(o));
		o.depth = cases[i].depth;
		o.cmp = HB_CMP_LT_F32;
		o.n_outputs = 1;
		o.n_features = 28;
		o.n_trees = cases[i].trees;
		o.default_left = -1;
		o.full = true;
		if (cases[i].sparse)
		{
			o.chain = true;
			o.n_trees = 1;
		}
		m = random_model(&o);
		if (m != NULL && cases[i].sparse)
		{
			/* the single leaves of another model join the chain */
			HbModel    *stumps;

			o.chain = false;
			o.depth = 0;
			o.n_trees = cases[i].trees - 1;
			stumps = random_model(&o);
			m->trees = hb_realloc(m->trees, sizeof(HbTree) * cases[i].trees);
			memcpy(m->trees + 1, stumps->trees, sizeof(HbTree) * stumps->n_trees);
			m->n_trees = cases[i].trees;
			stumps->n_trees = 0;
			hb_model_free(stumps);
			o.depth = cases[i].depth;
			o.n_trees = cases[i].trees;
		}
		if (m == NULL || !hb_plan_build(m, &p, &err))
		{
			tu_report(false, "auto choice, depth %d, %d trees: plan: %s", o.depth, o.n_trees,
					  m == NULL ? "generator" : err.msg);
			hb_model_free(m);
			continue;
		}
		got = hb_plan_strategy(p, cases[i].batch);
		tu_report(got == cases[i].want &&
				  (p->avg_leaf_depth / p->max_depth < HB_AUTO_PTT_FULLNESS) == cases[i].sparse,
				  "auto choice: depth %d, %d %s trees (mean leaf depth %.2f), batch %zu: %s (want %s)",
				  o.depth, o.n_trees, cases[i].sparse ? "sparse" : "full", p->avg_leaf_depth,
				  cases[i].batch, hb_strategy_name(got), hb_strategy_name(cases[i].want));
		/* a batch too small for GEMM or PTT's blocks never takes GEMM */
		tu_report(hb_plan_strategy(p, HB_AUTO_MIN_BATCH - 1) != HB_STRATEGY_GEMM,
				  "auto choice: depth %d, %d trees, batch %d: not GEMM", o.depth, o.n_trees,
				  HB_AUTO_MIN_BATCH - 1);
		hb_plan_free(p);
		hb_model_free(m);
	}
}

/* max_bytes is honoured: refusals with HB_ERR_LIMIT, and TT's bits after. */
static void
test_limits(void)
{
	GenOpts		o;
	HbModel    *m;
	HbPlan	   *p = NULL;
	HbError		err = {0};
	double	   *x,
			   *ref,
			   *got;
	bool		ok;

	memset(&o, 0, sizeof(o));
	o.depth = 12;
	o.cmp = HB_CMP_LT_F32;
	o.n_outputs = 1;
	o.n_features = 10;
	o.p_leaf = 0.0;				/* full trees: 8191 nodes each */
	o.n_trees = 3;
	o.default_left = -1;
	m = random_model(&o);
	if (!hb_plan_build(m, &p, &err))
	{
		tu_report(false, "limits: plan: %s", err.msg);
		return;
	}

	ok = hb_ptt_build(p, m, 16 * 1024, &err);
	tu_report(!ok && err.code == HB_ERR_LIMIT && p->ptt == NULL,
			  "ptt refuses a depth-12 layout over 16 kB with HB_ERR_LIMIT (%s)", err.msg);
	memset(&err, 0, sizeof(err));
	ok = hb_ptt_build(p, m, 200 * 1024, &err);
	tu_report(ok && hb_ptt_bytes(p->ptt) <= 200 * 1024,
			  "ptt builds the same layout within 200 kB (%zu bytes)", hb_ptt_bytes(p->ptt));

	memset(&err, 0, sizeof(err));
	ok = hb_gemm_build(p, m, 1024 * 1024, &err);
	tu_report(!ok && err.code == HB_ERR_LIMIT && p->gemm == NULL,
			  "gemm refuses a 4095 x 4096 C matrix in 1 MB with HB_ERR_LIMIT (%s)", err.msg);

	/* without layouts, the strategies' entry points still give TT's bits */
	hb_ptt_free(p->ptt);
	p->ptt = NULL;
	x = random_inputs(o.n_features, 100);
	ref = malloc(sizeof(double) * 100);
	got = malloc(sizeof(double) * 100);
	hb_tt_margins(p, x, 100, ref);
	hb_ptt_margins(p, x, 100, got);
	ok = memcmp(ref, got, sizeof(double) * 100) == 0;
	hb_gemm_margins(p, x, 100, got);
	ok = ok && memcmp(ref, got, sizeof(double) * 100) == 0;
	tu_report(ok, "ptt and gemm without a layout fall back to tt");

	/* a tight budget shrinks GEMM's row chunk but not its results */
	memset(&err, 0, sizeof(err));
	o.depth = 5;
	o.p_leaf = 0.1;
	hb_plan_free(p);
	hb_model_free(m);
	m = random_model(&o);
	hb_plan_build(m, &p, &err);
	free(x);
	x = random_inputs(o.n_features, 100);
	hb_tt_margins(p, x, 100, ref);
	ok = hb_gemm_build(p, m, 16 * 1024, &err);
	if (ok)
	{
		hb_gemm_margins(p, x, 100, got);
		ok = memcmp(ref, got, sizeof(double) * 100) == 0;
	}
	tu_report(ok, "gemm within 16 kB (small row chunks) == tt %s", err.msg);

	free(x);
	free(ref);
	free(got);
	hb_plan_free(p);
	hb_model_free(m);
}

/* ---------- allocation failures ---------- */

static int	alloc_countdown = -1;

static void *
failing_alloc(size_t size)
{
	if (alloc_countdown == 0)
		return NULL;
	if (alloc_countdown > 0)
		alloc_countdown--;
	return malloc(size ? size : 1);
}

static void *
failing_realloc(void *ptr, size_t size)
{
	return realloc(ptr, size ? size : 1);
}

/* Every allocation of the builders may fail: NOMEM, no layout, no crash. */
static void
test_nomem(void)
{
	static const HbAllocator failing = {failing_alloc, failing_realloc, free, NULL};
	GenOpts		o;
	HbModel    *m;
	HbPlan	   *p = NULL;
	HbError		err = {0};
	bool		ok = true;

	memset(&o, 0, sizeof(o));
	o.depth = 5;
	o.cmp = HB_CMP_LT_F32;
	o.n_outputs = 2;
	o.n_features = 6;
	o.p_leaf = 0.2;
	o.n_trees = 10;
	o.default_left = -1;
	o.kinds = true;
	m = random_model(&o);
	hb_plan_build(m, &p, &err);

	hb_set_allocator(&failing);
	for (int which = 0; which < 2; which++)
		for (int k = 0; k < 20; k++)
		{
			bool		built;

			memset(&err, 0, sizeof(err));
			alloc_countdown = k;
			built = which == 0 ? hb_ptt_build(p, m, BIG_BYTES, &err) :
				hb_gemm_build(p, m, BIG_BYTES, &err);
			alloc_countdown = -1;
			if (built != (err.code == HB_OK) ||
				(!built && err.code != HB_ERR_NOMEM) ||
				(!built && (which == 0 ? p->ptt != NULL : p->gemm != NULL)))
				ok = false;
		}
	hb_set_allocator(NULL);
	tu_report(ok, "ptt and gemm builders report HB_ERR_NOMEM for every failing allocation");
	hb_plan_free(p);
	hb_model_free(m);
}

/* ---------- XGBoost fixtures ---------- */

static void
test_fixture(const char *dir, const char *name)
{
	char		path[4096];
	size_t		len;
	char	   *bytes;
	HbModel    *m = NULL;
	HbPlan	   *p = NULL;
	HbError		err = {0};
	TuTable		in,
				want;
	double	   *x,
			   *got;
	int			nf,
				k,
				worst_row = -1;
	double		worst = 0.0;

	snprintf(path, sizeof(path), "%s/%s.json", dir, name);
	bytes = tu_read_file(path, &len);
	if (bytes == NULL || !hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err) ||
		!hb_plan_build(m, &p, &err))
	{
		tu_report(false, "fixture %s: %s", name, bytes ? err.msg : "cannot read");
		free(bytes);
		hb_model_free(m);
		return;
	}
	free(bytes);
	nf = m->n_features;
	k = m->n_outputs;

	snprintf(path, sizeof(path), "%s/%s.csv", dir, name);
	if (!tu_read_csv(path, &in))
	{
		tu_report(false, "fixture %s: cannot read %s", name, path);
		goto done;
	}
	snprintf(path, sizeof(path), "%s/%s.expected.csv", dir, name);
	if (!tu_read_csv(path, &want) || want.rows != in.rows)
	{
		tu_report(false, "fixture %s: cannot read %s or wrong row count", name, path);
		tu_free_table(&in);
		goto done;
	}

	/* the input rows, by feature name, repeated to N_ROWS */
	x = malloc(sizeof(double) * N_ROWS * nf);
	for (int f = 0; f < nf; f++)
	{
		int			c = tu_find_column(&in, m->features[f].name);

		if (c < 0)
			c = f + 1;			/* positional: id comes first */
		for (int r = 0; r < N_ROWS; r++)
			x[(size_t) r * nf + f] = c < in.cols ?
				in.v[(size_t) (r % in.rows) * in.cols + c] : NAN;
	}

	/* TT against XGBoost's margins */
	got = malloc(sizeof(double) * N_ROWS * k);
	hb_tt_margins(p, x, N_ROWS, got);
	for (int r = 0; r < in.rows; r++)
		for (int g = 0; g < k; g++)
		{
			char		col[32];
			int			c;
			double		w,
						diff;

			snprintf(col, sizeof(col), "margin_%d", g);
			c = tu_find_column(&want, col);
			w = c >= 0 ? want.v[(size_t) r * want.cols + c] : NAN;
			diff = fabs(got[(size_t) r * k + g] - w);
			if (!(diff <= 1e-6 * fabs(w)) && !(diff <= 1e-12))
			{
				if (worst_row < 0 || !(diff <= worst))
				{
					worst = diff;
					worst_row = r;
				}
			}
		}
	if (worst_row >= 0)
		tu_report(false, "fixture %s: tt matches XGBoost's margins within 1e-6 relative: "
				  "row %d is off by %g", name, worst_row + 1, worst);
	else
		tu_report(true, "fixture %s: tt matches XGBoost's margins within 1e-6 relative", name);

	check_strategies(name, m, x, N_ROWS, BUILD, BUILD);

	free(got);
	free(x);
	tu_free_table(&in);
	tu_free_table(&want);
done:
	hb_plan_free(p);
	hb_model_free(m);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static void
test_fixtures(void)
{
	const char *dir = getenv("HB_FIXTURES") ? getenv("HB_FIXTURES") : "test/fixtures";
	DIR		   *d = opendir(dir);
	struct dirent *e;
	char	   *names[256];
	int			n = 0;

	if (d == NULL)
	{
		tu_report(false, "fixtures: cannot open %s (run from the repository root)", dir);
		return;
	}
	while ((e = readdir(d)) != NULL && n < 256)
	{
		size_t		l = strlen(e->d_name);

		if (l > 5 && strcmp(e->d_name + l - 5, ".json") == 0)
			names[n++] = strndup(e->d_name, l - 5);
	}
	closedir(d);
	qsort(names, n, sizeof(char *), cmp_str);
	tu_report(n > 0, "fixtures: %d models in %s", n, dir);
	for (int i = 0; i < n; i++)
	{
		test_fixture(dir, names[i]);
		free(names[i]);
	}
}

/* Every tree model of the conformance corpus: strategies agree on its rows. */
static void
test_conformance_models(void)
{
	const char *dir = getenv("HB_CONFORMANCE") ? getenv("HB_CONFORMANCE") :
		"../shared/conformance";
	char		path[4096];
	size_t		len;
	char	   *bytes;
	HbJsonDoc  *doc = NULL;
	HbError		err = {0};
	const HbJson *cases;
	int			models = 0;

	switch (tu_read_manifest(dir, &bytes, &doc))
	{
		case 0:
			skip("conformance models # SKIP corpus not found at %s (set HB_CONFORMANCE)", dir);
			return;
		case -1:
			return;
	}
	cases = hb_json_get(hb_json_root(doc), "cases");
	for (size_t i = 0; i < hb_json_len(cases); i++)
	{
		const HbJson *c = hb_json_at(cases, i);
		const char *id = hb_json_string(hb_json_get(c, "id"));
		const char *format = hb_json_string(hb_json_get(c, "format"));
		const char *status = hb_json_string(hb_json_get(c, "status"));
		const char *input = hb_json_string(hb_json_get(c, "input"));
		char	   *model_bytes;
		HbModel    *m = NULL;
		TuTable		in;
		double	   *x;
		size_t		n;
		int			nf;
		char		name[512];

		if (!id || !format || !status || !input ||
			(strcmp(format, "xgboost_json") != 0 && strcmp(format, "lightgbm_text") != 0) ||
			(strcmp(status, "ok") != 0 && strcmp(status, "converted") != 0))
			continue;
		snprintf(name, sizeof(name), "conformance %s", id);
		snprintf(path, sizeof(path), "%s/%s", dir,
				 hb_json_string(hb_json_get(c, "model")));
		model_bytes = tu_read_file(path, &len);
		memset(&err, 0, sizeof(err));
		if (model_bytes == NULL ||
			!hb_model_read(model_bytes, len, HB_FORMAT_AUTO, &m, &err))
		{
			/* test_conformance reports models that don't load */
			skip("%s # SKIP not loaded: %s", name, model_bytes ? err.msg : "no file");
			free(model_bytes);
			continue;
		}
		free(model_bytes);
		if (m->estimator != HB_EST_TREES)
		{
			hb_model_free(m);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, input);
		if (!tu_read_csv(path, &in) || in.rows == 0)
		{
			tu_report(false, "%s: cannot read %s", name, path);
			tu_free_table(&in);
			hb_model_free(m);
			continue;
		}

		/*
		 * Positional columns, as test_conformance reads them, repeated to
		 * 200 rows at least; snapped to zero the way hb_plan_margins does
		 * for LightGBM before any strategy sees them.
		 */
		nf = m->n_features;
		n = in.rows < 200 ? 200 : (size_t) in.rows;
		x = malloc(sizeof(double) * n * nf);
		for (size_t r = 0; r < n; r++)
			for (int f = 0; f < nf; f++)
			{
				double		v = f < in.cols ?
					in.v[(size_t) (r % in.rows) * in.cols + f] : NAN;

				if (m->zero_snap && fabs(v) <= HB_ZERO_THRESHOLD)
					v = 0.0;
				x[r * nf + f] = v;
			}
		check_strategies(name, m, x, n, EITHER, EITHER);
		models++;
		free(x);
		tu_free_table(&in);
		hb_model_free(m);
	}
	tu_report(models > 0, "conformance: %d tree models compared across strategies", models);
	hb_json_free(doc);
	free(bytes);
}

int
main(void)
{
	init_pool();
	test_random_models();
	test_node_kinds();
	test_wide_models();
	test_compact_limits();
	test_deep_chain();
	test_auto_choice();
	test_limits();
	test_nomem();
	test_fixtures();
	test_conformance_models();
#if defined(__GNUC__) && defined(__x86_64__) && !defined(HB_NO_SIMD)
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("popcnt"))
	{
		/* the comparisons above prove something about ranks by blocks */
		tu_report(blocks_seen[0] > 0, "ranks by blocks compared on %d plans of f64 thresholds",
				  blocks_seen[0]);
		tu_report(blocks_seen[1] > 0, "ranks by blocks compared on %d plans of f32 thresholds",
				  blocks_seen[1]);
	}
	else
#endif
		skip("ranks by blocks # SKIP this CPU lacks AVX-512 (or a build without SIMD): search trees only");
	printf("1..%d\n", tu_n_test);
	printf("# passed %d failed %d\n", tu_n_test - tu_n_fail, tu_n_fail);
	return tu_n_fail > 0 ? 1 : 0;
}
