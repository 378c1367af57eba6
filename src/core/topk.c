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
#include "exec.h"
#include "device.h"
#include "topk.h"

#include <float.h>
#include <stdlib.h>
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
	double	   *emax;			/* max of suffix_max over t.. (scheduling) */
	bool		prunes;			/* false: sums could overflow, nothing is pruned */
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
	b->emax = hb_alloc(sizeof(double) * (p->n_trees + 1));
	if (!b->suffix_max || !b->suffix_abs || !b->emax)
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
	/*
	 * The bound and its slack assume sums that never overflow: where the
	 * leaves could carry a running sum near the largest float (or double),
	 * a float32 sum may saturate at infinity, outside its interval, so no
	 * row is pruned (every suffix bound infinite).
	 */
	b->prunes = fabs(p->base_margin[0]) + b->suffix_abs[0] <
		0.5 * (p->sum_f32 ? FLT_MAX : DBL_MAX);
	if (!b->prunes)
		for (int t = 0; t < p->n_trees; t++)
			b->suffix_max[t] = INFINITY;
	b->emax[p->n_trees] = 0.0;
	for (int t = p->n_trees - 1; t >= 0; t--)
		b->emax[t] = fmax(b->suffix_max[t], b->emax[t + 1]);
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

bool
hb_topk_bounds_prune(const HbTopkBounds *b)
{
	return b->prunes;
}

void
hb_topk_bounds_free(HbTopkBounds *b)
{
	if (b == NULL)
		return;
	hb_free(b->suffix_max);
	hb_free(b->suffix_abs);
	hb_free(b->emax);
	hb_free(b);
}

/*
 * Whether a complete row of margin m is offered to the k best, whose bar
 * (sign * the k-th best margin, -inf while fewer than k are held) is
 * threshold.  PostgreSQL orders NaN above every number (float8): for the
 * highest margins a NaN is the best (it reaches any bar but a NaN one: a
 * tie, which the earlier row wins), for the lowest the worst (it reaches
 * only an open bar, and every number beats a NaN bar).  (A linear model's
 * NaN margin is +inf times weights of both signs; a tree model's, sums
 * that overflow.)
 */
static inline bool
reaches(const HbTopkBounds *b, double m, double threshold)
{
	if (isnan(threshold))
		return b->sign < 0 && !isnan(m);
	if (isnan(m))
		return b->sign > 0 || threshold == -INFINITY;
	return b->sign * m >= threshold;
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
 * PTT path: rows in chunks (HbExecChunk, exec.h), trees in blocks; after
 * each block the rows that can no longer make it are dropped, so later
 * blocks run on fewer rows.  Two schedules over the same chunk: fixed
 * blocks (score_blocks) for a plain chunk, whose every run goes through
 * PTT's range kernel and recomputes the rows' keys, and checks as often as
 * they pay with a high bar first (score_chunks) for the compact chunk,
 * which ranks its rows once per load.
 */
#define PTT_CHUNK 1024			/* rows per load of a plain chunk */

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
score_blocks(HbExecChunk *c, const HbPlan *p, const HbTopkBounds *b,
			 const double *x, size_t n, double *threshold, HbTopkOffer offer,
			 void *arg, HbTopkStats *stats)
{
	int			nf = p->n_features;
	int			cap = hb_exec_chunk_cap(c);
	double	   *acc = hb_alloc(sizeof(double) * cap);
	uint8_t    *keep = hb_alloc(cap);
	int			tb = ptt_tree_block(p);

	if (!acc || !keep)
	{
		hb_free(acc);
		hb_free(keep);
		return false;
	}
	for (size_t r0 = 0, nb = 0; r0 < n; r0 += nb)
	{
		/* small chunks until K rows are held, so that pruning starts early */
		size_t		chunk = isinf(*threshold) ? TOPK_CHUNK : (size_t) cap;
		int			nlive;
		const size_t *ids;

		nb = n - r0 < chunk ? n - r0 : chunk;
		nlive = (int) nb;
		hb_exec_chunk_load(c, x + r0 * nf, nlive, r0);
		for (int t0 = 0; t0 < p->n_trees && nlive > 0; t0 += tb)
		{
			int			t1 = t0 + tb < p->n_trees ? t0 + tb : p->n_trees;
			int			kept = 0;

			hb_exec_chunk_run(c, nlive, t0, t1);
			stats->pairs_scored += (int64_t) nlive * (t1 - t0);
			if (t1 == p->n_trees)
				break;
			hb_exec_chunk_margins(c, acc);
			for (int i = 0; i < nlive; i++)
			{
				keep[i] = !(upper_bound(b, p, acc[i], t1) < *threshold);
				kept += keep[i];
			}
			if (kept < nlive)
				hb_exec_chunk_drop(c, keep);
			nlive = kept;
		}
		/* survivors' sums ran in model tree order: they are exact */
		hb_exec_chunk_margins(c, acc);
		ids = hb_exec_chunk_ids(c);
		for (int i = 0; i < nlive; i++)
			if (b->sign * acc[i] >= *threshold)
				*threshold = offer(arg, ids[i], acc[i]);
		stats->rows += nb;
		stats->rows_full += nlive;
		hb_check_interrupts();
	}
	hb_free(acc);
	hb_free(keep);
	return true;
}

/*
 * Compact chunk schedule: rows ranked once per load, trees in blocks
 * between checks; rows that can no longer make it are closed.
 *
 * A check costs a pass over the chunk's sums, no ranking, but checks every
 * 8 trees measured slower than every 16 (fewer pairs, more passes and
 * shorter kernel runs: docs/strategies.md), so they come at least
 * TOPK_MIN_GAP trees apart, and later while even the open row of lowest
 * partial sum could not be closed if its sum stayed where it is (a guess
 * for scheduling only: sums move; decisions use upper_bound).  Closed rows
 * leave the chunk at once: the last open rows take their places, which
 * moves no more rows than were closed (hb_exec_chunk_drop; selecting the
 * open rows in order moved every one of them, and paid only when held
 * back until the closed rows would cost 16 times the open rows' trees:
 * 1.09x full scoring against 1.13x now, in one run).
 *
 * A high bar first: while fewer than K rows are held (the threshold is
 * -infinity) nothing can be closed, so after the first block the open rows
 * of highest partial sums, the likeliest to be in the top K, are scored to
 * the end first, in waves of 64, 128, 256, ... rows, until the threshold is
 * set; the other rows meet it from the next check on.  (Waves from 8 rows
 * scored as many pairs and ran slower at K = 1000: small waves waste the
 * kernel's groups.)  Offers may then come out of input order: the caller
 * ranks ties by row, not by offer.
 */
#define TOPK_FIRST_BLOCK	50	/* trees before the first check, at most */
#define TOPK_MIN_GAP		16	/* fewest trees between two checks */
#define TOPK_MAX_GAP		64	/* most trees between two checks */
#define TOPK_FIRST_WAVE		64	/* rows of the high bar's first wave */

typedef struct TopkOrder
{
	double		v;
	int32_t		row;
} TopkOrder;

/* best first (larger sign * partial), ties by position: deterministic */
static int
order_cmp(const void *a, const void *b)
{
	const TopkOrder *x = a,
			   *y = b;

	if (x->v != y->v)
		return x->v > y->v ? -1 : 1;
	return x->row - y->row;
}

/* chunk order */
static int
order_row_cmp(const void *a, const void *b)
{
	return ((const TopkOrder *) a)->row - ((const TopkOrder *) b)->row;
}

/* Next check after tree t: see the comment above. */
static int
next_check(const HbTopkBounds *b, int t, double pmin, double threshold)
{
	int			lo = t + TOPK_MIN_GAP,
				hi = t + TOPK_MAX_GAP;

	if (hi >= b->n_trees)
		hi = b->n_trees;
	if (lo >= hi)
		return hi;
	if (isinf(threshold))
		return lo;
	/* first t' in [lo, hi) with pmin + emax[t'] < threshold (emax falls) */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (pmin + b->emax[mid] < threshold)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static bool
score_chunks(HbExecChunk *c, const HbPlan *p, const HbTopkBounds *b,
			 const double *x, size_t n, double *threshold, HbTopkOffer offer,
			 void *arg, HbTopkStats *stats)
{
	int			nf = p->n_features;
	int			nt = p->n_trees;
	int			cap;
	double	   *m = NULL;
	uint8_t    *open = NULL;
	int32_t    *keep = NULL;
	TopkOrder  *ord = NULL;
	int			first = nt / 10 < TOPK_MIN_GAP ? TOPK_MIN_GAP :
		nt / 10 > TOPK_FIRST_BLOCK ? TOPK_FIRST_BLOCK : nt / 10;

	cap = hb_exec_chunk_cap(c);
	m = hb_alloc(sizeof(double) * cap);
	open = hb_alloc(cap);
	keep = hb_alloc(sizeof(int32_t) * cap);
	ord = hb_alloc(sizeof(TopkOrder) * cap);
	if (!m || !open || !keep || !ord)
	{
		hb_free(m);
		hb_free(open);
		hb_free(keep);
		hb_free(ord);
		return false;
	}
	if (first > nt)
		first = nt;

	for (size_t r0 = 0; r0 < n; r0 += cap)
	{
		int			nb = n - r0 < (size_t) cap ? (int) (n - r0) : cap;
		int			held = nb;	/* rows in the chunk */
		int			nopen = nb;
		int			t = 0,
					t1 = first;

		hb_exec_chunk_load(c, x + r0 * nf, nb, r0);
		memset(open, 1, nb);
		while (t < nt && nopen > 0)
		{
			double		pmin = INFINITY;

			hb_exec_chunk_run(c, held, t, t1);
			stats->pairs_scored += (int64_t) held * (t1 - t);
			t = t1;
			if (t == nt)
				break;
			hb_exec_chunk_margins(c, m);

			/* the high bar: the likeliest rows to the end first */
			for (int wave = TOPK_FIRST_WAVE; isinf(*threshold) && nopen > 0; wave *= 2)
			{
				const size_t *ids;
				int			w = 0,
							no = 0;

				for (int i = 0; i < held; i++)
					if (open[i])
					{
						ord[no].v = b->sign * m[i];
						ord[no].row = i;
						no++;
					}
				qsort(ord, no, sizeof(TopkOrder), order_cmp);
				w = no < wave ? no : wave;
				for (int i = 0; i < no; i++)
					keep[i] = ord[i].row;
				/* the rest after the wave, in chunk order */
				qsort(ord + w, no - w, sizeof(TopkOrder), order_row_cmp);
				for (int i = w; i < no; i++)
					keep[i] = ord[i].row;
				hb_exec_chunk_select(c, keep, no);
				held = nopen = no;
				hb_exec_chunk_run(c, w, t, nt);
				stats->pairs_scored += (int64_t) w * (nt - t);
				stats->rows_full += w;
				hb_exec_chunk_margins(c, m);
				ids = hb_exec_chunk_ids(c);
				for (int i = 0; i < w; i++)
					if (reaches(b, m[i], *threshold))
						*threshold = offer(arg, ids[i], m[i]);
				for (int i = w; i < no; i++)
					keep[i - w] = i;
				hb_exec_chunk_select(c, keep, no - w);
				held = nopen = no - w;
				hb_exec_chunk_margins(c, m);
				memset(open, 1, held);
			}

			/* drop the rows that can no longer reach the K-th best */
			for (int i = 0; i < held; i++)
			{
				if (!open[i])
					continue;
				if (upper_bound(b, p, m[i], t) < *threshold)
				{
					open[i] = 0;
					nopen--;
				}
				else if (b->sign * m[i] < pmin)
					pmin = b->sign * m[i];
			}
			/* the last open rows take the closed rows' places */
			if (held > nopen)
			{
				hb_exec_chunk_drop(c, open);
				held = nopen;
			}
			t1 = next_check(b, t, pmin, *threshold);
		}
		/* the open rows ran every tree in model order: exact margins */
		if (nopen > 0)
		{
			const size_t *ids = hb_exec_chunk_ids(c);

			hb_exec_chunk_margins(c, m);
			for (int i = 0; i < held; i++)
			{
				if (!open[i])
					continue;
				stats->rows_full++;
				if (reaches(b, m[i], *threshold))
					*threshold = offer(arg, ids[i], m[i]);
			}
		}
		stats->rows += nb;
		hb_check_interrupts();
	}
	hb_free(m);
	hb_free(open);
	hb_free(keep);
	hb_free(ord);
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

		if (m != NULL && hb_exec_trees(p, HB_STRATEGY_AUTO, x, n, 0, p->n_trees,
									   HB_EXEC_INIT | HB_EXEC_DEVICE_ONLY, m))
		{
			for (size_t r = 0; r < n; r++)
				if (reaches(b, m[r], *threshold))
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
				if (reaches(b, m[i], *threshold))
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

	/*
	 * Batches big enough for PTT take its chunks (the compact kernel where
	 * it pays, the range kernel otherwise: hb_exec_chunk_new decides); the
	 * rest walk with TT.
	 */
	if (p->ptt && n >= TOPK_CHUNK && hb_plan_strategy(p, n) == HB_STRATEGY_PTT)
	{
		HbExecChunk *c = hb_exec_chunk_new(p, HB_STRATEGY_PTT, PTT_CHUNK);
		bool		ok = c != NULL &&
			(hb_exec_chunk_compact(c) ?
			 score_chunks(c, p, b, x, n, threshold, offer, arg, stats) :
			 score_blocks(c, p, b, x, n, threshold, offer, arg, stats));

		hb_exec_chunk_free(c);
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

			if (reaches(b, m, *threshold))
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
