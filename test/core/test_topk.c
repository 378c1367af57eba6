/*
 * test_topk.c
 *	  Exact top-K with bound pruning equals full scoring plus a sort: the
 *	  same rows, margins and tie order (margin, then input order), highest
 *	  and lowest, for both comparison semantics.  Random models (depths 1 to
 *	  10, 10 to 400 trees, boosting-like, tied and wildly scaled leaves,
 *	  zero-as-missing and categorical nodes), rows with many ties
 *	  (thresholds and leaves from small sets, duplicated rows), NaN and
 *	  +-Inf; rows fed the way SQL feeds them (two halves, batches of 37, and
 *	  batches growing from one row), the threshold carried across calls;
 *	  with every PTT kernel and with traversal forced.  TAP output.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_int.h"
#include "topk.h"

static int	n_test = 0;
static int	n_fail = 0;
static uint64_t rng = 88172645463325252ull;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double
unif(void)
{
	return (next() >> 11) * (1.0 / 9007199254740992.0);
}

static void
report(bool cond, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static void
report(bool cond, const char *fmt,...)
{
	va_list		ap;

	n_test++;
	if (!cond)
		n_fail++;
	printf("%s %d - ", cond ? "ok" : "not ok", n_test);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

typedef enum LeafStyle
{
	LEAF_TIES,					/* multiples of 0.25: exact ties */
	LEAF_BOOST,					/* shrinking with the tree index, like boosting */
	LEAF_WILD					/* 1000s next to 1e-4s: float32 order matters */
} LeafStyle;

typedef struct Gen
{
	int			n_trees;
	int			depth;
	int			nf;
	bool		lgbm;			/* double compares and sums, zero-as-missing nodes */
	bool		cats;			/* categorical splits */
	LeafStyle	style;
} Gen;

static uint32_t cat_buf[1 << 16];
static int	cat_used;

static double
leaf_value(const Gen *g, int t)
{
	double		v;

	switch (g->style)
	{
		case LEAF_TIES:
			v = ((int) (unif() * 9) - 4) * 0.25;
			break;
		case LEAF_WILD:
			v = unif();
			v = v < 0.1 ? (unif() - 0.5) * 2000.0 : v < 0.4 ? (unif() - 0.5) * 1e-4 : unif() - 0.5;
			break;
		default:
			v = (unif() - 0.5) * 2.0 * exp(-3.0 * t / g->n_trees);
			break;
	}
	return g->lgbm ? v : (double) (float) v;
}

/* A random tree of at most the given depth; thresholds from a small set. */
static int
grow(HbNode *nodes, int *count, int depth, const Gen *g, int t)
{
	int			id = (*count)++;
	HbNode	   *n = &nodes[id];

	memset(n, 0, sizeof(*n));
	if (depth == 0 || unif() < 0.2)
	{
		n->left = n->right = HB_LEAF;
		n->value = leaf_value(g, t);
		return id;
	}
	n->feature = (int) (unif() * g->nf);
	n->threshold = (double) (float) ((int) (unif() * 5) - 2) * 0.5;
	n->default_left = unif() < 0.5;
	n->missing = g->lgbm && unif() < 0.3 ? HB_MISSING_ZERO : HB_MISSING_NAN;
	if (g->cats && unif() < 0.2 && cat_used + 2 <= (int) (sizeof(cat_buf) / sizeof(cat_buf[0])))
	{
		n->is_cat = 1;
		n->cat_in_left = unif() < 0.5;
		n->cat_off = cat_used;
		n->cat_nwords = 1;
		cat_buf[cat_used++] = (uint32_t) next();
	}
	n->left = grow(nodes, count, depth - 1, g, t);
	nodes[id].right = grow(nodes, count, depth - 1, g, t);
	return id;
}

static HbModel *
random_model(const Gen *g, HbError *err)
{
	HbModel    *m = hb_alloc0(sizeof(HbModel));

	m->task = HB_TASK_REGRESSION;
	m->estimator = HB_EST_TREES;
	m->n_features = g->nf;
	m->features = hb_alloc0(sizeof(HbFeature) * g->nf);
	for (int f = 0; f < g->nf; f++)
	{
		char		name[16];

		snprintf(name, sizeof(name), "f%d", f);
		m->features[f].name = hb_strdup(name);
	}
	m->n_outputs = 1;
	m->base_margin = hb_alloc0(sizeof(double));
	m->base_margin[0] = 0.5;
	m->link = g->lgbm ? HB_LINK_IDENTITY : HB_LINK_SIGMOID;
	m->cmp = g->lgbm ? HB_CMP_LE_F64 : HB_CMP_LT_F32;
	m->sum_f32 = !g->lgbm;
	m->n_trees = g->n_trees;
	m->trees = hb_alloc0(sizeof(HbTree) * g->n_trees);
	cat_used = 0;
	for (int t = 0; t < g->n_trees; t++)
	{
		int			count = 0;

		m->trees[t].nodes = hb_alloc0(sizeof(HbNode) * ((2 << g->depth) + 1));
		grow(m->trees[t].nodes, &count, g->depth, g, t);
		m->trees[t].n_nodes = count;
	}
	if (cat_used > 0)
	{
		m->n_cat_words = cat_used;
		m->cat_words = hb_alloc(sizeof(uint32_t) * cat_used);
		memcpy(m->cat_words, cat_buf, sizeof(uint32_t) * cat_used);
	}
	if (!hb_model_validate(m, err))
	{
		hb_model_free(m);
		return NULL;
	}
	return m;
}

/* A linear model with coefficients from a small set (many tied margins). */
static HbModel *
random_linear(int nf, HbError *err)
{
	HbModel    *m = hb_alloc0(sizeof(HbModel));

	m->task = HB_TASK_BINARY;
	m->estimator = HB_EST_LINEAR;
	m->n_features = nf;
	m->features = hb_alloc0(sizeof(HbFeature) * nf);
	for (int f = 0; f < nf; f++)
	{
		char		name[16];

		snprintf(name, sizeof(name), "f%d", f);
		m->features[f].name = hb_strdup(name);
	}
	m->n_outputs = 1;
	m->n_classes = 2;
	m->base_margin = hb_alloc0(sizeof(double));
	m->link = HB_LINK_SIGMOID;
	m->weights = hb_alloc0(sizeof(double) * nf);
	m->bias = hb_alloc0(sizeof(double));
	m->bias[0] = -0.25;
	for (int f = 0; f < nf; f++)
		m->weights[f] = ((int) (unif() * 5) - 2) * 0.5;
	if (!hb_model_validate(m, err))
		return NULL;
	return m;
}

/*
 * Rows from a small grid (ties), some missing or infinite, some categories
 * (small integers), and the second half mostly repeating the first.
 */
static double *
random_rows(size_t n, int nf)
{
	double	   *x = malloc(sizeof(double) * n * nf);

	for (size_t r = 0; r < n; r++)
		for (int f = 0; f < nf; f++)
		{
			double		v = ((int) (unif() * 9) - 4) * 0.25;

			if (r >= n / 2 && r % 3 != 0)
				v = x[(r - n / 2) * nf + f];
			else if (unif() < 0.1)
				v = NAN;
			else if (unif() < 0.02)
				v = unif() < 0.5 ? INFINITY : -INFINITY;
			else if (unif() < 0.1)
				v = (int) (unif() * 40);
			x[r * nf + f] = v;
		}
	return x;
}

typedef struct Held
{
	int			k;
	int			n;
	double	   *margin;
	size_t	   *row;
} Held;

/*
 * NaN as PostgreSQL orders it, above every number: the best of the highest
 * margins, the worst of the lowest (held negated); set per direction.
 */
static bool nan_best = true;

/* (margin desc, row asc): a ranks below b */
static bool
worse(double ma, size_t ra, double mb, size_t rb)
{
	if (isnan(ma) || isnan(mb))
	{
		if (isnan(ma) && isnan(mb))
			return ra > rb;
		return isnan(ma) != nan_best;
	}
	return ma < mb || (ma == mb && ra > rb);
}

/* A plain sorted list is enough for a test; hbird's SQL side uses a heap. */
static double
offer(void *arg, size_t row, double margin)
{
	Held	   *h = arg;
	int			i;

	if (h->n == h->k && !worse(h->margin[h->k - 1], h->row[h->k - 1], margin, row))
		return h->margin[h->k - 1];
	i = h->n < h->k ? h->n++ : h->k - 1;
	while (i > 0 && worse(h->margin[i - 1], h->row[i - 1], margin, row))
	{
		h->margin[i] = h->margin[i - 1];
		h->row[i] = h->row[i - 1];
		i--;
	}
	h->margin[i] = margin;
	h->row[i] = row;
	return h->n < h->k ? -INFINITY : h->margin[h->k - 1];
}

typedef struct ShiftArg
{
	Held	   *h;
	size_t		base;			/* number of the call's row 0 */
	double		sign;			/* -1: the k lowest, held negated */
	size_t		n;				/* rows of the call: offers must be within */
	bool		bad;			/* an offer out of range or below threshold */
	double		threshold;		/* what the call was given, updated */
} ShiftArg;

static double
offer_shifted(void *arg, size_t row, double margin)
{
	ShiftArg   *s = arg;

	if (row >= s->n || s->sign * margin < s->threshold ||
		(isnan(margin) && s->sign < 0 && s->threshold != -INFINITY))
		s->bad = true;
	s->threshold = offer(s->h, s->base + row, s->sign * margin);
	return s->threshold;
}

static double *sort_m;

static int
cmp_rows(const void *a, const void *b)
{
	size_t		ra = *(const size_t *) a,
				rb = *(const size_t *) b;

	if (worse(sort_m[ra], ra, sort_m[rb], rb))
		return 1;
	if (worse(sort_m[rb], rb, sort_m[ra], ra))
		return -1;
	return 0;
}

typedef enum Feed
{
	FEED_HALVES,				/* two calls */
	FEED_37,					/* batches of 37 rows */
	FEED_GROWING,				/* 1, 2, 4, 8, ... rows, as the batching scan */
	N_FEEDS
} Feed;

static const char *feed_names[N_FEEDS] = {"two halves", "batches of 37", "growing batches"};

/*
 * Top-k of x through hb_topk_score fed as `feed` says; true when it equals
 * the first k of the sorted reference (sign * margins, sorted in order).
 */
static bool
run_feed(HbPlan *p, const HbTopkBounds *b, const double *x, size_t n, int k,
		 double sign, Feed feed, const double *sm, const size_t *order,
		 HbTopkStats *st, char *why, size_t whylen)
{
	Held		h = {k, 0, malloc(sizeof(double) * k), malloc(sizeof(size_t) * k)};
	ShiftArg	a = {&h, 0, sign, 0, false, -INFINITY};
	int			nf = hb_plan_n_features(p);
	int			want = (size_t) k < n ? k : (int) n;
	size_t		step = 1;
	bool		same;

	memset(st, 0, sizeof(*st));
	for (size_t r0 = 0, nb; r0 < n; r0 += nb)
	{
		if (feed == FEED_HALVES)
			nb = r0 == 0 && n / 2 > 0 ? n / 2 : n - r0;
		else if (feed == FEED_37)
			nb = n - r0 < 37 ? n - r0 : 37;
		else
		{
			nb = n - r0 < step ? n - r0 : step;
			step *= 2;
		}
		a.base = r0;
		a.n = nb;
		if (!hb_topk_score(p, b, x + r0 * nf, nb, &a.threshold, offer_shifted, &a, st))
		{
			snprintf(why, whylen, "out of memory");
			return false;
		}
	}
	same = h.n == want && st->rows == (int64_t) n && !a.bad;
	for (int i = 0; same && i < want; i++)
		same = h.row[i] == order[i] &&
			(h.margin[i] == sm[order[i]] || (isnan(h.margin[i]) && isnan(sm[order[i]])));
	if (!same)
	{
		int			i = 0;

		while (i < h.n && i < want && h.row[i] == order[i] && h.margin[i] == sm[order[i]])
			i++;
		snprintf(why, whylen, "%s, %s: %d of %d held, %lld rows seen%s; first difference at %d: row %zu (%.17g), want row %zu (%.17g)",
				 sign > 0 ? "highest" : "lowest", feed_names[feed], h.n, want,
				 (long long) st->rows, a.bad ? ", an offer out of range or below the threshold" : "",
				 i, i < h.n ? h.row[i] : (size_t) 0, i < h.n ? h.margin[i] : 0.0,
				 i < want ? order[i] : (size_t) 0, i < want ? sm[order[i]] : 0.0);
	}
	free(h.margin);
	free(h.row);
	return same;
}

/*
 * Every feed, both directions, against a full sort of TT's margins; one
 * TAP line.  Returns the pairs scored by the whole batch feed (highest).
 */
static int64_t
check(const char *what, HbPlan *p, const double *x, size_t n, int k)
{
	double	   *m = malloc(sizeof(double) * n);
	double	   *sm = malloc(sizeof(double) * n);
	size_t	   *order = malloc(sizeof(size_t) * n);
	HbTopkStats st;
	int64_t		pairs = -1;
	bool		ok = true;
	char		why[512] = "";

	hb_plan_margins_with(p, HB_STRATEGY_TT, x, n, m);
	for (int dir = 0; dir < 2 && ok; dir++)
	{
		double		sign = dir == 0 ? 1.0 : -1.0;
		HbTopkBounds *b = dir == 0 ? hb_topk_bounds(p) : hb_topk_bounds_lowest(p);

		nan_best = dir == 0;

		for (size_t i = 0; i < n; i++)
		{
			sm[i] = sign * m[i];
			order[i] = i;
		}
		sort_m = sm;
		qsort(order, n, sizeof(size_t), cmp_rows);
		for (int f = 0; f < N_FEEDS && ok; f++)
		{
			ok = run_feed(p, b, x, n, k, sign, (Feed) f, sm, order, &st, why, sizeof(why));
			if (dir == 0 && f == FEED_HALVES)
				pairs = st.pairs_scored;
		}
		hb_topk_bounds_free(b);
	}
	report(ok, "%s k=%d n=%zu: same rows, margins and tie order as a full sort%s%s",
		   what, k, n, ok ? "" : ": ", why);
	free(m);
	free(sm);
	free(order);
	return pairs;
}

typedef struct Kernel
{
	const char *name;
	HbStrategy	strategy;
	HbPttKernel kernel;
	bool		chunks;
} Kernel;

static const Kernel kernels[] = {
	{"auto", HB_STRATEGY_AUTO, HB_PTT_KERNEL_AUTO, true},
	{"range kernel", HB_STRATEGY_AUTO, HB_PTT_KERNEL_AUTO, false},
	{"eight-row walk", HB_STRATEGY_AUTO, HB_PTT_KERNEL_WALK8, true},
	{"portable compact", HB_STRATEGY_AUTO, HB_PTT_KERNEL_PORTABLE, true},
	{"traversal", HB_STRATEGY_TT, HB_PTT_KERNEL_AUTO, true},
};

static void
model_suite(const Gen *g, size_t n, const int *ks, int nks, bool all_kernels,
			bool must_prune)
{
	HbError		err = {0};
	HbModel    *m = random_model(g, &err);
	HbPlan	   *p = NULL;
	double	   *x;
	char		what[256];

	if (m == NULL || !hb_plan_build(m, &p, &err))
	{
		report(false, "random model (%d trees, depth %d): %s", g->n_trees, g->depth, err.msg);
		hb_model_free(m);
		return;
	}
	x = random_rows(n, g->nf);
	for (size_t ki = 0; ki < (all_kernels ? sizeof(kernels) / sizeof(kernels[0]) : 1); ki++)
	{
		hb_set_strategy_override(kernels[ki].strategy);
		hb_ptt_set_kernel(kernels[ki].kernel);
		hb_ptt_set_chunks(kernels[ki].chunks);
		for (int i = 0; i < nks; i++)
		{
			int64_t		pairs;

			snprintf(what, sizeof(what), "%s %s%s leaves, %d trees, depth %d, %d features, %s",
					 g->lgbm ? "f64" : "f32", g->cats ? "categorical, " : "",
					 g->style == LEAF_TIES ? "tied" : g->style == LEAF_WILD ? "wild" : "boosting",
					 g->n_trees, g->depth, g->nf, kernels[ki].name);
			pairs = check(what, p, x, n, ks[i]);
			/* pruning must happen where the bounds are not hopeless */
			if (must_prune && ki == 0 && ks[i] <= 10 && pairs >= 0)
				report(pairs < (int64_t) n * g->n_trees,
					   "%s k=%d: pruning scored %lld of %lld (row, tree) pairs",
					   what, ks[i], (long long) pairs, (long long) n * g->n_trees);
		}
	}
	hb_set_strategy_override(HB_STRATEGY_AUTO);
	hb_ptt_set_kernel(HB_PTT_KERNEL_AUTO);
	hb_ptt_set_chunks(true);
	free(x);
	hb_plan_free(p);
	hb_model_free(m);
}

int
main(void)
{
	const int	ks[] = {1, 2, 10, 100, 5000};
	const int	nks = sizeof(ks) / sizeof(ks[0]);

	/* the original grid: depths 1 to 8, 10 to 150 trees, tied leaves */
	for (int variant = 0; variant < 8; variant++)
	{
		Gen			g = {10 + 20 * variant, 1 + variant, 5, variant % 2 == 1, false, LEAF_TIES};

		model_suite(&g, 3000, ks, nks, variant % 4 == 3, true);
	}
	/* random shapes and leaf styles, every kernel */
	for (int i = 0; i < 10; i++)
	{
		Gen			g;

		g.n_trees = 20 + (int) (unif() * 380);
		g.depth = 2 + (int) (unif() * 9);
		if (g.depth > 7 && g.n_trees > 150)
			g.n_trees = 150;
		g.nf = 3 + (int) (unif() * 28);
		g.lgbm = i % 2 == 1;
		g.cats = i % 3 == 2;
		g.style = (LeafStyle) (i % 3);
		model_suite(&g, 2000, ks, nks, true, false);
	}
	/* a boosting-like model over several chunks of rows */
	{
		Gen			g = {300, 6, 12, false, false, LEAF_BOOST};
		const int	big_ks[] = {1, 10, 1000};

		model_suite(&g, 9000, big_ks, 3, true, true);
		g.lgbm = true;
		model_suite(&g, 9000, big_ks, 3, false, true);
	}
	/* linear models rank too: every row scored, the same rows and ties */
	{
		int			nf = 4;
		size_t		n = 2000;
		HbError		err = {0};
		HbModel    *m = random_linear(nf, &err);
		HbPlan	   *p = NULL;
		double	   *x = malloc(sizeof(double) * n * nf);

		if (m == NULL || !hb_plan_build(m, &p, &err))
			report(false, "random linear model: %s", err.msg);
		else
		{
			report(hb_topk_supported(p), "a single-output linear model can be ranked");
			for (size_t r = 0; r < n * nf; r++)
				x[r] = ((int) (unif() * 5) - 2) * 0.5;
			for (int i = 0; i < nks; i++)
				check("linear model", p, x, n, ks[i]);
			/*
			 * infinite values: +inf times weights of both signs is a NaN
			 * margin, which ranks above every number, as ORDER BY does
			 */
			{
				int			nan_rows = 0;
				double	   *mg = malloc(sizeof(double) * n);

				for (size_t r = 0; r < n; r++)
					if (r % 7 == 3)
						for (int f = 0; f < nf; f++)
							x[r * nf + f] = r % 2 ? INFINITY : -INFINITY;
				hb_plan_margins(p, x, n, mg);
				for (size_t r = 0; r < n; r++)
					nan_rows += isnan(mg[r]);
				free(mg);
				report(nan_rows > 0, "linear model: %d rows of NaN margins", nan_rows);
				for (int i = 0; i < nks; i++)
					check("linear model, NaN margins", p, x, n, ks[i]);
			}
			hb_plan_free(p);
			hb_model_free(m);
		}
		free(x);
	}
	printf("# passed %d failed %d\n", n_test - n_fail, n_fail);
	printf("1..%d\n", n_test);
	return n_fail ? 1 : 0;
}
