/*
 * early_exit.c
 *	  Predicted classes, with an exact early exit for tree classifiers.
 *
 * Every tree's leaves lie in [min, max], so after the first m trees (in
 * model order) each output's final margin lies in [partial + the remaining
 * trees' minima, partial + their maxima].  Rows are scored tree block by
 * tree block; once those intervals settle the class (binary: the whole
 * interval on one side of 0; multiclass: the leading class's lower end
 * above every other class's upper end) the row stops.  The rows still open
 * are compacted and go on with the next block.
 *
 * The answer never changes:
 *	- trees stay in model order, so an open row's sums are the very float32
 *	  (or double) sums of full scoring, and a row that runs to the end gets
 *	  its class from exactly the margins hb_predict sees;
 *	- the bounds are widened by a slack that covers the rounding of every
 *	  remaining addition (each errs by at most half an ulp of a running sum
 *	  no larger than |partial| + the remaining |leaf| maxima) and of the
 *	  bound's own arithmetic;
 *	- binary decisions keep a gap around the margin where the class flips
 *	  (hb_binary_cut: 0 for a logit, 0.5 for a margin that is the
 *	  probability; none for PROBIT, which never exits early): the class
 *	  is "probability > 0.5" of the (float32 for XGBoost) sigmoid, which
 *	  rounds to exactly 0.5 for margins within about 1e-7 of 0, so only
 *	  margins surely beyond cut +- HB_EE_GAP are decided early and the rest
 *	  are scored to the end;
 *	- multiclass decisions are strict (lower end > upper end), so the
 *	  decided class is the unique maximum and ties never arise.
 * NaN inputs and categorical splits need nothing special: the bounds hold
 * for every leaf, whichever path a row takes.  A model whose sums could
 * overflow (leaves near the largest float) never exits early.
 */
#include "plan_int.h"
#include "exec.h"
#include "early_exit.h"

#include <float.h>
#include <string.h>

#define EE_CHUNK		64		/* rows walked together (traversal path) */
#define EE_PTT_CHUNK	1024	/* rows per chunk (PTT path) */
#define EE_MIN_BLOCK	8		/* fewest trees between two checks */
#define EE_SHRINK		0.7		/* check when the open width shrank this much */
#define HB_EE_GAP		1e-5	/* binary: margins nearer 0 are not decided early */

struct HbClassBounds
{
	int32_t		n_trees;
	int32_t		k;				/* outputs */
	bool		usable;
	double		cut;			/* binary: class 1 above it (hb_binary_cut) */
	/* (n_trees + 1) x k: over trees t.., per output */
	double	   *smin;			/* sum of leaf minima */
	double	   *smax;			/* sum of leaf maxima */
	double	   *sabs;			/* sum of the largest |leaf| */
	int32_t    *scnt;			/* number of trees */
	/* tree counts after which rows are checked, ascending, < n_trees */
	int32_t    *checks;
	int32_t		n_checks;
	/* binary: max of smax over t.. (non-increasing), min of smin (non-decreasing) */
	double	   *emax;
	double	   *emin;
};

bool
hb_class_supported(const HbPlan *p)
{
	return (p->task == HB_TASK_BINARY && p->n_outputs == 1) ||
		(p->task == HB_TASK_MULTICLASS && p->n_outputs == p->n_classes &&
		 p->n_classes >= 2);
}

/*
 * A binary classifier's class is 1 where hb_link_proba's positive
 * probability is above 0.5: for a margin that is a logit (every link but
 * two), where the margin is above 0 (but within about 1e-7 of it, where a
 * float32 link rounds to 0.5); for a margin that is the probability itself
 * (ONNX tree classifiers without a post-transform: a random forest's
 * averaged votes), where it is above 0.5.  onnxruntime's PROBIT maps the
 * margin to a z-score, NaN outside [0, 1]: its class is 1 on an interval,
 * not above a cut.
 */
bool
hb_binary_cut(const HbPlan *p, double *cut)
{
	switch (p->link)
	{
		case HB_LINK_PROBABILITY:
			*cut = 0.5;
			return true;
		case HB_LINK_PROBIT:
			return false;
		default:
			*cut = 0.0;
			return true;
	}
}

/* Width of the interval the remaining trees t.. can still add, all outputs. */
static double
open_width(const HbClassBounds *b, int t)
{
	double		w = 0.0;

	for (int g = 0; g < b->k; g++)
		w += b->smax[(size_t) t * b->k + g] - b->smin[(size_t) t * b->k + g];
	return w;
}

/*
 * When to check.  A row can only be decided once the remaining trees'
 * interval is narrower than its distance to the boundary, and in boosted
 * ensembles that interval shrinks slowly (late trees still have large
 * leaves for the rare rows they fit), so decisions cluster near the end.
 * Checks are placed where the open width has shrunk by EE_SHRINK since the
 * last one (at least EE_MIN_BLOCK trees apart, at most a quarter of the
 * model): few checks early, where they would rarely decide anything (and
 * where each cost the eight-row walk a recomputation of its keys), more
 * near the end.  Denser checks on the compact kernel's chunks, which pay
 * no ranking for them, did not help: shrinking by 0.9 or 0.97 a check
 * scored 95.5% and 98.3% of the pairs on the fraud model against 94.4%
 * (fewer checks where the rows are decided, in the last 20 trees;
 * measured while decided rows were still scored until a compaction).
 */
static void
plan_checks(HbClassBounds *b)
{
	int			k = b->k;
	int			min_block = (EE_MIN_BLOCK + k - 1) / k * k;
	int			max_gap = b->n_trees / 4 > min_block ? b->n_trees / 4 : min_block;
	double		last_w = open_width(b, 0);
	int			last = 0;

	b->n_checks = 0;
	for (int t = min_block; t < b->n_trees; t++)
	{
		double		w = open_width(b, t);

		if (t - last < min_block)
			continue;
		if (w <= last_w * EE_SHRINK || t - last >= max_gap)
		{
			b->checks[b->n_checks++] = t;
			last = t;
			last_w = w;
		}
	}
}

HbClassBounds *
hb_class_bounds(const HbPlan *p)
{
	HbClassBounds *b = hb_alloc0(sizeof(HbClassBounds));
	int			k = p->n_outputs;
	int			nt = p->estimator == HB_EST_TREES ? p->n_trees : 0;
	size_t		cells = (size_t) (nt + 1) * k;

	if (b == NULL)
		return NULL;
	b->n_trees = nt;
	b->k = k;
	b->smin = hb_alloc0(sizeof(double) * cells);
	b->smax = hb_alloc0(sizeof(double) * cells);
	b->sabs = hb_alloc0(sizeof(double) * cells);
	b->scnt = hb_alloc0(sizeof(int32_t) * cells);
	b->checks = hb_alloc0(sizeof(int32_t) * (nt + 1));
	b->emax = hb_alloc0(sizeof(double) * (nt + 1));
	b->emin = hb_alloc0(sizeof(double) * (nt + 1));
	if (!b->smin || !b->smax || !b->sabs || !b->scnt || !b->checks ||
		!b->emax || !b->emin)
	{
		hb_class_bounds_free(b);
		return NULL;
	}
	/* (not where the class is not the largest margin's: hb_link_argmax) */
	b->usable = nt > 0 && hb_class_supported(p) && hb_link_class_is_margins(p) &&
		(k > 1 || hb_binary_cut(p, &b->cut));
	for (int t = nt - 1; t >= 0; t--)
	{
		int64_t		start = p->tree_root[t];
		int64_t		end = t + 1 < p->n_trees ? p->tree_root[t + 1] : p->n_nodes;
		double		mn = DBL_MAX,
					mx = -DBL_MAX,
					ab = 0.0;
		size_t		row = (size_t) t * k;
		int			g = p->tree_group[t];

		if ((t & 255) == 0)
			hb_check_interrupts();
		/* a tree's leaves are the nodes of its range with feature < 0 */
		for (int64_t i = start; i < end; i++)
		{
			double		v;

			if (p->nodes[i].feature >= 0)
				continue;
			v = p->sum_f32 ? (double) p->nodes[i].thr : p->leaf_d[i];
			if (!isfinite(v))
				b->usable = false;
			if (v < mn)
				mn = v;
			if (v > mx)
				mx = v;
			if (fabs(v) > ab)
				ab = fabs(v);
		}
		memcpy(b->smin + row, b->smin + row + k, sizeof(double) * k);
		memcpy(b->smax + row, b->smax + row + k, sizeof(double) * k);
		memcpy(b->sabs + row, b->sabs + row + k, sizeof(double) * k);
		memcpy(b->scnt + row, b->scnt + row + k, sizeof(int32_t) * k);
		if (g < 0 || g >= k || mn > mx)
		{
			b->usable = false;
			continue;
		}
		b->smin[row + g] += mn;
		b->smax[row + g] += mx;
		b->sabs[row + g] += ab;
		b->scnt[row + g] += 1;
	}
	/*
	 * The bounds and their slack assume sums that never overflow: a float32
	 * running sum that reaches infinity no longer lies in its interval (and
	 * margins that all saturate tie where the real sums do not).  A running
	 * sum is at most the base margin plus the largest |leaf| of every tree,
	 * so a model whose leaves could carry it near the largest float (or
	 * double) scores every row in full.
	 */
	for (int g = 0; g < k && b->usable; g++)
		if (!(fabs(p->base_margin[g]) + b->sabs[g] <
			  0.5 * (p->sum_f32 ? FLT_MAX : DBL_MAX)))
			b->usable = false;
	plan_checks(b);
	if (k == 1)
		for (int t = nt - 1; t >= 0; t--)
		{
			b->emax[t] = fmax(b->smax[t], b->emax[t + 1]);
			b->emin[t] = fmin(b->smin[t], b->emin[t + 1]);
		}
	return b;
}

void
hb_class_bounds_free(HbClassBounds *b)
{
	if (b == NULL)
		return;
	hb_free(b->smin);
	hb_free(b->smax);
	hb_free(b->sabs);
	hb_free(b->scnt);
	hb_free(b->checks);
	hb_free(b->emax);
	hb_free(b->emin);
	hb_free(b);
}

static inline int32_t
class_of(const HbPlan *p, const double *m)
{
	if (p->task == HB_TASK_MULTICLASS)
		return hb_link_argmax(p, m);	/* as hb_predict's */
	else
	{
		double		pr[2];

		/* the probability hb_predict_proba gives, thresholded as the libraries do */
		hb_link_proba(p, m, 1, pr);
		return pr[1] > 0.5 ? 1 : 0;
	}
}

void
hb_link_class(const HbPlan *p, const double *margins, size_t n, int32_t *out)
{
	for (size_t r = 0; r < n; r++)
		out[r] = class_of(p, margins + r * p->n_outputs);
}

/*
 * Rounding slack of output g's bound after trees [0, t): the remaining
 * additions, the suffix sums themselves (double) and the few operations of
 * the bound, with room to spare.
 */
static inline double
slack(const HbPlan *p, const HbClassBounds *b, size_t cell, double partial)
{
	double		eps = p->sum_f32 ? FLT_EPSILON : 2.0 * DBL_EPSILON;

	return (fabs(partial) + b->sabs[cell]) * eps * (b->scnt[cell] + 4);
}

/* The class of a row whose first t trees are summed in acc, or -1 if open. */
static inline int32_t
decided(const HbPlan *p, const HbClassBounds *b, const double *acc, int t)
{
	int			k = b->k;
	size_t		row = (size_t) t * k;

	if (k == 1)
	{
		/* (the slack: of the sums' rounding, |partial| as it is) */
		double		s = slack(p, b, row, acc[0]);
		double		a = acc[0] - b->cut;

		if (a + b->smin[row] - s > HB_EE_GAP)
			return 1;
		if (a + b->smax[row] + s < -HB_EE_GAP)
			return 0;
		return -1;
	}
	else
	{
		int			best = 0;
		double		lb = -DBL_MAX;

		for (int g = 0; g < k; g++)
		{
			double		l = acc[g] + b->smin[row + g] - slack(p, b, row + g, acc[g]);

			if (l > lb)
			{
				lb = l;
				best = g;
			}
		}
		for (int g = 0; g < k; g++)
		{
			if (g == best)
				continue;
			if (!(lb > acc[g] + b->smax[row + g] + slack(p, b, row + g, acc[g])))
				return -1;
		}
		return best;
	}
}

/* Every row on every tree: the reference, and the path without bounds. */
static void
full_classes(const HbPlan *p, const double *x, size_t n, int32_t *out,
			 double *buf, size_t buf_rows, HbClassStats *stats)
{
	for (size_t r0 = 0; r0 < n; r0 += buf_rows)
	{
		size_t		nb = n - r0 < buf_rows ? n - r0 : buf_rows;

		hb_plan_margins(p, x + r0 * p->n_features, nb, buf);
		hb_link_class(p, buf, nb, out + r0);
	}
	if (stats)
	{
		stats->rows += n;
		stats->trees_scored += (int64_t) n * p->n_trees;
		stats->trees_total += (int64_t) n * p->n_trees;
	}
}

/* Trees [t0, t1) of segment c: from one check to the next (or the end). */
static inline void
segment(const HbClassBounds *b, int c, int n_trees, int *t0, int *t1)
{
	*t0 = c == 0 ? 0 : b->checks[c - 1];
	*t1 = c < b->n_checks ? b->checks[c] : n_trees;
}

/*
 * Binary: the first tree count at which a row with this partial sum could
 * be decided if the sum did not move, ignoring the rounding slack.  Only a
 * guess for scheduling checks (sums do move); decisions use decided().
 */
static int
earliest(const HbClassBounds *b, double a)
{
	int			lo = 0,
				hi = b->n_trees + 1;
	int			neg,
				pos;

	a -= b->cut;
	/* first t with a + emax[t] < -gap (emax does not increase) */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (a + b->emax[mid] < -HB_EE_GAP)
			hi = mid;
		else
			lo = mid + 1;
	}
	neg = lo;
	lo = 0;
	hi = b->n_trees + 1;
	/* first t with a + emin[t] > gap (emin does not decrease) */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (a + b->emin[mid] > HB_EE_GAP)
			hi = mid;
		else
			lo = mid + 1;
	}
	pos = lo;
	return neg < pos ? neg : pos;
}

/*
 * The PTT path: rows in chunks (HbExecChunk: PTT's compact chunk, which
 * ranks them once, where it pays, else plain copies run through the range
 * kernel), trees from one check to the next; decided rows leave the chunk
 * at once (hb_exec_chunk_drop).
 */
static bool
score_chunks(const HbPlan *p, const HbClassBounds *b, const double *x, size_t n,
			 int32_t *out, HbClassStats *st)
{
	int			nf = p->n_features;
	int			k = p->n_outputs;
	int			nt = p->n_trees;
	HbExecChunk *c = hb_exec_chunk_new(p, HB_STRATEGY_PTT, EE_PTT_CHUNK);
	int			cap;
	double	   *acc = NULL;
	uint8_t    *open = NULL;

	if (c == NULL)
		return false;
	cap = hb_exec_chunk_cap(c);
	acc = hb_alloc(sizeof(double) * cap * k);
	open = hb_alloc(cap);
	if (!acc || !open)
	{
		hb_exec_chunk_free(c);
		hb_free(acc);
		hb_free(open);
		return false;
	}
	for (size_t r0 = 0; r0 < n; r0 += cap)
	{
		int			nb = n - r0 < (size_t) cap ? (int) (n - r0) : cap;
		int			held = nb,
					nopen = nb;

		hb_exec_chunk_load(c, x + r0 * nf, nb, r0);
		memset(open, 1, nb);
		for (int t0 = 0, t1, ci = 0; nopen > 0; t0 = t1)
		{
			const size_t *ids;
			double		amin = DBL_MAX,
						amax = -DBL_MAX;

			t1 = ci < b->n_checks ? b->checks[ci] : nt;
			hb_exec_chunk_run(c, held, t0, t1);
			st->trees_scored += (int64_t) held * (t1 - t0);
			if (t1 == nt)
				break;
			hb_exec_chunk_margins(c, acc);
			ids = hb_exec_chunk_ids(c);
			for (int i = 0; i < held; i++)
			{
				int32_t		cls;

				if (!open[i])
					continue;
				cls = decided(p, b, acc + (size_t) i * k, t1);
				if (cls >= 0)
				{
					out[ids[i]] = cls;
					st->rows_early++;
					open[i] = 0;
					nopen--;
					continue;
				}
				if (acc[(size_t) i * k] < amin)
					amin = acc[(size_t) i * k];
				if (acc[(size_t) i * k] > amax)
					amax = acc[(size_t) i * k];
			}
			/* the last open rows take the decided rows' places */
			if (held > nopen)
			{
				hb_exec_chunk_drop(c, open);
				held = nopen;
			}

			/* skip the checks before any open row could plausibly be decided */
			ci++;
			if (k == 1 && nopen > 0)
			{
				int			tmin = earliest(b, amin);
				int			e = earliest(b, amax);

				if (e < tmin)
					tmin = e;
				while (ci < b->n_checks && b->checks[ci] < tmin)
					ci++;
			}
		}
		/* the rows still open ran every tree in model order: exact margins */
		if (nopen > 0)
		{
			const size_t *ids = hb_exec_chunk_ids(c);

			hb_exec_chunk_margins(c, acc);
			for (int i = 0; i < held; i++)
				if (open[i])
					out[ids[i]] = class_of(p, acc + (size_t) i * k);
		}
		st->rows += nb;
		st->trees_total += (int64_t) nb * nt;
		hb_check_interrupts();
	}
	hb_exec_chunk_free(c);
	hb_free(acc);
	hb_free(open);
	return true;
}

/*
 * Traversal path (small batches, single rows, models without a PTT
 * layout).  Running sums of float32 models are kept as the floats they are,
 * in doubles, the way the PTT kernel keeps them.
 */
static bool
score_tt(const HbPlan *p, const HbClassBounds *b, const double *x, size_t n,
		 int32_t *out, HbClassStats *st)
{
	int			nf = p->n_features;
	int			k = p->n_outputs;
	double		stack_acc[EE_CHUNK * 4];
	double	   *acc = stack_acc;

	if (k > 4)
	{
		acc = hb_alloc(sizeof(double) * EE_CHUNK * k);
		if (acc == NULL)
			return false;
	}
	for (size_t r0 = 0; r0 < n; r0 += EE_CHUNK)
	{
		size_t		nb = n - r0 < EE_CHUNK ? n - r0 : EE_CHUNK;
		int32_t		live[EE_CHUNK];
		int			nlive = (int) nb;
		const double *xb = x + r0 * nf;

		for (int i = 0; i < nlive; i++)
			live[i] = i;
		hb_exec_base(p, nb, acc);
		for (int c = 0; c <= b->n_checks && nlive > 0; c++)
		{
			int			t0,
						t1;
			int			kept = 0;

			segment(b, c, p->n_trees, &t0, &t1);
			for (int t = t0; t < t1; t++)
			{
				int64_t		root = p->tree_root[t];
				int			g = p->tree_group[t];

				if (p->sum_f32)
					for (int i = 0; i < nlive; i++)
					{
						double	   *a = &acc[live[i] * k + g];

						*a = (double) ((float) *a +
									   p->nodes[hb_walk_f32(p, root, xb + (size_t) live[i] * nf)].thr);
					}
				else
					for (int i = 0; i < nlive; i++)
						acc[live[i] * k + g] +=
							p->leaf_d[hb_walk_f64(p, root, xb + (size_t) live[i] * nf)];
			}
			st->trees_scored += (int64_t) nlive * (t1 - t0);
			if (t1 == p->n_trees)
				break;
			for (int i = 0; i < nlive; i++)
			{
				int			r = live[i];
				int32_t		c = decided(p, b, acc + r * k, t1);

				if (c >= 0)
				{
					out[r0 + r] = c;
					st->rows_early++;
				}
				else
					live[kept++] = r;
			}
			nlive = kept;
		}
		for (int i = 0; i < nlive; i++)
			out[r0 + live[i]] = class_of(p, acc + live[i] * k);
		st->rows += nb;
		st->trees_total += (int64_t) nb * p->n_trees;
		if ((r0 & 1023) == 0 && r0 > 0)
			hb_check_interrupts();
	}
	if (acc != stack_acc)
		hb_free(acc);
	return true;
}

/*
 * One row, one margin (binary): the row-at-a-time path of SQL.  The running
 * sum stays in a register; with the general loop's store to a possibly
 * aliased accumulator after every tree, a PGXS build (no strict aliasing)
 * reloaded the plan's arrays each time and walked a third slower than
 * full scoring.
 */
static void
score_one_binary(const HbPlan *p, const HbClassBounds *b, const double *x,
				 int32_t *out, HbClassStats *st)
{
	const HbFlatNode *nodes = p->nodes;
	const int32_t *root = p->tree_root;
	int			nt = p->n_trees;
	int			done = nt;
	int32_t		cls = -1;

	st->rows++;
	st->trees_total += nt;
	if (p->sum_f32)
	{
		float		s = (float) p->base_margin[0];

		for (int c = 0; c <= b->n_checks; c++)
		{
			int			t0,
						t1;
			double		a;

			segment(b, c, nt, &t0, &t1);
			for (int t = t0; t < t1; t++)
				s += nodes[hb_walk_f32(p, root[t], x)].thr;
			a = s;
			if (t1 < nt && (cls = decided(p, b, &a, t1)) >= 0)
			{
				done = t1;
				break;
			}
		}
		if (cls < 0)
		{
			double		a = s;

			cls = class_of(p, &a);
		}
	}
	else
	{
		double		s = p->base_margin[0];

		for (int c = 0; c <= b->n_checks; c++)
		{
			int			t0,
						t1;

			segment(b, c, nt, &t0, &t1);
			for (int t = t0; t < t1; t++)
				s += p->leaf_d[hb_walk_f64(p, root[t], x)];
			if (t1 < nt && (cls = decided(p, b, &s, t1)) >= 0)
			{
				done = t1;
				break;
			}
		}
		if (cls < 0)
			cls = class_of(p, &s);
	}
	if (done < nt)
		st->rows_early++;
	st->trees_scored += done;
	*out = cls;
}

bool
hb_early_exit_classes(const HbPlan *p, const HbClassBounds *b, const double *x,
					  size_t n, int32_t *out, HbClassStats *stats)
{
	HbClassStats dummy = {0};
	double	   *snapped = NULL;
	bool		ok;

	if (stats == NULL)
		stats = &dummy;
	if (n == 0)
		return true;
	if (b == NULL || !b->usable || p->estimator != HB_EST_TREES ||
		b->n_trees != p->n_trees || b->k != p->n_outputs)
	{
		size_t		rows = n < EE_PTT_CHUNK ? n : EE_PTT_CHUNK;
		double	   *buf = hb_alloc(sizeof(double) * rows * p->n_outputs);

		if (buf == NULL)
			return false;
		full_classes(p, x, n, out, buf, rows, stats);
		hb_free(buf);
		return true;
	}

	/* LightGBM's zero snapping, once per row rather than per node */
	if (p->zero_snap)
	{
		snapped = hb_alloc(sizeof(double) * n * p->n_features);
		if (snapped == NULL)
			return false;
		for (size_t i = 0; i < n * p->n_features; i++)
			snapped[i] = fabs(x[i]) <= HB_ZERO_THRESHOLD ? 0.0 : x[i];
		x = snapped;
	}
	if (n == 1 && p->n_outputs == 1)
	{
		score_one_binary(p, b, x, out, stats);
		ok = true;
	}
	else if (p->ptt && n >= EE_CHUNK && hb_plan_strategy(p, n) == HB_STRATEGY_PTT)
		ok = score_chunks(p, b, x, n, out, stats);
	else
		ok = score_tt(p, b, x, n, out, stats);
	hb_free(snapped);
	return ok;
}
