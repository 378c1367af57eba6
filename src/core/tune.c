/*
 * tune.c
 *	  Candidate approximations of a model, measured on a sample, and the
 *	  choice of the cheapest one that meets an accuracy target.
 *
 * The sample is split once, by a seeded shuffle, into a fitting half
 * (permutation importances, least-squares fits, calibrations) and an
 * evaluation half that no candidate has seen: every accuracy figure comes
 * from the evaluation half only.
 *
 * Top-K: what matters is whether the cheap model keeps the rows the full
 * model ranks first.  Among the `tail` best rows of a half by the full
 * model, a candidate misses those whose cheap score is below its cut; with
 * the cut at the (e+1)-th lowest cheap score of those rows, the share of
 * such rows a fresh sample would miss is bounded by the one-sided
 * Clopper-Pearson bound after e misses, which must leave precision >=
 * target.  For each e of a short menu fixed in advance (0, 1, 2, 4, 8),
 * `tail` is the fewest rows for which that holds.  The fitting half is
 * split again: its first half fits and calibrates the candidates, its
 * second (the selection rows, out of sample for every candidate) chooses
 * the candidate and its e (the configuration of lowest expected cost
 * there); the cut and the bound then come from the evaluation half alone,
 * at the full confidence, since nothing chosen looked at it.  The
 * statement is about rows at least `tail` rows up the evaluation half's
 * ranking; a bigger input's top k are further up, and are kept at least as
 * often as long as the cheap model keeps a row no less often when its full
 * score is higher.  The bootstrap of the sample's top rows, which Willump
 * uses, understates how much a fresh set's top k vary (see
 * docs/willump.md).  A second stage behind the chosen candidate (a
 * calibrated prefix of the model plus a slack, approx.h) is chosen on the
 * selection rows too, and makes the screening score min(cheap, second)
 * the one score the cut and the bound are about.
 *
 * Cascade: the cheap model decides a row when its confidence (the margin
 * gap, approx.c) is at least a threshold.  The accuracy loss of a threshold
 * is the share of evaluation rows that the cheap model decides differently
 * from the full model.  Thresholds are tested on a fixed grid from the most
 * to the least conservative (fixed-sequence testing): each one passes when
 * the one-sided Clopper-Pearson upper bound of its loss is at most the
 * target, and the first failure stops the walk.  The level is split over
 * the candidates (Bonferroni), so the chosen configuration's loss is at
 * most the target with the requested confidence, whichever candidate wins.
 *
 * Candidates: prefixes of the ensemble; linear models and small tree
 * ensembles (distill.c) fitted to the full margins on the features a
 * knapsack by importance per unit of cost picks.
 */
#include "plan_int.h"
#include "exec.h"
#include "distill.h"
#include "early_exit.h"
#include "tune.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* LAPACK least squares (OpenBLAS ships LAPACK) */
extern void dgels_(const char *trans, const int *m, const int *n,
				   const int *nrhs, double *a, const int *lda, double *b,
				   const int *ldb, double *work, const int *lwork, int *info);

#define TIMING_ROWS 8192
#define MAX_CANDIDATES 48

/*
 * top-K's second stage: prefixes of 1/64 to 1/2 of the model's trees, and
 * a grid of slacks between the two scores (quantiles of their difference
 * on the selection rows' tail)
 */
#define MAX_REFINE 12
#define REFINE_SLACKS 5
#define GATE_MAX_FEATURES 64
#define GATE_SLACKS 6

/* top-K: misses allowed among the tail rows, each with its own tail size */
#define TOPK_MENU 5
static const int topk_menu[TOPK_MENU] = {0, 1, 2, 4, 8};

/* tree candidates: rows fitted on, (trees, depth), features */
#define TREES_FIT_ROWS 100000
#define TREES_MAX_FEATURES 64
#define N_TREES_SHAPES 2
#define N_TREES_SETS 2			/* a quarter of the cost, and everything */
static const int trees_shapes[N_TREES_SHAPES][2] = {{10, 6}, {20, 8}};

/* ---- random numbers: splitmix64, fully determined by the seed ---- */

void
hb_rng_seed(HbRng *r, uint64_t seed)
{
	r->s = seed ^ 0x9E3779B97F4A7C15ull;
}

uint64_t
hb_rng_next(HbRng *r)
{
	uint64_t	z = (r->s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint64_t
hb_rng_below(HbRng *r, uint64_t n)
{
	/* Lemire's multiply-shift; the bias is below 2^-32 for any n used here */
	return (uint64_t) (((unsigned __int128) hb_rng_next(r) * n) >> 64);
}

/* ---- binomial bounds ---- */

/* P(Bin(n, p) <= e) */
static double
binomial_cdf(int64_t e, int64_t n, double p)
{
	double		lp,
				lq,
				base,
				sum = 0.0;

	if (p <= 0.0)
		return 1.0;
	if (p >= 1.0)
		return e >= n ? 1.0 : 0.0;
	lp = log(p);
	lq = log1p(-p);
	base = lgamma((double) n + 1.0);
	for (int64_t i = 0; i <= e && i <= n; i++)
		sum += exp(base - lgamma((double) i + 1.0) - lgamma((double) (n - i) + 1.0) +
				   i * lp + (n - i) * lq);
	return sum > 1.0 ? 1.0 : sum;
}

double
hb_binomial_upper(int64_t e, int64_t n, double confidence)
{
	double		alpha = 1.0 - confidence;
	double		lo,
				hi;

	if (n <= 0 || e >= n)
		return 1.0;
	if (e == 0)
		return 1.0 - pow(alpha, 1.0 / (double) n);
	/* the p at which seeing e or fewer becomes as rare as alpha */
	lo = (double) e / (double) n;
	hi = 1.0;
	for (int it = 0; it < 60; it++)
	{
		double		mid = 0.5 * (lo + hi);

		if (binomial_cdf(e, n, mid) > alpha)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/* ---- helpers ---- */

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

typedef struct Work
{
	const HbPlan *p;
	const HbTuneSpec *spec;
	HbTuneProgress progress;
	void	   *arg;
	int			nf;
	int			k;				/* outputs */
	size_t		n_fit;
	size_t		n_eval;
	int			n_menu;			/* top-K: the (misses, tail) pairs that fit */
	int			menu_e[TOPK_MENU];
	int			menu_tail[TOPK_MENU];
	size_t		n_sel;			/* top-K: the second half of the fitting half,
								 * where candidates are compared */
	const double *x_sel;
	const double *m_sel;
	int32_t    *order_sel;		/* top-K: rows by full margin (selection rows) */
	int32_t    *order_eval;		/* and the evaluation half's */
	double	   *imp;			/* permutation importance per feature */
	size_t		n_time;			/* timing rows: the first of the evaluation rows */
	double	   *x_fit;
	double	   *x_eval;
	double	   *m_fit;			/* full margins */
	double	   *m_eval;
	double	   *buf;			/* n_time x k scratch, twice */
	HbTuneResult *res;
	double		model_ns;		/* the full model's trees per row */

	/*
	 * top-K's second stages: prefixes of the model, with their first-half
	 * calibrations and calibrated margins on the selection rows
	 */
	int			n_pre;
	int32_t		pre_trees[MAX_REFINE];
	double		pre_scale[MAX_REFINE];
	double		pre_shift[MAX_REFINE];
	double	   *pre_sel[MAX_REFINE];
} Work;

static void
say(Work *w, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static void
say(Work *w, const char *fmt,...)
{
	char		msg[256];
	va_list		ap;

	if (w->progress == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	w->progress(w->arg, msg);
}

/* Seconds are noisy on a shared machine: the best of a few runs. */
static double
time_full(Work *w)
{
	double		best = INFINITY;

	for (int rep = 0; rep < 3; rep++)
	{
		double		t0 = now_ns();

		hb_plan_margins(w->p, w->x_eval, w->n_time, w->buf);
		t0 = now_ns() - t0;
		if (t0 < best)
			best = t0;
	}
	return best / (double) w->n_time;
}

static double
time_cheap(Work *w, const HbApprox *a)
{
	double		best = INFINITY;
	double	   *raw = w->buf + w->n_time * w->k;

	for (int rep = 0; rep < 3; rep++)
	{
		double		t0 = now_ns();

		hb_approx_margins(w->p, a, w->x_eval, w->n_time, raw, w->buf);
		t0 = now_ns() - t0;
		if (t0 < best)
			best = t0;
	}
	return best / (double) w->n_time;
}

/* ---- candidates ---- */

static HbTuneCandidate *
add_candidate(Work *w, HbApprox *a)
{
	HbTuneResult *res = w->res;
	HbTuneCandidate *c;

	if (res->n_cand >= MAX_CANDIDATES)
	{
		hb_approx_free(a);
		return NULL;
	}
	c = &res->cand[res->n_cand++];
	memset(c, 0, sizeof(*c));
	c->approx = a;
	c->bar.slope = c->bar.floor = c->bar.margin = NAN;
	hb_approx_describe(w->p, a, c->label, sizeof(c->label));
	return c;
}

/* Least squares y ~ scale * x + shift, per output. */
static void
calibrate(Work *w, HbApprox *a, const double *partial)
{
	for (int g = 0; g < w->k; g++)
	{
		double		mx = 0,
					my = 0,
					sxx = 0,
					sxy = 0;

		for (size_t i = 0; i < w->n_fit; i++)
		{
			mx += partial[i * w->k + g];
			my += w->m_fit[i * w->k + g];
		}
		mx /= (double) w->n_fit;
		my /= (double) w->n_fit;
		for (size_t i = 0; i < w->n_fit; i++)
		{
			double		dx = partial[i * w->k + g] - mx;

			sxx += dx * dx;
			sxy += dx * (w->m_fit[i * w->k + g] - my);
		}
		a->scale[g] = sxx > 0 ? sxy / sxx : 1.0;
		a->shift[g] = my - a->scale[g] * mx;
	}
}

static int
next_round(int r)
{
	int			g = (int) ceil(r * 1.5);

	return g > r + 1 ? g : r + 1;
}

/* The most candidates a model can get: the level is split over them. */
static int
max_candidates(const HbPlan *p)
{
	int			n = 5;			/* linear: budgets 1/32 .. 1/2 */
	int			rounds = p->n_outputs > 0 ? p->n_trees / p->n_outputs : 0;

	if (p->n_outputs == 1)
		n += N_TREES_SETS * N_TREES_SHAPES;

	for (int r = 1; r < rounds; r = next_round(r))
		n++;
	return n < MAX_CANDIDATES ? n : MAX_CANDIDATES;
}

/*
 * Prefixes of 1, 2, 3, 5, 8, ... boosting rounds (a round is one tree per
 * output), each calibrated on the fitting rows.  Partial sums grow from one
 * prefix to the next, so all of them together cost one pass of the model.
 */
static bool
prefix_candidates(Work *w, HbError *err)
{
	const HbPlan *p = w->p;
	int			rounds = p->n_trees / w->k;
	double	   *partial;
	int			done = 0;

	if (p->estimator != HB_EST_TREES || rounds < 2)
		return true;
	partial = hb_alloc(sizeof(double) * w->n_fit * w->k);
	if (partial == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	hb_exec_base(p, w->n_fit, partial);
	for (int r = 1; r < rounds; r = next_round(r))
	{
		int			m = r * w->k;
		HbApprox   *a = hb_approx_new(HB_APPROX_PREFIX, w->k, m, 0);

		if (a == NULL)
		{
			hb_free(partial);
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		}
		hb_exec_trees(p, HB_STRATEGY_AUTO, w->x_fit, w->n_fit, done, m, 0,
					  partial);
		done = m;
		calibrate(w, a, partial);
		if (!hb_approx_params_finite(a))
		{
			hb_approx_free(a);
			continue;
		}
		if (add_candidate(w, a) == NULL)
			break;
		hb_check_interrupts();
	}
	hb_free(partial);
	return true;
}

static int	cmp_int32(const void *a, const void *b);

typedef struct Ranked
{
	double		key;
	int32_t		idx;
} Ranked;

static int
cmp_ranked_desc(const void *a, const void *b)
{
	const Ranked *x = a,
			   *y = b;

	if (x->key > y->key)
		return -1;
	if (x->key < y->key)
		return 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Rows best first (cmp_ranked_desc, a total order: the result is the one
 * qsort gives).  A qsort of 400,000 rows takes about 0.1 s, too long to
 * leave a cancel waiting: chunks of SORT_CHUNK rows are sorted one by one,
 * then merged pass by pass, checking for interrupts in between.  Without
 * memory for the merges, a plain qsort.
 */
#define SORT_CHUNK 32768

static void
sort_ranked(Ranked *a, size_t n)
{
	Ranked	   *tmp = n > SORT_CHUNK ? hb_alloc(sizeof(Ranked) * n) : NULL;
	Ranked	   *src = a,
			   *dst = tmp;

	if (tmp == NULL)
	{
		qsort(a, n, sizeof(Ranked), cmp_ranked_desc);
		return;
	}
	for (size_t c = 0; c < n; c += SORT_CHUNK)
	{
		qsort(a + c, n - c < SORT_CHUNK ? n - c : SORT_CHUNK, sizeof(Ranked),
			  cmp_ranked_desc);
		hb_check_interrupts();
	}
	for (size_t w = SORT_CHUNK; w < n; w *= 2)
	{
		for (size_t lo = 0; lo < n; lo += 2 * w)
		{
			size_t		mid = lo + w < n ? lo + w : n,
						hi = lo + 2 * w < n ? lo + 2 * w : n,
						i = lo,
						j = mid,
						o = lo;

			while (i < mid && j < hi)
				dst[o++] = cmp_ranked_desc(&src[j], &src[i]) < 0 ? src[j++] : src[i++];
			while (i < mid)
				dst[o++] = src[i++];
			while (j < hi)
				dst[o++] = src[j++];
		}
		/* the merged runs are in dst: swap roles */
		{
			Ranked	   *t = src;

			src = dst;
			dst = t;
		}
		hb_check_interrupts();
	}
	if (src != a)
		memcpy(a, src, sizeof(Ranked) * n);
	hb_free(tmp);
}

/*
 * Permutation importance of each feature on the fitting rows: how much the
 * full model's margins move (mean squared) when that column is shuffled.
 */
static bool
importances(Work *w, double *imp, HbError *err)
{
	size_t		nr = w->n_fit;
	int			nf = w->nf;
	size_t		cap = 200000 / (size_t) (nf > 0 ? nf : 1);
	double	   *xb,
			   *mb,
			   *col;
	HbRng		rng;

	if (cap < 200)
		cap = 200;
	if (cap < nr)
		nr = cap;
	xb = hb_alloc(sizeof(double) * nr * nf);
	mb = hb_alloc(sizeof(double) * nr * w->k);
	col = hb_alloc(sizeof(double) * nr);
	if (!xb || !mb || !col)
	{
		hb_free(xb);
		hb_free(mb);
		hb_free(col);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	memcpy(xb, w->x_fit, sizeof(double) * nr * nf);
	hb_rng_seed(&rng, w->spec->seed * 7919 + 17);
	for (int j = 0; j < nf; j++)
	{
		double		s = 0.0;

		for (size_t i = 0; i < nr; i++)
			col[i] = xb[i * nf + j];
		for (size_t i = nr; i > 1; i--)
		{
			size_t		r = hb_rng_below(&rng, i);
			double		t = xb[(i - 1) * nf + j];

			xb[(i - 1) * nf + j] = xb[r * nf + j];
			xb[r * nf + j] = t;
		}
		hb_plan_margins(w->p, xb, nr, mb);
		for (size_t i = 0; i < nr * w->k; i++)
		{
			double		d = mb[i] - w->m_fit[i];

			s += d * d;
		}
		imp[j] = s / (double) nr;
		for (size_t i = 0; i < nr; i++)
			xb[i * nf + j] = col[i];
		hb_check_interrupts();
	}
	hb_free(xb);
	hb_free(mb);
	hb_free(col);
	return true;
}

/*
 * Least squares of the full margins on the chosen features (centred and
 * scaled, a tiny ridge so that duplicate or constant columns stay
 * solvable) with LAPACK's dgels.  A value that is missing or not finite
 * reads as the feature's mean, as hb_approx_cheap reads it (hb_linear_input).
 * *usable is false where no finite fit comes out (values or margins near
 * the largest double): no such candidate is made.
 */
static bool
fit_linear(Work *w, HbApprox *a, bool *usable, HbError *err)
{
	int			f = a->n_feat;
	int			k = w->k;
	int			m = (int) w->n_fit + f;
	int			ncol = f + 1;
	int			lwork = -1,
				info = 0;
	double		wq;
	double	   *A = hb_alloc(sizeof(double) * (size_t) m * ncol);
	double	   *B = hb_alloc0(sizeof(double) * (size_t) m * k);
	double	   *scale = hb_alloc(sizeof(double) * (f + 1));
	double	   *work;

	*usable = false;
	if (!A || !B || !scale)
	{
		hb_free(A);
		hb_free(B);
		hb_free(scale);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	memset(A, 0, sizeof(double) * (size_t) m * ncol);
	for (int j = 0; j < f; j++)
	{
		int			fj = a->feat[j];
		double		mean = 0.0,
					ss = 0.0,
					big = 0.0;
		size_t		cnt = 0;

		/* a running mean: a plain sum of values near the largest double overflows */
		for (size_t i = 0; i < w->n_fit; i++)
		{
			double		v = w->x_fit[i * w->nf + fj];

			if (isfinite(v))
				mean += (v - mean) / (double) ++cnt;
		}
		a->fill[j] = mean;
		/* centred, then scaled by the largest deviation (whose square may overflow) */
		for (size_t i = 0; i < w->n_fit; i++)
		{
			double		c = hb_linear_input(w->x_fit[i * w->nf + fj], mean) - mean;

			A[i + (size_t) j * m] = c;
			if (fabs(c) > big)
				big = fabs(c);
		}
		scale[j] = isfinite(big) && big > 0.0 ? big : 1.0;
		for (size_t i = 0; i < w->n_fit; i++)
		{
			A[i + (size_t) j * m] /= scale[j];
			ss += A[i + (size_t) j * m] * A[i + (size_t) j * m];
		}
		A[w->n_fit + j + (size_t) j * m] = sqrt(1e-6 * ss + 1e-12);
		/* three passes over the fitting rows a feature, the factorization later */
		hb_check_interrupts();
	}
	for (size_t i = 0; i < w->n_fit; i++)
	{
		A[i + (size_t) f * m] = 1.0;
		for (int g = 0; g < k; g++)
			B[i + (size_t) g * m] = w->m_fit[i * k + g];
	}
	for (size_t i = 0; i < (size_t) m * ncol; i++)
		if (!isfinite(A[i]))
			goto done;
	for (size_t i = 0; i < (size_t) m * k; i++)
		if (!isfinite(B[i]))
			goto done;
	dgels_("N", &m, &ncol, &k, A, &m, B, &m, &wq, &lwork, &info);
	lwork = info == 0 && wq > 1 ? (int) wq : m * ncol;
	work = hb_alloc(sizeof(double) * lwork);
	if (work == NULL)
	{
		hb_free(A);
		hb_free(B);
		hb_free(scale);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	dgels_("N", &m, &ncol, &k, A, &m, B, &m, work, &lwork, &info);
	hb_free(work);
	if (info != 0)
		goto done;
	for (int g = 0; g < k; g++)
	{
		double		bias = B[f + (size_t) g * m];

		for (int j = 0; j < f; j++)
		{
			double		wj = B[j + (size_t) g * m] / scale[j];

			a->weight[(size_t) j * k + g] = wj;
			bias -= wj * a->fill[j];
		}
		a->bias[g] = bias;
	}
	*usable = hb_approx_params_finite(a);
done:
	hb_free(A);
	hb_free(B);
	hb_free(scale);
	return true;
}

/* What featurizing the groups in mask costs per row. */
static double
group_cost(const HbTuneSpec *spec, uint64_t mask)
{
	double		c = 0.0;

	for (int g = 0; g < spec->n_groups; g++)
		if (mask & (UINT64_C(1) << g))
			c += spec->group_ns[g];
	return c;
}

/*
 * Greedy knapsack over feature groups: repeatedly the feature with the most
 * importance per unit of the cost of the groups it would add (none once
 * its groups are paid for, so a paid group's important features come
 * first), while that fits the budget; at least one feature, and no more
 * than a quarter as many as fitting rows.  The picked features are
 * returned in model order.
 */
static int
pick_by_groups(Work *w, const Ranked *order, int n_imp, const double *imp,
			   double budget, int32_t *sel)
{
	const HbTuneSpec *spec = w->spec;
	bool	   *taken = hb_alloc_must(sizeof(bool) * (n_imp + 1));
	uint64_t	paid = 0;
	double		used = 0.0;
	int			ns = 0;
	int			max_ns = (int) (w->n_fit / 4 < 4096 ? w->n_fit / 4 : 4096);

	memset(taken, 0, sizeof(bool) * (n_imp + 1));
	while (ns < max_ns)
	{
		int			best = -1;
		double		best_ratio = -1.0,
					best_add = 0.0;

		for (int i = 0; i < n_imp; i++)
		{
			int			j = order[i].idx;
			double		add,
						ratio;

			if (taken[i])
				continue;
			add = group_cost(spec, spec->feature_groups[j] & ~paid);
			if (ns > 0 && used + add > budget)
				continue;
			ratio = add > 0 ? imp[j] / add : INFINITY;
			if (ratio > best_ratio)
			{
				best = i;
				best_ratio = ratio;
				best_add = add;
			}
		}
		if (best < 0)
			break;
		taken[best] = true;
		sel[ns++] = order[best].idx;
		paid |= spec->feature_groups[order[best].idx];
		used += best_add;
	}
	hb_free(taken);
	qsort(sel, ns, sizeof(int32_t), cmp_int32);
	return ns;
}

/*
 * The features worth reading, by importance per unit of cost, best first
 * (order, n_imp of them), and what reading all of them costs (*total).
 */
static int
rank_features(Work *w, Ranked *order, double *total)
{
	int			n_imp = 0;

	*total = 0.0;
	for (int j = 0; j < w->nf; j++)
	{
		double		c = w->spec->feature_cost ? w->spec->feature_cost[j] : 1.0;

		if (!(c > 0))
			c = 1e-9;
		if (w->imp[j] > 0)
		{
			order[n_imp].key = w->imp[j] / c;
			order[n_imp].idx = j;
			n_imp++;
			*total += c;
		}
	}
	qsort(order, n_imp, sizeof(Ranked), cmp_ranked_desc);
	if (w->spec->n_groups > 0)
	{
		/* the knapsack is over groups: a group costs once, whatever it feeds */
		uint64_t	all = 0;

		for (int i = 0; i < n_imp; i++)
			all |= w->spec->feature_groups[order[i].idx];
		*total = group_cost(w->spec, all);
	}
	return n_imp;
}

/* The knapsack's features within budget, at most max_ns, in model order. */
static int
pick_features(Work *w, const Ranked *order, int n_imp, double budget,
			  int max_ns, int32_t *sel)
{
	double		used = 0.0;
	int			ns = 0;

	if (w->spec->n_groups > 0)
		ns = pick_by_groups(w, order, n_imp, w->imp, budget, sel);
	else
	{
		for (int i = 0; i < n_imp; i++)
		{
			int			j = order[i].idx;
			double		c = w->spec->feature_cost ? w->spec->feature_cost[j] : 1.0;

			if (!(c > 0))
				c = 1e-9;
			if (ns == 0 || used + c <= budget)
			{
				sel[ns++] = j;
				used += c;
			}
		}
		qsort(sel, ns, sizeof(int32_t), cmp_int32);
	}
	if (ns > max_ns)
	{
		/* the most important of them */
		int			kept = 0;

		for (int i = 0; i < n_imp && kept < max_ns; i++)
			for (int s = 0; s < ns; s++)
				if (sel[s] == order[i].idx)
				{
					sel[s] = -1 - sel[s];
					kept++;
					break;
				}
		kept = 0;
		for (int s = 0; s < ns; s++)
			if (sel[s] < 0)
				sel[kept++] = -1 - sel[s];
		ns = kept;
	}
	return ns;
}

/*
 * Linear models on the features a greedy knapsack picks: by importance per
 * unit of cost, within budgets of 1/32 .. 1/2 of the total feature cost.
 */
static bool
linear_candidates(Work *w, HbError *err)
{
	int			nf = w->nf;
	Ranked	   *order = hb_alloc(sizeof(Ranked) * (nf + 1));
	int32_t    *sel = hb_alloc(sizeof(int32_t) * (nf + 1));
	int32_t    *prev = hb_alloc(sizeof(int32_t) * (nf + 1));
	int			nprev = -1;
	double		total;
	int			n_imp;
	bool		ok = true;
	bool		usable;

	if (!order || !sel || !prev)
	{
		ok = hb_fail(err, HB_ERR_NOMEM, "out of memory");
		goto done;
	}
	n_imp = rank_features(w, order, &total);
	for (int b = 32; b >= 2 && n_imp > 0; b /= 2)
	{
		int			ns = pick_features(w, order, n_imp, total / b, nf, sel);
		HbApprox   *a;

		/* a fit needs clearly more rows than coefficients */
		if ((size_t) ns * 4 > w->n_fit)
			continue;
		if (ns == nprev && memcmp(sel, prev, sizeof(int32_t) * ns) == 0)
			continue;
		memcpy(prev, sel, sizeof(int32_t) * ns);
		nprev = ns;
		a = hb_approx_new(HB_APPROX_LINEAR, w->k, 0, ns);
		if (a == NULL)
		{
			ok = hb_fail(err, HB_ERR_NOMEM, "out of memory");
			goto done;
		}
		memcpy(a->feat, sel, sizeof(int32_t) * ns);
		if (!fit_linear(w, a, &usable, err))
		{
			hb_approx_free(a);
			ok = false;
			goto done;
		}
		if (!usable)
		{
			hb_approx_free(a);
			continue;
		}
		if (add_candidate(w, a) == NULL)
			break;
		/* a least-squares fit on the fitting rows: tens of milliseconds */
		hb_check_interrupts();
	}
done:
	hb_free(order);
	hb_free(sel);
	hb_free(prev);
	return ok;
}

/*
 * Small tree ensembles fitted to the full margins (distill.c), Willump's
 * "small model": on the features the knapsack picks within a quarter of
 * the total cost, and on all the important ones (at most
 * TREES_MAX_FEATURES), each in two shapes.
 */
static bool
trees_candidates(Work *w, HbError *err)
{
	int			nf = w->nf;
	Ranked	   *order = hb_alloc(sizeof(Ranked) * (nf + 1));
	int32_t    *sel = hb_alloc(sizeof(int32_t) * (nf + 1));
	int32_t    *prev = hb_alloc(sizeof(int32_t) * (nf + 1));
	int			nprev = -1;
	size_t		nr = w->n_fit < TREES_FIT_ROWS ? w->n_fit : TREES_FIT_ROWS;
	double		total;
	int			n_imp;
	bool		ok = true;

	if (!order || !sel || !prev)
	{
		ok = hb_fail(err, HB_ERR_NOMEM, "out of memory");
		goto done;
	}
	/* margins that overflowed leave nothing to fit a small ensemble to */
	for (size_t i = 0; i < nr * (size_t) w->k; i++)
		if (!isfinite(w->m_fit[i]))
			goto done;
	n_imp = rank_features(w, order, &total);
	for (int set = 0; set < N_TREES_SETS && n_imp > 0; set++)
	{
		double		budget = set == 0 ? total / 4 : total * 2;
		int			ns = pick_features(w, order, n_imp, budget, TREES_MAX_FEATURES, sel);

		if (ns == nprev && memcmp(sel, prev, sizeof(int32_t) * ns) == 0)
			continue;
		memcpy(prev, sel, sizeof(int32_t) * ns);
		nprev = ns;
		for (int sh = 0; sh < N_TREES_SHAPES; sh++)
		{
			HbDistillSpec ds = {trees_shapes[sh][0], trees_shapes[sh][1], 0.3, 1.0, 20, 64};
			HbModel    *m;
			HbApprox   *a;
			HbTuneCandidate *c;

			say(w, "fitting %d trees of depth %d on %d features, %zu rows",
				ds.n_trees, ds.max_depth, ns, nr);
			if (!hb_distill_fit(w->x_fit, nr, nf, w->m_fit, sel, ns, &ds, &m, err))
			{
				ok = false;
				goto done;
			}
			ok = hb_approx_from_trees(w->p, m, &a, err);
			hb_model_free(m);
			if (!ok)
				goto done;
			if (!hb_approx_params_finite(a))
			{
				hb_approx_free(a);
				continue;
			}
			if ((c = add_candidate(w, a)) == NULL)
				goto done;
			c->fit_feat = hb_alloc(sizeof(int32_t) * (ns + 1));
			if (c->fit_feat == NULL)
			{
				ok = hb_fail(err, HB_ERR_NOMEM, "out of memory");
				goto done;
			}
			memcpy(c->fit_feat, sel, sizeof(int32_t) * ns);
			c->n_fit_feat = ns;
			c->fit_trees = ds.n_trees;
			c->fit_depth = ds.max_depth;
			hb_check_interrupts();
		}
	}
done:
	hb_free(order);
	hb_free(sel);
	hb_free(prev);
	return ok;
}

/* ---- evaluation ---- */

static int
cmp_int32(const void *a, const void *b)
{
	int32_t		x = *(const int32_t *) a,
				y = *(const int32_t *) b;

	return x < y ? -1 : x > y;
}

/*
 * One half's cheap ranking: rows by cheap margin, best first (co), and each
 * row's place in it (rank).
 */
static void
cheap_ranking(const double *cheap, size_t n, Ranked *co, int32_t *rank)
{
	for (size_t i = 0; i < n; i++)
	{
		co[i].key = cheap[i];
		co[i].idx = (int32_t) i;
	}
	sort_ranked(co, n);
	for (size_t i = 0; i < n; i++)
		rank[co[i].idx] = (int32_t) i;
}

/*
 * The cut that keeps all but e of the half's `tail` best rows by full
 * margin: the rows kept (at or above the cut, at least k), the cut itself
 * and the misses (e, or fewer when the k floor keeps more).
 */
static int32_t
topk_cut(const Ranked *co, const int32_t *rank, size_t n,
		 const int32_t *full_order, int tail, int e, int k, int32_t *cr,
		 double *tau, int *misses)
{
	int32_t		kept;

	for (int j = 0; j < tail; j++)
		cr[j] = rank[full_order[j]];
	qsort(cr, tail, sizeof(int32_t), cmp_int32);
	kept = cr[tail - e - 1] + 1;
	if (kept < k)
		kept = k;
	if ((size_t) kept > n)
		kept = (int32_t) n;
	/* rows tied with the cut are kept too */
	while ((size_t) kept < n && co[kept].key >= co[kept - 1].key)
		kept++;
	*tau = co[kept - 1].key;
	*misses = 0;
	for (int j = 0; j < tail; j++)
		*misses += cr[j] >= kept;
	return kept;
}

/*
 * Top-K (see the header comment), on the selection rows: the (misses,
 * tail) pair of the menu with the lowest expected cost.
 */
static bool
choose_topk(Work *w, HbTuneCandidate *c, const double *cheap_sel, HbError *err)
{
	Ranked	   *co = hb_alloc(sizeof(Ranked) * (w->n_sel + 1));
	int32_t    *rank = hb_alloc(sizeof(int32_t) * (w->n_sel + 1));
	int32_t    *cr = hb_alloc(sizeof(int32_t) * (w->menu_tail[w->n_menu - 1] + 1));
	double		tau;
	int			e;

	if (!co || !rank || !cr)
	{
		hb_free(co);
		hb_free(rank);
		hb_free(cr);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	cheap_ranking(cheap_sel, w->n_sel, co, rank);
	c->select_ns = INFINITY;
	c->menu = 0;
	for (int i = 0; i < w->n_menu; i++)
	{
		int32_t		kf = topk_cut(co, rank, w->n_sel, w->order_sel, w->menu_tail[i],
								  w->menu_e[i], w->spec->k, cr, &tau, &e);
		double		ns = c->cost_ns + (double) kf / (double) w->n_sel * c->rest_ns;

		if (ns < c->select_ns)
		{
			c->select_ns = ns;
			c->menu = i;
		}
	}
	hb_free(co);
	hb_free(rank);
	hb_free(cr);
	return true;
}

/* Its cut and bound on the evaluation half, at the full confidence. */
static bool
certify_topk(Work *w, HbTuneCandidate *c, const double *cheap_eval, HbError *err)
{
	const HbTuneSpec *spec = w->spec;
	size_t		n = w->n_eval;
	Ranked	   *co = hb_alloc(sizeof(Ranked) * n);
	int32_t    *rank = hb_alloc(sizeof(int32_t) * n);
	int32_t    *cr = hb_alloc(sizeof(int32_t) * (w->menu_tail[c->menu] + 1));
	int			e;
	int32_t		kept;
	double		tau;

	if (!co || !rank || !cr)
	{
		hb_free(co);
		hb_free(rank);
		hb_free(cr);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	cheap_ranking(cheap_eval, n, co, rank);
	kept = topk_cut(co, rank, n, w->order_eval, w->menu_tail[c->menu],
					w->menu_e[c->menu], spec->k, cr, &tau, &e);
	c->tail = w->menu_tail[c->menu];
	c->misses = w->menu_e[c->menu];
	c->kept = kept;
	c->ratio = (double) kept / spec->k;
	c->tau = tau;
	c->coverage = (double) kept / (double) n;
	c->accuracy = 1.0 - (double) e / c->tail;
	c->bound = 1.0 - hb_binomial_upper(e, c->tail, spec->confidence);
	c->expected_ns = c->cost_ns + c->coverage * c->rest_ns;
	c->feasible = true;
	hb_free(co);
	hb_free(rank);
	hb_free(cr);
	return true;
}

/*
 * A prefix candidate of 1/64 to 1/2 of a single-output model's trees is
 * kept as a possible second stage: its first-half calibration and its
 * calibrated margins on the selection rows.  False when out of memory.
 */
static bool
keep_prefix(Work *w, const HbApprox *a, const double *cheap_sel)
{
	int			j = w->n_pre;

	if (a->kind != HB_APPROX_PREFIX || w->k != 1 || j >= MAX_REFINE ||
		(int64_t) a->n_trees * 64 < w->p->n_trees ||
		(int64_t) a->n_trees * 2 > w->p->n_trees)
		return true;
	w->pre_sel[j] = hb_alloc(sizeof(double) * (w->n_sel + 1));
	if (!w->pre_sel[j])
		return false;
	memcpy(w->pre_sel[j], cheap_sel, sizeof(double) * w->n_sel);
	w->pre_trees[j] = a->n_trees;
	w->pre_scale[j] = a->scale[0];
	w->pre_shift[j] = a->shift[0];
	w->n_pre++;
	return true;
}

/* what a row costs in the second stage, and then finishing it */
static void
refine_costs(Work *w, const HbTuneCandidate *c, int32_t trees,
			 double *refine_ns, double *finish_ns)
{
	double		T = (double) w->p->n_trees;

	*refine_ns = w->model_ns * (double) (trees - hb_approx_cheap_trees(c->approx)) / T;
	/* a row that passes the cheap model is bound in full before the second stage */
	if (w->spec->n_groups > 0)
		*refine_ns += w->res->featurize_ns;
	*finish_ns = w->model_ns * (double) (w->p->n_trees - trees) / T;
}

/*
 * The two-stage screening score of n rows: min(cheap, score2 + slack), the
 * second stage's score as hb_approx_refine computes it (slack added last).
 * A row is finished when it is at or above the cut; the cut is an order
 * statistic of this one score, so the bound of a single cheap score holds
 * unchanged (docs/willump.md).
 */
static inline double
screen_score(double cheap, double s2, double slack)
{
	double		r = s2 + slack;

	return cheap < r ? cheap : r;
}

/*
 * On a set of rows (rows start, start + step, ... of n: the selection rows,
 * one half of them, or the evaluation half), the cut that keeps all but e
 * of the set's `tail` best rows by full margin (order: all n rows, best
 * first) under the two-stage score: the (e+1)-th lowest screening score
 * among them.  zt: `tail` doubles of scratch.
 */
static double
screen_tau(const double *cheap, const double *s2, double slack, size_t n,
		   const int32_t *order, int tail, int e, size_t start, size_t step,
		   double *zt)
{
	int			t = 0;

	for (size_t j = 0; j < n && t < tail; j++)
		if ((size_t) order[j] % step == start)
			zt[t++] = screen_score(cheap[order[j]], s2[order[j]], slack);
	qsort(zt, tail, sizeof(double), hb_cmp_double);
	return zt[e];
}

/*
 * On the same set, the rows at or above tau under the two-stage score
 * (*kept) and under the cheap score alone (*screened), and the set's
 * `tail` best rows below it (*misses).
 */
static void
screen_counts(const double *cheap, const double *s2, double slack, size_t n,
			  const int32_t *order, int tail, size_t start, size_t step,
			  double tau, int64_t *kept, int64_t *screened, int *misses)
{
	int			t = 0;

	*kept = 0;
	*screened = 0;
	*misses = 0;
	for (size_t i = start; i < n; i += step)
	{
		*kept += screen_score(cheap[i], s2[i], slack) >= tau;
		*screened += cheap[i] >= tau;
	}
	for (size_t j = 0; j < n && t < tail; j++)
		if ((size_t) order[j] % step == start)
		{
			*misses += screen_score(cheap[order[j]], s2[order[j]], slack) < tau;
			t++;
		}
}

/*
 * The expected cost per row of candidate c with second-stage scores s2
 * and slack (an infinite slack: no second stage) at menu entry i, on each
 * half of the selection rows apart, the worse taken: many configurations
 * are compared, and the best of many estimates from one extreme order
 * statistic each would be the luckiest, not the best.  zt: scratch for a
 * tail.
 */
static double
worse_half_ns(Work *w, const HbTuneCandidate *c, const double *cheap_sel,
			  const double *s2, double slack, int i, double refine_ns,
			  double finish_ns, double *zt)
{
	double		ns = 0.0;

	for (int h = 0; h < 2; h++)
	{
		int64_t		kept,
					screened;
		int			misses;
		double		rows = (double) ((w->n_sel + 1 - h) / 2);
		double		hns;

		double		tau = screen_tau(cheap_sel, s2, slack, w->n_sel, w->order_sel,
									 w->menu_tail[i], w->menu_e[i], h, 2, zt);

		screen_counts(cheap_sel, s2, slack, w->n_sel, w->order_sel, w->menu_tail[i],
					  h, 2, tau, &kept, &screened, &misses);
		hns = c->cost_ns + (double) screened / rows * refine_ns +
			(double) kept / rows * finish_ns;
		if (hns > ns)
			ns = hns;
	}
	return ns;
}

/*
 * A second stage for top-K candidate c (cheap margins cheap_sel on the
 * selection rows): every stored prefix longer than the candidate's own,
 * every slack of the grid and every menu entry, compared by expected cost
 * on the selection rows like the single cut (choose_topk).  When one is
 * cheaper, c gets it (its approximation's refine_*, its menu entry and
 * select_ns); *pre the prefix taken, or -1.
 */
static bool
choose_refine(Work *w, HbTuneCandidate *c, const double *cheap_sel, int *pre,
			  HbError *err)
{
	double	   *zt = hb_alloc(sizeof(double) * (w->menu_tail[w->n_menu - 1] + 1));
	double	   *d = hb_alloc(sizeof(double) * (w->menu_tail[w->n_menu - 1] + 1));
	double		best = INFINITY;
	double		best_slack = 0.0;
	int			best_menu = 0;

	*pre = -1;
	if (!zt || !d)
	{
		hb_free(zt);
		hb_free(d);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}

	/*
	 * What the candidate alone costs, judged the same way (the worse half,
	 * its best menu entry): a second stage must beat that
	 */
	for (int i = 0; w->spec->stages != HB_STAGES_TWO && i < w->n_menu; i++)
	{
		double		ns;

		if ((size_t) w->menu_tail[i] * 4 > w->n_sel)
			continue;
		/* an infinite slack: the screening score is the cheap score */
		ns = worse_half_ns(w, c, cheap_sel, cheap_sel, INFINITY, i, 0.0, c->rest_ns, zt);
		if (ns < best)
			best = ns;
	}
	for (int j = 0; j < w->n_pre; j++)
	{
		double		refine_ns,
					finish_ns;

		if (w->pre_trees[j] <= hb_approx_cheap_trees(c->approx))
			continue;
		refine_costs(w, c, w->pre_trees[j], &refine_ns, &finish_ns);
		for (int i = 0; i < w->n_menu; i++)
		{
			int			tail = w->menu_tail[i];

			/* each half of the selection rows holds two tails */
			if ((size_t) tail * 4 > w->n_sel)
				continue;
			/* slacks: where the two scores of the tail rows cross */
			for (int t = 0; t < tail; t++)
				d[t] = cheap_sel[w->order_sel[t]] - w->pre_sel[j][w->order_sel[t]];
			qsort(d, tail, sizeof(double), hb_cmp_double);
			for (int q = 0; q < REFINE_SLACKS; q++)
			{
				double		slack = d[(size_t) ((double) (tail - 1) * q / (REFINE_SLACKS - 1))];
				double		ns = worse_half_ns(w, c, cheap_sel, w->pre_sel[j], slack, i,
											   refine_ns, finish_ns, zt);

				if (ns < best)
				{
					best = ns;
					*pre = j;
					best_menu = i;
					best_slack = slack;
				}
			}
		}
		hb_check_interrupts();
	}
	hb_free(zt);
	hb_free(d);
	if (*pre >= 0)
	{
		c->select_ns = best;
		c->menu = best_menu;
		c->approx->refine_trees = w->pre_trees[*pre];
		c->approx->refine_scale = w->pre_scale[*pre];
		c->approx->refine_shift = w->pre_shift[*pre];
		c->approx->refine_slack = best_slack;
		hb_approx_describe(w->p, c->approx, c->label, sizeof(c->label));
	}
	return true;
}

/*
 * certify_topk for a candidate with a second stage: s2 its calibrated
 * second-stage margins on the evaluation half (without the slack).
 */
static bool
certify_refined(Work *w, HbTuneCandidate *c, const double *cheap_eval,
				const double *s2, HbError *err)
{
	const HbTuneSpec *spec = w->spec;
	int			tail = w->menu_tail[c->menu];
	double	   *zt = hb_alloc(sizeof(double) * (tail + 1));
	int64_t		kept,
				screened;
	int			e;
	double		refine_ns,
				finish_ns;
	double		slack = c->approx->refine_slack;
	size_t		n = w->n_eval;

	if (zt == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	c->tau = screen_tau(cheap_eval, s2, slack, n, w->order_eval, tail,
						w->menu_e[c->menu], 0, 1, zt);
	hb_free(zt);
	screen_counts(cheap_eval, s2, slack, n, w->order_eval, tail, 0, 1, c->tau,
				  &kept, &screened, &e);
	if (kept < spec->k && (size_t) spec->k <= n)
	{
		/* the k floor: the k-th best two-stage score */
		double	   *z = hb_alloc(sizeof(double) * n);

		if (z == NULL)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		for (size_t i = 0; i < n; i++)
			z[i] = screen_score(cheap_eval[i], s2[i], slack);
		qsort(z, n, sizeof(double), hb_cmp_double);
		c->tau = z[n - spec->k];
		hb_free(z);
		screen_counts(cheap_eval, s2, slack, n, w->order_eval, tail, 0, 1, c->tau,
					  &kept, &screened, &e);
	}
	refine_costs(w, c, c->approx->refine_trees, &refine_ns, &finish_ns);
	c->tail = tail;
	c->misses = w->menu_e[c->menu];
	c->kept = (int32_t) kept;
	c->ratio = (double) kept / spec->k;
	c->coverage = (double) kept / (double) w->n_eval;
	c->screened = (double) screened / (double) w->n_eval;
	c->accuracy = 1.0 - (double) e / tail;
	c->bound = 1.0 - hb_binomial_upper(e, tail, spec->confidence);
	c->expected_ns = c->cost_ns + c->screened * refine_ns + c->coverage * finish_ns;
	c->feasible = true;
	return true;
}

/*
 * The screening score of n rows under a's final form: the cheap margin,
 * or min(cheap, second stage + slack) with a second stage, and the gate's
 * score plus its slack in the min with a gate.
 */
static bool
screening(const HbPlan *p, const HbApprox *a, const double *x, size_t n,
		  double *out, HbError *err)
{
	double	   *raw = hb_alloc(sizeof(double) * (n + 1));
	double	   *s2 = a->refine_trees > 0 ? hb_alloc(sizeof(double) * (n + 1)) : NULL;

	if (raw == NULL || (a->refine_trees > 0 && s2 == NULL))
	{
		hb_free(raw);
		hb_free(s2);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	hb_approx_margins(p, a, x, n, raw, out);
	if (a->refine_trees > 0)
	{
		hb_approx_refine(p, a, x, n, raw, s2);
		for (size_t i = 0; i < n; i++)
			out[i] = out[i] < s2[i] ? out[i] : s2[i];
	}
	if (a->gate != NULL)
	{
		/* raw is free again: the gate's scores */
		hb_approx_gate(a, x, n, p->n_features, raw);
		for (size_t i = 0; i < n; i++)
			out[i] = out[i] < raw[i] ? out[i] : raw[i];
	}
	hb_free(raw);
	hb_free(s2);
	return true;
}

/*
 * The slope of the screening score's shortfall F - S against the full
 * margin F over the `tail` best rows of one half of the selection rows
 * (rows start, start + 2, ...): least squares.
 */
static double
shortfall_slope(const Work *w, const double *screen, int tail, size_t start)
{
	double		sf = 0.0,
				sy = 0.0,
				sff = 0.0,
				sfy = 0.0,
				var;
	int			t = 0;

	for (size_t j = 0; j < w->n_sel && t < tail; j++)
	{
		int32_t		i = w->order_sel[j];
		double		f,
					y;

		if ((size_t) i % 2 != start)
			continue;
		f = w->m_sel[i];
		y = f - screen[i];
		sf += f;
		sy += y;
		sff += f * f;
		sfy += f * y;
		t++;
	}
	if (t < 2)
		return 0.0;
	var = sff - sf * sf / t;
	return var > 0.0 ? (sfy - sf * sy / t) / var : 0.0;
}

/*
 * The bar cut's margin on a set of rows (full margins m, screening scores
 * s, order: the set's rows best first by m): the (e+1)-th largest of
 * (1 - slope) F + slope floor - S over its `tail` best rows, floor the
 * full margin of the `tail`-th; *misses the rows above it.  r: `tail`
 * doubles of scratch.
 */
static double
bar_margin(const double *m, const double *s, const int32_t *order, int tail,
		   int e, double slope, double floor_, double *r, int *misses)
{
	double		d;

	for (int j = 0; j < tail; j++)
	{
		int32_t		i = order[j];

		r[j] = (1.0 - slope) * m[i] + slope * floor_ - s[i];
	}
	qsort(r, tail, sizeof(double), hb_cmp_double);
	d = r[tail - 1 - e];
	*misses = 0;
	for (int j = 0; j < tail; j++)
		*misses += r[j] > d;
	return d;
}

/*
 * Whether the cut relative to the bar keeps clearly fewer rows than the
 * fixed cut (a tenth fewer at least), judged on the selection rows alone (the evaluation half must not decide
 * anything its bound is about): both cuts from the selection rows' `tail`
 * best with e misses, the bar at the k-th best of the selection rows, as
 * on an input of their size (a bigger input's bar is higher, and only the
 * relative cut rises with it).  r: `tail` doubles of scratch.
 */
static bool
bar_cut_pays(const Work *w, const double *ssel, double slope, int tail, int e,
			 double *r)
{
	HbBarCut	bc = {0};
	double		bar = w->m_sel[w->order_sel[w->spec->k - 1]];
	double		tau,
				cut;
	size_t		n_fixed = 0,
				n_bar = 0;
	int			misses;

	if (w->spec->k > tail)
		return false;
	for (int j = 0; j < tail; j++)
		r[j] = ssel[w->order_sel[j]];
	qsort(r, tail, sizeof(double), hb_cmp_double);
	tau = r[e];
	bc.slope = slope;
	bc.floor = w->m_sel[w->order_sel[tail - 1]];
	bc.margin = bar_margin(w->m_sel, ssel, w->order_sel, tail, e, slope, bc.floor,
						   r, &misses);
	cut = hb_bar_cut(&bc, tau, bar);
	for (size_t i = 0; i < w->n_sel; i++)
	{
		n_fixed += ssel[i] >= tau;
		n_bar += ssel[i] >= cut;
	}

	/*
	 * A clear saving, not a row or two: both cuts are order statistics of
	 * the same rows, and a cut that hardly rises (slope near 1) is the
	 * fixed one give or take rounding
	 */
	return slope < 1.0 && n_bar * 10 <= n_fixed * 9;
}

/*
 * The cut relative to the bar (approx.h) of the chosen top-K candidate, in
 * its final form.  The slope comes from the selection rows: the larger of
 * the two halves' (a larger slope lets the cut rise more slowly with the
 * bar, the safer side where the answer lies above every row the sample
 * has), within [0, 1].  (The final form was fitted on the whole fitting
 * half, the selection rows too: the slope is fitted in sample; the bound
 * does not depend on it.)  Then on the evaluation half, which nothing here
 * looked at: floor is the full margin of its `tail`-th best row, and
 * margin the (e+1)-th largest of r = (1 - slope) F + slope floor - S over
 * its `tail` best rows, the same order statistic as the fixed cut's: with
 * the requested confidence a row of full margin at least floor has r at
 * most margin with probability at least the bound.  At query time every
 * row of the answer has F at or above the bar, so with r <= margin its
 * screening score is at or above (1 - slope) bar + slope floor - margin:
 * it is kept.  That the shortfall, so corrected, does not grow further up
 * than the sample reaches is the one more assumption (docs/willump.md).
 * The bound becomes the worse of the two cuts'.
 */
static bool
bar_cut_topk(Work *w, HbTuneCandidate *c, HbError *err)
{
	int			tail = c->tail;
	int			e = w->menu_e[c->menu];
	double	   *ssel = hb_alloc(sizeof(double) * (w->n_sel + 1));
	double	   *seval = hb_alloc(sizeof(double) * (w->n_eval + 1));
	double	   *r = hb_alloc(sizeof(double) * (tail + 1));
	double		slope,
				floor_,
				d;
	int			misses;
	bool		ok = false;

	if (ssel == NULL || seval == NULL || r == NULL)
	{
		hb_fail(err, HB_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (w->k != 1 || (size_t) tail > w->n_eval || tail <= e ||
		(size_t) tail * 2 > w->n_sel)
	{
		ok = true;				/* no bar cut: the fixed cut alone */
		goto out;
	}
	if (!screening(w->p, c->approx, w->x_sel, w->n_sel, ssel, err) ||
		!screening(w->p, c->approx, w->x_eval, w->n_eval, seval, err))
		goto out;
	slope = fmax(shortfall_slope(w, ssel, tail, 0), shortfall_slope(w, ssel, tail, 1));
	slope = slope < 0.0 ? 0.0 : slope > 1.0 ? 1.0 : slope;
	/* (a gate forced on, for tests and comparisons, needs the cut it acts under) */
	if (w->spec->gate != HB_STAGES_TWO && !bar_cut_pays(w, ssel, slope, tail, e, r))
	{
		ok = true;				/* the fixed cut keeps fewer: it alone */
		goto out;
	}
	floor_ = w->m_eval[w->order_eval[tail - 1]];
	d = bar_margin(w->m_eval, seval, w->order_eval, tail, e, slope, floor_, r, &misses);
	ok = true;
	if (!isfinite(slope) || !isfinite(floor_) || !isfinite(d))
		goto out;
	c->bar.slope = slope;
	c->bar.floor = floor_;
	c->bar.margin = d;
	{
		double		bound = 1.0 - hb_binomial_upper(misses, tail, w->spec->confidence);

		if (bound < c->bound)
			c->bound = bound;
	}
out:
	hb_free(ssel);
	hb_free(seval);
	hb_free(r);
	return ok;
}

/*
 * The second stage's prefix calibrated again on the fitting rows (the whole
 * fitting half, when the caller has set n_fit so), and its calibrated
 * margins on the evaluation half into s2 (without the slack).
 */
static bool
refine_margins(Work *w, HbApprox *a, double *s2, HbError *err)
{
	size_t		n = w->n_fit > w->n_eval ? w->n_fit : w->n_eval;
	double	   *partial = hb_alloc(sizeof(double) * (n + 1));
	HbApprox   *pa = hb_approx_new(HB_APPROX_PREFIX, 1, a->refine_trees, 0);

	if (partial == NULL || pa == NULL)
	{
		hb_free(partial);
		hb_approx_free(pa);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	hb_exec_trees(w->p, HB_STRATEGY_AUTO, w->x_fit, w->n_fit, 0, a->refine_trees,
				  HB_EXEC_INIT, partial);
	calibrate(w, pa, partial);
	a->refine_scale = pa->scale[0];
	a->refine_shift = pa->shift[0];
	hb_approx_free(pa);
	hb_exec_trees(w->p, HB_STRATEGY_AUTO, w->x_eval, w->n_eval, 0, a->refine_trees,
				  HB_EXEC_INIT, partial);
	for (size_t i = 0; i < w->n_eval; i++)
		s2[i] = a->refine_scale * partial[i] + a->refine_shift;
	hb_free(partial);
	return true;
}

/*
 * The chosen top-K candidate fitted again on the whole fitting half (the
 * selection rows too): the configuration was chosen with fits on half of
 * it; the evaluation half, which neither saw, then bounds the final model.
 */
static bool
refit_chosen(Work *w, HbTuneCandidate *c, size_t n_half, HbError *err)
{
	HbApprox   *old = c->approx;
	HbApprox   *a = NULL;
	size_t		keep_fit = w->n_fit;
	bool		usable;

	w->n_fit = n_half;
	if (old->kind == HB_APPROX_PREFIX)
	{
		double	   *partial = hb_alloc(sizeof(double) * (n_half + 1) * w->k);

		a = hb_approx_new(HB_APPROX_PREFIX, w->k, old->n_trees, 0);
		if (!partial || !a)
		{
			hb_free(partial);
			hb_approx_free(a);
			w->n_fit = keep_fit;
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		}
		hb_exec_trees(w->p, HB_STRATEGY_AUTO, w->x_fit, n_half, 0, old->n_trees,
					  HB_EXEC_INIT, partial);
		calibrate(w, a, partial);
		hb_free(partial);
		usable = hb_approx_params_finite(a);
	}
	else if (old->kind == HB_APPROX_LINEAR)
	{
		a = hb_approx_new(HB_APPROX_LINEAR, w->k, 0, old->n_feat);
		if (a == NULL)
		{
			w->n_fit = keep_fit;
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		}
		memcpy(a->feat, old->feat, sizeof(int32_t) * old->n_feat);
		if (!fit_linear(w, a, &usable, err))
		{
			hb_approx_free(a);
			w->n_fit = keep_fit;
			return false;
		}
	}
	else
	{
		HbDistillSpec ds = {c->fit_trees, c->fit_depth, 0.3, 1.0, 20, 64};
		size_t		nr = n_half < TREES_FIT_ROWS ? n_half : TREES_FIT_ROWS;
		HbModel    *m;
		bool		ok;

		if (!hb_distill_fit(w->x_fit, nr, w->nf, w->m_fit, c->fit_feat, c->n_fit_feat,
							&ds, &m, err))
		{
			w->n_fit = keep_fit;
			return false;
		}
		ok = hb_approx_from_trees(w->p, m, &a, err);
		hb_model_free(m);
		if (!ok)
		{
			w->n_fit = keep_fit;
			return false;
		}
		usable = hb_approx_params_finite(a);
	}
	w->n_fit = keep_fit;
	/* no finite refit on these rows: the candidate stays as it was fitted */
	if (!usable)
	{
		hb_approx_free(a);
		return true;
	}
	/* the second stage is calibrated again by the caller (refine_margins) */
	a->refine_trees = old->refine_trees;
	a->refine_scale = old->refine_scale;
	a->refine_shift = old->refine_shift;
	a->refine_slack = old->refine_slack;
	hb_approx_free(old);
	c->approx = a;
	hb_approx_describe(w->p, a, c->label, sizeof(c->label));
	return true;
}

/*
 * The chosen top-K candidate's cut and bound in its final form (refitted,
 * its second stage calibrated on the whole fitting half, its gate if any),
 * on the evaluation half, then its cut relative to the bar.  cheap: n_eval
 * doubles of scratch.
 */
static bool
certify_final(Work *w, HbTuneCandidate *c, double *cheap, size_t n_half,
			  HbError *err)
{
	HbApprox   *a = c->approx;
	double	   *g = NULL;

	hb_approx_margins(w->p, a, w->x_eval, w->n_eval, NULL, cheap);
	if (a->gate != NULL)
	{
		/*
		 * A row's screening score is at most its gate score: the cut, the
		 * rows through the second stage and the bound are all about the
		 * one score
		 */
		g = hb_alloc(sizeof(double) * (w->n_eval + 1));
		if (g == NULL)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		hb_approx_gate(a, w->x_eval, w->n_eval, w->nf, g);
		for (size_t i = 0; i < w->n_eval; i++)
			cheap[i] = cheap[i] < g[i] ? cheap[i] : g[i];
	}
	c->bar.slope = c->bar.floor = c->bar.margin = NAN;
	if (a->refine_trees > 0)
	{
		size_t		keep_fit = w->n_fit;
		double	   *s2 = hb_alloc(sizeof(double) * (w->n_eval + 1));
		bool		done;

		if (s2 == NULL)
		{
			hb_free(g);
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		}
		/* the second stage's prefix calibrated on the whole fitting half too */
		w->n_fit = n_half;
		done = refine_margins(w, a, s2, err);
		w->n_fit = keep_fit;
		done = done && certify_refined(w, c, cheap, s2, err);
		hb_free(s2);
		if (!done)
		{
			hb_free(g);
			return false;
		}
	}
	else if (!certify_topk(w, c, cheap, err))
	{
		hb_free(g);
		return false;
	}
	if (g != NULL)
	{
		/* the cheap model's cost only for the rows the gate passes */
		size_t		pass = 0;

		for (size_t i = 0; i < w->n_eval; i++)
			pass += g[i] >= c->tau;
		c->gated = (double) pass / (double) w->n_eval;
		c->expected_ns += c->gate_ns - (1.0 - c->gated) * c->cost_ns;
		hb_free(g);
	}
	return bar_cut_topk(w, c, err);
}

/* The gate's cost per row, measured like a candidate's. */
static double
time_gate(Work *w, const HbApprox *a)
{
	double		best = INFINITY;

	for (int rep = 0; rep < 3; rep++)
	{
		double		t0 = now_ns();

		hb_approx_gate(a, w->x_eval, w->n_time, w->nf, w->buf);
		t0 = now_ns() - t0;
		if (t0 < best)
			best = t0;
	}
	return best / (double) w->n_time;
}

/*
 * The expected cost per row on the selection rows of candidate c (cheap
 * margins cs, second-stage scores s2 or NULL, both as at query time) with
 * gate scores gs plus slack (no gate: gs NULL), under the cut relative to
 * the bar as on an input of their size: the bar at their k-th best, the
 * cut's margin from their `tail` best with e misses.  r: scratch for a
 * tail.
 */
static double
gate_cost_ns(Work *w, const HbTuneCandidate *c, const double *cs,
			 const double *s2, const double *gs, double slack, int tail,
			 int e, double refine_ns, double finish_ns, double *scr, double *r)
{
	size_t		n = w->n_sel;
	HbBarCut	bc = c->bar;
	double		bar = w->m_sel[w->order_sel[w->spec->k - 1]];
	double		cut;
	size_t		pass = 0,
				through = 0,
				kept = 0;
	int			misses;

	for (size_t i = 0; i < n; i++)
	{
		double		v = s2 != NULL && s2[i] < cs[i] ? s2[i] : cs[i];

		scr[i] = gs != NULL && gs[i] + slack < v ? gs[i] + slack : v;
	}
	bc.floor = w->m_sel[w->order_sel[tail - 1]];
	bc.margin = bar_margin(w->m_sel, scr, w->order_sel, tail, e, bc.slope,
						   bc.floor, r, &misses);
	cut = hb_bar_cut(&bc, NAN, bar);
	for (size_t i = 0; i < n; i++)
	{
		bool		in = gs == NULL || gs[i] + slack >= cut;

		pass += in;
		through += in && cs[i] >= cut;
		kept += scr[i] >= cut;
	}
	return (gs != NULL ? c->gate_ns : 0.0) +
		((double) pass * c->cost_ns + (double) through * refine_ns +
		 (double) kept * finish_ns) / (double) n;
}

/*
 * A gate for the chosen top-K candidate c (in its final form, with its cut
 * relative to the bar): a linear model on the features c reads, fitted to
 * the full margins on the fitting rows, with a slack from the grid of
 * quantiles of (screening score - gate score) over the selection rows'
 * tail.  It acts only where no row may wait, that is under the cut
 * relative to the bar once the bar covers the tail's floor, so it is
 * judged there, on the selection rows: *gated when the best slack's
 * expected cost is a twentieth below c's own (spec->gate AUTO), or always
 * (TWO).  Which gate and slack are taken does not touch the bound: the
 * evaluation half bounds whatever screening score results (certify_final).
 */
static bool
choose_gate(Work *w, HbTuneCandidate *c, bool *gated, HbError *err)
{
	static const double quantiles[GATE_SLACKS] = {0.5, 0.75, 0.9, 0.95, 0.99, 1.0};
	HbApprox   *a = c->approx;
	int			tail = c->tail;
	int			e = w->menu_e[c->menu];
	size_t		n = w->n_sel;
	bool	   *used = NULL;
	HbApprox   *g = NULL;
	double	   *cs = NULL,
			   *raw = NULL,
			   *s2 = NULL,
			   *gs = NULL,
			   *scr = NULL,
			   *r = NULL;
	double		refine_ns = 0.0,
				finish_ns = c->rest_ns,
				base,
				best = INFINITY,
				best_slack = 0.0;
	int			nu = 0;
	bool		ok = false;
	bool		usable;

	*gated = false;
	if (w->k != 1 || !hb_bar_cut_on(&c->bar) || tail < w->spec->k ||
		(size_t) tail > n || tail <= e)
		return true;
	used = hb_alloc(sizeof(bool) * (w->nf + 1));
	if (used == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	hb_approx_features(w->p, a, used);
	for (int j = 0; j < w->nf; j++)
		nu += used[j];
	if (nu == 0 || nu > GATE_MAX_FEATURES)
	{
		hb_free(used);
		return true;
	}
	g = hb_approx_new(HB_APPROX_LINEAR, 1, 0, nu);
	cs = hb_alloc(sizeof(double) * (n + 1));
	raw = hb_alloc(sizeof(double) * (n + 1));
	gs = hb_alloc(sizeof(double) * (n + 1));
	scr = hb_alloc(sizeof(double) * (n + 1));
	r = hb_alloc(sizeof(double) * (tail + 1));
	if (a->refine_trees > 0)
		s2 = hb_alloc(sizeof(double) * (n + 1));
	if (!g || !cs || !raw || !gs || !scr || !r || (a->refine_trees > 0 && !s2))
	{
		hb_fail(err, HB_ERR_NOMEM, "out of memory");
		goto out;
	}
	nu = 0;
	for (int j = 0; j < w->nf; j++)
		if (used[j])
			g->feat[nu++] = j;
	/* fitted on the first half of the fitting half: the slack is chosen out of sample */
	if (!fit_linear(w, g, &usable, err))
		goto out;
	if (!usable)
	{
		ok = true;				/* no finite gate: none */
		goto out;
	}
	a->gate = g;
	a->gate_slack = 0.0;
	c->gate_ns = time_gate(w, a);
	hb_approx_gate(a, w->x_sel, n, w->nf, gs);
	a->gate = NULL;

	hb_approx_margins(w->p, a, w->x_sel, n, raw, cs);
	if (a->refine_trees > 0)
	{
		hb_approx_refine(w->p, a, w->x_sel, n, raw, s2);
		refine_costs(w, c, a->refine_trees, &refine_ns, &finish_ns);
	}
	base = gate_cost_ns(w, c, cs, s2, NULL, 0.0, tail, e, refine_ns, finish_ns, scr, r);

	/* slacks: where the gate and the screening score of the tail rows cross */
	for (int t = 0; t < tail; t++)
	{
		int32_t		i = w->order_sel[t];
		double		v = s2 != NULL && s2[i] < cs[i] ? s2[i] : cs[i];

		r[t] = v - gs[i];
	}
	qsort(r, tail, sizeof(double), hb_cmp_double);
	{
		double		slacks[GATE_SLACKS];

		for (int q = 0; q < GATE_SLACKS; q++)
			slacks[q] = r[(size_t) ((double) (tail - 1) * quantiles[q])];
		for (int q = 0; q < GATE_SLACKS; q++)
		{
			double		ns = gate_cost_ns(w, c, cs, s2, gs, slacks[q], tail, e,
										  refine_ns, finish_ns, scr, r);

			if (isfinite(slacks[q]) && ns < best)
			{
				best = ns;
				best_slack = slacks[q];
			}
		}
	}
	ok = true;
	if (isfinite(best) &&
		(w->spec->gate == HB_STAGES_TWO || best < 0.95 * base))
	{
		say(w, "gate: linear on %d features, slack %.4g: %.3f us a row expected on the selection rows under the cut relative to the bar, against %.3f us without",
			g->n_feat, best_slack, best / 1000.0, base / 1000.0);
		a->gate = g;
		a->gate_slack = best_slack;
		g = NULL;
		hb_approx_describe(w->p, a, c->label, sizeof(c->label));
		*gated = true;
	}
	else
		c->gate_ns = 0.0;
out:
	hb_approx_free(g);
	hb_free(used);
	hb_free(cs);
	hb_free(raw);
	hb_free(s2);
	hb_free(gs);
	hb_free(scr);
	hb_free(r);
	return ok;
}

/*
 * The menu of (misses, tail) pairs: for each number of misses, the fewest
 * tail rows whose Clopper-Pearson bound after that many misses meets the
 * target (at least k and more than the misses), if the selection rows
 * (and so the evaluation half) hold twice as many: a statement about the
 * upper half of the ranking or higher.
 */
static void
topk_menu_sizes(Work *w)
{
	const HbTuneSpec *spec = w->spec;

	w->n_menu = 0;
	for (int i = 0; i < TOPK_MENU; i++)
	{
		int			e = topk_menu[i];
		int64_t		lo = e + 1,
					hi = (int64_t) 1 << 40;

		while (lo < hi)
		{
			int64_t		mid = lo + (hi - lo) / 2;

			if (hb_binomial_upper(e, mid, spec->confidence) <= 1.0 - spec->target)
				hi = mid;
			else
				lo = mid + 1;
		}
		if (lo < spec->k)
			lo = spec->k;
		if (lo <= e)
			lo = e + 1;
		if ((size_t) lo > w->n_sel / 2)
			continue;
		w->menu_e[w->n_menu] = e;
		w->menu_tail[w->n_menu++] = (int) lo;
	}
}

/*
 * The fewest sample rows top-K can be tuned on: the selection rows, a
 * quarter of the sample, hold two tails.
 */
static int64_t
topk_min_sample(const HbTuneSpec *spec)
{
	int64_t		lo = 1,
				hi = (int64_t) 1 << 40;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (hb_binomial_upper(0, mid, spec->confidence) <= 1.0 - spec->target)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo < spec->k)
		lo = spec->k;
	return 8 * lo;
}

/*
 * Fixed grid of confidence gaps, most conservative first: 64 * 0.9^j down
 * to about 1e-4, then 0 (every row).  Fixed in advance, so that testing it
 * in order is a valid fixed-sequence procedure.
 */
#define GRID_STEPS 128

static double
grid_threshold(int j)
{
	return j >= GRID_STEPS ? 0.0 : 64.0 * pow(0.9, j);
}

static bool
eval_cascade(Work *w, HbTuneCandidate *c, const double *cheap,
			 const int32_t *full_cls, double level, HbError *err)
{
	size_t		n = w->n_eval;
	Ranked	   *conf = hb_alloc(sizeof(Ranked) * (n + 1));
	bool	   *wrong = hb_alloc(sizeof(bool) * (n + 1));
	size_t		pos = 0;
	int64_t		e = 0;
	int			last = -1;
	int64_t		last_e = 0;
	size_t		last_cov = 0;

	if (!conf || !wrong)
	{
		hb_free(conf);
		hb_free(wrong);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
	{
		int			cls;

		conf[i].key = hb_approx_confidence(w->p, cheap + i * w->k, &cls);
		conf[i].idx = (int32_t) i;
		wrong[i] = cls != full_cls[i];
	}
	sort_ranked(conf, n);

	for (int j = 0; j <= GRID_STEPS; j++)
	{
		double		th = grid_threshold(j);

		/*
		 * The bound's binomial sums grow with the errors: at a few
		 * thousand, one step costs milliseconds (about 8 ms at 4,000 of
		 * 400,000 rows), and the grid has 129
		 */
		hb_check_interrupts();
		while (pos < n && conf[pos].key >= th)
			e += wrong[conf[pos++].idx];
		if (hb_binomial_upper(e, (int64_t) n, level) > w->spec->target)
			break;
		last = j;
		last_e = e;
		last_cov = pos;
	}
	c->threshold = last >= 0 ? grid_threshold(last) : INFINITY;
	c->coverage = last >= 0 ? (double) last_cov / (double) n : 0.0;
	c->accuracy = 1.0 - (double) last_e / (double) n;
	c->bound = hb_binomial_upper(last_e, (int64_t) n, level);
	c->feasible = last >= 0 && last_cov > 0;
	c->expected_ns = c->cost_ns + (1.0 - c->coverage) * c->rest_ns;
	hb_free(conf);
	hb_free(wrong);
	return true;
}

/* ---- the whole tuning ---- */

void
hb_tune_result_free(HbTuneResult *res)
{
	if (res->cand)
		for (int i = 0; i < res->n_cand; i++)
		{
			hb_approx_free(res->cand[i].approx);
			hb_free(res->cand[i].fit_feat);
		}
	hb_free(res->cand);
	memset(res, 0, sizeof(*res));
}

static bool
check_spec(const HbPlan *p, size_t n, const HbTuneSpec *s, HbError *err)
{
	if (!(s->target > 0.0 && s->target < 1.0))
		return hb_fail(err, HB_ERR_ARGUMENT, "target must be between 0 and 1 (exclusive), not %g", s->target);
	if (!(s->confidence > 0.0 && s->confidence < 1.0))
		return hb_fail(err, HB_ERR_ARGUMENT, "confidence must be between 0 and 1 (exclusive), not %g", s->confidence);
	if (p->estimator != HB_EST_TREES)
		return hb_fail(err, HB_ERR_UNSUPPORTED, "only tree ensembles can be approximated");
	if (s->kind == HB_TUNE_TOPK)
	{
		if (p->n_outputs != 1)
			return hb_fail(err, HB_ERR_UNSUPPORTED, "top-K ranks models with one score per row, this one has %d", p->n_outputs);
		if (s->k <= 0)
			return hb_fail(err, HB_ERR_ARGUMENT, "k must be positive, not %d", s->k);
	}
	else if (s->kind == HB_TUNE_CASCADE)
	{
		double		cut;

		if (p->n_classes < 2)
			return hb_fail(err, HB_ERR_UNSUPPORTED, "cascades need a classifier");
		if (p->n_outputs == 1 && !hb_binary_cut(p, &cut))
			return hb_fail(err, HB_ERR_UNSUPPORTED,
						   "cascades cannot tune a binary PROBIT model: its class is not one side of a margin");
		if (n < 2)
			return hb_fail(err, HB_ERR_ARGUMENT, "a sample of %zu rows is too small to tune a cascade", n);
	}
	else
		return hb_fail(err, HB_ERR_ARGUMENT, "unknown tuning kind %d", (int) s->kind);
	if (s->n_groups < 0 || s->n_groups > 64 ||
		(s->n_groups > 0 && (s->feature_groups == NULL || s->group_ns == NULL)))
		return hb_fail(err, HB_ERR_ARGUMENT, "feature groups given without their costs");
	return true;
}

/* The half's rows by full margin, best first. */
static bool
full_ranking(const double *m, size_t n, int32_t *order, HbError *err)
{
	Ranked	   *fo = hb_alloc(sizeof(Ranked) * (n + 1));

	if (fo == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
	{
		fo[i].key = m[i];
		fo[i].idx = (int32_t) i;
	}
	sort_ranked(fo, n);
	for (size_t i = 0; i < n; i++)
		order[i] = fo[i].idx;
	hb_free(fo);
	return true;
}

bool
hb_tune_run(const HbPlan *p, const double *x, size_t n, const HbTuneSpec *spec,
		HbTuneProgress progress, void *arg, HbTuneResult *res, HbError *err)
{
	Work		w;
	size_t	   *perm = NULL;
	size_t		n_half;
	int32_t    *full_cls = NULL;
	double	   *cheap = NULL;
	double	   *cheap_sel = NULL;
	HbRng		rng;
	bool		ok = false;
	double		level;
	double		model_ns;
	bool	   *used = NULL;

	memset(res, 0, sizeof(*res));
	res->chosen = -1;
	if (!check_spec(p, n, spec, err))
		return false;
	level = 1.0 - (1.0 - spec->confidence) / max_candidates(p);

	memset(&w, 0, sizeof(w));
	w.p = p;
	w.spec = spec;
	w.progress = progress;
	w.arg = arg;
	w.nf = p->n_features;
	w.k = p->n_outputs;
	w.res = res;
	n_half = n / 2;
	w.n_fit = n_half;
	w.n_eval = n - n_half;
	w.n_time = w.n_eval < TIMING_ROWS ? w.n_eval : TIMING_ROWS;
	res->n_fit = (int64_t) n_half;
	res->n_eval = (int64_t) w.n_eval;
	if (spec->kind == HB_TUNE_TOPK)
	{
		/*
		 * The fitting half's first half fits and calibrates, its second
		 * compares the candidates: out of sample for every one of them.
		 */
		w.n_fit = n_half / 2;
		w.n_sel = n_half - w.n_fit;
		topk_menu_sizes(&w);
		if (w.n_menu == 0)
		{
			int64_t		need = topk_min_sample(spec);

			hb_fail(err, HB_ERR_ARGUMENT,
					"a sample of %zu rows is too small to tune top-%d to precision %g with confidence %g",
					n, spec->k, spec->target, spec->confidence);
			hb_fail_detail(err, "Misses are counted among the %lld best rows of a quarter of the sample: at least %lld rows are needed.",
						   (long long) need / 8, (long long) need);
			return false;
		}
	}

	perm = hb_alloc(sizeof(size_t) * n);
	w.x_fit = hb_alloc(sizeof(double) * (n_half + 1) * w.nf);
	w.x_eval = hb_alloc(sizeof(double) * w.n_eval * w.nf);
	w.m_fit = hb_alloc(sizeof(double) * (n_half + 1) * w.k);
	w.m_eval = hb_alloc(sizeof(double) * w.n_eval * w.k);
	w.buf = hb_alloc(sizeof(double) * 2 * w.n_time * w.k);
	w.imp = hb_alloc0(sizeof(double) * (w.nf + 1));
	res->cand = hb_alloc0(sizeof(HbTuneCandidate) * MAX_CANDIDATES);
	cheap = hb_alloc(sizeof(double) * w.n_eval * w.k);
	cheap_sel = hb_alloc(sizeof(double) * (w.n_sel + 1) * w.k);
	w.order_sel = hb_alloc(sizeof(int32_t) * (w.n_sel + 1));
	w.order_eval = hb_alloc(sizeof(int32_t) * w.n_eval);
	full_cls = hb_alloc(sizeof(int32_t) * w.n_eval);
	used = hb_alloc(sizeof(bool) * (w.nf + 1));
	if (!used || !perm || !w.x_fit || !w.x_eval || !w.m_fit || !w.m_eval || !w.buf ||
		!w.imp || !res->cand || !cheap || !cheap_sel || !w.order_sel ||
		!w.order_eval || !full_cls)
	{
		hb_fail(err, HB_ERR_NOMEM, "out of memory");
		goto out;
	}

	/* the seeded split: fitting half, evaluation half */
	hb_rng_seed(&rng, spec->seed ^ 0xA5A5A5A5ull);
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	/*
	 * The shuffle and the copies gather rows at random: about 0.2 s for
	 * 800,000 rows of 8 features, so they check for interrupts as they go
	 */
	for (size_t i = n; i > 1; i--)
	{
		size_t		r = hb_rng_below(&rng, i);
		size_t		t = perm[i - 1];

		perm[i - 1] = perm[r];
		perm[r] = t;
		if ((i & 0xFFFF) == 0)
			hb_check_interrupts();
	}
	for (size_t i = 0; i < n; i++)
	{
		double	   *to = i < n_half ? w.x_fit + i * w.nf : w.x_eval + (i - n_half) * w.nf;

		memcpy(to, x + perm[i] * w.nf, sizeof(double) * w.nf);
		if ((i & 0xFFFF) == 0)
			hb_check_interrupts();
	}
	w.x_sel = w.x_fit + w.n_fit * w.nf;
	w.m_sel = w.m_fit + w.n_fit * w.k;

	hb_plan_margins(p, w.x_fit, n_half, w.m_fit);
	hb_plan_margins(p, w.x_eval, w.n_eval, w.m_eval);
	model_ns = time_full(&w);
	w.model_ns = model_ns;
	res->featurize_ns = spec->n_groups > 0 ? spec->featurize_ns : 0.0;
	res->full_ns = model_ns + res->featurize_ns;
	if (spec->kind == HB_TUNE_TOPK)
		say(&w, "%zu rows: %zu to fit, %zu to choose, %zu to evaluate; full model %.3f us/row",
			n, w.n_fit, w.n_sel, w.n_eval, res->full_ns / 1000.0);
	else
		say(&w, "%zu rows: %zu to fit, %zu to evaluate; full model %.3f us/row",
			n, w.n_fit, w.n_eval, res->full_ns / 1000.0);

	if (spec->kind == HB_TUNE_TOPK)
	{
		/* sort_ranked checks for interrupts while it sorts */
		if (!full_ranking(w.m_sel, w.n_sel, w.order_sel, err) ||
			!full_ranking(w.m_eval, w.n_eval, w.order_eval, err))
			goto out;
	}
	else
		for (size_t i = 0; i < w.n_eval; i++)
			full_cls[i] = hb_margin_class(p, w.m_eval + i * w.k);

	if (!prefix_candidates(&w, err))
		goto out;
	if (w.n_fit >= 8)
	{
		say(&w, "permutation importance of %d features on %zu rows", w.nf,
			w.n_fit < 200000 / (size_t) w.nf ? w.n_fit : 200000 / (size_t) w.nf);
		if (!importances(&w, w.imp, err) || !linear_candidates(&w, err))
			goto out;
		if (p->n_outputs == 1 && w.n_fit >= 64 && !trees_candidates(&w, err))
			goto out;
	}
	if (res->n_cand == 0)
	{
		hb_fail(err, HB_ERR_UNSUPPORTED, "the model is too small to approximate");
		goto out;
	}

	for (int i = 0; i < res->n_cand; i++)
	{
		HbTuneCandidate *c = &res->cand[i];
		const HbApprox *a = c->approx;

		c->cost_ns = time_cheap(&w, a);
		c->rest_ns = a->kind == HB_APPROX_PREFIX ?
			model_ns * (double) (p->n_trees - a->n_trees) / (double) p->n_trees :
			model_ns;
		if (spec->n_groups > 0)
		{
			/* featurize what it reads; finishing a row featurizes it all */
			c->groups = 0;
			hb_approx_features(p, a, used);
			for (int j = 0; j < w.nf; j++)
				if (used[j])
					c->groups |= spec->feature_groups[j];
			c->featurize_ns = group_cost(spec, c->groups);
			c->cost_ns += c->featurize_ns;
			c->rest_ns += res->featurize_ns;
		}
		hb_approx_margins(p, a, w.x_eval, w.n_eval, NULL, cheap);
		if (spec->kind == HB_TUNE_TOPK)
		{
			hb_approx_margins(p, a, w.x_sel, w.n_sel, NULL, cheap_sel);
			ok = choose_topk(&w, c, cheap_sel, err) && certify_topk(&w, c, cheap, err);
			if (ok && !keep_prefix(&w, a, cheap_sel))
				ok = hb_fail(err, HB_ERR_NOMEM, "out of memory");
		}
		else
			ok = eval_cascade(&w, c, cheap, full_cls, level, err);
		if (!ok)
			goto out;
		ok = false;
		c->speedup = c->expected_ns > 0 ? res->full_ns / c->expected_ns : 0.0;
		if (spec->kind == HB_TUNE_TOPK)
			say(&w, "candidate %d of %d, %s: re-scores %.2f%% (choice rows %.2f%%), precision bound %.4f, %.1fx",
				i + 1, res->n_cand, c->label, 100.0 * c->coverage,
				100.0 * (c->select_ns - c->cost_ns) / (c->rest_ns > 0 ? c->rest_ns : 1.0),
				c->bound, c->speedup);
		else
			say(&w, "candidate %d of %d, %s: threshold %.4g, decides %.1f%%, loss bound %.5f, %.1fx",
				i + 1, res->n_cand, c->label, c->threshold, 100.0 * c->coverage,
				c->bound, c->speedup);
		hb_check_interrupts();
	}

	/*
	 * The cheapest feasible configuration; ties to the earlier candidate.
	 * Top-K chooses on the selection rows, so that the evaluation half's
	 * bound holds at the full confidence.
	 */
	for (int i = 0; i < res->n_cand; i++)
	{
		HbTuneCandidate *c = &res->cand[i];
		double		ci = spec->kind == HB_TUNE_TOPK ? c->select_ns : c->expected_ns;

		if (c->feasible && (res->chosen < 0 ||
							ci < (spec->kind == HB_TUNE_TOPK ?
								  res->cand[res->chosen].select_ns :
								  res->cand[res->chosen].expected_ns)))
			res->chosen = i;
	}
	if (res->chosen >= 0)
	{
		HbTuneCandidate *c = &res->cand[res->chosen];

		c->chosen = true;
		if (spec->kind == HB_TUNE_TOPK && w.n_pre > 0 && spec->stages != HB_STAGES_ONE)
		{
			/*
			 * A second stage behind the chosen candidate, when the
			 * selection rows expect one to be cheaper (its quarter fit)
			 */
			int			pre;

			hb_approx_margins(p, c->approx, w.x_sel, w.n_sel, NULL, cheap_sel);
			if (!choose_refine(&w, c, cheap_sel, &pre, err))
				goto out;
			if (pre >= 0)
				say(&w, "second stage: %s, %.3f us a row expected on the worse half of the selection rows",
					c->label, c->select_ns / 1000.0);
		}
		if (spec->kind == HB_TUNE_TOPK)
		{
			say(&w, "fitting %s again on the whole fitting half", c->label);
			if (!refit_chosen(&w, c, n_half, err))
				goto out;
			if (!certify_final(&w, c, cheap, n_half, err))
				goto out;
			if (spec->gate != HB_STAGES_ONE && hb_bar_cut_on(&c->bar))
			{
				bool		gated;

				if (!choose_gate(&w, c, &gated, err))
					goto out;
				if (gated && !certify_final(&w, c, cheap, n_half, err))
					goto out;
				if (gated && !hb_bar_cut_on(&c->bar))
				{
					/* the gate acts only under the cut relative to the bar */
					say(&w, "gate dropped: the cut relative to the bar does not pay with it");
					hb_approx_free(c->approx->gate);
					c->approx->gate = NULL;
					c->gate_ns = 0.0;
					hb_approx_describe(p, c->approx, c->label, sizeof(c->label));
					if (!certify_final(&w, c, cheap, n_half, err))
						goto out;
				}
			}
			c->speedup = c->expected_ns > 0 ? res->full_ns / c->expected_ns : 0.0;
			say(&w, "chosen %s: re-scores %.2f%%, precision bound %.4f, %.1fx",
				c->label, 100.0 * c->coverage, c->bound, c->speedup);
			if (hb_bar_cut_on(&c->bar))
				say(&w, "cut relative to the bar: slope %.3f over full margins from %.4g, shortfall at most %.4g",
					c->bar.slope, c->bar.floor, c->bar.margin);
		}
		res->tail = c->tail;
	}
	ok = true;

out:
	hb_free(perm);
	hb_free(w.x_fit);
	hb_free(w.x_eval);
	hb_free(w.m_fit);
	hb_free(w.m_eval);
	hb_free(w.buf);
	hb_free(w.imp);
	hb_free(w.order_sel);
	hb_free(w.order_eval);
	hb_free(cheap);
	hb_free(cheap_sel);
	hb_free(full_cls);
	hb_free(used);
	for (int j = 0; j < w.n_pre; j++)
	{
		hb_free(w.pre_sel[j]);
	}
	if (!ok)
		hb_tune_result_free(res);
	return ok;
}
