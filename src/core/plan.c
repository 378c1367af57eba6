/*
 * plan.c
 *	  Building plans from the IR, and the links from margins to predictions.
 *
 * The tree layout is flat and breadth-first per tree with the two children
 * of a node stored side by side, so a step is "idx = left + go_right" and a
 * node is 16 bytes: four nodes share a cache line.
 */
#include "plan_int.h"

#include <math.h>
#include <string.h>

/* Append tree t's nodes to the flat arrays in breadth-first order. */
static bool
flatten_tree(HbPlan *p, const HbModel *m, int t, int64_t *next, HbError *err)
{
	const HbTree *tree = &m->trees[t];
	int32_t    *queue;			/* IR node ids, in the order they are placed */
	int64_t		base = *next;
	int32_t		head = 0,
				tail = 0;

	queue = hb_alloc(sizeof(int32_t) * tree->n_nodes);
	if (queue == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");

	p->tree_root[t] = (int32_t) base;
	queue[tail++] = 0;
	while (head < tail)
	{
		const HbNode *n = &tree->nodes[queue[head]];
		HbFlatNode *f = &p->nodes[base + head];
		int64_t		idx = base + head;

		head++;
		memset(f, 0, sizeof(*f));
		if (n->left == HB_LEAF)
		{
			f->feature = -1;
			f->thr = (float) n->value;
			p->leaf_d[idx] = n->value;
			continue;
		}
		f->feature = n->feature;
		f->thr = (float) n->threshold;
		p->thr_d[idx] = n->threshold;
		f->flags = (n->default_left ? HB_FN_DEFAULT_LEFT : 0) |
			(n->is_cat ? HB_FN_CAT : 0) |
			(n->cat_in_left ? HB_FN_CAT_IN_LEFT : 0) |
			((uint32_t) n->missing << HB_FN_MISSING_SHIFT);
		if (n->is_cat)
		{
			p->cat_off[idx] = n->cat_off;
			p->cat_nwords[idx] = n->cat_nwords;
		}
		/* children go next to each other at the end of the queue */
		f->left = (int32_t) (base + tail);
		queue[tail++] = n->left;
		queue[tail++] = n->right;
	}
	*next = base + tail;
	hb_free(queue);
	return true;
}

static int64_t
reachable_nodes(const HbTree *tree)
{
	/* validation guarantees a tree; count what a walk from the root sees */
	int64_t		count = 0;
	int32_t		stack[2 * (HB_MAX_DEPTH + 2)];
	int			sp = 0;

	stack[sp++] = 0;
	while (sp > 0)
	{
		const HbNode *n = &tree->nodes[stack[--sp]];

		count++;
		if (n->left != HB_LEAF)
		{
			stack[sp++] = n->left;
			stack[sp++] = n->right;
		}
	}
	return count;
}

static bool
has_categories(const HbModel *m)
{
	for (int t = 0; t < m->n_trees; t++)
		for (int i = 0; i < m->trees[t].n_nodes; i++)
			if (m->trees[t].nodes[i].is_cat)
				return true;
	return false;
}

bool
hb_plan_build(const HbModel *m, HbPlan **out, HbError *err)
{
	HbPlan	   *p;
	int64_t		total = 0;
	int64_t		next = 0;

	*out = NULL;
	p = hb_alloc0(sizeof(HbPlan));
	if (p == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");

	p->task = m->task;
	p->estimator = m->estimator;
	p->link = m->link;
	p->cmp = m->cmp;
	p->sum_f32 = m->sum_f32;
	p->predict_class = m->predict_class;
	p->n_features = m->n_features;
	p->n_outputs = m->n_outputs;
	p->n_classes = m->n_classes;
	p->n_trees = m->estimator == HB_EST_TREES ? m->n_trees : 0;
	p->max_depth = m->max_depth;
	p->bytes = sizeof(HbPlan);

	p->base_margin = hb_alloc(sizeof(double) * m->n_outputs);
	if (p->base_margin == NULL)
		goto nomem;
	memcpy(p->base_margin, m->base_margin, sizeof(double) * m->n_outputs);

	if (m->estimator == HB_EST_LINEAR)
	{
		size_t		nw = (size_t) m->n_features * m->n_outputs;

		p->weights = hb_alloc(sizeof(double) * nw);
		p->bias = hb_alloc(sizeof(double) * m->n_outputs);
		if (!p->weights || !p->bias)
			goto nomem;
		memcpy(p->weights, m->weights, sizeof(double) * nw);
		memcpy(p->bias, m->bias, sizeof(double) * m->n_outputs);
		p->bytes += sizeof(double) * (nw + m->n_outputs);
		*out = p;
		return true;
	}

	/* executors pair float32 sums with float32 compares, and double with double */
	if (m->sum_f32 != (m->cmp == HB_CMP_LT_F32))
	{
		hb_plan_free(p);
		return hb_fail(err, HB_ERR_UNSUPPORTED,
					   "tree models must sum in the precision they compare in");
	}
	for (int t = 0; t < m->n_trees; t++)
		total += reachable_nodes(&m->trees[t]);
	if (total > INT32_MAX)
	{
		hb_plan_free(p);
		return hb_fail(err, HB_ERR_LIMIT, "model has more than %d nodes",
					   INT32_MAX);
	}
	p->n_nodes = total;
	p->tree_root = hb_alloc(sizeof(int32_t) * (m->n_trees + 1));
	p->tree_group = hb_alloc(sizeof(int32_t) * (m->n_trees + 1));
	p->nodes = hb_alloc(sizeof(HbFlatNode) * (total + 1));
	p->thr_d = hb_alloc0(sizeof(double) * (total + 1));
	p->leaf_d = hb_alloc0(sizeof(double) * (total + 1));
	if (!p->tree_root || !p->tree_group || !p->nodes || !p->thr_d || !p->leaf_d)
		goto nomem;
	if (m->n_cat_words > 0)
	{
		p->cat_words = hb_alloc(sizeof(uint32_t) * m->n_cat_words);
		if (p->cat_words == NULL)
			goto nomem;
		memcpy(p->cat_words, m->cat_words, sizeof(uint32_t) * m->n_cat_words);
		p->n_cat_words = m->n_cat_words;
	}
	if (has_categories(m))
	{
		p->cat_off = hb_alloc0(sizeof(int32_t) * (total + 1));
		p->cat_nwords = hb_alloc0(sizeof(int32_t) * (total + 1));
		if (!p->cat_off || !p->cat_nwords)
			goto nomem;
		p->bytes += 2 * sizeof(int32_t) * total;
	}
	for (int t = 0; t < m->n_trees; t++)
	{
		p->tree_group[t] = m->trees[t].group;
		if (!flatten_tree(p, m, t, &next, err))
		{
			hb_plan_free(p);
			return false;
		}
	}
	p->bytes += (sizeof(int32_t) * 2) * m->n_trees +
		(sizeof(HbFlatNode) + 2 * sizeof(double)) * total +
		sizeof(uint32_t) * p->n_cat_words;
	*out = p;
	return true;

nomem:
	hb_plan_free(p);
	return hb_fail(err, HB_ERR_NOMEM, "out of memory");
}

void
hb_plan_free(HbPlan *p)
{
	if (p == NULL)
		return;
	hb_free(p->base_margin);
	hb_free(p->weights);
	hb_free(p->bias);
	hb_free(p->tree_root);
	hb_free(p->tree_group);
	hb_free(p->nodes);
	hb_free(p->thr_d);
	hb_free(p->leaf_d);
	hb_free(p->cat_words);
	hb_free(p->cat_off);
	hb_free(p->cat_nwords);
	hb_free(p);
}

int32_t
hb_plan_n_features(const HbPlan *p)
{
	return p->n_features;
}

int32_t
hb_plan_n_outputs(const HbPlan *p)
{
	return p->n_outputs;
}

int32_t
hb_plan_n_classes(const HbPlan *p)
{
	return p->n_classes;
}

size_t
hb_plan_bytes(const HbPlan *p)
{
	return p->bytes;
}

/*
 * Links.  Models whose library works in float32 (XGBoost) get their links in
 * float32 too, the way the library computes them, so that probabilities agree
 * to the last bit rather than to 1e-7.
 */
static double
sigmoid(const HbPlan *p, double x)
{
	if (p->sum_f32)
		return (double) (1.0f / (1.0f + expf(-(float) x)));
	return 1.0 / (1.0 + exp(-x));
}

static void
softmax(const HbPlan *p, const double *m, int k, double *out)
{
	if (p->sum_f32)
	{
		float		wmax = (float) m[0];
		float		wsum = 0.0f;

		for (int i = 1; i < k; i++)
			if ((float) m[i] > wmax)
				wmax = (float) m[i];
		for (int i = 0; i < k; i++)
			wsum += expf((float) m[i] - wmax);
		for (int i = 0; i < k; i++)
			out[i] = (double) (expf((float) m[i] - wmax) / wsum);
	}
	else
	{
		double		wmax = m[0];
		double		wsum = 0.0;

		for (int i = 1; i < k; i++)
			if (m[i] > wmax)
				wmax = m[i];
		for (int i = 0; i < k; i++)
			wsum += exp(m[i] - wmax);
		for (int i = 0; i < k; i++)
			out[i] = exp(m[i] - wmax) / wsum;
	}
}

static int
argmax(const double *m, int k)
{
	int			best = 0;

	/* first maximum wins, as numpy's argmax does */
	for (int i = 1; i < k; i++)
		if (m[i] > m[best])
			best = i;
	return best;
}

static double
apply_link1(const HbPlan *p, double x)
{
	switch (p->link)
	{
		case HB_LINK_SIGMOID:
			return sigmoid(p, x);
		case HB_LINK_EXP:
			return p->sum_f32 ? (double) expf((float) x) : exp(x);
		default:
			return x;
	}
}

void
hb_link_predict(const HbPlan *p, const double *margins, size_t n, double *out)
{
	int			k = p->n_outputs;

	for (size_t r = 0; r < n; r++)
	{
		const double *m = margins + r * k;

		if (p->task == HB_TASK_MULTICLASS)
			out[r] = (double) argmax(m, k);
		else
			out[r] = apply_link1(p, m[0]);
	}
}

void
hb_link_proba(const HbPlan *p, const double *margins, size_t n, double *out)
{
	int			k = p->n_outputs;

	for (size_t r = 0; r < n; r++)
	{
		const double *m = margins + r * k;

		if (p->task == HB_TASK_MULTICLASS)
			softmax(p, m, k, out + r * k);
		else
		{
			/*
			 * Binary: a model without a link (binary:logitraw) still has a
			 * logit margin, so its probability is the sigmoid of it.  The
			 * library never computes that one, so it gets full precision.
			 */
			double		pos = p->link == HB_LINK_SIGMOID ?
				sigmoid(p, m[0]) : 1.0 / (1.0 + exp(-m[0]));

			out[r * 2] = 1.0 - pos;
			out[r * 2 + 1] = pos;
		}
	}
}

void
hb_plan_predict(const HbPlan *p, const double *x, size_t n, double *scratch,
				double *out)
{
	hb_plan_margins(p, x, n, scratch);
	hb_link_predict(p, scratch, n, out);
}

void
hb_plan_proba(const HbPlan *p, const double *x, size_t n, double *scratch,
			  double *out)
{
	hb_plan_margins(p, x, n, scratch);
	hb_link_proba(p, scratch, n, out);
}
