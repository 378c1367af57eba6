/*
 * test_early_exit.c
 *	  Classes with the exact early exit equal the classes of full scoring,
 *	  row for row: random binary and multiclass models with float32
 *	  (XGBoost) and double (LightGBM) semantics, missing values, categorical
 *	  splits, depths 0 to 10, many trees, leaf values built for ties and for
 *	  float32 rounding; a model whose float32 sum absorbs additions; and
 *	  every tree classifier of the conformance corpus.  Also reports how
 *	  often the exit happens.  TAP output.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "approx.h"
#include "early_exit.h"
#include "json.h"
#include "plan_int.h"
#include "test_util.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double
unif(void)
{
	return (rnd() >> 11) * (1.0 / 9007199254740992.0);
}

static int
irand(int n)
{
	return (int) (rnd() % (uint64_t) n);
}

/* ---------- random classifiers ---------- */

typedef enum LeafStyle
{
	LEAF_BOOST,					/* shrinking with the tree index, like boosting */
	LEAF_TIES,					/* multiples of 0.25: exact ties, margins of 0 */
	LEAF_WILD,					/* 1000s next to 1e-4s: float32 order matters */
	LEAF_VOTES					/* 0 or 1 / trees: a forest's averaged votes */
} LeafStyle;

typedef struct Gen
{
	int			n_trees;
	int			depth;
	int			nf;
	int			k;				/* 1: binary, else classes */
	bool		lgbm;			/* double compares and sums, zero snapping */
	bool		cats;
	bool		logitraw;		/* binary without a link */
	LeafStyle	style;
} Gen;

static uint32_t cat_buf[1 << 16];
static int	cat_used;

static double
leaf_value(const Gen *g, int t)
{
	switch (g->style)
	{
		case LEAF_TIES:
			return ((int) (unif() * 9) - 4) * 0.25;
		case LEAF_VOTES:
			return unif() < 0.5 ? 0.0 : 1.0 / g->n_trees;
		case LEAF_WILD:
			{
				double		u = unif();

				if (u < 0.1)
					return (unif() - 0.5) * 2000.0;
				if (u < 0.4)
					return (unif() - 0.5) * 1e-4;
				return unif() - 0.5;
			}
		default:
			return (unif() - 0.5) * 2.0 * exp(-4.0 * t / g->n_trees);
	}
}

static int
grow(HbNode **nodes, int *count, int *cap, const Gen *g, int t, int depth)
{
	int			id = (*count)++;
	HbNode	   *n;

	if (*count > *cap)
	{
		*cap *= 2;
		*nodes = hb_realloc(*nodes, sizeof(HbNode) * *cap);
	}
	n = &(*nodes)[id];
	memset(n, 0, sizeof(*n));
	if (depth == 0 || (id > 0 && unif() < 0.15))
	{
		n->left = n->right = HB_LEAF;
		n->value = g->lgbm ? leaf_value(g, t) : (double) (float) leaf_value(g, t);
		return id;
	}
	n->feature = irand(g->nf);
	n->threshold = unif() < 0.5 ? ((int) (unif() * 7) - 3) * 0.5 : (unif() - 0.5) * 4.0;
	if (!g->lgbm)
		n->threshold = (double) (float) n->threshold;
	n->default_left = irand(2);
	n->missing = HB_MISSING_NAN;
	if (g->lgbm && unif() < 0.3)
		n->missing = unif() < 0.5 ? HB_MISSING_ZERO : HB_MISSING_NONE;
	if (g->cats && unif() < 0.3 && cat_used + 2 <= (int) (sizeof(cat_buf) / sizeof(cat_buf[0])))
	{
		n->is_cat = 1;
		n->cat_in_left = irand(2);
		n->cat_off = cat_used;
		n->cat_nwords = 1 + irand(2);
		for (int w = 0; w < n->cat_nwords; w++)
			cat_buf[cat_used++] = (uint32_t) rnd();
	}
	{
		int			l = grow(nodes, count, cap, g, t, depth - 1);
		int			r = grow(nodes, count, cap, g, t, depth - 1);

		(*nodes)[id].left = l;
		(*nodes)[id].right = r;
	}
	return id;
}

static HbModel *
random_classifier(const Gen *g)
{
	HbModel    *m = hb_alloc0(sizeof(HbModel));
	HbError		err = {0};
	int			k = g->k;

	m->estimator = HB_EST_TREES;
	m->objective = hb_strdup("test");
	m->n_outputs = k;
	m->n_classes = k == 1 ? 2 : k;
	m->task = k == 1 ? HB_TASK_BINARY : HB_TASK_MULTICLASS;
	m->link = k > 1 ? HB_LINK_SOFTMAX : g->logitraw ? HB_LINK_IDENTITY : HB_LINK_SIGMOID;
	m->predict_class = k > 1;
	m->cmp = g->lgbm ? HB_CMP_LE_F64 : HB_CMP_LT_F32;
	m->sum_f32 = !g->lgbm;
	m->zero_snap = g->lgbm;
	m->n_features = g->nf;
	m->features = hb_alloc0(sizeof(HbFeature) * g->nf);
	for (int f = 0; f < g->nf; f++)
	{
		char		name[16];

		snprintf(name, sizeof(name), "f%d", f);
		m->features[f].name = hb_strdup(name);
	}
	m->base_margin = hb_alloc0(sizeof(double) * k);
	for (int c = 0; c < k; c++)
		m->base_margin[c] = g->style == LEAF_TIES || g->style == LEAF_VOTES ? 0.0 :
			(unif() - 0.5);
	cat_used = 0;
	m->n_trees = g->n_trees;
	m->trees = hb_alloc0(sizeof(HbTree) * g->n_trees);
	for (int t = 0; t < g->n_trees; t++)
	{
		int			cap = 64,
					count = 0;
		HbNode	   *nodes = hb_alloc(sizeof(HbNode) * cap);

		grow(&nodes, &count, &cap, g, t, t == 0 ? g->depth : irand(g->depth + 1));
		m->trees[t].nodes = nodes;
		m->trees[t].n_nodes = count;
		m->trees[t].group = t % k;
	}
	if (cat_used > 0)
	{
		m->n_cat_words = cat_used;
		m->cat_words = hb_alloc(sizeof(uint32_t) * cat_used);
		memcpy(m->cat_words, cat_buf, sizeof(uint32_t) * cat_used);
	}
	if (!hb_model_validate(m, &err))
	{
		printf("# random model invalid: %s\n", err.msg);
		hb_model_free(m);
		return NULL;
	}
	return m;
}

static double *
random_rows(int n, int nf)
{
	double	   *x = malloc(sizeof(double) * n * nf);

	for (int i = 0; i < n * nf; i++)
	{
		double		u = unif();

		if (u < 0.1)
			x[i] = NAN;
		else if (u < 0.2)
			x[i] = ((int) (unif() * 7) - 3) * 0.5;	/* on a threshold */
		else if (u < 0.25)
			x[i] = unif() < 0.5 ? 1e-36 : -0.0;
		else if (u < 0.4)
			x[i] = irand(70);	/* a category, some beyond the sets */
		else
			x[i] = (unif() - 0.5) * 6.0;
	}
	return x;
}

/* ---------- the check ---------- */

typedef struct Totals
{
	int64_t		rows;
	int64_t		early;
	int64_t		scored;
	int64_t		total;
} Totals;

/*
 * Classes by early exit, for the whole batch, in batches of 37 and row by
 * row, against hb_link_class of the full margins.  false and a description
 * of the first difference otherwise.
 */
static bool
check_plan(const HbPlan *p, const double *x, int n, HbClassStats *whole,
		   char *why, size_t whylen)
{
	int			k = hb_plan_n_outputs(p);
	int			nf = hb_plan_n_features(p);
	double	   *mg = malloc(sizeof(double) * n * k);
	int32_t    *want = malloc(sizeof(int32_t) * n);
	int32_t    *got = malloc(sizeof(int32_t) * n);
	int32_t    *off = malloc(sizeof(int32_t) * n);
	HbClassBounds *b = hb_class_bounds(p);
	HbClassStats st = {0};
	bool		ok = true;
	const size_t sizes[] = {(size_t) n, 37, 1};

	hb_plan_margins_with(p, HB_STRATEGY_TT, x, n, mg);
	hb_link_class(p, mg, n, want);
	for (size_t s = 0; s < 3 && ok; s++)
	{
		memset(got, 0x55, sizeof(int32_t) * n);
		for (size_t r0 = 0; r0 < (size_t) n; r0 += sizes[s])
		{
			size_t		nb = n - r0 < sizes[s] ? n - r0 : sizes[s];

			if (!hb_early_exit_classes(p, b, x + r0 * nf, nb, got + r0,
									   s == 0 ? whole : &st))
			{
				snprintf(why, whylen, "out of memory");
				ok = false;
				break;
			}
		}
		for (int r = 0; ok && r < n; r++)
			if (got[r] != want[r])
			{
				snprintf(why, whylen, "batch %zu: row %d: early exit says %d, full scoring %d (margin[0] %.9g)",
						 sizes[s], r, got[r], want[r], mg[(size_t) r * k]);
				ok = false;
			}
	}
	/* without bounds: the plain path */
	if (ok)
	{
		hb_early_exit_classes(p, NULL, x, n, off, NULL);
		for (int r = 0; ok && r < n; r++)
			if (off[r] != want[r])
			{
				snprintf(why, whylen, "without bounds: row %d: %d, want %d", r, off[r], want[r]);
				ok = false;
			}
	}
	hb_class_bounds_free(b);
	free(mg);
	free(want);
	free(got);
	free(off);
	return ok;
}

static void
add(Totals *t, const HbClassStats *s)
{
	t->rows += s->rows;
	t->early += s->rows_early;
	t->scored += s->trees_scored;
	t->total += s->trees_total;
}

static void
random_suite(bool lgbm, int k, Totals *tot)
{
	const int	depths[] = {0, 1, 2, 3, 5, 8, 10};
	int			bad = 0;
	int			models = 0;
	char		first[512] = "";

	for (size_t di = 0; di < sizeof(depths) / sizeof(depths[0]); di++)
		for (int style = 0; style < 3; style++)
			for (int cats = 0; cats < 2; cats++)
			{
				Gen			g = {0};
				HbModel    *m;
				HbPlan	   *p = NULL;
				HbError		err = {0};
				double	   *x;
				int			n = 700;
				char		why[200];
				HbClassStats st = {0};

				g.depth = depths[di];
				g.n_trees = depths[di] >= 8 ? 60 + irand(60) : 100 + irand(300);
				g.nf = 6 + irand(10);
				g.k = k;
				g.lgbm = lgbm;
				g.cats = cats;
				g.style = (LeafStyle) style;
				g.logitraw = k == 1 && irand(4) == 0;
				m = random_classifier(&g);
				if (m == NULL || !hb_plan_build(m, &p, &err))
				{
					bad++;
					snprintf(first, sizeof(first), "build: %.300s", err.msg);
					hb_model_free(m);
					continue;
				}
				x = random_rows(n, g.nf);
				models++;
				if (!check_plan(p, x, n, &st, why, sizeof(why)))
				{
					if (bad++ == 0)
						snprintf(first, sizeof(first), "depth %d style %d cats %d: %s",
								 g.depth, style, cats, why);
				}
				/* the traversal path on big batches too */
				hb_set_strategy_override(HB_STRATEGY_TT);
				if (!check_plan(p, x, n, &st, why, sizeof(why)) && bad++ == 0)
					snprintf(first, sizeof(first), "tt: depth %d style %d cats %d: %s",
							 g.depth, style, cats, why);
				hb_set_strategy_override(HB_STRATEGY_AUTO);
				/*
				 * PTT's other kernels: the eight-row walk, plain C compact,
				 * the compact kernel through hb_ptt_accumulate (no chunks)
				 */
				for (int kn = 0; kn < 3; kn++)
				{
					HbClassStats other = {0};
					const char *names[] = {"walk", "portable", "range kernel"};

					hb_ptt_set_kernel(kn == 0 ? HB_PTT_KERNEL_WALK8 :
									  kn == 1 ? HB_PTT_KERNEL_PORTABLE : HB_PTT_KERNEL_AUTO);
					hb_ptt_set_chunks(kn != 2);
					if (!check_plan(p, x, n, &other, why, sizeof(why)) && bad++ == 0)
						snprintf(first, sizeof(first), "%s: depth %d style %d cats %d: %s",
								 names[kn], g.depth, style, cats, why);
					hb_ptt_set_kernel(HB_PTT_KERNEL_AUTO);
					hb_ptt_set_chunks(true);
				}
				add(tot, &st);
				free(x);
				hb_plan_free(p);
				hb_model_free(m);
			}
	tu_report(bad == 0, "%s %s: %d random models, early exit == full scoring on every row%s%s",
			  lgbm ? "double (LightGBM)" : "float32 (XGBoost)",
			  k == 1 ? "binary" : "multiclass", models, bad ? ": " : "", first);
}

/*
 * Batches of several chunks of rows (the compact kernel's chunks hold up to
 * 1,024): boosting-like binary and multiclass models, both semantics, with
 * and without categorical splits.
 */
static void
many_rows(Totals *tot)
{
	int			bad = 0;
	char		first[512] = "";

	for (int i = 0; i < 6; i++)
	{
		Gen			g = {0};
		HbModel    *m;
		HbPlan	   *p = NULL;
		HbError		err = {0};
		double	   *x;
		int			n = 4100;
		char		why[200];
		HbClassStats st = {0};

		g.depth = 4 + i % 3;
		g.n_trees = 150 + 50 * i;
		g.nf = 8 + i;
		g.k = i < 4 ? 1 : 3;
		g.lgbm = i % 2 == 1;
		g.cats = i == 2 || i == 5;
		g.style = LEAF_BOOST;
		m = random_classifier(&g);
		if (m == NULL || !hb_plan_build(m, &p, &err))
		{
			bad++;
			snprintf(first, sizeof(first), "build: %.300s", err.msg);
			hb_model_free(m);
			continue;
		}
		x = random_rows(n, g.nf);
		if (!check_plan(p, x, n, &st, why, sizeof(why)) && bad++ == 0)
			snprintf(first, sizeof(first), "model %d: %s", i, why);
		if (g.k == 1)
			add(tot, &st);
		free(x);
		hb_plan_free(p);
		hb_model_free(m);
	}
	tu_report(bad == 0, "batches of 4,100 rows: early exit == full scoring on every row%s%s",
			  bad ? ": " : "", first);
}

/*
 * A float32 binary model of nt one-split trees; tree t adds leaf(t) to every
 * row.  Scores one row and checks the early exit against full scoring.
 */
static void
handmade(const char *what, int nt, double (*leaf) (int t, int nt), double want_margin,
		 int want_class)
{
	HbModel    *m = hb_alloc0(sizeof(HbModel));
	HbPlan	   *p = NULL;
	HbError		err = {0};
	double		x[2] = {0.0, 0.0};
	double		mg;
	int32_t		want,
				got;
	HbClassBounds *b;
	HbClassStats st = {0};

	m->estimator = HB_EST_TREES;
	m->objective = hb_strdup("test");
	m->task = HB_TASK_BINARY;
	m->n_outputs = 1;
	m->n_classes = 2;
	m->link = HB_LINK_SIGMOID;
	m->cmp = HB_CMP_LT_F32;
	m->sum_f32 = true;
	m->n_features = 2;
	m->features = hb_alloc0(sizeof(HbFeature) * 2);
	m->features[0].name = hb_strdup("a");
	m->features[1].name = hb_strdup("b");
	m->base_margin = hb_alloc0(sizeof(double));
	m->n_trees = nt;
	m->trees = hb_alloc0(sizeof(HbTree) * nt);
	for (int t = 0; t < nt; t++)
	{
		/* one split so that the trees are not all single leaves */
		HbNode	   *nd = hb_alloc0(sizeof(HbNode) * 3);

		nd[0].left = 1;
		nd[0].right = 2;
		nd[0].feature = 0;
		nd[0].threshold = 100.0;
		nd[1].left = nd[1].right = HB_LEAF;
		nd[1].value = leaf(t, nt);
		nd[2].left = nd[2].right = HB_LEAF;
		nd[2].value = leaf(t, nt);
		m->trees[t].nodes = nd;
		m->trees[t].n_nodes = 3;
	}
	if (!hb_model_validate(m, &err) || !hb_plan_build(m, &p, &err))
	{
		tu_report(false, "%s: %s", what, err.msg);
		return;
	}
	b = hb_class_bounds(p);
	hb_plan_margins(p, x, 1, &mg);
	hb_link_class(p, &mg, 1, &want);
	hb_early_exit_classes(p, b, x, 1, &got, &st);
	tu_report(mg == want_margin && want == want_class && got == want,
			  "%s: full margin %g, class %d; early exit class %d (%lld rows exited)",
			  what, mg, want, got, (long long) st.rows_early);
	hb_class_bounds_free(b);
	hb_plan_free(p);
	hb_model_free(m);
}

/*
 * float32 absorbs small additions: 2^24 + 1 == 2^24.  Tree 0 adds 2^24,
 * then 40 trees add 1 (lost), then one adds -2^24: the real-number bound
 * says +40 after tree 0, the float32 sum is 0 (class 0).  The slack must
 * keep the row open.
 */
static double
absorbed_leaf(int t, int nt)
{
	return t == 0 ? 16777216.0 : t == nt - 1 ? -16777216.0 : 1.0;
}

/*
 * A margin of 5e-8 is positive, but the float32 sigmoid of it rounds to
 * exactly 0.5: class 0.  After tree 0 the bounds say "> 0" for sure; only
 * the gap around 0 keeps the row from being called 1.
 */
static double
tiny_leaf(int t, int nt)
{
	(void) nt;
	return t == 0 ? (double) 5e-8f : 0.0;
}

/*
 * A float32 sum that overflows: 20 trees of 1.5e37, one of 1e38 (the sum
 * passes FLT_MAX: +inf), then 19 of -3e37.  The real-number sum is -1.7e38
 * (class 0 for sure after the 21st tree, by the bounds), the float32 sum
 * stays +inf: class 1, which full scoring (and XGBoost) gives.  A model
 * whose sums could overflow must never exit early.
 */
static double
overflow_leaf(int t, int nt)
{
	(void) nt;
	return t < 20 ? 1.5e37 : t == 20 ? 1e38 : -3e37;
}

/* ---------- the conformance corpus ---------- */

/*
 * The corpus's own outputs decide a class too: binary, probability > 0.5
 * (margin > 0 for raw outputs and link-less models); multiclass, the first
 * largest value.  Rows where the library's values sit within the case's
 * tolerance of the boundary are counted apart: there the last bits decide.
 * Returns the number of rows where the classes differ beyond that.
 */
static int
library_disagrees(const char *dir, const HbJson *c, const HbModel *m,
				  const int32_t *ours, int rows, int *checked, int *close)
{
	const HbJson *expected = hb_json_get(c, "expected");
	const HbJson *tol = hb_json_get(c, "tolerance");
	double		abs_tol = 0.0,
				rel_tol = 0.0;
	int			bad = 0;

	hb_json_number(hb_json_get(tol, "abs"), &abs_tol);
	hb_json_number(hb_json_get(tol, "rel"), &rel_tol);
	for (size_t k = 0; k < hb_json_len(expected); k++)
	{
		const char *kind = hb_json_key_at(expected, k);
		bool		raw = strcmp(kind, "raw") == 0 || strcmp(kind, "margin") == 0;
		char		path[4096];
		TuTable		want;
		int			kk = m->task == HB_TASK_MULTICLASS ? m->n_classes : 1;

		if (!raw && strcmp(kind, "transformed") != 0 && strcmp(kind, "pred") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir,
				 hb_json_string(hb_json_value_at(expected, k)));
		if (!tu_read_csv(path, &want) || want.rows != rows || want.cols != kk)
		{
			tu_free_table(&want);
			continue;
		}
		for (int r = 0; r < rows; r++)
		{
			const double *v = want.v + (size_t) r * kk;
			int			lib;
			double		gap,
						scale;

			if (kk == 1)
			{
				double		thr = raw || m->link != HB_LINK_SIGMOID ? 0.0 : 0.5;

				lib = v[0] > thr;
				gap = fabs(v[0] - thr);
				scale = fabs(v[0]);
			}
			else
			{
				int			second = -1;

				lib = 0;
				for (int j = 1; j < kk; j++)
					if (v[j] > v[lib])
						lib = j;
				for (int j = 0; j < kk; j++)
					if (j != lib && (second < 0 || v[j] > v[second]))
						second = j;
				gap = v[lib] - v[second];
				scale = fabs(v[lib]);
			}
			(*checked)++;
			if (gap <= abs_tol + rel_tol * scale)
				(*close)++;
			else if (lib != ours[r])
				bad++;
		}
		tu_free_table(&want);
	}
	return bad;
}

static void
conformance(Totals *tot)
{
	const char *dir = getenv("HB_CONFORMANCE");
	char		path[4096];
	char	   *bytes;
	HbJsonDoc  *doc = NULL;
	HbError		err = {0};
	const HbJson *cases;
	int			classifiers = 0;
	int			lib_checked = 0,
				lib_close = 0;

	if (dir == NULL)
		dir = "../shared/conformance";
	switch (tu_read_manifest(dir, &bytes, &doc))
	{
		case 0:
			tu_n_test++;
			printf("ok %d - conformance classifiers # SKIP corpus not found at %s (set HB_CONFORMANCE)\n",
				   tu_n_test, dir);
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
		const char *input = hb_json_string(hb_json_get(c, "input"));
		const char *model = hb_json_string(hb_json_get(c, "model"));
		char	   *mb;
		size_t		mlen;
		HbModel    *m = NULL;
		HbPlan	   *p = NULL;
		TuTable		in;
		double	   *x;
		int			nf;
		char		why[256];
		HbClassStats st = {0};

		if (!format || !input || !model ||
			(strcmp(format, "xgboost_json") != 0 &&
			 strcmp(format, "lightgbm_text") != 0 &&
			 strcmp(format, "lightgbm_tree_block") != 0))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, model);
		mb = tu_read_file(path, &mlen);
		if (mb == NULL)
			continue;
		memset(&err, 0, sizeof(err));
		if (!hb_model_read(mb, mlen, HB_FORMAT_AUTO, &m, &err) ||
			m->estimator != HB_EST_TREES ||
			(m->task != HB_TASK_BINARY && m->task != HB_TASK_MULTICLASS) ||
			!hb_plan_build(m, &p, &err))
		{
			free(mb);
			hb_model_free(m);
			continue;
		}
		free(mb);
		snprintf(path, sizeof(path), "%s/%s", dir, input);
		if (!tu_read_csv(path, &in))
		{
			tu_report(false, "%s: cannot read %s", id, path);
			hb_plan_free(p);
			hb_model_free(m);
			continue;
		}
		nf = m->n_features;
		x = malloc(sizeof(double) * (size_t) (in.rows ? in.rows : 1) * nf);
		for (int r = 0; r < in.rows; r++)
			for (int f = 0; f < nf; f++)
				x[(size_t) r * nf + f] = f < in.cols ? in.v[(size_t) r * in.cols + f] : NAN;
		classifiers++;
		why[0] = '\0';
		{
			bool		same = check_plan(p, x, in.rows, &st, why, sizeof(why));
			int32_t    *ours = malloc(sizeof(int32_t) * (in.rows ? in.rows : 1));
			HbClassBounds *b = hb_class_bounds(p);
			int			checked = 0,
						close = 0,
						bad;

			hb_early_exit_classes(p, b, x, in.rows, ours, NULL);
			hb_class_bounds_free(b);
			bad = library_disagrees(dir, c, m, ours, in.rows, &checked, &close);
			free(ours);
			lib_checked += checked;
			lib_close += close;
			if (checked == 0)
				printf("ok %d - %s: classes vs the library # SKIP no raw or transformed outputs\n",
					   ++tu_n_test, id);
			else
				tu_report(bad == 0,
						  "%s: classes equal the library's on %d of %d outputs (%d within tolerance of a tie)",
						  id, checked - close - bad, checked, close);

			tu_report(same, "%s (%s, %d trees, %d rows): early exit == full scoring; %lld rows exited early, %.1f%% of trees scored%s%s",
					  id, hb_task_name(m->task), m->n_trees, in.rows,
					  (long long) st.rows_early,
					  st.trees_total ? 100.0 * st.trees_scored / st.trees_total : 0.0,
					  same ? "" : ": ", same ? "" : why);
		}
		add(tot, &st);
		free(x);
		tu_free_table(&in);
		hb_plan_free(p);
		hb_model_free(m);
	}
	printf("# conformance: %d tree classifiers checked; %d library outputs, %d within tolerance of a tie\n",
		   classifiers, lib_checked, lib_close);
	hb_json_free(doc);
	free(bytes);
}

/*
 * Every binary link.  The class flips where hb_link_proba's probability
 * crosses 0.5: at margin 0 for a logit, at 0.5 for a margin that is the
 * probability (an ONNX forest without a post-transform: its leaves are
 * votes averaged over the trees, so most margins lie between 0 and 0.5 or
 * above 0.5, where a cut at 0 called every row 1), nowhere one cut says
 * for PROBIT (never decided early).  The early exit, and the cascade's
 * class functions (hb_margin_class: the full model's class;
 * hb_approx_confidence: the cheap model's, sure only away from the cut),
 * against hb_link_class.
 */
static void
binary_links(void)
{
	const HbLink links[] = {HB_LINK_PROBABILITY, HB_LINK_PROBIT, HB_LINK_SIGMOID,
		HB_LINK_IDENTITY, HB_LINK_LOGISTIC, HB_LINK_SIGMOID_L1, HB_LINK_SIGMOID_SUM,
	HB_LINK_SOFTMAX_PAIR};
	const double probes[] = {-3.0, -1e-9, 0.0, 5e-8, 1e-6, 0.25, 0.4999999,
		0.5, 0.5000001, 0.69, 0.7, 0.99, 1.0, 1.5};

	for (size_t li = 0; li < sizeof(links) / sizeof(links[0]); li++)
	{
		bool		votes = links[li] == HB_LINK_PROBABILITY || links[li] == HB_LINK_PROBIT;
		Gen			g = {0};
		HbModel    *m;
		HbPlan	   *p = NULL;
		HbError		err = {0};
		double	   *x;
		double	   *mg;
		int32_t    *want;
		int			n = 3000;
		int			mid = 0;
		int			bad_fn = 0;
		char		why[200] = "";
		HbClassStats st = {0};
		bool		same;

		g.n_trees = 200;
		g.depth = 6;
		g.nf = 8;
		g.k = 1;
		g.style = votes ? LEAF_VOTES : LEAF_BOOST;
		m = random_classifier(&g);
		if (m == NULL)
			continue;
		m->link = links[li];
		if (!hb_plan_build(m, &p, &err))
		{
			tu_report(false, "link %d: build: %s", (int) links[li], err.msg);
			hb_model_free(m);
			continue;
		}
		x = random_rows(n, g.nf);
		mg = malloc(sizeof(double) * n);
		want = malloc(sizeof(int32_t) * n);
		same = check_plan(p, x, n, &st, why, sizeof(why));
		hb_plan_margins(p, x, n, mg);
		hb_link_class(p, mg, n, want);
		for (int r = 0; r < n; r++)
			mid += mg[r] > 0.0 && mg[r] <= 0.5 && want[r] == 0;
		for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		{
			int32_t		c;
			int			cheap;
			double		conf;

			hb_link_class(p, &probes[i], 1, &c);
			conf = hb_approx_confidence(p, &probes[i], &cheap);
			if (hb_margin_class(p, &probes[i]) != c ||
				(conf > 1e-5 && cheap != c) ||
				(links[li] == HB_LINK_PROBIT && conf != -INFINITY))
				bad_fn++;
		}
		if (links[li] == HB_LINK_PROBABILITY)
			tu_report(same && st.rows_early > 0 && mid > 0 && bad_fn == 0,
					  "probability margins (forest votes): early exit == full scoring on %d rows, %lld decided early, %d with a margin in (0, 0.5] of class 0; cascade classes agree%s%s",
					  n, (long long) st.rows_early, mid, same ? "" : ": ", why);
		else if (links[li] == HB_LINK_PROBIT)
			tu_report(same && st.rows_early == 0 && bad_fn == 0,
					  "PROBIT: early exit == full scoring on %d rows, none decided early, the cascade never sure%s%s",
					  n, same ? "" : ": ", why);
		else
			tu_report(same && st.rows_early > 0 && bad_fn == 0,
					  "link %d: early exit == full scoring on %d rows, %lld decided early; cascade classes agree (%d probes differ)%s%s",
					  (int) links[li], n, (long long) st.rows_early, bad_fn, same ? "" : ": ", why);
		free(x);
		free(mg);
		free(want);
		hb_plan_free(p);
		hb_model_free(m);
	}
}

static void
summary(const char *what, const Totals *t)
{
	printf("# %s: %lld rows, %.1f%% exited early, %.1f%% of (row, tree) pairs scored\n",
		   what, (long long) t->rows,
		   t->rows ? 100.0 * t->early / t->rows : 0.0,
		   t->total ? 100.0 * t->scored / t->total : 0.0);
}

/*
 * Links whose class is not the largest margin's: softmax over the
 * non-zero margins (a class whose margin is exactly 0 has no score, as
 * onnxruntime reads it) and the mean of a forest (two sums may divide to
 * one quotient: the first class of the tie wins).  hb_predict's class,
 * hb_link_class and the early exit (with bounds) give the same one, and
 * the exit decides no row of such a model early.
 */
static void
argmax_links(void)
{
	struct
	{
		HbLink		link;
		int			per_class;	/* trees per class: the first holds the leaf */
		double		leaf[3];
		int32_t		want;
	}			cases[] = {
		{HB_LINK_SOFTMAX_ZERO, 1, {-1.0, 0.0, -2.0}, 0},
		{HB_LINK_MEAN, 3, {1.5 + 0x1p-52, 1.5 + 0x1p-51, -1.0}, 0},
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		HbModel    *m = hb_alloc0(sizeof(HbModel));
		HbPlan	   *p = NULL;
		HbClassBounds *b = NULL;
		HbClassStats st = {0};
		HbError		err = {0};
		double		x = 0.0,
					margins[3],
					cls = -1;
		int32_t		viaclass = -1,
					viaexit = -1;
		int			viacascade = -1;
		double		conf = 0;
		bool		ok;

		m->estimator = HB_EST_TREES;
		m->objective = hb_strdup("test");
		m->n_outputs = m->n_classes = 3;
		m->task = HB_TASK_MULTICLASS;
		m->link = cases[c].link;
		m->predict_class = true;
		m->cmp = HB_CMP_LE_F64;
		m->n_features = 1;
		m->features = hb_alloc0(sizeof(HbFeature));
		m->features[0].name = hb_strdup("f0");
		m->base_margin = hb_alloc0(sizeof(double) * 3);
		m->n_trees = 3 * cases[c].per_class;
		m->trees = hb_alloc0(sizeof(HbTree) * m->n_trees);
		for (int t = 0; t < m->n_trees; t++)
		{
			m->trees[t].nodes = hb_alloc0(sizeof(HbNode));
			m->trees[t].nodes[0].left = m->trees[t].nodes[0].right = HB_LEAF;
			m->trees[t].nodes[0].value = t < 3 ? cases[c].leaf[t] : 0.0;
			m->trees[t].n_nodes = 1;
			m->trees[t].group = t % 3;
		}
		ok = hb_model_validate(m, &err) && hb_plan_build(m, &p, &err);
		if (ok)
		{
			hb_plan_margins(p, &x, 1, margins);
			hb_link_predict(p, margins, 1, &cls);
			hb_link_class(p, margins, 1, &viaclass);
			b = hb_class_bounds(p);
			ok = b != NULL && hb_early_exit_classes(p, b, &x, 1, &viaexit, &st);
			/* a cascade's cheap answer: the same class, and not sure of it */
			conf = hb_approx_confidence(p, margins, &viacascade);
		}
		tu_report(ok && cls == cases[c].want && viaclass == cases[c].want &&
				  viaexit == cases[c].want && st.rows_early == 0 &&
				  viacascade == cases[c].want && conf == -INFINITY,
				  "link %d: margins %.17g %.17g %.17g: hb_predict class %g, hb_link_class %d, "
				  "early exit %d (%lld decided early), cascade %d (confidence %g) (%s)",
				  (int) cases[c].link, margins[0], margins[1], margins[2], cls, viaclass, viaexit,
				  (long long) st.rows_early, viacascade, conf, ok ? "built" : err.msg);
		hb_class_bounds_free(b);
		hb_plan_free(p);
		hb_model_free(m);
	}
}

int
main(void)
{
	Totals		rnd_bin = {0},
				rnd_multi = {0},
				conf = {0};

	random_suite(false, 1, &rnd_bin);
	random_suite(true, 1, &rnd_bin);
	random_suite(false, 3, &rnd_multi);
	random_suite(true, 3, &rnd_multi);
	random_suite(false, 7, &rnd_multi);
	many_rows(&rnd_bin);
	binary_links();
	argmax_links();
	handmade("float32 absorption", 42, absorbed_leaf, 0.0, 0);
	handmade("sigmoid rounding to 0.5", 20, tiny_leaf, (double) 5e-8f, 0);
	handmade("float32 overflow", 40, overflow_leaf, INFINITY, 1);
	summary("random binary", &rnd_bin);
	summary("random multiclass", &rnd_multi);
	/* the exit must actually happen on random boosting-like models */
	tu_report(rnd_bin.early > rnd_bin.rows / 10 && rnd_bin.scored < rnd_bin.total,
			  "binary: the exit happens (%.1f%% of rows)",
			  rnd_bin.rows ? 100.0 * rnd_bin.early / rnd_bin.rows : 0.0);
	tu_report(rnd_multi.early > rnd_multi.rows / 10 && rnd_multi.scored < rnd_multi.total,
			  "multiclass: the exit happens (%.1f%% of rows)",
			  rnd_multi.rows ? 100.0 * rnd_multi.early / rnd_multi.rows : 0.0);
	conformance(&conf);
	summary("conformance classifiers", &conf);
	printf("# early exit: %d checks, %d failed\n", tu_n_test, tu_n_fail);
	printf("1..%d\n", tu_n_test);
	return tu_n_fail ? 1 : 0;
}
