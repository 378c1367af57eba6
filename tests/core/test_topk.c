/*
 * test_topk.c
 *	  Exact top-K with bound pruning equals full scoring plus a sort, on
 *	  random models and data with many ties (thresholds and leaf values from
 *	  small sets, duplicated rows, missing values), for both comparison
 *	  semantics.  TAP output.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
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
ok(bool cond, const char *fmt, const char *what, int k, size_t n)
{
	n_test++;
	if (!cond)
		n_fail++;
	printf("%s %d - ", cond ? "ok" : "not ok", n_test);
	printf(fmt, what, k, n);
	printf("\n");
}

/* A random tree of at most the given depth; values from small sets. */
static int
grow(HbNode *nodes, int *count, int depth, int nf, bool lgbm)
{
	int			id = (*count)++;
	HbNode	   *n = &nodes[id];

	memset(n, 0, sizeof(*n));
	if (depth == 0 || unif() < 0.2)
	{
		n->left = n->right = HB_LEAF;
		n->value = (double) (float) ((int) (unif() * 9) - 4) * 0.25;
		return id;
	}
	n->feature = (int) (unif() * nf);
	n->threshold = (double) (float) ((int) (unif() * 5) - 2) * 0.5;
	n->default_left = unif() < 0.5;
	n->missing = lgbm && unif() < 0.3 ? HB_MISSING_ZERO : HB_MISSING_NAN;
	n->left = grow(nodes, count, depth - 1, nf, lgbm);
	nodes[id].right = grow(nodes, count, depth - 1, nf, lgbm);
	return id;
}

static HbModel *
random_model(int n_trees, int depth, int nf, bool lgbm, HbError *err)
{
	HbModel    *m = hb_alloc0(sizeof(HbModel));

	m->task = HB_TASK_REGRESSION;
	m->estimator = HB_EST_TREES;
	m->n_features = nf;
	m->features = hb_alloc0(sizeof(HbFeature) * nf);
	for (int f = 0; f < nf; f++)
	{
		char		name[16];

		snprintf(name, sizeof(name), "f%d", f);
		m->features[f].name = hb_strdup(name);
	}
	m->n_outputs = 1;
	m->base_margin = hb_alloc0(sizeof(double));
	m->base_margin[0] = 0.5;
	m->link = lgbm ? HB_LINK_IDENTITY : HB_LINK_SIGMOID;
	m->cmp = lgbm ? HB_CMP_LE_F64 : HB_CMP_LT_F32;
	m->sum_f32 = !lgbm;
	m->n_trees = n_trees;
	m->trees = hb_alloc0(sizeof(HbTree) * n_trees);
	for (int t = 0; t < n_trees; t++)
	{
		int			count = 0;

		m->trees[t].nodes = hb_alloc0(sizeof(HbNode) * ((2 << depth) + 1));
		grow(m->trees[t].nodes, &count, depth, nf, lgbm);
		m->trees[t].n_nodes = count;
	}
	if (!hb_model_validate(m, err))
		return NULL;
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

typedef struct Held
{
	int			k;
	int			n;
	double	   *margin;
	size_t	   *row;
} Held;

/* (margin desc, row asc): a ranks below b */
static bool
worse(double ma, size_t ra, double mb, size_t rb)
{
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
} ShiftArg;

static double
offer_shifted(void *arg, size_t row, double margin)
{
	ShiftArg   *s = arg;

	return offer(s->h, s->base + row, margin);
}

/* the k lowest margins: held negated, so the same list serves */
static double
offer_lowest(void *arg, size_t row, double margin)
{
	return offer_shifted(arg, row, -margin);
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

static void
check(const char *what, HbPlan *p, const double *x, size_t n, int k)
{
	HbTopkBounds *b = hb_topk_bounds(p);
	double	   *m = malloc(sizeof(double) * n);
	size_t	   *order = malloc(sizeof(size_t) * n);
	Held		h = {k, 0, malloc(sizeof(double) * k), malloc(sizeof(size_t) * k)};
	HbTopkStats st = {0};
	double		threshold = -INFINITY;
	int			want = (size_t) k < n ? k : (int) n;
	size_t		half = n / 2;
	ShiftArg	first = {&h, 0};
	ShiftArg	second = {&h, half};
	bool		same;

	hb_plan_margins_with(p, HB_STRATEGY_TT, x, n, m);
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	sort_m = m;
	qsort(order, n, sizeof(size_t), cmp_rows);

	/* two calls, as SQL feeds batches; the threshold carries over */
	hb_topk_score(p, b, x, half, &threshold, offer_shifted, &first, &st);
	hb_topk_score(p, b, x + half * hb_plan_n_features(p), n - half, &threshold,
				  offer_shifted, &second, &st);
	same = h.n == want && st.rows == (int64_t) n;
	for (int i = 0; same && i < want; i++)
		same = h.row[i] == order[i] && h.margin[i] == m[order[i]];
	ok(same, "%s k=%d n=%zu: same rows, order and margins as a full sort", what, k, n);
	if (k <= 10 && n >= 1000 && hb_plan_n_trees(p) > 0)
	{
		n_test++;
		if (st.pairs_scored >= (int64_t) n * hb_plan_n_trees(p))
			n_fail++;
		printf("%s %d - %s k=%d: pruning scored %lld of %lld (row, tree) pairs\n",
			   st.pairs_scored < (int64_t) n * hb_plan_n_trees(p) ? "ok" : "not ok",
			   n_test, what, k, (long long) st.pairs_scored,
			   (long long) n * hb_plan_n_trees(p));
	}
	hb_topk_bounds_free(b);

	/* the k lowest (ORDER BY ... ASC): the same on negated margins */
	b = hb_topk_bounds_lowest(p);
	for (size_t i = 0; i < n; i++)
	{
		m[i] = -m[i];
		order[i] = i;
	}
	qsort(order, n, sizeof(size_t), cmp_rows);
	h.n = 0;
	threshold = -INFINITY;
	memset(&st, 0, sizeof(st));
	hb_topk_score(p, b, x, half, &threshold, offer_lowest, &first, &st);
	hb_topk_score(p, b, x + half * hb_plan_n_features(p), n - half, &threshold,
				  offer_lowest, &second, &st);
	same = h.n == want && st.rows == (int64_t) n;
	for (int i = 0; same && i < want; i++)
		same = h.row[i] == order[i] && h.margin[i] == m[order[i]];
	ok(same, "%s k=%d n=%zu: lowest: same rows, order and margins as a full sort", what, k, n);
	hb_topk_bounds_free(b);
	free(m);
	free(order);
	free(h.margin);
	free(h.row);
}

int
main(void)
{
	const int	ks[] = {1, 2, 10, 100, 5000};
	char		what[128];

	for (int variant = 0; variant < 8; variant++)
	{
		bool		lgbm = variant % 2 == 1;
		int			depth = 1 + variant;
		int			nf = 5;
		int			n_trees = 10 + 20 * variant;
		size_t		n = 3000;
		HbError		err = {0};
		HbModel    *m = random_model(n_trees, depth, nf, lgbm, &err);
		HbPlan	   *p = NULL;
		double	   *x;

		if (m == NULL || !hb_plan_build(m, &p, &err))
		{
			printf("not ok %d - random model %d: %s\n", ++n_test, variant, err.msg);
			n_fail++;
			continue;
		}
		x = malloc(sizeof(double) * n * nf);
		/* inputs from a small grid, some missing, the second half repeating the first */
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
				x[r * nf + f] = v;
			}
		for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++)
		{
			snprintf(what, sizeof(what), "%s model %d (%d trees, depth %d)",
					 lgbm ? "f64" : "f32", variant, n_trees, depth);
			check(what, p, x, n, ks[i]);
		}
		free(x);
		hb_plan_free(p);
		hb_model_free(m);
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
		{
			printf("not ok %d - random linear model: %s\n", ++n_test, err.msg);
			n_fail++;
		}
		else
		{
			n_test++;
			if (!hb_topk_supported(p))
				n_fail++;
			printf("%s %d - a single-output linear model can be ranked\n",
				   hb_topk_supported(p) ? "ok" : "not ok", n_test);
			for (size_t r = 0; r < n * nf; r++)
				x[r] = ((int) (unif() * 5) - 2) * 0.5;
			for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++)
				check("linear model", p, x, n, ks[i]);
			hb_plan_free(p);
			hb_model_free(m);
		}
		free(x);
	}
	printf("# passed %d failed %d\n", n_test - n_fail, n_fail);
	return n_fail ? 1 : 0;
}
