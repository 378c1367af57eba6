/*
 * test_tune.c
 *	  Approximations and their tuning (approx.c, tune.c): prefix scoring
 *	  finishes to the full model's exact bits, cascades at the extremes are
 *	  the full or the cheap model, binomial bounds match an independent
 *	  computation, tuning is reproducible, and the chosen configurations meet
 *	  their targets on held-out rows.  TAP output.
 *
 * Run from the repository root (fixtures: test/fixtures/willump).
 * Rows come from the formula of test/fixtures/willump/gen_willump.py.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distill.h"
#include "featurize.h"
#include "model.h"
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

static HbPlan *load_link(const char *name, int link);

static HbPlan *
load(const char *name)
{
	return load_link(name, -1);
}

/* name's plan, with its link replaced where link >= 0 */
static HbPlan *
load_link(const char *name, int link)
{
	const char *dir = "test/fixtures/willump";
	char		path[4096];
	size_t		len;
	char	   *bytes;
	HbModel    *m = NULL;
	HbPlan	   *p = NULL;
	HbError		err = {0};

	snprintf(path, sizeof(path), "%s/%s.json", dir, name);
	bytes = tu_read_file(path, &len);
	if (bytes != NULL && hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err) && link >= 0)
		m->link = (HbLink) link;
	if (m == NULL || !hb_plan_build(m, &p, &err))
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

/*
 * A second stage (approx.h) continues the cheap model's partial sums: a
 * prefix's, or none; finishing from it, or from a mix of rows refined and
 * not, gives the full margins bit for bit.  Bad second stages are refused.
 */
static void
test_refine_finish(const char *name, HbPlan *p, HbApprox *pre, const double *x,
				   size_t n, const double *full)
{
	int			T = hb_plan_n_trees(p);
	HbApprox   *lin = hb_approx_new(HB_APPROX_LINEAR, 1, 0, 0);
	HbApprox   *cheaps[2] = {pre, lin};
	double	   *raw = malloc(sizeof(double) * n);
	double	   *cheap = malloc(sizeof(double) * n);
	double	   *s2 = malloc(sizeof(double) * n);
	bool	   *refined = malloc(sizeof(bool) * n);
	HbError		err = {0};

	for (int c = 0; c < 2; c++)
	{
		HbApprox   *a = cheaps[c];
		int32_t		trees = hb_approx_cheap_trees(a) + (T - hb_approx_cheap_trees(a)) / 2;
		size_t		bad = 0,
					bad_mixed = 0,
					bad_s2 = 0;

		if (!hb_approx_set_refine(p, a, trees, 0.5, 0.25, -1.0, &err))
		{
			tu_report(false, "%s: second stage of %d trees refused: %s", name, trees, err.msg);
			continue;
		}
		/* every row through the second stage, then finished */
		hb_approx_margins(p, a, x, n, raw, cheap);
		hb_approx_refine(p, a, x, n, raw, s2);
		{
			double	   *part = malloc(sizeof(double) * n);

			hb_plan_base_margins(p, n, part);
			hb_plan_accumulate(p, x, n, 0, trees, part);
			for (size_t i = 0; i < n; i++)
			{
				double		want = (0.5 * part[i] + 0.25) + -1.0;

				bad_s2 += memcmp(&s2[i], &want, sizeof(double)) != 0;
			}
			free(part);
		}
		hb_approx_finish_refined(p, a, x, n, raw);
		for (size_t i = 0; i < n; i++)
			bad += memcmp(&raw[i], &full[i], sizeof(double)) != 0;

		/* every third row refined, the others finished from the cheap model */
		hb_approx_margins(p, a, x, n, raw, cheap);
		{
			double	   *xs = malloc(sizeof(double) * n * hb_plan_n_features(p));
			double	   *rs = malloc(sizeof(double) * n);
			size_t		m = 0;
			int			nf = hb_plan_n_features(p);

			for (size_t i = 0; i < n; i++)
			{
				refined[i] = i % 3 == 1;
				if (refined[i])
				{
					memcpy(xs + m * nf, x + i * nf, sizeof(double) * nf);
					rs[m++] = raw[i];
				}
			}
			hb_approx_refine(p, a, xs, m, rs, s2);
			m = 0;
			for (size_t i = 0; i < n; i++)
				if (refined[i])
					raw[i] = rs[m++];
			free(xs);
			free(rs);
		}
		hb_approx_finish_rows(p, a, x, n, raw, refined);
		for (size_t i = 0; i < n; i++)
			bad_mixed += memcmp(&raw[i], &full[i], sizeof(double)) != 0;
		tu_report(bad_s2 == 0 && bad == 0 && bad_mixed == 0,
				  "%s: %zu rows, %s then a second stage of %d trees: its scores are the calibrated partial sums (%zu differ); finished = full margins bit for bit, all refined (%zu differ) and mixed (%zu differ)",
				  name, n, c == 0 ? "prefix" : "linear model", trees, bad_s2, bad, bad_mixed);
		a->refine_trees = 0;
	}

	/* refused: not more trees than the cheap model's, all of them, not finite */
	{
		int			m = hb_approx_cheap_trees(pre);
		bool		r1 = hb_approx_set_refine(p, pre, m, 1.0, 0.0, 0.0, &err);
		bool		r2 = hb_approx_set_refine(p, pre, T, 1.0, 0.0, 0.0, &err);
		bool		r3 = hb_approx_set_refine(p, pre, m + 1, NAN, 0.0, 0.0, &err);
		bool		r4 = hb_approx_set_refine(p, pre, m + 1, 1.0, 0.0, INFINITY, &err);

		tu_report(!r1 && !r2 && !r3 && !r4 && pre->refine_trees == 0,
				  "%s: a second stage of %d or %d trees, or a non-finite one, is refused (%s)",
				  name, m, T, err.msg);
	}
	hb_approx_free(lin);
	free(raw);
	free(cheap);
	free(s2);
	free(refined);
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
		if (k == 1 && T >= 4)
			test_refine_finish(name, p, a, x, n, full);
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

/*
 * Distillation (distill.c): a fit is determined by its inputs, explains
 * most of the full margins on held-out rows, survives its flat catalog form
 * bit for bit, and corrupted flat forms are refused, not crashed on; a
 * cascade through it finishes to the full model's bits.
 */
static void
test_trees(const char *name)
{
	HbPlan	   *p = load(name);
	int			nf = hb_plan_n_features(p);
	size_t		n = 4000,
				nh = 3000;
	double	   *x = rows(700001, n, nf);
	double	   *y = malloc(sizeof(double) * n);
	double	   *hx = rows(800001, nh, nf);
	double	   *hy = malloc(sizeof(double) * nh);
	double	   *c1 = malloc(sizeof(double) * nh);
	double	   *c2 = malloc(sizeof(double) * nh);
	int32_t    *feat = malloc(sizeof(int32_t) * nf);
	HbDistillSpec ds = {15, 5, 0.3, 1.0, 10, 64};
	HbModel    *m1 = NULL,
			   *m2 = NULL;
	HbApprox   *a1 = NULL,
			   *a2 = NULL;
	HbError		err = {0};
	int32_t    *codes1,
			   *codes2;
	double	   *par1,
			   *par2;
	int32_t		nc1,
				nc2,
				np1,
				np2;
	double		mean = 0.0,
				ss = 0.0,
				se = 0.0;
	size_t		bad = 0;
	int			refused = 0,
				n_corrupt = 0;

	for (int j = 0; j < nf; j++)
		feat[j] = j;
	hb_plan_margins(p, x, n, y);
	hb_plan_margins(p, hx, nh, hy);
	if (!hb_distill_fit(x, n, nf, y, feat, nf, &ds, &m1, &err) ||
		!hb_distill_fit(x, n, nf, y, feat, nf, &ds, &m2, &err) ||
		!hb_trees_encode(m1, &codes1, &nc1, &par1, &np1, &err) ||
		!hb_trees_encode(m2, &codes2, &nc2, &par2, &np2, &err))
	{
		tu_report(false, "%s: distillation (%s)", name, err.msg);
		return;
	}
	tu_report(nc1 == nc2 && np1 == np2 && memcmp(codes1, codes2, sizeof(int32_t) * nc1) == 0 &&
			  memcmp(par1, par2, sizeof(double) * np1) == 0,
			  "%s: distillation is determined by its inputs (%d trees, %d codes)", name,
			  m1->n_trees, nc1);

	if (!hb_approx_from_trees(p, m1, &a1, &err) ||
		!hb_approx_from_params(p, HB_APPROX_TREES, m1->n_trees, codes1, nc1, par1, np1, &a2, &err))
	{
		tu_report(false, "%s: tree approximation (%s)", name, err.msg);
		return;
	}
	hb_approx_margins(p, a1, hx, nh, NULL, c1);
	hb_approx_margins(p, a2, hx, nh, NULL, c2);
	for (size_t i = 0; i < nh; i++)
	{
		bad += memcmp(&c1[i], &c2[i], sizeof(double)) != 0;
		mean += hy[i];
	}
	mean /= (double) nh;
	for (size_t i = 0; i < nh; i++)
	{
		ss += (hy[i] - mean) * (hy[i] - mean);
		se += (hy[i] - c1[i]) * (hy[i] - c1[i]);
	}
	tu_report(bad == 0, "%s: the flat form scores the held-out rows with the same bits (%zu differ)",
			  name, bad);
	tu_report(1.0 - se / ss > 0.5, "%s: distilled trees explain %.1f%% of the full margins' variance on held-out rows",
			  name, 100.0 * (1.0 - se / ss));

	/* corruptions of the flat form: each must be refused */
	for (int kind = 0; kind < 8; kind++)
	{
		int32_t    *cc = malloc(sizeof(int32_t) * (nc1 + 1));
		double	   *pp = malloc(sizeof(double) * (np1 + 1));
		int32_t		nc = nc1,
					np = np1,
					nt = m1->n_trees;
		HbApprox   *bad_a = NULL;
		HbError		e2 = {0};

		memcpy(cc, codes1, sizeof(int32_t) * nc1);
		memcpy(pp, par1, sizeof(double) * np1);
		switch (kind)
		{
			case 0:			/* a child out of range (root of tree 0) */
				cc[2] = cc[0] + 5;
				break;
			case 1:			/* a split on a feature the model lacks */
				cc[1] = nf;
				break;
			case 2:			/* a cycle: the root's left child is the root */
				cc[2] = 0;
				break;
			case 3:			/* a NaN threshold */
				pp[1] = NAN;
				break;
			case 4:			/* one code short */
				nc--;
				break;
			case 5:			/* one parameter too many */
				pp[np] = 1.0;
				np++;
				break;
			case 6:			/* more trees than the codes hold */
				nt++;
				break;
			case 7:			/* a node count beyond the codes */
				cc[0] = nc1;
				break;
		}
		n_corrupt++;
		if (!hb_approx_from_params(p, HB_APPROX_TREES, nt, cc, nc, pp, np, &bad_a, &e2) &&
			e2.code == HB_ERR_INVALID && bad_a == NULL)
			refused++;
		else
			printf("# corruption %d accepted (%s)\n", kind, e2.msg);
		hb_approx_free(bad_a);
		free(cc);
		free(pp);
	}
	tu_report(refused == n_corrupt, "%s: %d of %d corrupted flat forms refused", name, refused, n_corrupt);

	if (hb_plan_n_classes(p) >= 2)
	{
		HbCascade	c = {a1, INFINITY};
		HbCascadeStats st = {0};
		double	   *want = malloc(sizeof(double) * nh);
		double	   *got = malloc(sizeof(double) * nh);

		hb_plan_predict(p, hx, nh, c2, want);
		hb_cascade_run(p, &c, hx, nh, HB_CASCADE_PREDICT, got, &st);
		bad = 0;
		for (size_t i = 0; i < nh; i++)
			bad += memcmp(&got[i], &want[i], sizeof(double)) != 0;
		tu_report(bad == 0 && st.rows_full == (int64_t) nh,
				  "%s: tree cascade with an infinite threshold = hb_plan_predict (%zu differ)", name, bad);
		free(want);
		free(got);
	}
	hb_approx_free(a1);
	hb_approx_free(a2);
	hb_model_free(m1);
	hb_model_free(m2);
	free(codes1);
	free(codes2);
	free(par1);
	free(par2);
	free(x);
	free(y);
	free(hx);
	free(hy);
	free(c1);
	free(c2);
	free(feat);
	hb_plan_free(p);
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

		/*
		 * Which candidate is chosen depends on measured costs; the chosen
		 * top-K one is fitted again on the whole fitting half (the same
		 * way in both runs when both chose it).
		 */
		if (x->chosen != y->chosen)
			continue;
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

/*
 * The rows the cut relative to the bar (approx.h) keeps, in input order,
 * batches of 1,024 (hb_topk's are larger, the plain query's smaller): a
 * row at or above the cut given the bar of the rows before its batch is
 * scored in full (its full margin may raise the bar); when the input ends
 * with the bar below the tail's floor, the best `kept` rows by screening
 * score are kept too (the queries keep fewer: `kept` less the rows above
 * the cut).  Returns the count.
 */
static size_t
bar_kept(const HbTuneCandidate *c, int k, const double *full,
		 const double *screen, const Scored *cs, size_t m, char *kept)
{
	double	   *best = malloc(sizeof(double) * k);
	int			nb = 0;
	double		bar = -INFINITY;
	size_t		count = 0;

	for (size_t from = 0; from < m; from += 1024)
	{
		size_t		to = from + 1024 < m ? from + 1024 : m;
		double		cut = hb_bar_cut(&c->bar, c->tau, bar);

		for (size_t i = from; i < to; i++)
		{
			int			w = 0;

			if (screen[i] < cut)
				continue;
			kept[i] = 1;
			count++;
			if (nb < k)
			{
				best[nb++] = full[i];
				continue;
			}
			for (int j = 1; j < k; j++)
				if (best[j] < best[w])
					w = j;
			if (full[i] > best[w])
				best[w] = full[i];
		}
		if (nb == k)
		{
			bar = best[0];
			for (int j = 1; j < k; j++)
				bar = best[j] < bar ? best[j] : bar;
		}
	}
	if (!hb_bar_cut_covers(&c->bar, bar))
		for (size_t i = 0; i < m && (int) i < c->kept; i++)
			if (!kept[cs[i].i])
			{
				kept[cs[i].i] = 1;
				count++;
			}
	free(best);
	return count;
}

/*
 * Held out: sets of rows never seen by tuning, of the evaluation half's
 * size and 30 times bigger; each keeps the rows the cheap model puts at or
 * above tau (at least the `kept` best), as hb_topk does, and counts the
 * full model's top k among them.  Every candidate's cut and bound come
 * from the evaluation half at the full confidence, so each must hold.
 */
static void
heldout_topk(const HbPlan *p, const HbTuneResult *r, const HbTuneCandidate *c,
			 const HbTuneSpec *spec, const char *what)
{
	int			nf = hb_plan_n_features(p);

	for (int big = 0; big <= 1; big++)
	{
		size_t		m = (size_t) r->n_eval * (big ? 30 : 1);
		int			sets = big ? 12 : 40,
					met = 0;
		double		psum = 0.0;
		size_t		kept_sum = 0,
					bar_sum = 0;
		double		bar_psum = 0.0;

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
			if (c->approx->refine_trees > 0)
			{
				/* the two-stage screening score the cut is on */
				double	   *raw = malloc(sizeof(double) * m);
				double	   *s2 = malloc(sizeof(double) * m);

				hb_approx_margins(p, c->approx, hx, m, raw, cheap);
				hb_approx_refine(p, c->approx, hx, m, raw, s2);
				for (size_t i = 0; i < m; i++)
					cheap[i] = cheap[i] < s2[i] ? cheap[i] : s2[i];
				free(raw);
				free(s2);
			}
			if (c->approx->gate != NULL)
			{
				/* and the gate's score plus its slack */
				double	   *g = malloc(sizeof(double) * m);

				hb_approx_gate(c->approx, hx, m, nf, g);
				for (size_t i = 0; i < m; i++)
					cheap[i] = cheap[i] < g[i] ? cheap[i] : g[i];
				free(g);
			}
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
			for (int i = 0; i < spec->k; i++)
				hit += kept[fs[i].i];
			psum += (double) hit / spec->k;
			met += (double) hit / spec->k >= spec->target;
			if (hb_bar_cut_on(&c->bar))
			{
				/* the cut relative to the bar, as the queries apply it */
				memset(kept, 0, m);
				bar_sum += bar_kept(c, spec->k, full, cheap, cs, m, kept);
				hit = 0;
				for (int i = 0; i < spec->k; i++)
					hit += kept[fs[i].i];
				bar_psum += (double) hit / spec->k;
			}
			free(hx);
			free(full);
			free(cheap);
			free(fs);
			free(cs);
			free(kept);
		}
		tu_report(psum / sets >= spec->target,
				  "held out, %d sets of %zu rows: %s %s (ratio %.1f, %d misses allowed among %d, bound %.3f) keeps %.0f rows, mean precision@%d %.3f >= %.2f (%d sets reach it)",
				  sets, m, what, c->label, c->ratio, c->misses, c->tail, c->bound,
				  (double) kept_sum / sets, spec->k, psum / sets, spec->target, met);
		if (hb_bar_cut_on(&c->bar))
			tu_report(bar_psum / sets >= spec->target &&
					  (big == 0 || bar_sum < kept_sum),
					  "held out, %d sets of %zu rows: %s, the cut relative to the bar (slope %.3f) keeps %.0f rows, mean precision@%d %.3f >= %.2f",
					  sets, m, what, c->bar.slope, (double) bar_sum / sets, spec->k,
					  bar_psum / sets, spec->target);
	}
}

/*
 * The gate (approx.h): TWO adds one, with the cut relative to the bar it
 * acts under (whichever candidate the measured times choose), and its
 * statement holds on held-out rows with the gate in the
 * screening score (heldout_topk); ONE never adds one.  Its scores are the
 * linear model's plus the slack, and what is read back is checked.
 */
static void
test_gate(const HbPlan *p, const double *x, size_t n, HbTuneSpec *spec)
{
	int			nf = hb_plan_n_features(p);
	HbTuneResult r;
	HbError		err = {0};
	const HbTuneCandidate *c = NULL;
	bool		ok = false;

	spec->gate = HB_STAGES_TWO;
	spec->seed = 42;
	if (hb_tune_run(p, x, n, spec, NULL, NULL, &r, &err))
	{
		if (r.chosen >= 0)
			c = &r.cand[r.chosen];
		else
			hb_tune_result_free(&r);
	}
	tu_report(c != NULL && c->approx->gate != NULL && hb_bar_cut_on(&c->bar) &&
			  c->bound >= spec->target &&
			  strstr(c->label, ", gate: linear on ") != NULL,
			  "top-K tuning with a gate: chosen %s, bound %.3f (%s)",
			  c ? c->label : "none", c ? c->bound : 0.0, err.msg);
	if (c != NULL && c->approx->gate != NULL)
	{
		const HbApprox *a = c->approx;
		const HbApprox *g = a->gate;
		size_t		m = 500;
		double	   *hx = rows(7000001, m, nf);
		double	   *gs = malloc(sizeof(double) * m);
		double		worst = 0.0;
		bool	   *used = calloc(nf, sizeof(bool));
		bool		subset = true;
		int			np = hb_approx_n_params(g);
		double	   *params = malloc(sizeof(double) * np);
		HbApprox   *back = NULL;
		HbError		e2 = {0};
		int32_t		bad = -1;

		heldout_topk(p, &r, c, spec, "chosen, with a gate");
		/* the scores: bias + sum of weight * (value, or its fill when missing) + slack */
		for (size_t i = 0; i < m; i += 7)
			hx[i * nf + g->feat[0]] = NAN;
		hb_approx_gate(a, hx, m, nf, gs);
		for (size_t i = 0; i < m; i++)
		{
			double		v = g->bias[0] + a->gate_slack;

			for (int j = 0; j < g->n_feat; j++)
			{
				double		xv = hx[i * nf + g->feat[j]];

				v += g->weight[j] * (isnan(xv) ? g->fill[j] : xv);
			}
			worst = fmax(worst, fabs(v - gs[i]) / fmax(1.0, fabs(v)));
		}
		tu_report(worst < 1e-12, "gate scores are the linear model's plus the slack (worst relative error %.2g)", worst);
		hb_approx_features(p, a, used);
		for (int j = 0; j < g->n_feat; j++)
			subset = subset && used[g->feat[j]];
		tu_report(subset, "the gate reads only features the cheap model reads (%d)", g->n_feat);

		/* read back: as stored, then a feature the cheap model does not read, a NaN slack */
		hb_approx_params(g, params);
		back = a->kind == HB_APPROX_PREFIX ? hb_approx_new(HB_APPROX_PREFIX, 1, a->n_trees, 0) : NULL;
		if (back != NULL)
		{
			ok = hb_approx_set_gate(p, back, g->feat, g->n_feat, params, np, a->gate_slack, &e2);
			tu_report(ok && back->gate != NULL && back->gate_slack == a->gate_slack,
					  "a gate is read back (%s)", e2.msg);
			hb_approx_free(back);
		}
		for (int j = 0; j < nf && bad < 0; j++)
			if (!used[j])
				bad = j;
		if (bad >= 0)
		{
			HbApprox   *b2 = hb_approx_new(HB_APPROX_PREFIX, 1, 1, 0);
			int32_t		f1[1] = {bad};
			double		p1[3] = {0.0, 1.0, 0.0};

			if (a->kind == HB_APPROX_PREFIX)
				b2->n_trees = a->n_trees;
			ok = hb_approx_set_gate(p, a->kind == HB_APPROX_PREFIX ? b2 : (HbApprox *) a,
									f1, 1, p1, 3, 0.0, &e2);
			tu_report(!ok && strstr(e2.msg, "which the cheap model does not") != NULL,
					  "a gate on feature %d, which the cheap model does not read, is refused (%s)",
					  bad, e2.msg);
			hb_approx_free(b2);
		}
		{
			HbApprox   *b3 = hb_approx_new(HB_APPROX_PREFIX, 1, 1, 0);
			HbError		e3 = {0};

			ok = hb_approx_set_gate(p, b3, g->feat, g->n_feat, params, np, NAN, &e3);
			tu_report(!ok && b3->gate == NULL && strstr(e3.msg, "not finite") != NULL,
					  "a gate with a NaN slack is refused (%s)", e3.msg);
			hb_approx_free(b3);
		}
		free(hx);
		free(gs);
		free(used);
		free(params);
	}
	if (c != NULL)
		hb_tune_result_free(&r);
	spec->gate = HB_STAGES_ONE;
	spec->seed = 42;
	ok = hb_tune_run(p, x, n, spec, NULL, NULL, &r, &err);
	tu_report(ok && r.chosen >= 0 && r.cand[r.chosen].approx->gate == NULL,
			  "top-K tuning without a gate: chosen %s", ok && r.chosen >= 0 ? r.cand[r.chosen].label : "none");
	if (ok)
		hb_tune_result_free(&r);
	spec->gate = HB_STAGES_AUTO;
}

static void
test_topk_tuning(void)
{
	HbPlan	   *p = load("willump_rank");
	int			nf = hb_plan_n_features(p);
	size_t		n = 6000;
	double	   *x = rows(100001, n, nf);
	HbTuneSpec	spec = {HB_TUNE_TOPK, 10, 0.9, 0.95, 42, NULL, 0, NULL, NULL, 0, HB_STAGES_AUTO, HB_STAGES_AUTO};
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

	heldout_topk(p, &r1, &r1.cand[r1.chosen], &spec, "chosen");
	{
		/* the best tree candidate by the fitting half, whether chosen or not */
		const HbTuneCandidate *bt = NULL;

		for (int i = 0; i < r1.n_cand; i++)
			if (r1.cand[i].approx->kind == HB_APPROX_TREES &&
				(bt == NULL || r1.cand[i].select_ns < bt->select_ns))
				bt = &r1.cand[i];
		tu_report(bt != NULL, "tree candidates were built");
		if (bt)
			heldout_topk(p, &r1, bt, &spec, "best tree candidate");
	}
	hb_tune_result_free(&r1);
	hb_tune_result_free(&r2);

	/*
	 * Two stages, whether cheaper or not: the cut is on min(cheap, second
	 * stage + slack), and its statement holds on held-out rows; one stage
	 * only, none is added
	 */
	spec.stages = HB_STAGES_TWO;
	ok1 = hb_tune_run(p, x, n, &spec, NULL, NULL, &r1, &err);
	tu_report(ok1 && r1.chosen >= 0 && r1.cand[r1.chosen].approx->refine_trees > 0 &&
			  r1.cand[r1.chosen].bound >= spec.target &&
			  r1.cand[r1.chosen].screened >= r1.cand[r1.chosen].coverage,
			  "top-K tuning with two stages: chosen %s, screens %.2f%%, re-scores %.2f%%, bound %.3f (%s)",
			  ok1 && r1.chosen >= 0 ? r1.cand[r1.chosen].label : "none",
			  ok1 && r1.chosen >= 0 ? 100.0 * r1.cand[r1.chosen].screened : 0.0,
			  ok1 && r1.chosen >= 0 ? 100.0 * r1.cand[r1.chosen].coverage : 0.0,
			  ok1 && r1.chosen >= 0 ? r1.cand[r1.chosen].bound : 0.0, err.msg);
	if (ok1 && r1.chosen >= 0)
		heldout_topk(p, &r1, &r1.cand[r1.chosen], &spec, "chosen, two stages");
	if (ok1)
		hb_tune_result_free(&r1);

	/*
	 * The cut relative to the bar is added only where the selection rows
	 * say it keeps fewer rows than the fixed cut; which candidate wins
	 * depends on measured times, and on this small sample (tails of 29-46
	 * rows) one of them in five or so gets none (more on a busy machine,
	 * whose times move the choice: six seeds once all got none).  Some
	 * seed must give one, in range, and heldout_topk checked it above
	 * wherever one was set.
	 */
	{
		bool		found = false;
		HbBarCut	bc = {NAN, NAN, NAN, false};

		for (uint64_t seed = 43; seed < 67 && !found; seed++)
		{
			spec.seed = seed;
			if (!hb_tune_run(p, x, n, &spec, NULL, NULL, &r1, &err))
				break;
			if (r1.chosen >= 0)
				bc = r1.cand[r1.chosen].bar;
			found = hb_bar_cut_on(&bc);
			hb_tune_result_free(&r1);
		}
		tu_report(found && bc.slope >= 0.0 && bc.slope <= 1.0 && bc.margin > -1e300,
				  "two stages: a cut relative to the bar (slope %.3f, floor %.4g, margin %.4g)",
				  bc.slope, bc.floor, bc.margin);
		spec.seed = 42;
	}
	spec.stages = HB_STAGES_ONE;
	ok1 = hb_tune_run(p, x, n, &spec, NULL, NULL, &r1, &err);
	tu_report(ok1 && r1.chosen >= 0 && r1.cand[r1.chosen].approx->refine_trees == 0,
			  "top-K tuning with one stage: chosen %s", ok1 && r1.chosen >= 0 ? r1.cand[r1.chosen].label : "none");
	if (ok1)
		hb_tune_result_free(&r1);
	spec.stages = HB_STAGES_AUTO;
	test_gate(p, x, n, &spec);
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
	HbTuneSpec	spec = {HB_TUNE_CASCADE, 0, target, 0.95, 7, NULL, 0, NULL, NULL, 0, HB_STAGES_AUTO, HB_STAGES_AUTO};
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


/* completion for the lazy cascade test: featurize the rows in full again */
static const HbRawRows *lazy_src;
static const HbPipeline *lazy_pl;

static void
complete_rows(void *arg, const size_t *rows_, size_t n, double *xs)
{
	int			nt = lazy_pl->n_text_inputs,
				nn = lazy_pl->n_num_inputs;

	(void) arg;
	for (size_t i = 0; i < n; i++)
	{
		HbRawRows	one = {1, lazy_src->num + rows_[i] * nn, lazy_src->text + rows_[i] * nt};
		HbError		err = {0};

		hb_pipeline_run(lazy_pl, &one, xs + i * lazy_pl->n_features, &err);
	}
}

/* ---- featurization cost and lazy featurization (willump_text) ---- */

static const char *const text_words[] = {
	"amber", "basil", "cedar", "delta", "ember", "fjord", "glade", "harbor",
	"indigo", "juniper", "kestrel", "lagoon", "meadow", "nectar", "orchid", "prairie"
};

/* gen_willump.py's text_rows: a, b, c and the note of each row */
static void
text_rows(long first, size_t n, double **num_out, HbText **text_out)
{
	double	   *x = rows(first, n, 9);
	double	   *num = malloc(sizeof(double) * n * 3);
	HbText	   *text = malloc(sizeof(HbText) * n);

	for (size_t i = 0; i < n; i++)
	{
		char		buf[256];
		int			len = 0;

		for (int j = 3; j < 9; j++)
		{
			if (j == 5 && x[i * 9] > 0.2)
				len += snprintf(buf + len, sizeof(buf) - len, "%salert", len ? " " : "");
			len += snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? " " : "",
							text_words[(int) floor((x[i * 9 + j] + 1) * 8)]);
		}
		text[i].ptr = strdup(buf);
		text[i].len = len;
		for (int j = 0; j < 3; j++)
			num[i * 3 + j] = x[i * 9 + j];
	}
	free(x);
	*num_out = num;
	*text_out = text;
}

/* the smallest linear candidate by featurization cost */
static const HbTuneCandidate *
cheapest_linear(const HbTuneResult *r)
{
	const HbTuneCandidate *best = NULL;

	for (int i = 0; i < r->n_cand; i++)
		if (r->cand[i].approx->kind == HB_APPROX_LINEAR &&
			(best == NULL || r->cand[i].featurize_ns < best->featurize_ns))
			best = &r->cand[i];
	return best;
}

static void
test_featurization(void)
{
	size_t		len,
				n = 8000;
	char	   *bytes = tu_read_file("test/fixtures/willump/willump_text.json", &len);
	HbModel    *m = NULL;
	HbPlan	   *p = NULL;
	HbError		err = {0};
	const HbPipeline *pl;
	HbPipelineDeps d;
	double	   *num,
			   *x,
			   *xp,
			   group_ns[HB_MAX_FEATURE_GROUPS],
				all_ns;
	HbText	   *text;
	HbRawRows	raw;
	int			nf;
	bool	   *feat_on,
			   *step_on;
	bool		ok = true;
	int			text_feats = 0;

	if (bytes == NULL || !hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err) ||
		m->pipeline == NULL || !hb_plan_build(m, &p, &err))
	{
		tu_report(false, "load willump_text: %s", err.msg);
		return;
	}
	pl = m->pipeline;
	nf = pl->n_features;
	text_rows(100001, n, &num, &text);
	raw.n = n;
	raw.num = num;
	raw.text = text;
	x = malloc(sizeof(double) * n * nf);
	xp = malloc(sizeof(double) * n * nf);
	feat_on = calloc(nf, sizeof(bool));
	step_on = calloc(pl->n_steps, sizeof(bool));
	tu_report(hb_pipeline_run(pl, &raw, x, &err), "willump_text: featurized %zu rows", n);

	/* groups: a, b, c and note; the scaler's outputs each from one column */
	ok = hb_pipeline_deps(pl, &d, &err) && d.n_groups == 4;
	for (int j = 0; j < nf && ok; j++)
	{
		uint64_t	want = j < 3 ? UINT64_C(1) << j : UINT64_C(1) << 3;

		ok = d.feat_groups[j] == want;
		text_feats += j >= 3;
	}
	tu_report(ok, "willump_text: feature groups from the step graph (%d text features)", text_feats);

	/* a partial run gives the chosen features' bits, writes nothing else, and skips the rest */
	for (int part = 0; part < 2; part++)
	{
		int			steps = 0;

		for (int j = 0; j < nf; j++)
			feat_on[j] = part == 0 ? j < 3 : j >= 3;
		hb_pipeline_steps_for(pl, feat_on, step_on);
		for (int k = 0; k < pl->n_steps; k++)
			steps += step_on[k];
		{
			double	   *slots = calloc(hb_pipeline_row_slots(pl), sizeof(double));

			int32_t    *feats = malloc(sizeof(int32_t) * nf);

			/* features outside the list are left as they were */
			for (size_t i = 0; i < n * nf; i++)
				xp[i] = -12345.0;
			ok = hb_pipeline_run_steps(pl, &raw, xp, slots, step_on, feats,
									   hb_feature_list(feat_on, nf, feats), &err);
			free(slots);
			free(feats);
		}
		for (size_t i = 0; i < n * nf && ok; i++)
			ok = feat_on[i % nf] ? memcmp(&xp[i], &x[i], sizeof(double)) == 0 : xp[i] == -12345.0;
		ok = ok && step_on[1] == (part == 1) && step_on[0] == (part == 0);
		tu_report(ok && steps == 2, "willump_text: partial featurization of the %s features: %d of %d steps, same bits, other features untouched",
				  part == 0 ? "numeric" : "text", steps, pl->n_steps);
	}

	/* measured costs: the note costs more than any numeric column */
	{
		HbRawRows	traw = {2000, num, text};

		ok = hb_pipeline_group_costs(pl, &d, &traw, group_ns, &all_ns, &err);
		tu_report(ok && group_ns[3] > 4 * group_ns[0] && group_ns[3] > 4 * group_ns[1] &&
				  all_ns >= group_ns[3] * 0.5,
				  "willump_text: featurization cost per row: a %.1f ns, b %.1f ns, c %.1f ns, note %.1f ns, all %.1f ns",
				  group_ns[0], group_ns[1], group_ns[2], group_ns[3], all_ns);
	}

	/*
	 * a > 0.2 and the word "alert" say the same: the cheapest linear model
	 * takes the cheap column, and the text when the costs are swapped.
	 */
	for (int swap = 0; swap < 2; swap++)
	{
		double		cost[4] = {10, 10, 10, 2000};
		HbTuneSpec	spec = {HB_TUNE_CASCADE, 0, 0.02, 0.95, 3, NULL, 4, d.feat_groups, cost, 0, HB_STAGES_AUTO, HB_STAGES_AUTO};
		HbTuneResult r;
		const HbTuneCandidate *c;

		if (swap)
		{
			cost[0] = 2000;
			cost[3] = 10;
		}
		spec.featurize_ns = cost[0] + cost[1] + cost[2] + cost[3];
		ok = hb_tune_run(p, x, n, &spec, NULL, NULL, &r, &err);
		c = ok ? cheapest_linear(&r) : NULL;
		tu_report(c != NULL && (swap ? !(c->groups & 1) && (c->groups & 8) :
								!(c->groups & 8) && (c->groups & 1)) &&
				  c->featurize_ns < (swap ? cost[0] : cost[3]),
				  "willump_text: %s: the cheapest linear candidate (%s) reads groups %#llx, featurizing %.0f ns of %.0f",
				  swap ? "text cheap, a expensive" : "a cheap, text expensive",
				  c ? c->label : err.msg, c ? (unsigned long long) c->groups : 0ULL,
				  c ? c->featurize_ns : 0, spec.featurize_ns);
		if (!swap && ok && r.chosen >= 0)
		{
			/* lazy: the cascade on partly featurized rows, completing the rest */
			const HbTuneCandidate *ch = c;
			HbCascade	casc = {ch->approx, ch->threshold};
			double	   *out1 = malloc(sizeof(double) * n);
			double	   *out2 = malloc(sizeof(double) * n);
			double	   *slots = calloc(hb_pipeline_row_slots(pl), sizeof(double));
			HbCascadeStats s1 = {0},
						s2 = {0};

			hb_approx_features(p, ch->approx, feat_on);
			hb_pipeline_steps_for(pl, feat_on, step_on);
			{
				int32_t    *feats = malloc(sizeof(int32_t) * nf);

				hb_pipeline_run_steps(pl, &raw, xp, slots, step_on, feats,
									  hb_feature_list(feat_on, nf, feats), &err);
				free(feats);
			}
			for (int what = 0; what < 2; what++)
			{
				hb_cascade_run(p, &casc, x, n, what, out1, &s1);
				lazy_src = &raw;
				lazy_pl = pl;
				hb_cascade_run_lazy(p, &casc, xp, n, what, out2, &s2, complete_rows, NULL);
				tu_report(memcmp(out1, out2, sizeof(double) * n) == 0 && s2.rows_full > 0 &&
						  s2.rows_full < (int64_t) n,
						  "willump_text: lazy cascade (%s, %s) gives the same bits, %lld of %zu rows completed",
						  ch->label, what == HB_CASCADE_CLASS ? "class" : "predict",
						  (long long) s2.rows_full / (what + 1), n);
			}
			free(out1);
			free(out2);
			free(slots);
		}
		if (ok)
			hb_tune_result_free(&r);
	}

	for (size_t i = 0; i < n; i++)
		free((void *) text[i].ptr);
	free(text);
	free(num);
	free(x);
	free(xp);
	free(feat_on);
	free(step_on);
	free(bytes);
	hb_pipeline_deps_free(&d);
	hb_plan_free(p);
	hb_model_free(m);
}

static void
test_errors(void)
{
	HbPlan	   *rank = load("willump_rank");
	HbPlan	   *fraud = load("willump_fraud");
	/* a binary PROBIT model: its class is an interval of margins, no cut */
	HbPlan	   *probit = load_link("willump_fraud", HB_LINK_PROBIT);
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
		{rank, {HB_TUNE_TOPK, 5, 0.0, 0.95, 0, NULL, 0, NULL, NULL, 0, HB_STAGES_AUTO, HB_STAGES_AUTO}, 100, HB_ERR_ARGUMENT, "target 0"},
		{rank, {HB_TUNE_TOPK, 5, 1.0, 0.95, 0, NULL, 0, NULL, NULL, 0, HB_STAGES_AUTO, HB_STAGES_AUTO}, 100, HB_ERR_ARGUMENT, "target 1"},
		{rank, {HB_TUNE_TOPK, 5, 0.9, 1.0, 0, NULL, 0, NULL, NULL, 0, HB_STAGES_AUTO, HB_STAGES_AUTO}, 100, HB_ERR_ARGUMENT, "confidence 1"},
		{rank, {HB_TUNE_TOPK, 5, 0.9, NAN, 0, NULL, 0, NULL, NULL, 0, HB_STAGES_AUTO, HB_STAGES_AUTO}, 100, HB_ERR_ARGUMENT, "confidence NaN"},
		{rank, {HB_TUNE_TOPK, 0, 0.9, 0.9, 0, NULL, 0, NULL, NULL, 0, HB_STAGES_AUTO, HB_STAGES_AUTO}, 100, HB_ERR_ARGUMENT, "k 0"},
		{rank, {HB_TUNE_TOPK, 60, 0.9, 0.9, 0, NULL, 0, NULL, NULL, 0, HB_STAGES_AUTO, HB_STAGES_AUTO}, 100, HB_ERR_ARGUMENT, "sample too small for k"},
		{rank, {HB_TUNE_TOPK, 5, 0.99, 0.95, 0, NULL, 0, NULL, NULL, 0, HB_STAGES_AUTO, HB_STAGES_AUTO}, 100, HB_ERR_ARGUMENT, "sample too small for the target"},
		{rank, {HB_TUNE_CASCADE, 0, 0.01, 0.9, 0, NULL, 0, NULL, NULL, 0, HB_STAGES_AUTO, HB_STAGES_AUTO}, 100, HB_ERR_UNSUPPORTED, "cascade of a regression"},
		{fraud, {HB_TUNE_CASCADE, 0, 0.01, 0.9, 0, NULL, 0, NULL, NULL, 0, HB_STAGES_AUTO, HB_STAGES_AUTO}, 0, HB_ERR_ARGUMENT, "empty sample"},
		{probit, {HB_TUNE_CASCADE, 0, 0.01, 0.9, 0, NULL, 0, NULL, NULL, 0, HB_STAGES_AUTO, HB_STAGES_AUTO}, 100, HB_ERR_UNSUPPORTED, "cascade of a binary PROBIT model"},
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
	hb_plan_free(probit);
}

/* Whether every parameter of a (and of its gate) is finite, as a tuning's loader requires. */
static bool
params_finite(const HbApprox *a)
{
	int			np = hb_approx_n_params(a);
	double	   *pv = malloc(sizeof(double) * (np + 1));
	bool		ok = true;

	hb_approx_params(a, pv);
	for (int i = 0; i < np; i++)
		ok = ok && isfinite(pv[i]);
	free(pv);
	return ok && (a->gate == NULL || params_finite(a->gate)) &&
		isfinite(a->gate_slack) && isfinite(a->refine_scale) &&
		isfinite(a->refine_shift) && isfinite(a->refine_slack);
}

/*
 * Samples with values a linear fit cannot take as they are: one +inf
 * (its mean was infinite: the stored tuning had an infinite parameter, and
 * every later top-K query of the model failed), and a fifth of the values
 * at 1e300 (their squares overflow: the least-squares fit failed and
 * hb_tune with it).  Tuning succeeds with finite parameters only, and the
 * cheap score of the row with +inf is finite.
 */
static void
test_nonfinite_samples(void)
{
	struct
	{
		const char *model;
		HbTuneKind	kind;
		double		target;
		bool		huge;
	}			cases[] = {
		{"willump_rank", HB_TUNE_TOPK, 0.9, false},
		{"willump_rank", HB_TUNE_TOPK, 0.9, true},
		{"willump_fraud", HB_TUNE_CASCADE, 0.02, false},
		{"willump_fraud", HB_TUNE_CASCADE, 0.02, true},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		HbPlan	   *p = load(cases[i].model);
		int			nf = hb_plan_n_features(p);
		size_t		n = 6000;
		double	   *x = rows(300001, n, nf);
		HbTuneSpec	spec = {cases[i].kind, cases[i].kind == HB_TUNE_TOPK ? 10 : 0,
			cases[i].target, 0.9, 7, NULL, 0, NULL, NULL, 0, HB_STAGES_AUTO, HB_STAGES_AUTO};
		HbTuneResult r;
		HbError		err = {0};
		bool		ok;
		int			bad = 0;
		int			linear = 0;
		double		cheap = 0.0;

		x[17 * nf] = INFINITY;
		if (cases[i].huge)
			for (size_t j = 0; j < n * nf; j += 5)
				x[j] = (j / 5) % 2 ? 1e300 : -1e300;
		ok = hb_tune_run(p, x, n, &spec, NULL, NULL, &r, &err);
		if (ok)
		{
			for (int c = 0; c < r.n_cand; c++)
			{
				bad += !params_finite(r.cand[c].approx);
				linear += r.cand[c].approx->kind == HB_APPROX_LINEAR;
			}
			if (r.chosen >= 0)
				hb_approx_margins(p, r.cand[r.chosen].approx, x + 17 * nf, 1, NULL, &cheap);
		}
		tu_report(ok && r.chosen >= 0 && bad == 0 && isfinite(cheap) &&
				  (cases[i].huge || linear > 0),
				  "%s, %s, %s: tuned (%s), %d candidates (%d linear), %d with a parameter not finite; the +inf row's cheap margin %g",
				  cases[i].model, cases[i].kind == HB_TUNE_TOPK ? "top-K" : "cascade",
				  cases[i].huge ? "a fifth of the values at 1e300 and one +inf" : "one +inf",
				  ok ? (r.chosen >= 0 ? r.cand[r.chosen].label : "none chosen") : err.msg,
				  ok ? r.n_cand : 0, linear, bad, cheap);
		if (ok)
			hb_tune_result_free(&r);
		free(x);
		hb_plan_free(p);
	}
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
	test_trees("willump_rank");
	test_trees("willump_fraud");
	test_topk_tuning();
	test_cascade_tuning("willump_fraud", 0.01);
	test_cascade_tuning("willump_multi", 0.02);
	test_errors();
	test_nonfinite_samples();
	test_featurization();
	printf("1..%d\n", tu_n_test);
	printf("# passed %d failed %d\n", (tu_n_test - tu_n_fail), tu_n_fail);
	return tu_n_fail ? 1 : 0;
}
