/*
 * topk_core.c - exact top-K and the class early exit against full scoring,
 * in the core, one thread, same rows in memory.
 *
 *   topk_core MODEL ROWS_F32 FRAUD_MODEL [ROUNDS] [BATCH]
 *
 * MODEL: the anchor model (bench/gen_bench.py's model.json, XGBoost
 * binary:logistic, 500 trees of depth 8, 28 features); ROWS_F32: its
 * scoring rows (bench_<n>.f32: float32, row-major, 28 columns, NaN
 * missing).  FRAUD_MODEL: bench/gen_fraud.py's model (400 trees of depth 6,
 * 20 features); its rows are drawn here as bench/early_exit.sh draws them
 * in SQL (standard normal rounded to float32, 5% missing), as many as
 * ROWS_F32 holds.
 *
 * Timed, in one process, methods taking turns round by round (best of
 * ROUNDS, default 5; the machine may be shared), rows fed BATCH at a time
 * (default 8192) as SQL's batched forms feed them:
 *	 full      hb_plan_margins (strategy auto) on every batch
 *	 top-K     hb_topk_score batch by batch, the threshold carried, K in
 *			   1, 10, 100, 1000 (bounds built inside the timing, as a query
 *			   builds them), highest margins; lowest for K = 10 too; and
 *			   K = 10 as before chunks (hb_ptt_set_chunks(false): the
 *			   compact kernel through hb_ptt_accumulate block by block)
 *	 classes   hb_early_exit_classes without bounds (full scoring) and with
 *			   them (the early exit, with and without chunks), on the fraud
 *			   model
 * Every answer is checked before timing: top-K against a full sort of the
 * full margins (rows, margins and tie order), classes against
 * hb_link_class of the full margins.  Writes a markdown report on stdout.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "early_exit.h"
#include "plan_int.h"
#include "topk.h"
#include "../test/core/test_util.h"
#include "bench_clock.h"

#define DEFAULT_ROUNDS	5
#define DEFAULT_BATCH	8192
#define FRAUD_FEATURES	20

/* ---- the K best rows: a heap, the worst held on top ---- */

typedef struct Heap
{
	int			k;
	int			n;
	double	   *m;				/* sign * margin */
	size_t	   *row;
	double		sign;
	size_t		base;			/* number of the batch's row 0 */
} Heap;

/* a ranks below b: lower (sign) margin, or equal and later */
static bool
worse(double ma, size_t ra, double mb, size_t rb)
{
	return ma < mb || (ma == mb && ra > rb);
}

static void
heap_swap(Heap *h, int i, int j)
{
	double		m = h->m[i];
	size_t		r = h->row[i];

	h->m[i] = h->m[j];
	h->row[i] = h->row[j];
	h->m[j] = m;
	h->row[j] = r;
}

static double
offer(void *arg, size_t row, double margin)
{
	Heap	   *h = arg;
	double		v = h->sign * margin;
	size_t		r = h->base + row;
	int			i;

	if (h->n == h->k)
	{
		if (!worse(h->m[0], h->row[0], v, r))
			return h->m[0];
		h->m[0] = v;
		h->row[0] = r;
		for (i = 0;;)
		{
			int			l = 2 * i + 1,
						w = i;

			if (l < h->n && worse(h->m[l], h->row[l], h->m[w], h->row[w]))
				w = l;
			if (l + 1 < h->n && worse(h->m[l + 1], h->row[l + 1], h->m[w], h->row[w]))
				w = l + 1;
			if (w == i)
				break;
			heap_swap(h, i, w);
			i = w;
		}
	}
	else
	{
		i = h->n++;
		h->m[i] = v;
		h->row[i] = r;
		while (i > 0 && worse(h->m[i], h->row[i], h->m[(i - 1) / 2], h->row[(i - 1) / 2]))
		{
			heap_swap(h, i, (i - 1) / 2);
			i = (i - 1) / 2;
		}
	}
	return h->n < h->k ? -INFINITY : h->m[0];
}

/* ---- the workloads ---- */

static const HbPlan *anchor,
		   *fraud;
static double *ax,
		   *fx;					/* rows, as doubles */
static size_t n_rows;
static size_t batch = DEFAULT_BATCH;
static double *scratch;			/* margins of a batch */
static int32_t *classes;
static double sink;

static void
run_full(void)
{
	int			nf = hb_plan_n_features(anchor);

	for (size_t r0 = 0; r0 < n_rows; r0 += batch)
	{
		size_t		nb = n_rows - r0 < batch ? n_rows - r0 : batch;

		hb_plan_margins(anchor, ax + r0 * nf, nb, scratch);
		sink += scratch[0];
	}
}

static HbTopkStats topk_stats;

static void
run_topk(Heap *h, int k, double sign)
{
	int			nf = hb_plan_n_features(anchor);
	HbTopkBounds *b = sign > 0 ? hb_topk_bounds(anchor) : hb_topk_bounds_lowest(anchor);
	double		threshold = -INFINITY;

	h->k = k;
	h->n = 0;
	h->sign = sign;
	memset(&topk_stats, 0, sizeof(topk_stats));
	for (size_t r0 = 0; r0 < n_rows; r0 += batch)
	{
		size_t		nb = n_rows - r0 < batch ? n_rows - r0 : batch;

		h->base = r0;
		if (!hb_topk_score(anchor, b, ax + r0 * nf, nb, &threshold, offer, h,
						   &topk_stats))
		{
			fprintf(stderr, "topk_core: out of memory\n");
			exit(1);
		}
	}
	hb_topk_bounds_free(b);
}

static HbClassStats class_stats;

static void
run_classes(bool early)
{
	HbClassBounds *b = early ? hb_class_bounds(fraud) : NULL;

	memset(&class_stats, 0, sizeof(class_stats));
	for (size_t r0 = 0; r0 < n_rows; r0 += batch)
	{
		size_t		nb = n_rows - r0 < batch ? n_rows - r0 : batch;

		if (!hb_early_exit_classes(fraud, b, fx + r0 * FRAUD_FEATURES, nb,
								   classes + r0, &class_stats))
		{
			fprintf(stderr, "topk_core: out of memory\n");
			exit(1);
		}
	}
	hb_class_bounds_free(b);
}

/* ---- checks against full scoring ---- */

static double *sort_m;

static int
cmp_rows(const void *a, const void *b)
{
	size_t		ra = *(const size_t *) a,
				rb = *(const size_t *) b;

	if (worse(sort_m[ra], ra, sort_m[rb], rb))
		return 1;
	if (worse(sort_m[rb], rb, sort_m[ra], ra))
		return -1;
	return 0;
}

/* the heap, sorted best first, equals the first k of a full sort */
static bool
same_topk(Heap *h, const double *full, double sign, size_t *order)
{
	double	   *sm = malloc(sizeof(double) * n_rows);
	bool		ok;
	int			want = (size_t) h->k < n_rows ? h->k : (int) n_rows;
	Heap		sorted = *h;

	for (size_t i = 0; i < n_rows; i++)
	{
		sm[i] = sign * full[i];
		order[i] = i;
	}
	sort_m = sm;
	qsort(order, n_rows, sizeof(size_t), cmp_rows);
	ok = h->n == want;
	/* pop the heap worst first into its sorted place */
	for (int i = h->n - 1; ok && i >= 0; i--)
	{
		size_t		r = sorted.row[0];
		double		m = sorted.m[0];

		ok = r == order[i] && m == sm[order[i]];
		sorted.m[0] = sorted.m[sorted.n - 1];
		sorted.row[0] = sorted.row[sorted.n - 1];
		sorted.n--;
		for (int j = 0;;)
		{
			int			l = 2 * j + 1,
						w = j;

			if (l < sorted.n && worse(sorted.m[l], sorted.row[l], sorted.m[w], sorted.row[w]))
				w = l;
			if (l + 1 < sorted.n && worse(sorted.m[l + 1], sorted.row[l + 1], sorted.m[w], sorted.row[w]))
				w = l + 1;
			if (w == j)
				break;
			heap_swap(&sorted, j, w);
			j = w;
		}
	}
	free(sm);
	return ok;
}

/* ---- rows of the fraud model, as bench/early_exit.sh draws them ---- */

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static double
unif(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((rng >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static HbPlan *
load_plan(const char *path)
{
	size_t		len;
	char	   *bytes = tu_read_file(path, &len);
	HbModel    *m = NULL;
	HbPlan	   *p = NULL;
	HbError		err = {0};

	if (bytes == NULL)
	{
		fprintf(stderr, "topk_core: cannot read %s\n", path);
		exit(1);
	}
	if (!hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err) ||
		!hb_plan_build(m, &p, &err))
	{
		fprintf(stderr, "topk_core: %s: %s\n", path, err.msg);
		exit(1);
	}
	free(bytes);
	hb_model_free(m);
	return p;
}

static const char *
base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

typedef struct Timing
{
	const char *name;
	double		best;
	double		sum;
} Timing;

static void
timed(Timing *t, void (*fn) (void *), void *arg)
{
	double		t0 = now(),
				s;

	fn(arg);
	s = now() - t0;
	if (t->best == 0 || s < t->best)
		t->best = s;
	t->sum += s;
}

/* adapters for timed() */
static Heap heap;
typedef struct TopkArg
{
	int			k;
	double		sign;
	bool		chunks;			/* false: block by block, as before chunks */
} TopkArg;

static void
fn_full(void *arg)
{
	(void) arg;
	run_full();
}

static void
fn_topk(void *arg)
{
	TopkArg    *a = arg;

	hb_ptt_set_chunks(a->chunks);
	run_topk(&heap, a->k, a->sign);
	hb_ptt_set_chunks(true);
}

/* 0: full scoring; 1: the early exit; 2: the early exit without chunks */
static void
fn_classes(void *arg)
{
	intptr_t	mode = (intptr_t) arg;

	hb_ptt_set_chunks(mode != 2);
	run_classes(mode != 0);
	hb_ptt_set_chunks(true);
}

int
main(int argc, char **argv)
{
	const int	ks[] = {1, 10, 100, 1000};
#define N_K ((int) (sizeof(ks) / sizeof(ks[0])))
#define N_TOPK (N_K + 2)
	TopkArg		targs[N_TOPK];
	Timing		t_full = {"full", 0, 0},
				t_topk[N_TOPK],
				t_cls_full = {"classes, full", 0, 0},
				t_cls_ee = {"classes, early exit", 0, 0},
				t_cls_ee0 = {"classes, early exit, no chunks", 0, 0};
	HbTopkStats st_topk[N_TOPK];
	HbClassStats st_ee = {0},
				st_ee0 = {0};
	int			rounds = DEFAULT_ROUNDS;
	size_t		len;
	char	   *bytes;
	const float *rf;
	double	   *full_m;
	size_t	   *order;
	int32_t    *want_cls;
	double	   *fm;
	bool		all_ok = true;
	double		load0 = load_avg();
	time_t		wall = time(NULL);
	char		date[64];
	int			nf;
	size_t		positives = 0;

	if (argc < 4)
	{
		fprintf(stderr, "usage: %s MODEL ROWS_F32 FRAUD_MODEL [ROUNDS] [BATCH]\n", argv[0]);
		return 2;
	}
	if (argc > 4)
		rounds = atoi(argv[4]);
	if (argc > 5)
		batch = (size_t) atol(argv[5]);
	openblas_set_num_threads(1);
	anchor = load_plan(argv[1]);
	fraud = load_plan(argv[3]);
	nf = hb_plan_n_features(anchor);
	bytes = tu_read_file(argv[2], &len);
	if (bytes == NULL || hb_plan_n_features(fraud) != FRAUD_FEATURES)
	{
		fprintf(stderr, "topk_core: cannot read %s, or the fraud model is not of %d features\n",
				argv[2], FRAUD_FEATURES);
		return 1;
	}
	rf = (const float *) bytes;
	n_rows = len / (sizeof(float) * nf);
	ax = malloc(sizeof(double) * n_rows * nf);
	for (size_t i = 0; i < n_rows * nf; i++)
		ax[i] = rf[i];
	fx = malloc(sizeof(double) * n_rows * FRAUD_FEATURES);
	for (size_t i = 0; i < n_rows * FRAUD_FEATURES; i++)
	{
		double		u = unif(),
					v = unif();

		fx[i] = unif() < 0.05 ? NAN :
			(double) (float) (sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v));
	}
	scratch = malloc(sizeof(double) * batch);
	classes = malloc(sizeof(int32_t) * n_rows);
	heap.m = malloc(sizeof(double) * 1000);
	heap.row = malloc(sizeof(size_t) * 1000);

	/* the checks: full margins (TT, the reference), sorts, classes */
	full_m = malloc(sizeof(double) * n_rows);
	order = malloc(sizeof(size_t) * n_rows);
	hb_plan_margins_with(anchor, HB_STRATEGY_TT, ax, n_rows, full_m);
	for (int i = 0; i < N_TOPK; i++)
	{
		/* K = 1, 10, 100, 1000; 10 lowest; 10 without chunks */
		targs[i].k = i < N_K ? ks[i] : 10;
		targs[i].sign = i == N_K ? -1.0 : 1.0;
		targs[i].chunks = i <= N_K;
		t_topk[i] = (Timing) {"top-K", 0, 0};
		hb_ptt_set_chunks(targs[i].chunks);
		run_topk(&heap, targs[i].k, targs[i].sign);
		hb_ptt_set_chunks(true);
		st_topk[i] = topk_stats;
		if (!same_topk(&heap, full_m, targs[i].sign, order))
		{
			fprintf(stderr, "topk_core: top-%d (%s) differs from a full sort\n",
					targs[i].k, targs[i].sign > 0 ? "highest" : "lowest");
			all_ok = false;
		}
	}
	fm = malloc(sizeof(double) * n_rows);
	want_cls = malloc(sizeof(int32_t) * n_rows);
	hb_plan_margins_with(fraud, HB_STRATEGY_TT, fx, n_rows, fm);
	hb_link_class(fraud, fm, n_rows, want_cls);
	for (int e = 0; e < 3; e++)
	{
		hb_ptt_set_chunks(e != 2);
		run_classes(e != 0);
		hb_ptt_set_chunks(true);
		if (e == 1)
			st_ee = class_stats;
		if (e == 2)
			st_ee0 = class_stats;
		if (memcmp(classes, want_cls, sizeof(int32_t) * n_rows) != 0)
		{
			fprintf(stderr, "topk_core: classes (%s) differ from full scoring's\n",
					e ? "early exit" : "full");
			all_ok = false;
		}
	}
	if (!all_ok)
		return 1;

	for (int r = 0; r < rounds; r++)
	{
		fprintf(stderr, "round %d of %d\n", r + 1, rounds);
		timed(&t_full, fn_full, NULL);
		for (int i = 0; i < N_TOPK; i++)
			timed(&t_topk[i], fn_topk, &targs[i]);
		timed(&t_cls_full, fn_classes, (void *) 0);
		timed(&t_cls_ee, fn_classes, (void *) 1);
		timed(&t_cls_ee0, fn_classes, (void *) 2);
	}

	for (size_t i = 0; i < n_rows; i++)
		positives += want_cls[i] == 1;
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&wall));
	printf("# Exact top-K and the class early exit in the core\n\n");
	printf("%s; `bench/topk_core.sh`, %d rounds, best of each, batches of %zu rows;"
		   " load average %.2f at the start, %.2f at the end.\n\n",
		   date, rounds, batch, load0, load_avg());
	printf("Anchor model (%s): %d trees, %zu rows.\n\n", base_name(argv[1]),
		   hb_plan_n_trees(anchor), n_rows);
	printf("| method | seconds | rows/s | vs full | (row, tree) pairs scored | rows scored in full |\n");
	printf("|---|---:|---:|---:|---:|---:|\n");
	printf("| full scoring (hb_plan_margins, auto) | %.4f | %.0fk | 1.00x | 100.0%% | %zu |\n",
		   t_full.best, n_rows / t_full.best / 1e3, n_rows);
	for (int i = 0; i < N_TOPK; i++)
		printf("| exact top-%d, %s%s | %.4f | %.0fk | %.2fx | %.1f%% | %lld |\n",
			   targs[i].k, targs[i].sign > 0 ? "highest" : "lowest",
			   targs[i].chunks ? "" : ", before (range kernel block by block)",
			   t_topk[i].best, n_rows / t_topk[i].best / 1e3,
			   t_full.best / t_topk[i].best,
			   100.0 * st_topk[i].pairs_scored / ((double) n_rows * hb_plan_n_trees(anchor)),
			   (long long) st_topk[i].rows_full);
	printf("\nFraud model (%s): %d trees, %zu rows drawn here, %.2f%% class 1.\n\n",
		   base_name(argv[3]), hb_plan_n_trees(fraud), n_rows,
		   100.0 * positives / n_rows);
	printf("| method | seconds | rows/s | vs full | (row, tree) pairs scored | rows decided early |\n");
	printf("|---|---:|---:|---:|---:|---:|\n");
	printf("| classes, full scoring (no bounds) | %.4f | %.0fk | 1.00x | 100.0%% | 0 |\n",
		   t_cls_full.best, n_rows / t_cls_full.best / 1e3);
	printf("| classes, early exit | %.4f | %.0fk | %.2fx | %.1f%% | %.1f%% |\n",
		   t_cls_ee.best, n_rows / t_cls_ee.best / 1e3, t_cls_full.best / t_cls_ee.best,
		   100.0 * st_ee.trees_scored / st_ee.trees_total,
		   100.0 * st_ee.rows_early / st_ee.rows);
	printf("| classes, early exit, before (range kernel block by block) | %.4f | %.0fk | %.2fx | %.1f%% | %.1f%% |\n",
		   t_cls_ee0.best, n_rows / t_cls_ee0.best / 1e3, t_cls_full.best / t_cls_ee0.best,
		   100.0 * st_ee0.trees_scored / st_ee0.trees_total,
		   100.0 * st_ee0.rows_early / st_ee0.rows);
	printf("\nEvery top-K equals a full sort of the full margins (rows, margins,"
		   " tie order); the classes equal full scoring's on every row.\n");
	(void) sink;
	return 0;
}
