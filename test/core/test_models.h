/*
 * test_models.h
 *	  Random tree models for the tests that compare scoring paths bit for
 *	  bit (test_strategies.c, test/gpu/gpu_check.c): a seeded generator,
 *	  values that hit thresholds exactly, and IR models with categorical
 *	  sets, the three missing modes, shuffled node numbers and one or more
 *	  outputs.  Header-only: each program is one translation unit; it needs
 *	  the core's plan_int.h (hb_alloc, hb_model_validate) and no PostgreSQL.
 */
#ifndef HB_TEST_MODELS_H
#define HB_TEST_MODELS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_int.h"

/* ---------- random numbers (xorshift64*, seeded: runs are repeatable) ---------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static inline uint64_t
rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static inline double
unif(void)
{
	return (rnd() >> 11) * (1.0 / 9007199254740992.0);
}

static inline int
irand(int n)
{
	return (int) (rnd() % (uint64_t) n);
}

/*
 * Values shared by thresholds and inputs, so that inputs hit thresholds
 * exactly (x == t goes right for "<", left for "<="): small integers
 * (category codes too), doubles that are not floats (their float rounding
 * can make different doubles tie), zeros of both signs, values near the
 * HB_MISSING_ZERO cut at 1e-35, and values beyond float range.
 */
#define N_POOL 64
static double pool[N_POOL];

static inline void
init_pool(void)
{
	int			i = 0;

	for (int c = 0; c < 24; c++)
		pool[i++] = c;
	pool[i++] = 0.1;
	pool[i++] = (double) 0.1f;
	pool[i++] = -0.0;
	pool[i++] = 1e-36;
	pool[i++] = -1e-36;
	pool[i++] = 1e-35;
	pool[i++] = 1.0000001e-35;
	pool[i++] = 1e30;
	pool[i++] = 1e39;			/* (float) gives +Inf */
	pool[i++] = -1e39;
	pool[i++] = 16777217.0;		/* not a float; not a valid category */
	pool[i++] = -1.0;
	while (i < N_POOL)
	{
		double		v = (unif() - 0.5) * 6.0;

		/* half of them exactly representable as float */
		pool[i] = (i & 1) ? (double) (float) v : v;
		i++;
	}
}

static inline double
random_input(void)
{
	double		u = unif();

	if (u < 0.15)
		return NAN;
	if (u < 0.18)
		return (u < 0.165) ? INFINITY : -INFINITY;
	if (u < 0.55)
		return pool[irand(N_POOL)];
	return (unif() - 0.5) * 8.0;
}

static inline double
random_leaf(void)
{
	double		u = unif();

	/* magnitudes that make float32 sums depend on the order */
	if (u < 0.03)
		return -0.0;
	if (u < 0.06)
		return 0.0;
	if (u < 0.2)
		return (unif() - 0.5) * 1000.0;
	if (u < 0.4)
		return (unif() - 0.5) * 1e-4;
	return unif() - 0.5;
}

/* ---------- random models ---------- */

typedef struct GenOpts
{
	int			n_trees;
	int			depth;			/* of the deepest tree */
	int			n_features;
	int			n_outputs;
	HbCmp		cmp;
	double		p_leaf;			/* a node above the bottom stops early */
	int			default_left;	/* 0, 1, or -1 for random */
	bool		kinds;			/* categorical, ZERO and NONE nodes too */
	bool		chain;			/* one long unbalanced path only */
	bool		full;			/* every tree reaches the full depth */
} GenOpts;

typedef struct GenTree
{
	HbNode	   *nodes;
	int			n;
	int			cap;
} GenTree;

/* Categories of sets, appended to the model as we go. */
static uint32_t cat_buf[1 << 16];
static int	cat_used;

static inline int
gen_node(GenTree *t, const GenOpts *o, int d, int target, bool on_path)
{
	int			id = t->n++;
	HbNode	   *n = &t->nodes[id];
	bool		leaf;

	memset(n, 0, sizeof(*n));
	if (o->chain)
		leaf = !on_path || d == target;
	else
		leaf = d == target || (!on_path && unif() < o->p_leaf);
	if (leaf)
	{
		n->left = n->right = HB_LEAF;
		n->value = random_leaf();
		return id;
	}
	n->feature = irand(o->n_features);
	n->threshold = unif() < 0.6 ? pool[irand(N_POOL)] : (unif() - 0.5) * 6.0;
	while (!isfinite(n->threshold) || fabs(n->threshold) > 1e38)
		n->threshold = pool[irand(24)];
	n->default_left = o->default_left >= 0 ? o->default_left : irand(2);
	n->missing = HB_MISSING_NAN;
	if (o->kinds)
	{
		double		u = unif();

		if (u < 0.15)
			n->missing = HB_MISSING_ZERO;
		else if (u < 0.3)
			n->missing = HB_MISSING_NONE;
		else if (u < 0.45 && cat_used + 8 <= (int) (sizeof(cat_buf) / sizeof(cat_buf[0])))
		{
			n->is_cat = 1;
			n->cat_in_left = irand(2);
			n->cat_off = cat_used;
			if (irand(4) == 0)
			{
				/* a sorted list: codes the inputs hit, maybe one far above */
				uint32_t	c = (uint32_t) irand(4);

				n->cat_list = 1;
				for (; c < 24 && n->cat_nwords < 6; c += 1 + irand(6))
					cat_buf[cat_used + n->cat_nwords++] = c;
				if (irand(2))
					cat_buf[cat_used + n->cat_nwords++] = 1000000 + irand(1000);
				cat_used += n->cat_nwords;
			}
			else
			{
				/* 0 to 2 words of categories 0..63, or of 32..95: the inputs' codes then fall below the set */
				n->cat_base = irand(4) == 0;
				n->cat_nwords = irand(3);
				for (int w = 0; w < n->cat_nwords; w++)
					cat_buf[cat_used++] = (uint32_t) rnd();
			}
		}
	}

	/* the forced path goes left or right at random: trees lean both ways */
	{
		int			path_left = irand(2);
		int			l,
					r;

		l = gen_node(t, o, d + 1, target, on_path && path_left);
		r = gen_node(t, o, d + 1, target, on_path && !path_left);
		t->nodes[id].left = l;
		t->nodes[id].right = r;
	}
	return id;
}

/* Renumber nodes 1..n-1 at random: readers need not write them in order. */
static inline void
shuffle_nodes(GenTree *t)
{
	int		   *perm = malloc(sizeof(int) * t->n);
	HbNode	   *out = hb_alloc(sizeof(HbNode) * t->n);

	for (int i = 0; i < t->n; i++)
		perm[i] = i;
	for (int i = t->n - 1; i > 1; i--)
	{
		int			j = 1 + irand(i);
		int			tmp = perm[i];

		perm[i] = perm[j];
		perm[j] = tmp;
	}
	for (int i = 0; i < t->n; i++)
	{
		HbNode		n = t->nodes[i];

		if (n.left != HB_LEAF)
		{
			n.left = perm[n.left];
			n.right = perm[n.right];
		}
		out[perm[i]] = n;
	}
	hb_free(t->nodes);
	t->nodes = out;
	free(perm);
}

static inline HbModel *
random_model(const GenOpts *o)
{
	HbModel    *m = hb_alloc0(sizeof(HbModel));
	HbError		err = {0};

	m->format = HB_FORMAT_AUTO;
	m->estimator = HB_EST_TREES;
	m->n_outputs = o->n_outputs;
	m->task = o->n_outputs > 1 ? HB_TASK_MULTICLASS : HB_TASK_REGRESSION;
	m->n_classes = o->n_outputs > 1 ? o->n_outputs : 0;
	m->link = HB_LINK_IDENTITY;
	m->objective = hb_strdup("test");
	m->cmp = o->cmp;
	m->sum_f32 = o->cmp == HB_CMP_LT_F32;
	m->n_features = o->n_features;
	m->features = hb_alloc0(sizeof(HbFeature) * o->n_features);
	for (int f = 0; f < o->n_features; f++)
	{
		char		name[32];

		snprintf(name, sizeof(name), "f%d", f);
		m->features[f].name = hb_strdup(name);
		m->features[f].type = HB_FEATURE_NUMERIC;
	}
	m->has_feature_names = true;
	m->base_margin = hb_alloc(sizeof(double) * o->n_outputs);
	for (int g = 0; g < o->n_outputs; g++)
		m->base_margin[g] = (unif() - 0.5) * 3.0;

	cat_used = 0;
	m->n_trees = o->n_trees;
	m->trees = hb_alloc0(sizeof(HbTree) * o->n_trees);
	for (int i = 0; i < o->n_trees; i++)
	{
		GenTree		t;
		/* the first tree reaches the full depth; others anywhere up to it */
		int			target = (i == 0 || o->full) ? o->depth : irand(o->depth + 1);

		t.cap = o->chain ? 2 * o->depth + 1 : (2 << target) - 1;
		t.nodes = hb_alloc(sizeof(HbNode) * t.cap);
		t.n = 0;
		gen_node(&t, o, 0, target, true);
		shuffle_nodes(&t);
		m->trees[i].nodes = t.nodes;
		m->trees[i].n_nodes = t.n;
		m->trees[i].group = o->n_outputs > 1 ? i % o->n_outputs : 0;
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
		fflush(stdout);
		hb_model_free(m);
		return NULL;
	}
	return m;
}

/* n rows of nf random inputs (random_input: NaN, infinities, cuts) */
static inline double *
random_inputs(int nf, size_t n)
{
	double	   *x = malloc(sizeof(double) * n * nf);

	for (size_t i = 0; i < n * nf; i++)
		x[i] = random_input();
	return x;
}

/*
 * A linear model of nf features and k outputs (multiclass softmax when k >
 * 1), its weights sin(1.7 i) * 3, bias g - 0.5, base margin 0.25 g.
 */
static inline HbModel *
linear_model(int nf, int k, bool f32)
{
	HbModel    *m = hb_alloc0(sizeof(HbModel));

	m->task = k > 1 ? HB_TASK_MULTICLASS : HB_TASK_REGRESSION;
	m->estimator = HB_EST_LINEAR;
	m->n_features = nf;
	m->features = hb_alloc0(sizeof(HbFeature) * nf);
	for (int f = 0; f < nf; f++)
	{
		char		name[16];

		snprintf(name, sizeof(name), "x%d", f);
		m->features[f].name = hb_strdup(name);
	}
	m->n_outputs = k;
	m->n_classes = k > 1 ? k : 0;
	m->link = k > 1 ? HB_LINK_SOFTMAX : HB_LINK_IDENTITY;
	m->sum_f32 = f32;
	m->cmp = f32 ? HB_CMP_LT_F32 : HB_CMP_LE_F64;
	m->base_margin = hb_alloc0(sizeof(double) * k);
	m->bias = hb_alloc0(sizeof(double) * k);
	m->weights = hb_alloc0(sizeof(double) * nf * k);
	for (int g = 0; g < k; g++)
	{
		m->base_margin[g] = 0.25 * g;
		m->bias[g] = -0.5 + g;
	}
	for (int i = 0; i < nf * k; i++)
		m->weights[i] = sin(i * 1.7) * 3.0;
	return m;
}

#endif							/* HB_TEST_MODELS_H */
