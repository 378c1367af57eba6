/*
 * approx.c
 *	  Cheap approximations of a plan and the cascade that uses them.
 *
 * A prefix approximation scores the first trees with the plan's own
 * executors and keeps the running sums: a row that needs the full model
 * then only adds the remaining trees, in model order, so its margin has
 * exactly the bits full scoring gives.  The cheap margin is the partial
 * sum calibrated (scale, shift) to the full margin, which also puts a
 * random forest's prefix (an average of fewer trees) on the right scale.
 * A tree approximation is a model of its own (distill.c), compiled into a
 * plan when it is built or read back from the catalog.
 */
#include "plan_int.h"
#include "approx.h"
#include "early_exit.h"
#include "distill.h"
#include "exec.h"

#include <stdio.h>
#include <string.h>

HbApprox *
hb_approx_new(HbApproxKind kind, int32_t n_outputs, int32_t n_trees,
			  int32_t n_feat)
{
	HbApprox   *a = hb_alloc0(sizeof(HbApprox));

	if (a == NULL)
		return NULL;
	a->kind = kind;
	a->n_outputs = n_outputs;
	a->n_trees = n_trees;
	a->n_feat = n_feat;
	if (kind == HB_APPROX_TREES)
		return a;
	if (kind == HB_APPROX_PREFIX)
	{
		a->scale = hb_alloc0(sizeof(double) * n_outputs);
		a->shift = hb_alloc0(sizeof(double) * n_outputs);
		if (!a->scale || !a->shift)
		{
			hb_approx_free(a);
			return NULL;
		}
		for (int g = 0; g < n_outputs; g++)
			a->scale[g] = 1.0;
	}
	else
	{
		a->feat = hb_alloc0(sizeof(int32_t) * (n_feat + 1));
		a->fill = hb_alloc0(sizeof(double) * (n_feat + 1));
		a->weight = hb_alloc0(sizeof(double) * ((size_t) n_feat * n_outputs + 1));
		a->bias = hb_alloc0(sizeof(double) * n_outputs);
		if (!a->feat || !a->fill || !a->weight || !a->bias)
		{
			hb_approx_free(a);
			return NULL;
		}
	}
	return a;
}

void
hb_approx_free(HbApprox *a)
{
	if (a == NULL)
		return;
	hb_free(a->scale);
	hb_free(a->shift);
	hb_free(a->feat);
	hb_free(a->fill);
	hb_free(a->weight);
	hb_free(a->bias);
	hb_free(a->tparams);
	if (a->cheap)
		hb_plan_free(a->cheap);
	hb_approx_free(a->gate);
	hb_free(a);
}

/* Takes codes and params (hb_alloc'ed) whatever happens. */
static bool
trees_approx(const HbPlan *p, const HbModel *m, int32_t *codes, int32_t n_codes,
			 double *params, int32_t n_params, HbApprox **out, HbError *err)
{
	HbApprox   *a = hb_approx_new(HB_APPROX_TREES, 1, m->n_trees, 0);

	*out = NULL;
	if (a == NULL)
	{
		hb_free(codes);
		hb_free(params);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	a->feat = codes;
	a->n_feat = n_codes;
	a->tparams = params;
	a->n_tparams = n_params;
	if (p->n_outputs != 1 || m->n_outputs != 1 || m->n_features != p->n_features)
	{
		hb_approx_free(a);
		return hb_fail(err, HB_ERR_INVALID,
					   "a tree approximation needs a model of one output and %d features",
					   p->n_features);
	}
	if (!hb_plan_build(m, &a->cheap, err))
	{
		hb_approx_free(a);
		return false;
	}
	*out = a;
	return true;
}

bool
hb_approx_from_trees(const HbPlan *p, const HbModel *m, HbApprox **out,
					 HbError *err)
{
	int32_t    *codes;
	double	   *params;
	int32_t		nc,
				np;

	*out = NULL;
	if (!hb_trees_encode(m, &codes, &nc, &params, &np, err))
		return false;
	return trees_approx(p, m, codes, nc, params, np, out, err);
}

int
hb_approx_n_params(const HbApprox *a)
{
	if (a->kind == HB_APPROX_PREFIX)
		return 2 * a->n_outputs;
	if (a->kind == HB_APPROX_TREES)
		return a->n_tparams;
	return a->n_feat + a->n_feat * a->n_outputs + a->n_outputs;
}

void
hb_approx_params(const HbApprox *a, double *out)
{
	int			k = a->n_outputs;

	if (a->kind == HB_APPROX_PREFIX)
	{
		memcpy(out, a->scale, sizeof(double) * k);
		memcpy(out + k, a->shift, sizeof(double) * k);
		return;
	}
	if (a->kind == HB_APPROX_TREES)
	{
		memcpy(out, a->tparams, sizeof(double) * a->n_tparams);
		return;
	}
	memcpy(out, a->fill, sizeof(double) * a->n_feat);
	memcpy(out + a->n_feat, a->weight, sizeof(double) * a->n_feat * k);
	memcpy(out + a->n_feat + a->n_feat * k, a->bias, sizeof(double) * k);
}

/*
 * Whether every one of hb_approx_params' values is a finite number: a fit
 * on values near the largest double, or on margins that overflow, can give
 * infinities, and a tuning is only ever stored with finite parameters
 * (hb_approx_from_params refuses others), so the tuner makes no such
 * candidate.
 */
bool
hb_approx_params_finite(const HbApprox *a)
{
	int			k = a->n_outputs;
	const double *v[3];
	size_t		n[3];

	if (a->kind == HB_APPROX_PREFIX)
	{
		v[0] = a->scale, n[0] = k;
		v[1] = a->shift, n[1] = k;
		v[2] = NULL, n[2] = 0;
	}
	else if (a->kind == HB_APPROX_TREES)
	{
		v[0] = a->tparams, n[0] = a->n_tparams;
		v[1] = v[2] = NULL, n[1] = n[2] = 0;
	}
	else
	{
		v[0] = a->fill, n[0] = a->n_feat;
		v[1] = a->weight, n[1] = (size_t) a->n_feat * k;
		v[2] = a->bias, n[2] = k;
	}
	for (int j = 0; j < 3; j++)
		for (size_t i = 0; i < n[j]; i++)
			if (!isfinite(v[j][i]))
				return false;
	return true;
}

bool
hb_approx_from_params(const HbPlan *p, HbApproxKind kind, int32_t n_trees,
					  const int32_t *feat, int32_t n_feat,
					  const double *params, int32_t n_params,
					  HbApprox **out, HbError *err)
{
	int			k = p->n_outputs;
	HbApprox   *a;

	*out = NULL;
	if (kind == HB_APPROX_PREFIX)
	{
		if (p->estimator != HB_EST_TREES || n_trees < 1 || n_trees > p->n_trees)
			return hb_fail(err, HB_ERR_INVALID,
						   "approximation uses %d trees of a model with %d",
						   n_trees, p->n_trees);
		n_feat = 0;
	}
	else if (kind == HB_APPROX_LINEAR)
	{
		if (n_feat < 0 || n_feat > p->n_features)
			return hb_fail(err, HB_ERR_INVALID,
						   "approximation uses %d features of a model with %d",
						   n_feat, p->n_features);
		for (int j = 0; j < n_feat; j++)
			if (feat[j] < 0 || feat[j] >= p->n_features)
				return hb_fail(err, HB_ERR_INVALID,
							   "approximation uses feature %d of a model with %d",
							   feat[j], p->n_features);
		n_trees = 0;
	}
	else if (kind == HB_APPROX_TREES)
	{
		HbModel    *m;
		int32_t    *codes;
		double	   *pcopy;
		bool		ok;

		if (p->estimator != HB_EST_TREES || p->n_outputs != 1)
			return hb_fail(err, HB_ERR_INVALID,
						   "a tree approximation needs a tree model of one output");
		if (!hb_trees_decode(p->n_features, n_trees, feat, n_feat, params,
							 n_params, &m, err))
			return false;
		codes = hb_alloc(sizeof(int32_t) * (n_feat + 1));
		pcopy = hb_alloc(sizeof(double) * (n_params + 1));
		if (!codes || !pcopy)
		{
			hb_free(codes);
			hb_free(pcopy);
			hb_model_free(m);
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		}
		memcpy(codes, feat, sizeof(int32_t) * n_feat);
		memcpy(pcopy, params, sizeof(double) * n_params);
		ok = trees_approx(p, m, codes, n_feat, pcopy, n_params, out, err);
		hb_model_free(m);
		return ok;
	}
	else
		return hb_fail(err, HB_ERR_INVALID, "unknown approximation kind %d", (int) kind);

	a = hb_approx_new(kind, k, n_trees, n_feat);
	if (a == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	if (n_params != hb_approx_n_params(a))
	{
		hb_approx_free(a);
		return hb_fail(err, HB_ERR_INVALID,
					   "approximation has %d parameters, expected %d",
					   n_params, hb_approx_n_params(a));
	}
	for (int i = 0; i < n_params; i++)
		if (!isfinite(params[i]))
		{
			hb_approx_free(a);
			return hb_fail(err, HB_ERR_INVALID,
						   "approximation parameter %d is not finite", i);
		}
	if (kind == HB_APPROX_PREFIX)
	{
		memcpy(a->scale, params, sizeof(double) * k);
		memcpy(a->shift, params + k, sizeof(double) * k);
	}
	else
	{
		memcpy(a->feat, feat, sizeof(int32_t) * n_feat);
		memcpy(a->fill, params, sizeof(double) * n_feat);
		memcpy(a->weight, params + n_feat, sizeof(double) * n_feat * k);
		memcpy(a->bias, params + n_feat + n_feat * k, sizeof(double) * k);
	}
	*out = a;
	return true;
}

void
hb_approx_describe(const HbPlan *p, const HbApprox *a, char *buf, size_t len)
{
	size_t		used;

	if (a->kind == HB_APPROX_PREFIX)
		snprintf(buf, len, "prefix: %d of %d trees", a->n_trees, p->n_trees);
	else if (a->kind == HB_APPROX_TREES)
	{
		bool	   *used = hb_alloc_must(sizeof(bool) * (p->n_features + 1));
		int			nu = 0;

		hb_approx_features(p, a, used);
		for (int j = 0; j < p->n_features; j++)
			nu += used[j];
		hb_free(used);
		snprintf(buf, len, "trees: %d of depth %d on %d features", a->n_trees,
				 a->cheap->max_depth, nu);
	}
	else
		snprintf(buf, len, "linear: %d of %d features", a->n_feat, p->n_features);
	used = strlen(buf);
	if (a->refine_trees > 0 && used < len)
		snprintf(buf + used, len - used, ", then prefix: %d of %d trees",
				 a->refine_trees, p->n_trees);
	used = strlen(buf);
	if (a->gate != NULL && used < len)
		snprintf(buf + used, len - used, ", gate: linear on %d features",
				 a->gate->n_feat);
}

void
hb_approx_gate(const HbApprox *a, const double *x, size_t n, int nf,
			   double *g)
{
	const HbApprox *l = a->gate;
	double		b = l->bias[0];

	for (size_t r = 0; r < n; r++)
	{
		const double *row = x + r * (size_t) nf;
		double		s = b;

		for (int j = 0; j < l->n_feat; j++)
		{
			double		v = row[l->feat[j]];

			s += l->weight[j] * hb_linear_input(v, l->fill[j]);
		}
		g[r] = s + a->gate_slack;
	}
}

int
hb_approx_gate_pass(const double *g, double cut, const double *x, int n,
					int nf, double *xo, int *at)
{
	int			m = 0;

	for (int i = 0; i < n; i++)
		if (g[i] >= cut)
		{
			if (xo != x || m != i)
				memcpy(xo + (size_t) m * nf, x + (size_t) i * nf, sizeof(double) * nf);
			at[m++] = i;
		}
	return m;
}

bool
hb_approx_set_gate(const HbPlan *p, HbApprox *a, const int32_t *feat,
				   int32_t n_feat, const double *params, int32_t n_params,
				   double slack, HbError *err)
{
	HbApprox   *g;
	bool	   *used;

	if (p->n_outputs != 1 || a->n_outputs != 1)
		return hb_fail(err, HB_ERR_INVALID, "a gate needs a model of one output");
	if (!isfinite(slack))
		return hb_fail(err, HB_ERR_INVALID, "the gate's slack is not finite");
	if (n_feat < 1)
		return hb_fail(err, HB_ERR_INVALID, "a gate needs at least one feature");
	if (!hb_approx_from_params(p, HB_APPROX_LINEAR, 0, feat, n_feat, params,
							   n_params, &g, err))
		return false;
	used = hb_alloc(sizeof(bool) * (p->n_features + 1));
	if (used == NULL)
	{
		hb_approx_free(g);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	hb_approx_features(p, a, used);
	for (int j = 0; j < n_feat; j++)
		if (!used[feat[j]])
		{
			int			f = feat[j];

			hb_free(used);
			hb_approx_free(g);
			return hb_fail(err, HB_ERR_INVALID,
						   "the gate reads feature %d, which the cheap model does not", f);
		}
	hb_free(used);
	hb_approx_free(a->gate);
	a->gate = g;
	a->gate_slack = slack;
	return true;
}

bool
hb_approx_set_refine(const HbPlan *p, HbApprox *a, int32_t trees,
					 double scale, double shift, double slack, HbError *err)
{
	if (p->estimator != HB_EST_TREES || p->n_outputs != 1 || a->n_outputs != 1)
		return hb_fail(err, HB_ERR_INVALID,
					   "a second stage needs a tree model of one output");
	if (trees <= hb_approx_cheap_trees(a) || trees >= p->n_trees)
		return hb_fail(err, HB_ERR_INVALID,
					   "second stage uses %d trees: it must use more than the cheap model's %d and fewer than the model's %d",
					   trees, hb_approx_cheap_trees(a), p->n_trees);
	if (!isfinite(scale) || !isfinite(shift) || !isfinite(slack))
		return hb_fail(err, HB_ERR_INVALID,
					   "second stage calibration is not finite");
	a->refine_trees = trees;
	a->refine_scale = scale;
	a->refine_shift = shift;
	a->refine_slack = slack;
	return true;
}

bool
hb_bar_cut_check(const HbBarCut *bc, HbError *err)
{
	int			nan = isnan(bc->slope) + isnan(bc->floor) + isnan(bc->margin);

	if (nan == 3)
		return true;
	/* a NaN anywhere would fail every comparison: no row would be kept */
	if (!isfinite(bc->slope) || !isfinite(bc->floor) || !isfinite(bc->margin))
		return hb_fail(err, HB_ERR_INVALID, "the cut relative to the bar is not finite");
	if (bc->slope < 0.0 || bc->slope > 1.0)
		return hb_fail(err, HB_ERR_INVALID,
					   "the cut relative to the bar has slope %g outside [0, 1]", bc->slope);
	return true;
}

void
hb_approx_refine(const HbPlan *p, const HbApprox *a, const double *x,
				 size_t n, double *raw, double *score2)
{
	int32_t		from = hb_approx_cheap_trees(a);

	/* a prefix's partial sums go on; any other cheap model left none */
	hb_exec_trees(p, HB_STRATEGY_AUTO, x, n, from, a->refine_trees,
				  from == 0 ? HB_EXEC_INIT : 0, raw);
	for (size_t r = 0; r < n; r++)
		score2[r] = (a->refine_scale * raw[r] + a->refine_shift) + a->refine_slack;
}

void
hb_approx_finish_refined(const HbPlan *p, const HbApprox *a, const double *x,
						 size_t n, double *raw)
{
	hb_exec_trees(p, HB_STRATEGY_AUTO, x, n, a->refine_trees, p->n_trees, 0, raw);
}

void
hb_approx_finish_rows(const HbPlan *p, const HbApprox *a, const double *x,
					  size_t n, double *raw, const bool *refined)
{
	size_t		nr = 0;
	size_t		nf = (size_t) p->n_features;
	size_t	   *at;
	double	   *xs,
			   *rs;

	for (size_t i = 0; refined && i < n; i++)
		nr += refined[i];
	if (nr == 0)
	{
		hb_approx_finish(p, a, x, n, raw);
		return;
	}
	if (nr == n)
	{
		hb_approx_finish_refined(p, a, x, n, raw);
		return;
	}

	/*
	 * Two groups that continue from different trees: each gathered,
	 * finished in one call and put back
	 */
	at = hb_alloc_must(sizeof(size_t) * n);
	xs = hb_alloc_must(sizeof(double) * n * nf);
	rs = hb_alloc_must(sizeof(double) * n);
	for (int pass = 0; pass < 2; pass++)
	{
		size_t		m = 0;

		for (size_t i = 0; i < n; i++)
			if (refined[i] == (pass == 1))
			{
				at[m] = i;
				memcpy(xs + m * nf, x + i * nf, sizeof(double) * nf);
				rs[m++] = raw[i];
			}
		if (pass == 0)
			hb_approx_finish(p, a, xs, m, rs);
		else
			hb_approx_finish_refined(p, a, xs, m, rs);
		for (size_t j = 0; j < m; j++)
			raw[at[j]] = rs[j];
	}
	hb_free(at);
	hb_free(xs);
	hb_free(rs);
}

void
hb_approx_margins(const HbPlan *p, const HbApprox *a, const double *x,
				  size_t n, double *raw, double *cheap)
{
	int			k = a->n_outputs;

	if (a->kind == HB_APPROX_PREFIX)
	{
		double	   *partial = raw ? raw : hb_alloc_must(sizeof(double) * n * k);

		hb_exec_trees(p, HB_STRATEGY_AUTO, x, n, 0, a->n_trees, HB_EXEC_INIT,
					  partial);
		for (size_t r = 0; r < n; r++)
			for (int g = 0; g < k; g++)
				cheap[r * k + g] = a->scale[g] * partial[r * k + g] + a->shift[g];
		if (raw == NULL)
			hb_free(partial);
		return;
	}
	if (a->kind == HB_APPROX_TREES)
	{
		hb_exec_trees(a->cheap, HB_STRATEGY_AUTO, x, n, 0, a->cheap->n_trees,
					  HB_EXEC_INIT | HB_EXEC_DEVICE, cheap);
		return;
	}
	for (size_t r = 0; r < n; r++)
	{
		const double *row = x + r * p->n_features;

		for (int g = 0; g < k; g++)
			cheap[r * k + g] = a->bias[g];
		for (int j = 0; j < a->n_feat; j++)
		{
			double		v = hb_linear_input(row[a->feat[j]], a->fill[j]);
			const double *w = a->weight + (size_t) j * k;

			for (int g = 0; g < k; g++)
				cheap[r * k + g] += w[g] * v;
		}
	}
}

void
hb_approx_finish(const HbPlan *p, const HbApprox *a, const double *x,
				 size_t n, double *raw)
{
	if (a->kind == HB_APPROX_PREFIX)
		hb_exec_trees(p, HB_STRATEGY_AUTO, x, n, a->n_trees, p->n_trees, 0, raw);
	else
		hb_exec_trees(p, HB_STRATEGY_AUTO, x, n, 0, p->n_trees,
					  HB_EXEC_INIT | HB_EXEC_DEVICE, raw);
}

double
hb_approx_confidence(const HbPlan *p, const double *m, int *cls)
{
	int			k = p->n_outputs;
	int			best = 0;
	double		second = -INFINITY;

	if (k == 1)
	{
		double		cut;

		/* no cut (PROBIT): never sure, the full model decides */
		if (!hb_binary_cut(p, &cut))
		{
			*cls = hb_margin_class(p, m);
			return -INFINITY;
		}
		*cls = m[0] > cut;
		return fabs(m[0] - cut);
	}
	for (int g = 1; g < k; g++)
		if (m[g] > m[best])
			best = g;
	/*
	 * The link's class (hb_link_argmax: a division after the sum or a
	 * softmax over the non-zero margins may pick another than the largest
	 * margin); where it does, no gap in the margins says how sure it is
	 */
	*cls = hb_link_argmax(p, m);
	if (*cls != best)
		return -INFINITY;
	for (int g = 0; g < k; g++)
		if (g != best && m[g] > second)
			second = m[g];
	return m[best] - second;
}

int
hb_margin_class(const HbPlan *p, const double *m)
{
	int32_t		cls;

	/* exactly hb_predict_class's: the link's probability, for binary */
	hb_link_class(p, m, 1, &cls);
	return cls;
}

/*
 * Rows are taken in blocks: cheap margins for the block, then the rows the
 * cheap model is not sure of are compacted and finished together, so the
 * full model still sees batches (PTT needs them to be fast).
 */
#define CASCADE_BLOCK 1024

void
hb_approx_features(const HbPlan *p, const HbApprox *a, bool *used)
{
	memset(used, 0, sizeof(bool) * (size_t) p->n_features);
	if (a->kind == HB_APPROX_LINEAR)
	{
		for (int32_t i = 0; i < a->n_feat; i++)
			used[a->feat[i]] = true;
		return;
	}
	if (a->kind == HB_APPROX_TREES)
	{
		/* the codes: per tree its node count, then 4 per node, feature first */
		for (int32_t i = 0; i < a->n_feat;)
		{
			int32_t		nn = a->feat[i++];

			for (int32_t j = 0; j < nn; j++, i += 4)
				if (a->feat[i] >= 0)
					used[a->feat[i]] = true;
		}
		return;
	}
	/* a tree's nodes are contiguous, trees in model order */
	for (int32_t t = 0; t < a->n_trees && t < p->n_trees; t++)
	{
		int64_t		end = t + 1 < p->n_trees ? p->tree_root[t + 1] : p->n_nodes;

		for (int64_t i = p->tree_root[t]; i < end; i++)
			if (p->nodes[i].feature >= 0)
				used[p->nodes[i].feature] = true;
	}
}

void
hb_cascade_run(const HbPlan *p, const HbCascade *c, const double *x,
			   size_t n, HbCascadeOut what, double *out, HbCascadeStats *stats)
{
	hb_cascade_run_lazy(p, c, x, n, what, out, stats, NULL, NULL);
}

void
hb_cascade_run_lazy(const HbPlan *p, const HbCascade *c, const double *x,
					size_t n, HbCascadeOut what, double *out,
					HbCascadeStats *stats, HbCompleteRows complete, void *arg)
{
	const HbApprox *a = c->approx;
	int			k = p->n_outputs;
	int			nf = p->n_features;
	size_t		blk = n < CASCADE_BLOCK ? n : CASCADE_BLOCK;
	double	   *raw = hb_alloc_must(sizeof(double) * blk * k);
	double	   *cheap = hb_alloc_must(sizeof(double) * blk * k);
	double	   *xs = hb_alloc_must(sizeof(double) * blk * nf);
	double	   *rs = hb_alloc_must(sizeof(double) * blk * k);
	size_t	   *ids = hb_alloc_must(sizeof(size_t) * blk);

	for (size_t r0 = 0; r0 < n; r0 += blk)
	{
		size_t		nb = n - r0 < blk ? n - r0 : blk;
		size_t		nu = 0;

		hb_approx_margins(p, a, x + r0 * nf, nb, raw, cheap);
		for (size_t i = 0; i < nb; i++)
		{
			int			cls;
			double		conf = hb_approx_confidence(p, cheap + i * k, &cls);

			if (conf >= c->threshold)
			{
				if (what == HB_CASCADE_CLASS)
					out[r0 + i] = cls;
				else
					hb_link_predict(p, cheap + i * k, 1, &out[r0 + i]);
				continue;
			}
			if (complete == NULL)
				memcpy(xs + nu * nf, x + (r0 + i) * nf, sizeof(double) * nf);
			memcpy(rs + nu * k, raw + i * k, sizeof(double) * k);
			ids[nu++] = r0 + i;
		}
		if (nu > 0)
		{
			if (complete != NULL)
				complete(arg, ids, nu, xs);
			hb_approx_finish(p, a, xs, nu, rs);
			for (size_t i = 0; i < nu; i++)
			{
				if (what == HB_CASCADE_CLASS)
					out[ids[i]] = hb_margin_class(p, rs + i * k);
				else
					hb_link_predict(p, rs + i * k, 1, &out[ids[i]]);
			}
		}
		if (stats)
		{
			stats->rows += nb;
			stats->rows_full += nu;
		}
	}
	hb_free(raw);
	hb_free(cheap);
	hb_free(xs);
	hb_free(rs);
	hb_free(ids);
}
