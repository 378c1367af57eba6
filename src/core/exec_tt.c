/*
 * exec_tt.c
 *	  Tree traversal over the flat layout: margins for a batch of rows.
 *
 * Rows are taken in blocks so that a block's inputs and accumulators stay in
 * L1 while every tree walks them; trees are visited in model order because
 * float32 sums depend on the order and XGBoost adds trees in that order.
 */
#include "plan_int.h"

#include <stdio.h>
#include <string.h>

#define HB_BLOCK_ROWS 64

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
						s += p->nodes[hb_walk_f32(p, p->tree_root[t], x + r * nf)].thr;
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
			a[r * k + g] += p->nodes[hb_walk_f32(p, root, x + r * nf)].thr;
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
			margins[r * k + g] += p->leaf_d[hb_walk_f64(p, root, x + r * nf)];
	}
}

/*
 * Linear models.  XGBoost's gblinear skips missing entries (its input is
 * sparse), which is the same as a zero contribution; it sums in float32
 * starting from bias + base score, feature by feature.  Those models keep
 * that exact order, row by row.  Double-precision models (no float32 order
 * to reproduce) run as one GEMM over the batch, missing values as zeros.
 */
static void
linear_rows_f32(const HbPlan *p, const double *x, size_t n, double *margins)
{
	int			k = p->n_outputs;
	int			nf = p->n_features;

	for (size_t r = 0; r < n; r++)
	{
		const double *row = x + r * nf;

		for (int g = 0; g < k; g++)
		{
			float		s = (float) p->bias[g] + (float) p->base_margin[g];

			for (int f = 0; f < nf; f++)
				if (!isnan(row[f]))
					s += (float) row[f] * (float) p->weights[(size_t) f * k + g];
			margins[r * k + g] = s;
		}
	}
}

#define LINEAR_ROWS 8

/*
 * Each margin is its bias, then the features' terms added in feature order
 * (NaN: missing, no term), so a row gets the same bits alone as in any
 * batch.  A BLAS product summed in an order that depended on the number of
 * rows (OpenBLAS 0.3.21: one row and twelve differ in the last bits), so
 * hb_predict of a row and the batched forms over it could disagree.  Eight
 * rows go together: their sums are independent chains.  Measured against
 * cblas_dgemm on one thread: 1.05x its time at 30 features and one output,
 * 0.56-0.58x at 2,000 and 20,000 features, 1.5-1.6x with three to five
 * outputs.
 */
static void
linear_rows_f64(const HbPlan *p, const double *x, size_t n, double *margins)
{
	int			k = p->n_outputs;
	int			nf = p->n_features;

	for (size_t r0 = 0; r0 < n; r0 += LINEAR_ROWS)
	{
		size_t		nb = n - r0 < LINEAR_ROWS ? n - r0 : LINEAR_ROWS;
		const double *src = x + r0 * nf;
		double	   *out = margins + r0 * k;

		for (size_t r = 0; r < nb; r++)
			for (int g = 0; g < k; g++)
				out[r * k + g] = p->bias[g] + p->base_margin[g];
		for (int f = 0; f < nf; f++)
		{
			const double *w = p->weights + (size_t) f * k;

			for (size_t r = 0; r < nb; r++)
			{
				double		v = src[r * nf + f];

				if (isnan(v))
					continue;
				for (int g = 0; g < k; g++)
					out[r * k + g] += v * w[g];
			}
		}
		if ((r0 & 4095) == 0)
			hb_check_interrupts();
	}
}

void
hb_linear_margins(const HbPlan *p, const double *x, size_t n, double *margins)
{
	if (p->sum_f32)
		linear_rows_f32(p, x, n, margins);
	else
		linear_rows_f64(p, x, n, margins);
}

void
hb_tt_margins(const HbPlan *p, const double *x, size_t n, double *margins)
{
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

/* TT over a tree range, per row, in model order (float32 sums stay exact). */
void
hb_tt_accumulate(const HbPlan *p, const double *x, size_t n, int t0, int t1,
				 double *margins)
{
	int			k = p->n_outputs;
	int			nf = p->n_features;

	for (size_t r = 0; r < n; r++)
	{
		const double *row = x + r * nf;
		double	   *m = margins + r * k;

		if (p->sum_f32)
			for (int t = t0; t < t1; t++)
			{
				int			g = p->tree_group[t];

				m[g] = (double) ((float) m[g] +
								 p->nodes[hb_walk_f32(p, p->tree_root[t], row)].thr);
			}
		else
			for (int t = t0; t < t1; t++)
				m[p->tree_group[t]] += p->leaf_d[hb_walk_f64(p, p->tree_root[t], row)];
		if ((r & 1023) == 1023)
			hb_check_interrupts();
	}
}

int
hb_tt_ops(const HbPlan *p, size_t batch, HbPlanOp *ops, int max_ops)
{
	double		visits = (double) batch * p->n_trees * (p->avg_leaf_depth + 1);
	char		in[64],
				mid[64],
				out[64];
	int			n = 0;

	snprintf(in, sizeof(in), "%zux%d", batch, p->n_features);
	snprintf(mid, sizeof(mid), "%zux%d", batch, p->n_trees);
	snprintf(out, sizeof(out), "%zux%d", batch, p->n_outputs);
	/* gather, compare and index step per visit */
	if (hb_op_add(ops, max_ops, &n, "traverse", in, mid,
				  (int64_t) (sizeof(HbFlatNode) * p->n_nodes), visits * 3))
		hb_op_add(ops, max_ops, &n, "reduce", mid, out, 0,
				  (double) batch * p->n_trees);
	return n;
}
