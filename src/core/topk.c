/*
 * topk.c
 *	  Exact top-K scoring with bound pruning.
 *
 * Every tree's leaves lie in [min, max], so after the first m trees a row's
 * final margin lies in [partial + sum of the remaining mins, partial + sum
 * of the remaining maxes].  Rows are scored tree block by tree block; a row
 * whose upper bound falls below the current K-th best margin can never make
 * the top K and is dropped.  Trees stay in model order: the partial sum of a
 * surviving row is then exactly the prefix of the full float32 sum, so a
 * survivor's final margin is bit-identical to full scoring.  The links are
 * monotone, so comparing margins is comparing scores.
 *
 * Bounds are computed in double and widened by a relative slack that covers
 * float32 rounding of the remaining additions, so pruning never drops a row
 * that full scoring would have kept.
 */
#include "plan_int.h"
#include "device.h"
#include "topk.h"

#include <float.h>
#include <string.h>

#define TOPK_CHUNK 64			/* rows scored together */
#define TOPK_TREE_BLOCK 8		/* trees between two pruning checks */

/*
 * For the k lowest margins (ORDER BY ... ASC) everything runs on the
 * negated margins: sign is -1, the "maxima" are those of -leaf, and
 * thresholds and offers compare sign * margin.
 */
struct HbTopkBounds
{
	int32_t		n_trees;
	double		sign;			/* +1: the k highest margins, -1: lowest */
	double	   *suffix_max;		/* sum of maxima of sign * leaf, trees t.. */
	double	   *suffix_abs;		/* sum of |leaf| maxima of trees t.. (slack) */
};

bool
hb_topk_supported(const HbPlan *p)
{
	return p->n_outputs == 1;
}

static HbTopkBounds *
topk_bounds(const HbPlan *p, double sign)
{
	HbTopkBounds *b = hb_alloc0(sizeof(HbTopkBounds));

	if (b == NULL)
		return NULL;
	b->n_trees = p->n_trees;
	b->sign = sign;
	b->suffix_max = hb_alloc(sizeof(double) * (p->n_trees + 1));
	b->suffix_abs = hb_alloc(sizeof(double) * (p->n_trees + 1));
	if (!b->suffix_max || !b->suffix_abs)
	{
		hb_topk_bounds_free(b);
		return NULL;
	}
	b->suffix_max[p->n_trees] = 0.0;
	b->suffix_abs[p->n_trees] = 0.0;
	for (int t = p->n_trees - 1; t >= 0; t--)
	{
		/* leaves of tree t are the nodes of its range with feature < 0 */
		int64_t		start = p->tree_root[t];
		int64_t		end = t + 1 < p->n_trees ? p->tree_root[t + 1] : p->n_nodes;
		double		mx = -DBL_MAX;
		double		ab = 0.0;

		for (int64_t i = start; i < end; i++)
		{
			if (p->nodes[i].feature >= 0)
				continue;
			{
				double		v = sign * (p->sum_f32 ? (double) p->nodes[i].thr : p->leaf_d[i]);

				if (v > mx)
					mx = v;
				if (fabs(v) > ab)
					ab = fabs(v);
			}
		}
		b->suffix_max[t] = b->suffix_max[t + 1] + mx;
		b->suffix_abs[t] = b->suffix_abs[t + 1] + ab;
	}
	return b;
}

HbTopkBounds *
hb_topk_bounds(const HbPlan *p)
{
	return topk_bounds(p, 1.0);
}

HbTopkBounds *
hb_topk_bounds_lowest(const HbPlan *p)
{
	return topk_bounds(p, -1.0);
}

void
hb_topk_bounds_free(HbTopkBounds *b)
{
	if (b == NULL)
		return;
	hb_free(b->suffix_max);
	hb_free(b->suffix_abs);
	hb_free(b);
}

/*
 * Largest margin a row with this partial sum (after trees [0, t)) can still
 * reach.  The slack bounds the float32 rounding of the remaining additions:
 * each of at most n_trees additions errs by at most half an ulp of a sum no
 * bigger than |partial| + suffix_abs.
 */
static inline double
upper_bound(const HbTopkBounds *b, const HbPlan *p, double partial, int t)
{
	double		ub = b->sign * partial + b->suffix_max[t];

	if (p->sum_f32)
		ub += (fabs(partial) + b->suffix_abs[t]) * FLT_EPSILON * (b->n_trees - t + 1);
	else
		ub += (fabs(partial) + b->suffix_abs[t]) * DBL_EPSILON * (b->n_trees - t + 1);
	return ub;
}

/*
 * PTT path: rows in chunks, trees in blocks through PTT's range kernel; after
 * each block the rows that can no longer make it are dropped and the rest
 * compacted, so later blocks run on fewer rows.
 */
#define PTT_CHUNK 1024

/*
 * Trees between two pruning checks: a tenth of the model, between 8 and
 * 50.  Each call of the range kernel recomputes the rows' keys, so blocks
 * should not be tiny; rows mostly drop late, so they should not be huge.
 */
static int
ptt_tree_block(const HbPlan *p)
{
	int			tb = p->n_trees / 10;

	return tb < 8 ? 8 : tb > 50 ? 50 : tb;
}

static bool
score_ptt(const HbPlan *p, const HbTopkBounds *b, const double *x, size_t n,
		  double *threshold, HbTopkOffer offer, void *arg, HbTopkStats *stats)
{
	int			nf = p->n_features;
	double	   *xl = hb_alloc(sizeof(double) * PTT_CHUNK * nf);
	double	   *acc = hb_alloc(sizeof(double) * PTT_CHUNK);
	size_t	   *ids = hb_alloc(sizeof(size_t) * PTT_CHUNK);
	int			tb = ptt_tree_block(p);

	if (!xl || !acc || !ids)
	{
		hb_free(xl);
		hb_free(acc);
		hb_free(ids);
		return false;
	}
	for (size_t r0 = 0, nb = 0; r0 < n; r0 += nb)
	{
		/* small chunks until K rows are held, so that pruning starts early */
		size_t		chunk = isinf(*threshold) ? TOPK_CHUNK : PTT_CHUNK;
		size_t		nlive = nb = n - r0 < chunk ? n - r0 : chunk;
		double		base = p->sum_f32 ? (double) (float) p->base_margin[0] :
			p->base_margin[0];

		memcpy(xl, x + r0 * nf, sizeof(double) * nb * nf);
		for (size_t i = 0; i < nb; i++)
		{
			acc[i] = base;
			ids[i] = r0 + i;
		}
		for (int t0 = 0; t0 < p->n_trees && nlive > 0; t0 += tb)
		{
			int			t1 = t0 + tb < p->n_trees ? t0 + tb : p->n_trees;
			size_t		kept = 0;

			hb_ptt_accumulate(p, xl, nlive, t0, t1, acc);
			stats->pairs_scored += (int64_t) nlive * (t1 - t0);
			if (t1 == p->n_trees)
				break;
			for (size_t i = 0; i < nlive; i++)
			{
				if (upper_bound(b, p, acc[i], t1) < *threshold)
					continue;
				if (kept != i)
				{
					memcpy(xl + kept * nf, xl + i * nf, sizeof(double) * nf);
					acc[kept] = acc[i];
					ids[kept] = ids[i];
				}
				kept++;
			}
			nlive = kept;
		}
		/* survivors' sums ran in model tree order: they are exact */
		for (size_t i = 0; i < nlive; i++)
			if (b->sign * acc[i] >= *threshold)
				*threshold = offer(arg, ids[i], acc[i]);
		stats->rows += nb;
		stats->rows_full += nlive;
		hb_check_interrupts();
	}
	hb_free(xl);
	hb_free(acc);
	hb_free(ids);
	return true;
}

bool
hb_topk_score(const HbPlan *p, const HbTopkBounds *b, const double *x,
			  size_t n, double *threshold, HbTopkOffer offer, void *arg,
			  HbTopkStats *stats)
{
	int			nf = p->n_features;
	double	   *snapped = NULL;

	/*
	 * Batches the GPU takes get every margin computed there, exact, and
	 * offered in row order: pruning would save the GPU little, and a row it
	 * would have dropped is below the threshold anyway, so the top K are
	 * the same rows.
	 */
	if (n >= 2 && hb_device_mode() != HB_DEVICE_CPU)
	{
		double	   *m = hb_alloc(sizeof(double) * n);

		if (m != NULL && hb_device_try_margins(p, x, n, m))
		{
			for (size_t r = 0; r < n; r++)
				if (b->sign * m[r] >= *threshold)
					*threshold = offer(arg, r, m[r]);
			stats->rows += n;
			stats->rows_full += n;
			stats->pairs_scored += (int64_t) n * p->n_trees;
			hb_free(m);
			return true;
		}
		hb_free(m);
	}

	/*
	 * A linear model has no trees to prune by and costs one dot product a
	 * row: every margin is computed, exact, and offered in row order.
	 */
	if (p->estimator == HB_EST_LINEAR)
	{
		double		m[TOPK_CHUNK];

		for (size_t r0 = 0; r0 < n; r0 += TOPK_CHUNK)
		{
			size_t		nb = n - r0 < TOPK_CHUNK ? n - r0 : TOPK_CHUNK;

			hb_plan_margins(p, x + r0 * nf, nb, m);
			for (size_t i = 0; i < nb; i++)
				if (b->sign * m[i] >= *threshold)
					*threshold = offer(arg, r0 + i, m[i]);
			stats->rows += nb;
			stats->rows_full += nb;
			if ((r0 & 1023) == 0)
				hb_check_interrupts();
		}
		return true;
	}

	/* LightGBM's zero snapping, once per row rather than per node */
	if (p->zero_snap)
	{
		snapped = hb_alloc(sizeof(double) * n * nf);
		if (snapped == NULL)
			return false;
		for (size_t i = 0; i < n * nf; i++)
			snapped[i] = fabs(x[i]) <= HB_ZERO_THRESHOLD ? 0.0 : x[i];
		x = snapped;
	}

	/* batches big enough for PTT take its kernel; the rest walk with TT */
	if (p->ptt && n >= TOPK_CHUNK && hb_plan_strategy(p, n) == HB_STRATEGY_PTT)
	{
		bool		ok = score_ptt(p, b, x, n, threshold, offer, arg, stats);

		hb_free(snapped);
		return ok;
	}

	for (size_t r0 = 0; r0 < n; r0 += TOPK_CHUNK)
	{
		size_t		nb = n - r0 < TOPK_CHUNK ? n - r0 : TOPK_CHUNK;
		int32_t		live[TOPK_CHUNK];
		float		acc_f[TOPK_CHUNK];
		double		acc_d[TOPK_CHUNK];
		int			nlive = (int) nb;

		for (int i = 0; i < nlive; i++)
		{
			live[i] = i;
			acc_f[i] = (float) p->base_margin[0];
			acc_d[i] = p->base_margin[0];
		}
		for (int t0 = 0; t0 < p->n_trees && nlive > 0; t0 += TOPK_TREE_BLOCK)
		{
			int			t1 = t0 + TOPK_TREE_BLOCK < p->n_trees ?
				t0 + TOPK_TREE_BLOCK : p->n_trees;
			int			kept = 0;

			for (int t = t0; t < t1; t++)
			{
				int64_t		root = p->tree_root[t];

				if (p->sum_f32)
					for (int i = 0; i < nlive; i++)
						acc_f[live[i]] += p->nodes[hb_walk_f32(p, root,
															   x + (r0 + live[i]) * nf)].thr;
				else
					for (int i = 0; i < nlive; i++)
						acc_d[live[i]] += p->leaf_d[hb_walk_f64(p, root,
																x + (r0 + live[i]) * nf)];
			}
			stats->pairs_scored += (int64_t) nlive * (t1 - t0);

			/* drop the rows that can no longer reach the K-th best */
			for (int i = 0; i < nlive; i++)
			{
				int			r = live[i];
				double		partial = p->sum_f32 ? (double) acc_f[r] : acc_d[r];

				if (t1 < p->n_trees && upper_bound(b, p, partial, t1) < *threshold)
					continue;
				live[kept++] = r;
			}
			nlive = kept;
		}
		/* survivors are complete: their margins are exact */
		for (int i = 0; i < nlive; i++)
		{
			int			r = live[i];
			double		m = p->sum_f32 ? (double) acc_f[r] : acc_d[r];

			if (b->sign * m >= *threshold)
				*threshold = offer(arg, r0 + r, m);
		}
		stats->rows += nb;
		stats->rows_full += nlive;
		if ((r0 & 1023) == 0)
			hb_check_interrupts();
	}
	hb_free(snapped);
	return true;
}
