/*
 * plan.c
 *	  Building plans from the IR, and the links from margins to predictions.
 *
 * The tree layout is flat and breadth-first per tree with the two children
 * of a node stored side by side, so a step is "idx = left + go_right" and a
 * node is 16 bytes: four nodes share a cache line.
 *
 * Running a plan is exec.c's (hb_exec_trees, the hb_plan_margins and
 * hb_plan_predict families, hb_plan_ops); this file builds and frees plans
 * and holds the links from margins to predictions, which call nothing
 * else in the core.
 */
#include "plan_int.h"
#include "device.h"

#include <math.h>
#include <stdio.h>
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
			(n->is_cat && n->cat_list ? HB_FN_CAT_LIST : 0) |
			((uint32_t) n->missing << HB_FN_MISSING_SHIFT);
		if (n->is_cat)
		{
			p->cat_off[idx] = n->cat_off;
			p->cat_nwords[idx] = n->cat_nwords;
			p->cat_base[idx] = n->cat_base;
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

/* Mean leaf depth over all trees: what a traversal pays per tree. */
static void
leaf_depths(HbPlan *p, const HbModel *m)
{
	double		sum = 0.0;
	int64_t		leaves = 0;

	for (int t = 0; t < m->n_trees; t++)
	{
		const HbTree *tree = &m->trees[t];
		int32_t		stack[2 * (HB_MAX_DEPTH + 2)];
		int32_t		depth[2 * (HB_MAX_DEPTH + 2)];
		int			sp = 0;

		stack[sp] = 0;
		depth[sp++] = 0;
		while (sp > 0)
		{
			const HbNode *n = &tree->nodes[stack[--sp]];
			int32_t		d = depth[sp];

			if (n->left == HB_LEAF)
			{
				sum += d;
				leaves++;
				continue;
			}
			stack[sp] = n->left;
			depth[sp++] = d + 1;
			stack[sp] = n->right;
			depth[sp++] = d + 1;
		}
	}
	p->n_leaves = leaves;
	p->avg_leaf_depth = leaves ? sum / leaves : 0.0;
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

/* Default bound on the PTT / GEMM layouts of one plan. */
#define HB_DEFAULT_LAYOUT_BYTES ((size_t) 256 * 1024 * 1024)

bool
hb_plan_build(const HbModel *m, HbPlan **out, HbError *err)
{
	return hb_plan_build_ex(m, HB_DEFAULT_LAYOUT_BYTES, out, err);
}

/*
 * The optional layouts.  A strategy that refuses (too big, or a node kind
 * it does not handle) is simply absent; TT serves every model.
 */
static bool
build_layouts(HbPlan *p, const HbModel *m, size_t layout_bytes, HbError *err)
{
	HbError		soft = {0};

	if (m->estimator != HB_EST_TREES || m->n_trees == 0)
		return true;
	if (p->max_depth <= HB_PTT_MAX_DEPTH &&
		!hb_ptt_build(p, m, layout_bytes, &soft))
	{
		if (soft.code == HB_ERR_NOMEM)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		p->ptt = NULL;
	}
	memset(&soft, 0, sizeof(soft));
	if (p->max_depth <= HB_GEMM_MAX_DEPTH &&
		!hb_gemm_build(p, m, layout_bytes, &soft))
	{
		if (soft.code == HB_ERR_NOMEM)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		p->gemm = NULL;
	}
	if (p->ptt)
		p->bytes += hb_ptt_bytes(p->ptt);
	if (p->gemm)
		p->bytes += hb_gemm_bytes(p->gemm);
	return true;
}

bool
hb_plan_build_ex(const HbModel *m, size_t layout_bytes, HbPlan **out,
				 HbError *err)
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
	p->zero_snap = m->zero_snap;
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
		p->cat_base = hb_alloc0(sizeof(int32_t) * (total + 1));
		if (!p->cat_off || !p->cat_nwords || !p->cat_base)
			goto nomem;
		p->bytes += 3 * sizeof(int32_t) * total;
	}
	for (int t = 0; t < m->n_trees; t++)
	{
		if ((t & 63) == 0)
			hb_check_interrupts();
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
	leaf_depths(p, m);
	if (!build_layouts(p, m, layout_bytes, err))
	{
		hb_plan_free(p);
		return false;
	}
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
	hb_device_plan_free(p);
	if (p->borrowed)
	{
		/* a view of a flat copy (plan_flat.c): its arrays are the copy's */
		hb_free(p->ptt);
		hb_free(p->gemm);
		hb_free(p);
		return;
	}
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
	hb_free(p->cat_base);
	hb_ptt_free(p->ptt);
	hb_gemm_free(p->gemm);
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

int32_t
hb_plan_n_trees(const HbPlan *p)
{
	return p->n_trees;
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
	{
		/*
		 * XGBoost's own: the exponent capped at 88.7 so that it stays
		 * finite (a margin below about -88.7 scores 3.0e-39, not 0; a NaN
		 * margin stays NaN), and 1e-16 added, which float32 rounds away
		 */
		float		e = -(float) x;

		if (88.7f < e)
			e = 88.7f;
		return (double) (1.0f / (expf(e) + 1.0f + 1e-16f));
	}
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

/* HB_LINK_MEAN: the trees of each output (model.c checks they are as many) */
static inline double
mean_trees(const HbPlan *p)
{
	return (double) (p->n_trees / p->n_outputs);
}

/*
 * onnxruntime's LOGISTIC: 1 / (1 + e^-|x|), mirrored as 1 - v for negative
 * x, in float32.  Small probabilities come out as 1 - v, so they differ
 * from the plain sigmoid in the last bits, which is what onnxruntime
 * returns.
 */
static double
logistic_ort(double x)
{
	float		v = 1.0f / (1.0f + expf(-fabsf((float) x)));

	return (double) ((float) x < 0 ? 1.0f - v : v);
}

/*
 * onnxruntime's PROBIT post-transform: the inverse of the normal CDF by
 * its float32 erfinv approximation (Winitzki's, a = 0.147), reproduced
 * step by step so that results agree with it rather than with the exact
 * function.
 */
static double
probit_ort(double v)
{
	float		x = (float) v * 2.0f - 1.0f;
	float		sgn = x < 0 ? -1.0f : 1.0f;
	float		lg,
				a,
				b,
				c;

	x = (1.0f - x) * (1.0f + x);
	lg = logf(x);
	a = 2.0f / (3.14159f * 0.147f) + 0.5f * lg;
	b = 1.0f / 0.147f * lg;
	c = -a + sqrtf(a * a - b);
	return (double) (1.41421356f * (sgn * sqrtf(c)));
}

/* onnxruntime's SOFTMAX_ZERO: zero margins stay zero, in float32 */
static void
softmax_zero(const double *m, int k, double *out)
{
	float		vmax = -3.402823466e+38f;
	float		sum = 0.0f;
	float		eneg;

	for (int i = 0; i < k; i++)
		if ((float) m[i] > vmax)
			vmax = (float) m[i];
	eneg = expf(-vmax);
	for (int i = 0; i < k; i++)
	{
		float		v = (float) m[i];

		if (v > 0.0000001f || v < -0.0000001f)
		{
			v = expf(v - vmax);
			sum += v;
		}
		else
			v *= eneg;
		out[i] = v;
	}
	for (int i = 0; i < k; i++)
		out[i] = (double) ((float) out[i] / sum);
}

/*
 * onnxruntime's SOFTMAX over the scores -x and x of a binary linear model
 * written as two opposite rows (scikit-learn's multinomial logistic
 * regression on two classes): its ComputeSoftmax in float32, the larger
 * score subtracted first, the exponentials summed in order.  out gets
 * both probabilities.
 */
static void
softmax_pair(double x, double *out)
{
	float		v = (float) x;
	float		vmax = -v > v ? -v : v;
	float		e0 = expf(-v - vmax);
	float		e1 = expf(v - vmax);
	float		sum = 0.0f;

	sum += e0;
	sum += e1;
	out[0] = (double) (e0 / sum);
	out[1] = (double) (e1 / sum);
}

static double
apply_link1(const HbPlan *p, double x)
{
	switch (p->link)
	{
		case HB_LINK_SIGMOID:
		case HB_LINK_SIGMOID_SUM:
			return sigmoid(p, x);
		case HB_LINK_LOGISTIC:
		case HB_LINK_SIGMOID_L1:
			return logistic_ort(x);
		case HB_LINK_EXP:
			return p->sum_f32 ? (double) expf((float) x) : exp(x);
		case HB_LINK_PROBIT:
			return probit_ort(x);
		case HB_LINK_SOFTPLUS:
			return log1p(exp(x));
		case HB_LINK_SOFTMAX_PAIR:
			{
				double		pr[2];

				softmax_pair(x, pr);
				return pr[1];
			}
		case HB_LINK_MEAN:
			return x / mean_trees(p);
		default:
			return x;
	}
}

/*
 * The sum of a[0..n) as numpy's add.reduce over a contiguous row adds it
 * (pairwise_sum in its umath loops): in order below 8 values, in eight
 * running sums up to 128, halves (at a multiple of 8) above.  scikit-learn
 * normalizes a tree's counts with it, and HB_LINK_L1 must give its bits
 * (the exporter checks every node against numpy's own result).
 */
static double
numpy_sum(const double *a, int n)
{
	if (n < 8)
	{
		double		res = 0.0;

		for (int i = 0; i < n; i++)
			res += a[i];
		return res;
	}
	if (n <= 128)
	{
		double		r[8];
		double		res;
		int			i;

		for (int j = 0; j < 8; j++)
			r[j] = a[j];
		for (i = 8; i < n - (n % 8); i += 8)
			for (int j = 0; j < 8; j++)
				r[j] += a[i + j];
		res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
		for (; i < n; i++)
			res += a[i];
		return res;
	}
	else
	{
		int			n2 = n / 2;

		n2 -= n2 % 8;
		return numpy_sum(a, n2) + numpy_sum(a + n2, n - n2);
	}
}

/* Multiclass probabilities of one row from its k margins. */
static void
link_classes(const HbPlan *p, const double *m, int k, double *out)
{
	switch (p->link)
	{
		case HB_LINK_SOFTMAX:
			softmax(p, m, k, out);
			return;
		case HB_LINK_SOFTMAX_ZERO:
			softmax_zero(m, k, out);
			return;
		case HB_LINK_MEAN:
			for (int i = 0; i < k; i++)
				out[i] = m[i] / mean_trees(p);
			return;
		case HB_LINK_L1:
			{
				double		sum = numpy_sum(m, k);

				if (sum == 0.0)
					sum = 1.0;
				for (int i = 0; i < k; i++)
					out[i] = m[i] / sum;
				return;
			}
		case HB_LINK_SIGMOID_L1:
			{
				/* onnxruntime's Normalizer L1, in float32 */
				float		fsum = 0.0f;

				for (int i = 0; i < k; i++)
					fsum += (float) (out[i] = logistic_ort(m[i]));
				for (int i = 0; i < k; i++)
					out[i] = fsum > 0 ? (double) ((float) out[i] / fsum) : out[i];
				return;
			}
		case HB_LINK_SIGMOID_SUM:
			{
				double		sum = 0.0;

				for (int i = 0; i < k; i++)
					sum += (out[i] = 1.0 / (1.0 + exp(-m[i])));
				for (int i = 0; i < k; i++)
					out[i] /= sum;
				return;
			}
		default:
			for (int i = 0; i < k; i++)
				out[i] = apply_link1(p, m[i]);
			return;
	}
}

/*
 * The class of a multiclass row from its k margins: the first maximum, of
 * the probabilities where the link can tie or reorder them (a division
 * after the sum: two sums may divide to one quotient, and the first class
 * of the tie wins, as numpy's argmax over scikit-learn's probabilities; a
 * softmax over the non-zero margins: a class whose margin is 0 has no
 * score), else of the margins (hb_link_class_is_margins).  hb_predict and
 * hb_predict_class agree.
 */
bool
hb_link_class_is_margins(const HbPlan *p)
{
	return p->link != HB_LINK_MEAN && p->link != HB_LINK_SOFTMAX_ZERO;
}

int
hb_link_argmax(const HbPlan *p, const double *m)
{
	int			k = p->n_outputs;

	if (p->link == HB_LINK_MEAN)
	{
		double		n = mean_trees(p);
		int			best = 0;
		double		bv = m[0] / n;

		for (int i = 1; i < k; i++)
		{
			double		v = m[i] / n;

			if (v > bv)
			{
				best = i;
				bv = v;
			}
		}
		return best;
	}
	if (p->link == HB_LINK_SOFTMAX_ZERO && k <= 64)
	{
		/* zeros stay zero, so the order can change: pick from the result */
		double		probs[64];

		softmax_zero(m, k, probs);
		return argmax(probs, k);
	}
	return argmax(m, k);
}

void
hb_link_predict(const HbPlan *p, const double *margins, size_t n, double *out)
{
	int			k = p->n_outputs;

	for (size_t r = 0; r < n; r++)
	{
		const double *m = margins + r * k;

		if (p->task == HB_TASK_MULTICLASS)
			out[r] = (double) hb_link_argmax(p, m);
		else
			out[r] = apply_link1(p, m[0]);
	}
}

/*
 * Doubles as integers in the same order (-0 and +0 alike), so that a
 * binary search over margins takes at most 64 steps.
 */
static int64_t
double_key(double x)
{
	int64_t		i;

	memcpy(&i, &x, sizeof(i));
	return i < 0 ? INT64_MIN - i : i;
}

static double
key_double(int64_t k)
{
	int64_t		i = k < 0 ? INT64_MIN - k : k;
	double		x;

	memcpy(&x, &i, sizeof(x));
	return x;
}

/* hb_predict's score of one margin of a single-output model */
double
hb_link_score(const HbPlan *p, double margin)
{
	double		s;

	hb_link_predict(p, &margin, 1, &s);
	return s;
}

/*
 * The end of margin's run of equal scores: the least margin (down) or the
 * largest (up) whose score is margin's.  Links are non-decreasing, so the
 * run is an interval; a binary search over the doubles between margin and
 * the infinity on that side finds its end (at most 64 scores).  The result
 * never lies inside (floor above margin, ceiling below it), so a bar moved
 * to it never prunes more than margin itself would.  A multiclass model of
 * one output scores every margin as class 0: one run.  Where the premise
 * fails, the whole line.
 */
static double
tie_end(const HbPlan *p, double margin, bool up)
{
	double		s;
	int64_t		lo,
				hi;

	if (isnan(margin) || p->n_outputs != 1 ||
		(p->task != HB_TASK_MULTICLASS &&
		 (p->link == HB_LINK_IDENTITY || p->link == HB_LINK_PROBABILITY)))
		return margin;

	/*
	 * Links whose scores are not monotone in the margin: onnxruntime's
	 * PROBIT is NaN outside [0, 1] (NaN sorts above every number), and the
	 * float32 two-class softmax drops by an ulp at places.  No margin can
	 * be ruled out by its order there.
	 */
	if (p->task != HB_TASK_MULTICLASS &&
		(p->link == HB_LINK_PROBIT || p->link == HB_LINK_SOFTMAX_PAIR))
		return up ? INFINITY : -INFINITY;
	s = hb_link_score(p, margin);
	if (isnan(s))
		return margin;
	lo = up ? double_key(margin) : double_key(-INFINITY);
	hi = up ? double_key(INFINITY) : double_key(margin);
	while (lo < hi)
	{
		/* the difference may not fit an int64; it does fit a uint64 */
		uint64_t	half = ((uint64_t) hi - (uint64_t) lo) / 2;

		if (up)
		{
			/* the largest key whose score is still s */
			int64_t		mid = lo + (int64_t) (half + (((uint64_t) hi - (uint64_t) lo) & 1));

			if (hb_link_score(p, key_double(mid)) <= s)
				lo = mid;
			else
				hi = mid - 1;
		}
		else
		{
			/* the least key whose score is already s */
			int64_t		mid = lo + (int64_t) half;

			if (hb_link_score(p, key_double(mid)) >= s)
				hi = mid;
			else
				lo = mid + 1;
		}
	}
	return key_double(lo);
}

double
hb_link_tie_floor(const HbPlan *p, double margin)
{
	return tie_end(p, margin, false);
}

double
hb_link_tie_ceil(const HbPlan *p, double margin)
{
	return tie_end(p, margin, true);
}

bool
hb_plan_is_multi_target(const HbPlan *p)
{
	return p->n_outputs > 1 && p->task != HB_TASK_BINARY &&
		p->task != HB_TASK_MULTICLASS;
}

/* Each output through the link of one output, in the order of the margins. */
void
hb_link_targets(const HbPlan *p, const double *margins, size_t n, double *out)
{
	size_t		total = n * (size_t) p->n_outputs;

	for (size_t i = 0; i < total; i++)
		out[i] = apply_link1(p, margins[i]);
}

void
hb_link_proba(const HbPlan *p, const double *margins, size_t n, double *out)
{
	int			k = p->n_outputs;

	for (size_t r = 0; r < n; r++)
	{
		const double *m = margins + r * k;

		if (p->task == HB_TASK_MULTICLASS)
			link_classes(p, m, k, out + r * k);
		else
		{
			/*
			 * Binary: a model without a link (binary:logitraw) still has a
			 * logit margin, so its probability is the sigmoid of it.  The
			 * library never computes that one, so it gets full precision.
			 */
			double		pos;

			if (p->link == HB_LINK_SOFTMAX_PAIR)
			{
				/* both columns as onnxruntime computes them */
				softmax_pair(m[0], out + r * 2);
				continue;
			}
			if (p->link == HB_LINK_SIGMOID || p->link == HB_LINK_SIGMOID_SUM)
				pos = sigmoid(p, m[0]);
			else if (p->link == HB_LINK_LOGISTIC || p->link == HB_LINK_SIGMOID_L1)
				pos = logistic_ort(m[0]);
			else if (p->link == HB_LINK_PROBABILITY)
				pos = m[0];
			else if (p->link == HB_LINK_PROBIT)
				pos = probit_ort(m[0]);
			else
				pos = 1.0 / (1.0 + exp(-m[0]));

			out[r * 2] = 1.0 - pos;
			out[r * 2 + 1] = pos;
		}
	}
}

const char *
hb_strategy_name(HbStrategy s)
{
	switch (s)
	{
		case HB_STRATEGY_AUTO:
			return "auto";
		case HB_STRATEGY_TT:
			return "tt";
		case HB_STRATEGY_PTT:
			return "ptt";
		case HB_STRATEGY_GEMM:
			return "gemm";
	}
	return "unknown";
}
