/*
 * approx_core.c - approximate top-K against full scoring plus a top-k
 * heap, in the core, one thread, same rows in memory.
 *
 *   approx_core MODEL SAMPLE_F32 SAMPLE_ROWS ROWS_F32 ROWS NF K TARGET CONFIDENCE [ROUNDS]
 *
 * Tunes top-K (hb_tune_run, seed 0) on the sample rows (float32,
 * row-major, NF columns, NaN missing), which must be other rows than the
 * scoring rows, then times over the scoring rows, fed 8,192 at a time as
 * the batching scan feeds them (best of ROUNDS, default 3; methods take
 * turns round by round):
 *	 full     hb_plan_margins on every batch, the k best kept in a heap
 *	 approx   the chosen cheap model on every batch; the rows at or above
 *			  its cut go through the second stage if there is one, and
 *			  those still at or above it are finished by the full model
 *			  from their partial sums; a row below the cut among the
 *			  `kept` best cheap scores so far (the batching scan's rule)
 *			  is scored in full; all are offered to the heap
 * and reports the share of rows re-scored and precision@k of approx
 * against the exact top k: on all the rows, on ten contiguous tenths and
 * on three random subsets (a seeded hash of the row number keeps 1/2,
 * 1/5 and 1/20 of the rows).  The tuning's candidates are listed with
 * their figures on the evaluation half.  Writes markdown on stdout.
 * APPROX_STAGES=one|two forces the stages; APPROX_RANKS=search ranks the
 * compact kernel's columns with search trees where AVX-512 would use
 * blocks (strategy_ptt.c), for comparisons.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan_int.h"
#include "tune.h"
#include "../test/core/test_util.h"
#include "bench_clock.h"

#define BATCH 8192

typedef struct Best
{
	int			k;
	int			n;
	double	   *m;
	int64_t    *row;
} Best;

/* a ranks below b: lower margin, or equal and later */
static int
worse(double ma, int64_t ra, double mb, int64_t rb)
{
	return ma < mb || (ma == mb && ra > rb);
}

static void
best_offer(Best *b, double m, int64_t row)
{
	int			i;

	if (b->n == b->k && !worse(b->m[b->k - 1], b->row[b->k - 1], m, row))
		return;
	i = b->n < b->k ? b->n++ : b->k - 1;
	while (i > 0 && worse(b->m[i - 1], b->row[i - 1], m, row))
	{
		b->m[i] = b->m[i - 1];
		b->row[i] = b->row[i - 1];
		i--;
	}
	b->m[i] = m;
	b->row[i] = row;
}

static double *
read_rows(const char *path, size_t n, int nf)
{
	FILE	   *f = fopen(path, "rb");
	float	   *b = malloc(sizeof(float) * n * nf);
	double	   *x = malloc(sizeof(double) * n * nf);

	if (!f || !b || !x || fread(b, sizeof(float), n * nf, f) != n * nf)
	{
		fprintf(stderr, "cannot read %zu rows of %d from %s\n", n, nf, path);
		exit(1);
	}
	fclose(f);
	for (size_t i = 0; i < n * nf; i++)
		x[i] = b[i];
	free(b);
	return x;
}

static uint64_t
mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* cheap-score heap of the `kept` best so far (min on top) */
typedef struct Keep
{
	int64_t		cap;
	int64_t		n;
	double	   *v;
} Keep;

static int
keep_offer(Keep *h, double v)
{
	int64_t		i;

	if (h->n < h->cap)
	{
		i = h->n++;
		while (i > 0 && h->v[(i - 1) / 2] > v)
		{
			h->v[i] = h->v[(i - 1) / 2];
			i = (i - 1) / 2;
		}
		h->v[i] = v;
		return 1;
	}
	if (!(v > h->v[0]))
		return 0;
	i = 0;
	for (;;)
	{
		int64_t		l = 2 * i + 1,
					r = l + 1,
					m = i;
		double		mv = v;

		if (l < h->n && h->v[l] < mv)
		{
			m = l;
			mv = h->v[l];
		}
		if (r < h->n && h->v[r] < mv)
			m = r;
		if (m == i)
			break;
		h->v[i] = h->v[m];
		i = m;
	}
	h->v[i] = v;
	return 1;
}

static const HbPlan *plan;
static const HbTuneCandidate *ch;
static double *X;
static size_t N;
static int NF;
static double *buf_m,
		   *buf_raw,
		   *buf_s2,
		   *buf_x,
		   *buf_w;
static int64_t rescored,
			refined;

/* rows [0, n) restricted to sel (NULL: all), the k best by full margin */
static void
run_full(Best *b, const unsigned char *sel)
{
	b->n = 0;
	for (size_t r0 = 0; r0 < N; r0 += BATCH)
	{
		size_t		nb = N - r0 < BATCH ? N - r0 : BATCH;

		hb_plan_margins(plan, X + r0 * NF, nb, buf_m);
		for (size_t i = 0; i < nb; i++)
			if (!sel || sel[r0 + i])
				best_offer(b, buf_m[i], (int64_t) (r0 + i));
	}
}

static void
run_approx(Best *b, const unsigned char *sel)
{
	const HbApprox *a = ch->approx;
	Keep		kh = {ch->kept, 0, NULL};

	kh.v = malloc(sizeof(double) * (size_t) (ch->kept + 1));
	b->n = 0;
	rescored = 0;
	refined = 0;
	for (size_t r0 = 0; r0 < N; r0 += BATCH)
	{
		size_t		nb = N - r0 < BATCH ? N - r0 : BATCH;
		size_t		nk = 0,
					nw = 0;
		int64_t    *at = (int64_t *) (buf_x + BATCH * NF);
		int64_t    *wat = (int64_t *) (buf_w + BATCH * NF);

		hb_approx_margins(plan, a, X + r0 * NF, nb, buf_raw, buf_m);
		for (size_t i = 0; i < nb; i++)
		{
			double	   *to;
			int			best_so_far;

			if (sel && !sel[r0 + i])
				continue;
			/* at or above the cut: on; else among the best so far: scored in full */
			best_so_far = keep_offer(&kh, buf_m[i]);
			if (buf_m[i] >= ch->tau)
			{
				to = buf_x + nk * NF;
				buf_raw[nk] = buf_raw[i];
				at[nk++] = (int64_t) (r0 + i);
			}
			else if (best_so_far)
			{
				to = buf_w + nw * NF;
				wat[nw++] = (int64_t) (r0 + i);
			}
			else
				continue;
			memcpy(to, X + (r0 + i) * NF, sizeof(double) * NF);
		}
		if (nk > 0 && a->refine_trees > 0)
		{
			/* the second stage: a row that fails it is below the cut after all */
			size_t		np = 0;

			hb_approx_refine(plan, a, buf_x, nk, buf_raw, buf_s2);
			refined += (int64_t) nk;
			for (size_t j = 0; j < nk; j++)
			{
				if (buf_s2[j] < ch->tau)
					continue;
				if (np != j)
					memcpy(buf_x + np * NF, buf_x + j * NF, sizeof(double) * NF);
				buf_raw[np] = buf_raw[j];
				at[np++] = at[j];
			}
			nk = np;
			hb_approx_finish_refined(plan, a, buf_x, nk, buf_raw);
		}
		else if (nk > 0)
			hb_approx_finish(plan, a, buf_x, nk, buf_raw);
		for (size_t j = 0; j < nk; j++)
			best_offer(b, buf_raw[j], at[j]);
		if (nw > 0)
			hb_plan_margins(plan, buf_w, nw, buf_s2);
		for (size_t j = 0; j < nw; j++)
			best_offer(b, buf_s2[j], wat[j]);
		rescored += (int64_t) (nk + nw);
	}
	free(kh.v);
}

static double
precision(const Best *a, const Best *e)
{
	int			hit = 0;

	for (int i = 0; i < e->n; i++)
		for (int j = 0; j < a->n; j++)
			if (a->row[j] == e->row[i])
			{
				hit++;
				break;
			}
	return e->n ? (double) hit / e->n : 1.0;
}

static void
progress(void *arg, const char *msg)
{
	(void) arg;
	fprintf(stderr, "  %s\n", msg);
}

int
main(int argc, char **argv)
{
	size_t		len,
				ns;
	char	   *bytes;
	HbModel    *m;
	HbPlan	   *p;
	HbError		err = {0};
	HbTuneSpec	spec = {0};
	HbTuneResult res;
	double	   *sx;
	int			k,
				rounds;
	Best		bf,
				ba;
	double		t_full = INFINITY,
				t_approx = INFINITY,
				t_tune;
	unsigned char *sel;

	if (argc < 10)
	{
		fprintf(stderr, "usage: approx_core MODEL SAMPLE_F32 SAMPLE_ROWS ROWS_F32 ROWS NF K TARGET CONFIDENCE [ROUNDS]\n");
		return 2;
	}
	ns = (size_t) atol(argv[3]);
	N = (size_t) atol(argv[5]);
	NF = atoi(argv[6]);
	k = atoi(argv[7]);
	rounds = argc > 10 ? atoi(argv[10]) : 3;
	/* APPROX_RANKS=search: the compact kernel's ranks without AVX-512 */
	if (getenv("APPROX_RANKS") && strcmp(getenv("APPROX_RANKS"), "search") == 0)
		hb_ptt_set_block_ranks(false);
	bytes = tu_read_file(argv[1], &len);
	if (!bytes || !hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err) || !hb_plan_build(m, &p, &err))
	{
		fprintf(stderr, "cannot load %s: %s\n", argv[1], err.msg);
		return 1;
	}
	plan = p;
	sx = read_rows(argv[2], ns, NF);
	X = read_rows(argv[4], N, NF);
	spec.kind = HB_TUNE_TOPK;
	spec.k = k;
	spec.target = atof(argv[8]);
	spec.confidence = atof(argv[9]);
	/* APPROX_STAGES: auto (default), one or two (tune.h) */
	if (getenv("APPROX_STAGES"))
	{
		const char *st = getenv("APPROX_STAGES");

		spec.stages = strcmp(st, "one") == 0 ? HB_STAGES_ONE :
			strcmp(st, "two") == 0 ? HB_STAGES_TWO : HB_STAGES_AUTO;
	}
	t_tune = now();
	if (!hb_tune_run(p, sx, ns, &spec, progress, NULL, &res, &err) || res.chosen < 0)
	{
		fprintf(stderr, "tuning failed: %s\n", err.msg);
		return 1;
	}
	t_tune = now() - t_tune;
	ch = &res.cand[res.chosen];

	buf_m = malloc(sizeof(double) * BATCH);
	buf_raw = malloc(sizeof(double) * BATCH);
	buf_s2 = malloc(sizeof(double) * BATCH);
	buf_x = malloc(sizeof(double) * BATCH * (NF + 1));
	buf_w = malloc(sizeof(double) * BATCH * (NF + 1));
	bf.k = ba.k = k;
	bf.m = malloc(sizeof(double) * k);
	bf.row = malloc(sizeof(int64_t) * k);
	ba.m = malloc(sizeof(double) * k);
	ba.row = malloc(sizeof(int64_t) * k);
	for (int r = 0; r < rounds; r++)
	{
		double		t0 = now();

		run_full(&bf, NULL);
		t0 = now() - t0;
		if (t0 < t_full)
			t_full = t0;
		t0 = now();
		run_approx(&ba, NULL);
		t0 = now() - t0;
		if (t0 < t_approx)
			t_approx = t0;
	}

	printf("### %s: top-%d, tuned to precision %g with confidence %g on %zu sample rows\n\n",
		   strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1], k, spec.target, spec.confidence, ns);
	printf("Tuning: %.1f s; %d candidates, chosen **%s** (%d misses allowed among the %d best of %lld held-out rows).\n\n",
		   t_tune, res.n_cand, ch->label, ch->misses, ch->tail, (long long) res.n_eval);
	printf("| candidate | cost us/row | re-scored (held-out half) | precision bound | expected speed-up | chosen |\n");
	printf("|---|---:|---:|---:|---:|:---:|\n");
	for (int i = 0; i < res.n_cand; i++)
	{
		const HbTuneCandidate *c = &res.cand[i];

		printf("| %s | %.3f | %.2f%% | %.4f | %.1fx | %s |\n", c->label, c->cost_ns / 1000.0,
			   100.0 * c->coverage, c->bound, c->speedup, c->chosen ? "yes" : "");
	}
	printf("\n%zu scoring rows, batches of %d, best of %d:\n\n", N, BATCH, rounds);
	printf("| method | seconds | vs full | rows re-scored |\n|---|---:|---:|---:|\n");
	printf("| full scoring + top-%d heap | %.3f | 1.00x | %zu |\n", k, t_full, N);
	printf("| approximate top-%d | %.3f | %.2fx | %lld (%.2f%%) |\n\n", k, t_approx,
		   t_full / t_approx, (long long) rescored, 100.0 * rescored / N);
	printf("Rows through the second stage: %lld (%.2f%%).\n\n", (long long) refined,
		   100.0 * refined / N);

	/* precision on the whole and on held-out variants */
	sel = malloc(N);
	printf("Precision@%d against the exact top %d:\n\n| rows | precision |\n|---|---:|\n", k, k);
	printf("| all %zu | %.2f |\n", N, precision(&ba, &bf));
	{
		double		sum = 0.0,
					mn = 1.0;

		for (int part = 0; part < 10; part++)
		{
			double		pr;

			for (size_t i = 0; i < N; i++)
				sel[i] = i * 10 / N == (size_t) part;
			run_full(&bf, sel);
			run_approx(&ba, sel);
			pr = precision(&ba, &bf);
			sum += pr;
			mn = pr < mn ? pr : mn;
		}
		printf("| each tenth, in order (10 sets) | mean %.3f, min %.2f |\n", sum / 10, mn);
	}
	for (int q = 0; q < 3; q++)
	{
		int			div = q == 0 ? 2 : q == 1 ? 5 : 20;
		size_t		cnt = 0;

		for (size_t i = 0; i < N; i++)
			cnt += sel[i] = mix(i * 7919 + (uint64_t) q) % div == 0;
		run_full(&bf, sel);
		run_approx(&ba, sel);
		printf("| a random 1/%d (%zu rows) | %.2f |\n", div, cnt, precision(&ba, &bf));
	}
	printf("\n");
	hb_tune_result_free(&res);
	hb_plan_free(p);
	hb_model_free(m);
	return 0;
}
