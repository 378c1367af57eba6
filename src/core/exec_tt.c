/*
 * exec_tt.c
 *	  Tree traversal over the flat layout: margins for a batch of rows.
 *
 * Rows are taken in blocks so that a block's inputs and accumulators stay in
 * L1 while every tree walks them; trees are visited in model order because
 * float32 sums depend on the order and XGBoost adds trees in that order.
 */
#include "plan_int.h"

#include <string.h>

#define HB_BLOCK_ROWS 64

/*
 * One tree, one row.  Plain numeric nodes (no category set, NaN-style
 * missing) take the short path; everything else the general step.
 */
static inline int64_t
walk_f32(const HbPlan *p, int64_t idx, const double *row)
{
	const HbFlatNode *nodes = p->nodes;

	while (nodes[idx].feature >= 0)
	{
		const HbFlatNode *n = &nodes[idx];
		double		v = row[n->feature];

		if (n->flags & ~HB_FN_DEFAULT_LEFT)
			idx = hb_step_general(p, n, idx, v);
		else if (isnan(v))
			idx = n->left + !(n->flags & HB_FN_DEFAULT_LEFT);
		else
			idx = n->left + !((float) v < n->thr);
	}
	return idx;
}

static inline int64_t
walk_f64(const HbPlan *p, int64_t idx, const double *row)
{
	const HbFlatNode *nodes = p->nodes;

	while (nodes[idx].feature >= 0)
	{
		const HbFlatNode *n = &nodes[idx];
		double		v = row[n->feature];

		if (n->flags & ~HB_FN_DEFAULT_LEFT)
			idx = hb_step_general(p, n, idx, v);
		else if (isnan(v))
			idx = n->left + !(n->flags & HB_FN_DEFAULT_LEFT);
		else
			idx = n->left + !(v <= p->thr_d[idx]);
	}
	return idx;
}

static void
trees_block_f32(const HbPlan *p, const double *x, size_t nb, double *margins)
{
	int			k = p->n_outputs;
	int			nf = p->n_features;
	float		acc[HB_BLOCK_ROWS * 8];
	float	   *a = k <= 8 ? acc : NULL;

	if (a == NULL)
	{
		/* many classes: accumulate straight into the output, row by row */
		for (size_t r = 0; r < nb; r++)
		{
			for (int g = 0; g < k; g++)
			{
				float		s = (float) p->base_margin[g];

				for (int t = 0; t < p->n_trees; t++)
					if (p->tree_group[t] == g)
						s += p->nodes[walk_f32(p, p->tree_root[t], x + r * nf)].thr;
				margins[r * k + g] = s;
			}
		}
		return;
	}

	for (size_t r = 0; r < nb; r++)
		for (int g = 0; g < k; g++)
			a[r * k + g] = (float) p->base_margin[g];
	for (int t = 0; t < p->n_trees; t++)
	{
		int64_t		root = p->tree_root[t];
		int			g = p->tree_group[t];

		for (size_t r = 0; r < nb; r++)
			a[r * k + g] += p->nodes[walk_f32(p, root, x + r * nf)].thr;
	}
	for (size_t i = 0; i < nb * k; i++)
		margins[i] = a[i];
}

static void
trees_block_f64(const HbPlan *p, const double *x, size_t nb, double *margins)
{
	int			k = p->n_outputs;
	int			nf = p->n_features;

	for (size_t r = 0; r < nb; r++)
		for (int g = 0; g < k; g++)
			margins[r * k + g] = p->base_margin[g];
	for (int t = 0; t < p->n_trees; t++)
	{
		int64_t		root = p->tree_root[t];
		int			g = p->tree_group[t];

		for (size_t r = 0; r < nb; r++)
			margins[r * k + g] += p->leaf_d[walk_f64(p, root, x + r * nf)];
	}
}

/*
 * Linear models.  XGBoost's gblinear skips missing entries (its input is
 * sparse), which is the same as a zero contribution; it sums in float32
 * starting from bias + base score.
 */
static void
linear_rows(const HbPlan *p, const double *x, size_t n, double *margins)
{
	int			k = p->n_outputs;
	int			nf = p->n_features;

	for (size_t r = 0; r < n; r++)
	{
		const double *row = x + r * nf;

		for (int g = 0; g < k; g++)
		{
			if (p->sum_f32)
			{
				float		s = (float) p->bias[g] + (float) p->base_margin[g];

				for (int f = 0; f < nf; f++)
					if (!isnan(row[f]))
						s += (float) row[f] * (float) p->weights[(size_t) f * k + g];
				margins[r * k + g] = s;
			}
			else
			{
				double		s = p->bias[g] + p->base_margin[g];

				for (int f = 0; f < nf; f++)
					if (!isnan(row[f]))
						s += row[f] * p->weights[(size_t) f * k + g];
				margins[r * k + g] = s;
			}
		}
	}
}

void
hb_plan_margins(const HbPlan *p, const double *x, size_t n, double *margins)
{
	if (p->estimator == HB_EST_LINEAR)
	{
		linear_rows(p, x, n, margins);
		return;
	}
	for (size_t r0 = 0; r0 < n; r0 += HB_BLOCK_ROWS)
	{
		size_t		nb = n - r0 < HB_BLOCK_ROWS ? n - r0 : HB_BLOCK_ROWS;
		const double *xb = x + r0 * p->n_features;
		double	   *mb = margins + r0 * p->n_outputs;

		if (p->sum_f32)
			trees_block_f32(p, xb, nb, mb);
		else
			trees_block_f64(p, xb, nb, mb);
		if ((r0 & 4095) == 0)
			hb_check_interrupts();
	}
}
