/*
 * distill.c
 *	  Least-squares boosting of a small tree ensemble on a model's margins
 *	  (the cheap model of approx.c's TREES kind), and its flat catalog form.
 *
 * Features are binned once: up to max_bins value bins per feature from the
 * distinct values of the sample (every distinct value when there are few,
 * else quantiles), plus one bin for missing values.  Bin b holds the values
 * x <= cut[b] that no earlier bin holds, so a split after bin b is the node
 * "x <= cut[b] goes left" of the IR, in double, exactly as HB_CMP_LE_F64
 * executors compare: the fitted model scores the sample rows the way it was
 * fitted.  Each tree grows depth-wise: every node of a level with at least
 * twice min_leaf rows takes its best split (largest drop of the squared
 * error with an L2 penalty, missing values to the better side), and a leaf
 * adds eta * (residual sum) / (rows + lambda).  Ties go to the first
 * feature and bin, so a fit is fully determined by its inputs.
 */
#include "distill.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Bins
{
	int32_t		n_feat;
	int32_t		n_bins;			/* value bins + the missing bin */
	int32_t		stride;			/* cuts per feature at most: n_bins - 2 */
	int32_t    *n_cuts;			/* per selected feature */
	double	   *cuts;			/* n_feat x stride */
	uint8_t    *bin;			/* n rows x n_feat, row-major */
} Bins;

typedef struct Split
{
	double		gain;
	int32_t		f;				/* index into the selected features */
	int32_t		b;				/* last value bin going left */
	bool		nan_left;
} Split;

typedef struct Node
{
	uint32_t	begin;			/* rows idx[begin .. end) */
	uint32_t	end;
	int32_t		id;				/* index in the tree's nodes */
} Node;

/* The bin of v: the first cut at or above it, n_cuts above them all. */
static inline int
bin_of(const double *cuts, int n_cuts, double v)
{
	int			lo = 0,
				hi = n_cuts;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (v <= cuts[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static bool
make_bins(const double *x, size_t n, int32_t nf, const int32_t *feat,
		  int32_t n_feat, int32_t max_bins, Bins *b, HbError *err)
{
	int			nc_max = max_bins - 1;
	double	   *vals = hb_alloc(sizeof(double) * (n + 1));

	b->n_feat = n_feat;
	b->n_bins = max_bins + 1;
	b->stride = nc_max;
	b->n_cuts = hb_alloc0(sizeof(int32_t) * (n_feat + 1));
	b->cuts = hb_alloc0(sizeof(double) * ((size_t) n_feat * nc_max + 1));
	b->bin = hb_alloc(sizeof(uint8_t) * (n * n_feat + 1));
	if (!vals || !b->n_cuts || !b->cuts || !b->bin)
	{
		hb_free(vals);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	for (int32_t j = 0; j < n_feat; j++)
	{
		size_t		m = 0,
					u = 0;
		double	   *cuts = b->cuts + (size_t) j * nc_max;
		int			nc = 0;

		for (size_t i = 0; i < n; i++)
		{
			double		v = x[i * nf + feat[j]];

			if (!isnan(v))
				vals[m++] = v;
		}
		qsort(vals, m, sizeof(double), hb_cmp_double);
		for (size_t i = 0; i < m; i++)
			if (u == 0 || vals[i] != vals[u - 1])
				vals[u++] = vals[i];
		if (u <= (size_t) max_bins)
		{
			/* every distinct value but the largest closes a bin */
			for (size_t i = 0; i + 1 < u; i++)
				cuts[nc++] = vals[i];
		}
		else
		{
			/* quantiles of the distinct values, each once */
			for (int q = 1; q < max_bins; q++)
			{
				double		v = vals[(size_t) ((double) q * (double) u / max_bins) - 1];

				if (nc == 0 || v > cuts[nc - 1])
					cuts[nc++] = v;
			}
		}
		b->n_cuts[j] = nc;
		for (size_t i = 0; i < n; i++)
		{
			double		v = x[i * nf + feat[j]];

			b->bin[i * n_feat + j] = (uint8_t) (isnan(v) ? max_bins : bin_of(cuts, nc, v));
		}
		hb_check_interrupts();
	}
	hb_free(vals);
	return true;
}

static void
free_bins(Bins *b)
{
	hb_free(b->n_cuts);
	hb_free(b->cuts);
	hb_free(b->bin);
}

/*
 * The best split of rows idx[begin .. end) given their residuals, from the
 * per-feature histograms of residual sums and counts.
 */
static Split
best_split(const Bins *b, const uint32_t *idx, uint32_t begin, uint32_t end,
		   const double *g, double lambda, int32_t min_leaf, double *hs,
		   uint32_t *hc)
{
	int			nb = b->n_bins;
	int			nan_bin = nb - 1;
	double		G = 0.0;
	double		N = (double) (end - begin);
	double		parent;
	Split		best = {0.0, -1, 0, false};

	memset(hs, 0, sizeof(double) * (size_t) b->n_feat * nb);
	memset(hc, 0, sizeof(uint32_t) * (size_t) b->n_feat * nb);
	for (uint32_t k = begin; k < end; k++)
	{
		uint32_t	i = idx[k];
		const uint8_t *row = b->bin + (size_t) i * b->n_feat;
		double		gi = g[i];

		G += gi;
		for (int32_t j = 0; j < b->n_feat; j++)
		{
			size_t		o = (size_t) j * nb + row[j];

			hs[o] += gi;
			hc[o]++;
		}
	}
	parent = G * G / (N + lambda);
	for (int32_t j = 0; j < b->n_feat; j++)
	{
		const double *s = hs + (size_t) j * nb;
		const uint32_t *c = hc + (size_t) j * nb;
		double		gn = s[nan_bin];
		double		cn = (double) c[nan_bin];
		double		gl = 0.0,
					cl = 0.0;

		for (int bb = 0; bb < b->n_cuts[j]; bb++)
		{
			gl += s[bb];
			cl += (double) c[bb];
			for (int side = 0; side < 2; side++)
			{
				double		GL = gl + (side ? gn : 0.0);
				double		NL = cl + (side ? cn : 0.0);
				double		GR = G - GL;
				double		NR = N - NL;
				double		gain;

				if (NL < min_leaf || NR < min_leaf)
					continue;
				gain = GL * GL / (NL + lambda) + GR * GR / (NR + lambda) - parent;
				if (gain > best.gain * (1.0 + 1e-12) + 1e-12)
				{
					best.gain = gain;
					best.f = j;
					best.b = bb;
					best.nan_left = side;
				}
			}
		}
	}
	return best;
}

static bool
grow_tree(const Bins *b, const int32_t *feat, size_t n, const double *g,
		  double *pred, const HbDistillSpec *s, uint32_t *idx, double *hs,
		  uint32_t *hc, HbTree *tree, HbError *err)
{
	int32_t		max_nodes = (1 << (s->max_depth + 1)) - 1;
	HbNode	   *nodes = hb_alloc0(sizeof(HbNode) * max_nodes);
	Node	   *cur = hb_alloc(sizeof(Node) * ((size_t) 1 << s->max_depth));
	Node	   *next = hb_alloc(sizeof(Node) * ((size_t) 1 << s->max_depth));
	int			n_cur = 1,
				n_nodes = 1;

	if (!nodes || !cur || !next)
	{
		hb_free(nodes);
		hb_free(cur);
		hb_free(next);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		idx[i] = (uint32_t) i;
	cur[0].begin = 0;
	cur[0].end = (uint32_t) n;
	cur[0].id = 0;
	for (int depth = 0; n_cur > 0; depth++)
	{
		int			n_next = 0;

		for (int c = 0; c < n_cur; c++)
		{
			Node		nd = cur[c];
			HbNode	   *hn = &nodes[nd.id];
			Split		sp = {0.0, -1, 0, false};

			if (depth < s->max_depth && nd.end - nd.begin >= 2u * (uint32_t) s->min_leaf)
				sp = best_split(b, idx, nd.begin, nd.end, g, s->lambda, s->min_leaf, hs, hc);
			if (sp.f < 0)
			{
				double		G = 0.0,
							v;

				for (uint32_t k = nd.begin; k < nd.end; k++)
					G += g[idx[k]];
				v = s->eta * G / ((double) (nd.end - nd.begin) + s->lambda);
				hn->left = HB_LEAF;
				hn->right = HB_LEAF;
				hn->missing = HB_MISSING_NAN;
				hn->value = v;
				for (uint32_t k = nd.begin; k < nd.end; k++)
					pred[idx[k]] += v;
				continue;
			}
			{
				/* rows going left first, in place */
				uint32_t	lo = nd.begin,
							hi = nd.end;
				int			nan_bin = b->n_bins - 1;

				while (lo < hi)
				{
					int			bin = b->bin[(size_t) idx[lo] * b->n_feat + sp.f];
					bool		left = bin == nan_bin ? sp.nan_left : bin <= sp.b;

					if (left)
						lo++;
					else
					{
						uint32_t	t = idx[lo];

						idx[lo] = idx[--hi];
						idx[hi] = t;
					}
				}
				hn->feature = feat[sp.f];
				hn->threshold = b->cuts[(size_t) sp.f * b->stride + sp.b];
				hn->default_left = sp.nan_left;
				hn->missing = HB_MISSING_NAN;
				hn->left = n_nodes;
				hn->right = n_nodes + 1;
				next[n_next].begin = nd.begin;
				next[n_next].end = lo;
				next[n_next++].id = n_nodes;
				next[n_next].begin = lo;
				next[n_next].end = nd.end;
				next[n_next++].id = n_nodes + 1;
				n_nodes += 2;
			}
		}
		{
			Node	   *t = cur;

			cur = next;
			next = t;
			n_cur = n_next;
		}
		hb_check_interrupts();
	}
	hb_free(cur);
	hb_free(next);
	tree->nodes = nodes;
	tree->n_nodes = n_nodes;
	tree->group = 0;
	return true;
}

static HbModel *
new_model(int32_t nf, int32_t n_trees, double base, HbError *err)
{
	HbModel    *m = hb_alloc0(sizeof(HbModel));

	if (m == NULL)
		goto nomem;
	m->format = HB_FORMAT_AUTO;
	m->task = HB_TASK_REGRESSION;
	m->estimator = HB_EST_TREES;
	m->objective = hb_strdup("reg:squarederror");
	m->n_features = nf;
	m->features = hb_alloc0(sizeof(HbFeature) * nf);
	m->n_outputs = 1;
	m->n_classes = 0;
	m->base_margin = hb_alloc(sizeof(double));
	m->link = HB_LINK_IDENTITY;
	m->cmp = HB_CMP_LE_F64;
	m->sum_f32 = false;
	m->n_trees = n_trees;
	m->trees = hb_alloc0(sizeof(HbTree) * (n_trees + 1));
	if (!m->objective || !m->features || !m->base_margin || !m->trees)
		goto nomem;
	m->base_margin[0] = base;
	for (int32_t j = 0; j < nf; j++)
		if ((m->features[j].name = hb_feature_default_name(j)) == NULL)
			goto nomem;
	return m;
nomem:
	hb_model_free(m);
	hb_fail(err, HB_ERR_NOMEM, "out of memory");
	return NULL;
}

bool
hb_distill_fit(const double *x, size_t n, int32_t nf, const double *y,
			   const int32_t *feat, int32_t n_feat, const HbDistillSpec *s,
			   HbModel **out, HbError *err)
{
	Bins		b = {0};
	HbModel    *m = NULL;
	double	   *pred = NULL,
			   *g = NULL,
			   *hs = NULL;
	uint32_t   *idx = NULL,
			   *hc = NULL;
	double		base = 0.0;
	bool		ok = false;

	*out = NULL;
	if (n < 2 || n > UINT32_MAX / 2 || nf <= 0 || n_feat <= 0 ||
		s->n_trees <= 0 || s->max_depth < 1 || s->max_depth > HB_DISTILL_MAX_DEPTH ||
		s->max_bins < 2 || s->max_bins > 255 || s->min_leaf < 1 ||
		!(s->eta > 0.0) || !(s->lambda >= 0.0))
		return hb_fail(err, HB_ERR_ARGUMENT, "bad distillation arguments");
	for (int32_t j = 0; j < n_feat; j++)
		if (feat[j] < 0 || feat[j] >= nf)
			return hb_fail(err, HB_ERR_ARGUMENT, "distillation feature %d out of range", feat[j]);
	for (size_t i = 0; i < n; i++)
	{
		if (!isfinite(y[i]))
			return hb_fail(err, HB_ERR_ARGUMENT, "distillation target %zu is not finite", i);
		base += y[i];
	}
	base /= (double) n;

	if (!make_bins(x, n, nf, feat, n_feat, s->max_bins, &b, err))
		goto done;
	m = new_model(nf, s->n_trees, base, err);
	pred = hb_alloc(sizeof(double) * n);
	g = hb_alloc(sizeof(double) * n);
	idx = hb_alloc(sizeof(uint32_t) * n);
	hs = hb_alloc(sizeof(double) * (size_t) n_feat * b.n_bins);
	hc = hb_alloc(sizeof(uint32_t) * (size_t) n_feat * b.n_bins);
	if (m == NULL || !pred || !g || !idx || !hs || !hc)
	{
		if (m != NULL)
			hb_fail(err, HB_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		pred[i] = base;
	for (int32_t t = 0; t < s->n_trees; t++)
	{
		for (size_t i = 0; i < n; i++)
			g[i] = y[i] - pred[i];
		if (!grow_tree(&b, feat, n, g, pred, s, idx, hs, hc, &m->trees[t], err))
			goto done;
	}
	ok = hb_model_validate(m, err);

done:
	free_bins(&b);
	hb_free(pred);
	hb_free(g);
	hb_free(idx);
	hb_free(hs);
	hb_free(hc);
	if (!ok)
		hb_model_free(m);
	else
		*out = m;
	return ok;
}

/* ---- the flat form ---- */

bool
hb_trees_encode(const HbModel *m, int32_t **codes, int32_t *n_codes,
				double **params, int32_t *n_params, HbError *err)
{
	int64_t		nc = 0,
				np = 1;
	int32_t    *c;
	double	   *p;

	*codes = NULL;
	*params = NULL;
	if (m->estimator != HB_EST_TREES || m->n_outputs != 1 || m->n_cat_words > 0)
		return hb_fail(err, HB_ERR_UNSUPPORTED, "only single-output numeric tree models have a flat form");
	for (int32_t t = 0; t < m->n_trees; t++)
	{
		nc += 1 + 4 * (int64_t) m->trees[t].n_nodes;
		np += m->trees[t].n_nodes;
	}
	if (nc > INT32_MAX / 2 || np > INT32_MAX / 2)
		return hb_fail(err, HB_ERR_LIMIT, "tree model too big for its flat form");
	c = hb_alloc(sizeof(int32_t) * (nc + 1));
	p = hb_alloc(sizeof(double) * (np + 1));
	if (!c || !p)
	{
		hb_free(c);
		hb_free(p);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	nc = 0;
	np = 0;
	p[np++] = m->base_margin[0];
	for (int32_t t = 0; t < m->n_trees; t++)
	{
		const HbTree *tr = &m->trees[t];

		c[nc++] = tr->n_nodes;
		for (int32_t i = 0; i < tr->n_nodes; i++)
		{
			const HbNode *nd = &tr->nodes[i];
			bool		leaf = nd->left == HB_LEAF && nd->right == HB_LEAF;

			c[nc++] = leaf ? -1 : nd->feature;
			c[nc++] = nd->left;
			c[nc++] = nd->right;
			c[nc++] = nd->default_left;
			p[np++] = leaf ? nd->value : nd->threshold;
		}
	}
	*codes = c;
	*n_codes = (int32_t) nc;
	*params = p;
	*n_params = (int32_t) np;
	return true;
}

bool
hb_trees_decode(int32_t nf, int32_t n_trees, const int32_t *codes,
				int32_t n_codes, const double *params, int32_t n_params,
				HbModel **out, HbError *err)
{
	HbModel    *m;
	int64_t		ci = 0,
				pi = 1;

	*out = NULL;
	if (n_trees < 1 || n_trees > 100000 || n_params < 1 || n_codes < n_trees)
		return hb_fail(err, HB_ERR_INVALID, "approximation of %d trees has %d codes and %d parameters",
					   n_trees, n_codes, n_params);
	if (!isfinite(params[0]))
		return hb_fail(err, HB_ERR_INVALID, "approximation has a non-finite base margin");
	m = new_model(nf, n_trees, params[0], err);
	if (m == NULL)
		return false;
	for (int32_t t = 0; t < n_trees; t++)
	{
		HbTree	   *tr = &m->trees[t];
		int32_t		nn;

		if (ci >= n_codes || (nn = codes[ci++]) < 1 || nn > 1 << 20 ||
			ci + 4 * (int64_t) nn > n_codes || pi + nn > n_params)
		{
			hb_model_free(m);
			return hb_fail(err, HB_ERR_INVALID, "approximation tree %d does not fit its codes and parameters", t);
		}
		tr->nodes = hb_alloc0(sizeof(HbNode) * nn);
		if (tr->nodes == NULL)
		{
			hb_model_free(m);
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		}
		tr->n_nodes = nn;
		tr->group = 0;
		for (int32_t i = 0; i < nn; i++)
		{
			HbNode	   *nd = &tr->nodes[i];
			int32_t		f = codes[ci++];

			nd->left = codes[ci++];
			nd->right = codes[ci++];
			nd->default_left = codes[ci++] != 0;
			nd->missing = HB_MISSING_NAN;
			if (f < 0)
			{
				if (nd->left != HB_LEAF || nd->right != HB_LEAF)
				{
					hb_model_free(m);
					return hb_fail(err, HB_ERR_INVALID, "approximation tree %d: leaf %d has children", t, i);
				}
				nd->value = params[pi++];
			}
			else
			{
				if (nd->left == HB_LEAF || nd->right == HB_LEAF)
				{
					hb_model_free(m);
					return hb_fail(err, HB_ERR_INVALID, "approximation tree %d: split %d lacks a child", t, i);
				}
				nd->feature = f;
				nd->threshold = params[pi++];
			}
		}
	}
	if (ci != n_codes || pi != n_params)
	{
		hb_model_free(m);
		return hb_fail(err, HB_ERR_INVALID, "approximation has %d codes and %d parameters, its trees use %lld and %lld",
					   n_codes, n_params, (long long) ci, (long long) pi);
	}
	if (!hb_model_validate(m, err))
	{
		hb_model_free(m);
		return false;
	}
	*out = m;
	return true;
}
