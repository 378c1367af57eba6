/*
 * test_tune.c
 *	  Approximations and their tuning (approx.c, tune.c): prefix scoring
 *	  finishes to the full model's exact bits, cascades at the extremes are
 *	  the full or the cheap model, binomial bounds match an independent
 *	  computation, tuning is reproducible, and the chosen configurations meet
 *	  their targets on held-out rows.  TAP output.
 *
 * Run from the repository root (fixtures: tests/fixtures/willump).
 * Rows come from the formula of tests/fixtures/willump/gen_willump.py.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"
#include "test_util.h"

/* gen_willump.py's rows */
static double *
rows(long first, size_t n, int nf)
{
	double	   *x = malloc(sizeof(double) * n * nf);

	for (size_t i = 0; i < n; i++)
		for (int j = 0; j < nf; j++)
		{
			double		s = sin((double) (first + (long) i) * 12.9898 + j * 78.233) * 43758.5453;

			x[i * nf + j] = 2.0 * (s - floor(s)) - 1.0;
		}
	return x;
}

static HbPlan *
load(const char *name)
{
	const char *dir = "tests/fixtures/willump";
	char		path[4096];
	size_t		len;
	char	   *bytes;
	HbModel    *m = NULL;
	HbPlan	   *p = NULL;
	HbError		err = {0};

	snprintf(path, sizeof(path), "%s/%s.json", dir, name);
	bytes = tu_read_file(path, &len);
	if (bytes == NULL || !hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err) ||
		!hb_plan_build(m, &p, &err))
	{
		tu_report(false, "load %s: %s", name, bytes ? err.msg : "cannot read");
		exit(1);
	}
	free(bytes);
	hb_model_free(m);
	return p;
}

static void
test_bounds(void)
{
	/* reference: bisection on the exact binomial CDF in Python (math.comb) */
	struct
	{
		int			e,
					n;
		double		conf,
					want;
	}			cases[] = {
		{5, 100, 0.95, 0.10225337764327452},
		{0, 100, 0.95, 0.029513049607039876},
		{3, 1000, 0.99, 0.010009791991707763},
		{40, 2000, 0.9, 0.024636929038063193},
	};

	for (int i = 0; i < 4; i++)
	{
		double		got = hb_binomial_upper(cases[i].e, cases[i].n, cases[i].conf);

		tu_report(fabs(got - cases[i].want) < 1e-9,
				  "Clopper-Pearson upper bound %d/%d at %.2f: %.12f (want %.12f)",
				  cases[i].e, cases[i].n, cases[i].conf, got, cases[i].want);
	}
}

/* Prefix margins finished with the rest of the trees are the full margins. */
static void
test_exact_finish(const char *name, HbPlan *p)
{
	int			nf = hb_plan_n_features(p);
	int			k = hb_plan_n_outputs(p);
	int			T = hb_plan_n_trees(p);
	size_t		sizes[] = {1, 7, 300, 5000};

	for (int s = 0; s < 4; s++)
	{
		size_t		n = sizes[s];
		double	   *x = rows(500001, n, nf);
		double	   *full = malloc(sizeof(double) * n * k);
		double	   *acc = malloc(sizeof(double) * n * k);
		double	   *cheap = malloc(sizeof(double) * n * k);
		HbApprox   *a = hb_approx_new(HB_APPROX_PREFIX, k, (T / k / 3) * k, 0);
		size_t		bad = 0;

		hb_plan_margins(p, x, n, full);
		hb_plan_base_margins(p, n, acc);
		hb_plan_accumulate(p, x, n, 0, T / 2, acc);
		hb_plan_accumulate(p, x, n, T / 2, T, acc);
		for (size_t i = 0; i < n * k; i++)
			bad += memcmp(&acc[i], &full[i], sizeof(double)) != 0;
		tu_report(bad == 0, "%s: %zu rows, two tree ranges accumulate to the full margins (%zu differ)",
				  name, n, bad);

		hb_approx_margins(p, a, x, n, acc, cheap);
		hb_approx_finish(p, a, x, n, acc);
		bad = 0;
		for (size_t i = 0; i < n * k; i++)
			bad += memcmp(&acc[i], &full[i], sizeof(double)) != 0;
		tu_report(bad == 0, "%s: %zu rows, prefix of %d trees finished = full margins bit for bit (%zu differ)",
				  name, n, a->n_trees, bad);
		hb_approx_free(a);
		free(x);
		free(full);
		free(acc);
		free(cheap);
	}
}

/* A cascade that never trusts the cheap model is the full model, exactly. */
static void
test_cascade_extremes(const char *name, HbPlan *p)
{
	int			nf = hb_plan_n_features(p);
	int			k = hb_plan_n_outputs(p);
	int			T = hb_plan_n_trees(p);
	size_t		n = 3000;
	double	   *x = rows(600001, n, nf);
	double	   *scratch = malloc(sizeof(double) * n * k);
	double	   *want = malloc(sizeof(double) * n);
	double	   *got = malloc(sizeof(double) * n);
	double	   *cheap = malloc(sizeof(double) * n * k);
	HbCascade	c;
	HbCascadeStats st = {0};
	size_t		bad = 0;

	c.approx = hb_approx_new(HB_APPROX_PREFIX, k, (T / k / 4) * k, 0);
	c.threshold = INFINITY;
	hb_plan_predict(p, x, n, scratch, want);
	hb_cascade_run(p, &c, x, n, HB_CASCADE_PREDICT, got, &st);
	for (size_t i = 0; i < n; i++)
		bad += memcmp(&got[i], &want[i], sizeof(double)) != 0;
	tu_report(bad == 0 && st.rows_full == (int64_t) n,
			  "%s: cascade with an infinite threshold = hb_plan_predict (%zu differ, %lld full)",
			  name, bad, (long long) st.rows_full);

	c.threshold = 0.0;
	memset(&st, 0, sizeof(st));
	hb_approx_margins(p, c.approx, x, n, NULL, cheap);
	hb_link_predict(p, cheap, n, want);
	hb_cascade_run(p, &c, x, n, HB_CASCADE_PREDICT, got, &st);
	bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += got[i] != want[i];
	tu_report(bad == 0 && st.rows_full == 0,
			  "%s: cascade with threshold 0 = the cheap model (%zu differ)", name, bad);
	hb_approx_free(c.approx);
	free(x);
	free(scratch);
	free(want);
	free(got);
	free(cheap);
}

static bool
same_result(const HbTuneResult *a, const HbTuneResult *b)
{
	if (a->n_cand != b->n_cand || a->n_fit != b->n_fit)
		return false;
	for (int i = 0; i < a->n_cand; i++)
	{
		const HbTuneCandidate *x = &a->cand[i],
				   *y = &b->cand[i];

		if (strcmp(x->label, y->label) != 0 || x->kept != y->kept ||
			x->threshold != y->threshold || x->accuracy != y->accuracy ||
			x->bound != y->bound || x->coverage != y->coverage ||
			hb_approx_n_params(x->approx) != hb_approx_n_params(y->approx))
			return false;
	}
	return true;
}

typedef struct Scored
{
	double		v;
	int			i;
} Scored;

static int
cmp_desc(const void *a, const void *b)
{
	const Scored *x = a,
			   *y = b;

	if (x->v != y->v)
		return x->v > y->v ? -1 : 1;
	return x->i - y->i;
}

static void
test_topk_tuning(void)
{
	HbPlan	   *p = load("willump_rank");
	int			nf = hb_plan_n_features(p);
	size_t		n = 6000;
	double	   *x = rows(100001, n, nf);
	HbTuneSpec	spec = {HB_TUNE_TOPK, 10, 0.9, 0.95, 42, NULL};
	HbTuneResult r1,
				r2;
	HbError		err = {0};
	bool		ok1,
				ok2;
	int			n_linear = 0;

	ok1 = hb_tune_run(p, x, n, &spec, NULL, NULL, &r1, &err);
	tu_report(ok1 && r1.chosen >= 0, "top-K tuning of willump_rank: %d candidates, chosen %s (%s)",
			  ok1 ? r1.n_cand : 0, ok1 && r1.chosen >= 0 ? r1.cand[r1.chosen].label : "none", err.msg);
	if (!ok1 || r1.chosen < 0)
		return;
	ok2 = hb_tune_run(p, x, n, &spec, NULL, NULL, &r2, &err);
	tu_report(ok2 && same_result(&r1, &r2), "top-K tuning is reproducible with the same seed");
	for (int i = 0; i < r1.n_cand; i++)
	{
		const HbTuneCandidate *c = &r1.cand[i];

		n_linear += c->approx->kind == HB_APPROX_LINEAR;
		if (c->bound < spec.target || c->kept < spec.k)
			tu_report(false, "candidate %s: bound %.3f below target or kept %d < k",
					  c->label, c->bound, c->kept);
	}
	tu_report(n_linear > 0, "linear cheap-feature candidates were built (%d)", n_linear);

	/*
	 * Held out: sets of rows never seen by tuning, of the evaluation
	 * half's size and 30 times bigger; each keeps the rows the cheap model
	 * puts at or above tau (at least the `kept` best), as hb_topk does, and
	 * counts the full model's top 10 among them.
	 */
	for (int big = 0; big <= 1; big++)
	{
		const HbTuneCandidate *c = &r1.cand[r1.chosen];
		size_t		m = (size_t) r1.n_eval * (big ? 30 : 1);
		int			sets = big ? 4 : 40,
					met = 0;
		double		psum = 0.0;
		size_t		kept_sum = 0;

		for (int s = 0; s < sets; s++)
		{
			double	   *hx = rows(1000001 + (long) s * m + big * 50000000L, m, nf);
			double	   *full = malloc(sizeof(double) * m);
			double	   *cheap = malloc(sizeof(double) * m);
			Scored	   *fs = malloc(sizeof(Scored) * m);
			Scored	   *cs = malloc(sizeof(Scored) * m);
			char	   *kept = calloc(m, 1);
			int			hit = 0;

			hb_plan_margins(p, hx, m, full);
			hb_approx_margins(p, c->approx, hx, m, NULL, cheap);
			for (size_t i = 0; i < m; i++)
			{
				fs[i].v = full[i];
				fs[i].i = (int) i;
				cs[i].v = cheap[i];
				cs[i].i = (int) i;
			}
			qsort(fs, m, sizeof(Scored), cmp_desc);
			qsort(cs, m, sizeof(Scored), cmp_desc);
			for (size_t i = 0; i < m; i++)
				if ((int) i < c->kept || cs[i].v >= c->tau)
				{
					kept[cs[i].i] = 1;
					kept_sum++;
				}
			for (int i = 0; i < spec.k; i++)
				hit += kept[fs[i].i];
			psum += (double) hit / spec.k;
			met += (double) hit / spec.k >= spec.target;
			free(hx);
			free(full);
			free(cheap);
			free(fs);
			free(cs);
			free(kept);
		}
		tu_report(psum / sets >= spec.target,
				  "held out, %d sets of %zu rows: chosen %s (ratio %.1f, bound %.3f) keeps %.0f rows, mean precision@10 %.3f >= %.2f (%d sets reach it)",
				  sets, m, c->label, c->ratio, c->bound, (double) kept_sum / sets,
				  psum / sets, spec.target, met);
	}
	hb_tune_result_free(&r1);
	hb_tune_result_free(&r2);
	free(x);
	hb_plan_free(p);
}

static void
test_cascade_tuning(const char *name, double target)
{
	HbPlan	   *p = load(name);
	int			nf = hb_plan_n_features(p);
	int			k = hb_plan_n_outputs(p);
	size_t		n = 20000;
	double	   *x = rows(100001, n, nf);
	HbTuneSpec	spec = {HB_TUNE_CASCADE, 0, target, 0.95, 7, NULL};
	HbTuneResult r1,
				r2;
	HbError		err = {0};
	bool		ok1;

	ok1 = hb_tune_run(p, x, n, &spec, NULL, NULL, &r1, &err);
	tu_report(ok1 && r1.chosen >= 0, "%s: cascade tuning, chosen %s (%s)", name,
			  ok1 && r1.chosen >= 0 ? r1.cand[r1.chosen].label : "none", err.msg);
	if (!ok1 || r1.chosen < 0)
		return;
	tu_report(hb_tune_run(p, x, n, &spec, NULL, NULL, &r2, &err) && same_result(&r1, &r2),
			  "%s: cascade tuning is reproducible with the same seed", name);
	{
		const HbTuneCandidate *c = &r1.cand[r1.chosen];
		size_t		m = 100000;
		double	   *hx = rows(2000001, m, nf);
		double	   *margins = malloc(sizeof(double) * m * k);
		double	   *got = malloc(sizeof(double) * m);
		HbCascade	casc = {c->approx, c->threshold};
		HbCascadeStats st = {0};
		size_t		wrong = 0;

		hb_plan_margins(p, hx, m, margins);
		hb_cascade_run(p, &casc, hx, m, HB_CASCADE_CLASS, got, &st);
		for (size_t i = 0; i < m; i++)
			wrong += (int) got[i] != hb_margin_class(p, margins + i * k);
		tu_report((double) wrong / m <= target && st.rows_full < (int64_t) m,
				  "%s held out: %s, threshold %.4g: loss %.5f <= %.4f (bound %.5f), %.1f%% decided cheaply (tuned %.1f%%)",
				  name, c->label, c->threshold, (double) wrong / m, target, c->bound,
				  100.0 * (1.0 - (double) st.rows_full / m), 100.0 * c->coverage);
		free(hx);
		free(margins);
		free(got);
	}
	hb_tune_result_free(&r1);
	hb_tune_result_free(&r2);
	free(x);
	hb_plan_free(p);
}

static void
test_errors(void)
{
	HbPlan	   *rank = load("willump_rank");
	HbPlan	   *fraud = load("willump_fraud");
	double	   *x = rows(1, 100, 10);
	HbTuneResult r;
	struct
	{
		HbPlan	   *p;
		HbTuneSpec	s;
		size_t		n;
		HbErrCode	want;
		const char *what;
	}			cases[] = {
		{rank, {HB_TUNE_TOPK, 5, 0.0, 0.95, 0, NULL}, 100, HB_ERR_ARGUMENT, "target 0"},
		{rank, {HB_TUNE_TOPK, 5, 1.0, 0.95, 0, NULL}, 100, HB_ERR_ARGUMENT, "target 1"},
		{rank, {HB_TUNE_TOPK, 5, 0.9, 1.0, 0, NULL}, 100, HB_ERR_ARGUMENT, "confidence 1"},
		{rank, {HB_TUNE_TOPK, 5, 0.9, NAN, 0, NULL}, 100, HB_ERR_ARGUMENT, "confidence NaN"},
		{rank, {HB_TUNE_TOPK, 0, 0.9, 0.9, 0, NULL}, 100, HB_ERR_ARGUMENT, "k 0"},
		{rank, {HB_TUNE_TOPK, 30, 0.9, 0.9, 0, NULL}, 100, HB_ERR_ARGUMENT, "sample too small for k"},
		{rank, {HB_TUNE_CASCADE, 0, 0.01, 0.9, 0, NULL}, 100, HB_ERR_UNSUPPORTED, "cascade of a regression"},
		{fraud, {HB_TUNE_CASCADE, 0, 0.01, 0.9, 0, NULL}, 0, HB_ERR_ARGUMENT, "empty sample"},
	};

	for (int i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++)
	{
		HbError		err = {0};
		bool		ok = hb_tune_run(cases[i].p, x, cases[i].n, &cases[i].s, NULL, NULL, &r, &err);

		tu_report(!ok && err.code == cases[i].want, "refused: %s (%s)", cases[i].what, err.msg);
		if (ok)
			hb_tune_result_free(&r);
	}
	free(x);
	hb_plan_free(rank);
	hb_plan_free(fraud);
}

int
main(void)
{
	const char *names[] = {"willump_rank", "willump_fraud", "willump_multi"};

	test_bounds();
	for (int i = 0; i < 3; i++)
	{
		HbPlan	   *p = load(names[i]);

		test_exact_finish(names[i], p);
		test_cascade_extremes(names[i], p);
		hb_plan_free(p);
	}
	test_topk_tuning();
	test_cascade_tuning("willump_fraud", 0.01);
	test_cascade_tuning("willump_multi", 0.02);
	test_errors();
	printf("1..%d\n", tu_n_test);
	printf("# passed %d failed %d\n", (tu_n_test - tu_n_fail), tu_n_fail);
	return tu_n_fail ? 1 : 0;
}
