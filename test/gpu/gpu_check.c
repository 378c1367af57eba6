/*
 * gpu_check.c
 *	  GPU margins against CPU margins, and GPU throughput: the program of
 *	  test/gpu/run.sh, for hosts with a GPU and no PostgreSQL.
 *
 *	gpu_check [--cpu-only] [--no-bench] [--conformance DIR]
 *
 * 1. The device: its name, or why there is none.  Without one every GPU
 *	  check is reported as skipped and the program exits 0.
 * 2. The dispatch of hb_plan_margins in modes cpu, auto and gpu, which runs
 *	  everywhere: without a device, gpu falls back (no error hook here) and
 *	  reports HB_ERR_DEVICE from hb_device_wanted.
 * 3. Random models (numeric, categorical, the three missing modes, float32
 *	  and double semantics, one and three outputs, inputs with NaN, +-Inf,
 *	  +-0 and values on the thresholds) and the conformance corpus: the
 *	  device's margins must be the CPU's to the bit, with each kernel (PTT,
 *	  TT; the row kernels and the (row, tree) kernels of small batches), and
 *	  so must the kernels' row code emulated on the CPU.
 * 4. Throughput of the 500-tree depth-8 28-feature model for batches of
 *	  1 to 1,000,000 rows, with the rows already on the device and copied
 *	  from the host, and the host-to-device bandwidth bound.
 *
 * TAP lines ("ok N - ...", "not ok N - ...", "# ..."); exit status 1 when
 * a check failed.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device.h"
#include "json.h"
#include "plan_int.h"
#include "../core/test_util.h"
#include "../core/test_models.h"
#ifdef HB_USE_CUDA
#include "../../src/cuda/hb_cuda.h"
#endif

static int	n_skip = 0;

static void
skip(const char *what, const char *why)
{
	tu_n_test++;
	n_skip++;
	printf("ok %d - %s # SKIP %s\n", tu_n_test, what, why);
}

static void
diag(const char *fmt,...)
{
	va_list		ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---------- checks ---------- */

static bool have_device = false;

/* First cell whose bits differ, or -1. */
static long
first_difference(const double *a, const double *b, size_t cells)
{
	if (memcmp(a, b, sizeof(double) * cells) == 0)
		return -1;
	for (size_t i = 0; i < cells; i++)
		if (memcmp(&a[i], &b[i], sizeof(double)) != 0)
			return (long) i;
	return -1;
}

/*
 * The device's margins for x with each kernel (hbird.tree_strategy tt and
 * ptt pick them, as in a backend) against the CPU's TT margins.
 */
static void
check_plan(const char *name, const HbPlan *p, const double *x, size_t n)
{
	static const HbStrategy forced[] = {HB_STRATEGY_TT, HB_STRATEGY_PTT};
	int			k = hb_plan_n_outputs(p);
	size_t		cells = n * (size_t) k;
	double	   *cpu = malloc(sizeof(double) * cells + 8);
	double	   *gpu = malloc(sizeof(double) * cells + 8);

	hb_plan_margins_with(p, HB_STRATEGY_TT, x, n, cpu);
	for (size_t i = 0; i < sizeof(forced) / sizeof(forced[0]); i++)
	{
		char		what[300];
		HbError		err = {0};
		long		bad;

		hb_set_strategy_override(forced[i]);
		/* the kernels' row code on the CPU: runs without a device */
		for (int variant = 0; variant < 3 && hb_device_built(); variant++)
		{
			static const char *vname[] = {"", " (keys from inputs)", " (row x tree, then reduction)"};
			const char *kernel = "";

			memset(gpu, 0x7f, sizeof(double) * cells);
			memset(&err, 0, sizeof(err));
			if (!hb_device_emulate_margins(p, variant, x, n, gpu, &kernel, &err))
				tu_report(false, "%s: emulated kernel: %s", name, err.msg);
			else if (variant == 1 && strcmp(kernel, "ptt") != 0)
				continue;		/* the variant is PTT's alone */
			else if ((bad = first_difference(gpu, cpu, cells)) >= 0)
				tu_report(false, "%s: emulated %s kernel%s: row %ld output %ld: %a, cpu %a",
						  name, kernel, vname[variant], bad / k, bad % k, gpu[bad], cpu[bad]);
			else
				tu_report(true, "%s: %zu rows x %d outputs, emulated %s kernel%s: bit-identical",
						  name, n, k, kernel, vname[variant]);
		}
		memset(&err, 0, sizeof(err));

		snprintf(what, sizeof(what), "%s: %zu rows x %d outputs, kernel for tree_strategy=%s",
				 name, n, k, hb_strategy_name(forced[i]));
		if (!have_device)
		{
			skip(what, "no CUDA device");
			continue;
		}
		memset(gpu, 0x7f, sizeof(double) * cells);	/* every cell must be written */
		if (!hb_device_margins(p, x, n, gpu, &err))
			tu_report(false, "%s: %s", what, err.msg);
		else if ((bad = first_difference(gpu, cpu, cells)) >= 0)
			tu_report(false, "%s: row %ld output %ld: gpu %a, cpu %a", what,
					  bad / k, bad % k, gpu[bad], cpu[bad]);
		else
			tu_report(true, "%s: bit-identical", what);

		/*
		 * Small batches take the (row, tree) kernels: the same rows again
		 * as a batch big enough for the row kernels.
		 */
		if (n > 0 && n <= 16384)
		{
			size_t		reps = 16385 / n + 1;
			size_t		nf = (size_t) hb_plan_n_features(p);
			double	   *x2 = malloc(sizeof(double) * reps * n * nf);
			double	   *cpu2 = malloc(sizeof(double) * reps * cells);
			double	   *gpu2 = malloc(sizeof(double) * reps * cells);

			for (size_t r = 0; r < reps; r++)
			{
				memcpy(x2 + r * n * nf, x, sizeof(double) * n * nf);
				memcpy(cpu2 + r * cells, cpu, sizeof(double) * cells);
			}
			memset(gpu2, 0x7f, sizeof(double) * reps * cells);
			memset(&err, 0, sizeof(err));
			if (!hb_device_margins(p, x2, reps * n, gpu2, &err))
				tu_report(false, "%s, %zu rows: %s", what, reps * n, err.msg);
			else if ((bad = first_difference(gpu2, cpu2, reps * cells)) >= 0)
				tu_report(false, "%s, %zu rows: row %ld output %ld: gpu %a, cpu %a", what,
						  reps * n, bad / k, bad % k, gpu2[bad], cpu2[bad]);
			else
				tu_report(true, "%s, as %zu rows (row kernel): bit-identical", what, reps * n);
			free(x2);
			free(cpu2);
			free(gpu2);
		}
	}
	hb_set_strategy_override(HB_STRATEGY_AUTO);
	free(cpu);
	free(gpu);
}

static double *
inputs_with_nans(int nf, size_t n)
{
	double	   *x = malloc(sizeof(double) * n * nf + 8);

	for (size_t i = 0; i < n * nf; i++)
		x[i] = random_input();
	return x;
}

static void
check_random_models(void)
{
	static const int depths[] = {0, 1, 2, 4, 6, 8, 10, 12};

	for (size_t di = 0; di < sizeof(depths) / sizeof(depths[0]); di++)
		for (int variant = 0; variant < 8; variant++)
		{
			GenOpts		o;
			HbModel    *m;
			HbPlan	   *p = NULL;
			HbError		err = {0};
			double	   *x;
			char		name[160];
			size_t		n = 2500;	/* several blocks and a partial one */

			memset(&o, 0, sizeof(o));
			o.depth = depths[di];
			o.cmp = (variant & 1) ? HB_CMP_LE_F64 : HB_CMP_LT_F32;
			o.n_outputs = (variant & 2) ? 3 : 1;
			o.kinds = (variant & 4) != 0;
			o.n_trees = 40;
			o.n_features = 12;
			o.p_leaf = 0.2;
			o.default_left = -1;
			m = random_model(&o);
			if (m == NULL)
			{
				tu_report(false, "random model depth %d variant %d: not generated", o.depth, variant);
				continue;
			}
			/* LightGBM-like: zero snapping with double semantics */
			m->zero_snap = o.kinds && o.cmp == HB_CMP_LE_F64;
			snprintf(name, sizeof(name), "random depth %d, %s, %d output%s%s%s",
					 o.depth, o.cmp == HB_CMP_LT_F32 ? "float32" : "double",
					 o.n_outputs, o.n_outputs > 1 ? "s" : "",
					 o.kinds ? ", categorical/ZERO/NONE nodes" : "",
					 m->zero_snap ? ", zero snapping" : "");
			if (!hb_plan_build(m, &p, &err))
				tu_report(false, "%s: plan: %s", name, err.msg);
			else
			{
				x = inputs_with_nans(o.n_features, n);
				check_plan(name, p, x, n);
				free(x);
			}
			hb_plan_free(p);
			hb_model_free(m);
		}

	/* wide: keys don't fit shared memory, and several transfers per batch */
	{
		GenOpts		o;
		HbModel    *m;
		HbPlan	   *p = NULL;
		HbError		err = {0};
		size_t		n = 24000;

		memset(&o, 0, sizeof(o));
		o.depth = 6;
		o.cmp = HB_CMP_LT_F32;
		o.n_outputs = 1;
		o.n_trees = 60;
		o.n_features = 3000;
		o.default_left = -1;
		o.full = true;
		m = random_model(&o);
		if (m && hb_plan_build(m, &p, &err))
		{
			double	   *x = inputs_with_nans(o.n_features, n);

			check_plan("random wide (3000 features, 60 trees, depth 6)", p, x, n);
			free(x);
		}
		else
			tu_report(false, "random wide model: %s", m ? err.msg : "not generated");
		hb_plan_free(p);
		hb_model_free(m);
	}
}

/* The dispatch in hb_plan_margins, in every mode; runs without a device. */
static void
check_dispatch(void)
{
	GenOpts		o;
	HbModel    *m;
	HbPlan	   *p = NULL;
	HbError		err = {0};
	size_t		n = 3000;
	double	   *x,
			   *ref,
			   *got;
	bool		wanted;
	static const HbDeviceMode modes[] = {HB_DEVICE_CPU, HB_DEVICE_AUTO, HB_DEVICE_GPU};
	static const char *names[] = {"cpu", "auto", "gpu"};

	memset(&o, 0, sizeof(o));
	o.depth = 6;
	o.cmp = HB_CMP_LT_F32;
	o.n_outputs = 1;
	o.n_trees = 30;
	o.n_features = 10;
	o.default_left = -1;
	m = random_model(&o);
	if (m == NULL || !hb_plan_build(m, &p, &err))
	{
		tu_report(false, "dispatch model: %s", err.msg);
		return;
	}
	x = inputs_with_nans(o.n_features, n);
	ref = malloc(sizeof(double) * n);
	got = malloc(sizeof(double) * n);
	hb_plan_margins_with(p, HB_STRATEGY_TT, x, n, ref);
	hb_device_set_min_batch(1000);
	for (int i = 0; i < 3; i++)
	{
		HbDeviceStats before,
					after;

		hb_device_set_mode(modes[i]);
		memset(&err, 0, sizeof(err));
		wanted = hb_device_wanted(p, n, &err);
		if (modes[i] == HB_DEVICE_CPU)
			tu_report(!wanted && err.code == HB_OK, "mode cpu: batches stay on the CPU");
		else if (have_device)
			tu_report(wanted && err.code == HB_OK, "mode %s: a batch of %zu rows goes to the device",
					  names[i], n);
		else if (modes[i] == HB_DEVICE_AUTO)
			tu_report(!wanted && err.code == HB_OK, "mode auto without a device: the CPU, no error");
		else
			tu_report(!wanted && err.code == HB_ERR_DEVICE && strstr(err.msg, "CUDA") != NULL,
					  "mode gpu without a device: HB_ERR_DEVICE (%s)", err.msg);

		/* single rows always stay on the CPU */
		memset(&err, 0, sizeof(err));
		tu_report(!hb_device_wanted(p, 1, &err) && err.code == HB_OK,
				  "mode %s: one row runs on the CPU", names[i]);
		if (modes[i] == HB_DEVICE_AUTO)
		{
			memset(&err, 0, sizeof(err));
			tu_report(!hb_device_wanted(p, 999, &err) && err.code == HB_OK,
					  "mode auto: 999 rows (below gpu_min_batch 1000) run on the CPU");
		}

		hb_device_stats(&before);
		memset(got, 0x7f, sizeof(double) * n);
		hb_plan_margins(p, x, n, got);
		hb_device_stats(&after);
		tu_report(first_difference(got, ref, n) < 0,
				  "mode %s: hb_plan_margins gives the CPU's bits (%s)", names[i],
				  after.batches > before.batches ? "ran on the device" : "ran on the CPU");
		if (modes[i] != HB_DEVICE_CPU && have_device)
			tu_report(after.batches == before.batches + 1,
					  "mode %s: the batch ran on the device", names[i]);
	}
	hb_device_set_mode(HB_DEVICE_AUTO);
	hb_device_set_min_batch(HB_DEVICE_DEFAULT_MIN_BATCH);
	free(x);
	free(ref);
	free(got);
	hb_plan_free(p);
	hb_model_free(m);
}

/* The device memory budget: refusals, and least recently used out. */
static void
check_budget(void)
{
	GenOpts		o;
	HbModel    *m[2] = {NULL, NULL};
	HbPlan	   *p[2] = {NULL, NULL};
	HbError		err = {0};
	HbDeviceStats st;
	size_t		one;

	if (!have_device)
	{
		skip("device memory budget", "no CUDA device");
		return;
	}
	memset(&o, 0, sizeof(o));
	o.depth = 8;
	o.cmp = HB_CMP_LT_F32;
	o.n_outputs = 1;
	o.n_trees = 50;
	o.n_features = 10;
	o.default_left = -1;
	o.full = true;
	for (int i = 0; i < 2; i++)
	{
		m[i] = random_model(&o);
		if (m[i] == NULL || !hb_plan_build(m[i], &p[i], &err))
		{
			tu_report(false, "budget model: %s", err.msg);
			goto done;
		}
	}

	hb_device_set_budget(1024);
	memset(&err, 0, sizeof(err));
	tu_report(!hb_device_plan_upload(p[0], &err) && err.code == HB_ERR_DEVICE &&
			  strstr(err.msg, "hbird.gpu_memory") != NULL,
			  "a plan over the budget is refused (%s)", err.msg);

	hb_device_set_budget(HB_DEVICE_DEFAULT_BUDGET);
	memset(&err, 0, sizeof(err));
	if (!hb_device_plan_upload(p[0], &err))
	{
		tu_report(false, "budget: upload: %s", err.msg);
		goto done;
	}
	hb_device_stats(&st);
	one = st.resident_bytes;
	/* room for one of the two: the second upload evicts the first */
	hb_device_set_budget(one + one / 2);
	memset(&err, 0, sizeof(err));
	tu_report(hb_device_plan_upload(p[1], &err), "second plan uploaded under a budget for one (%s)",
			  err.msg);
	hb_device_stats(&st);
	tu_report(st.resident_plans == 1 && st.resident_bytes <= one + one / 2,
			  "least recently used plan evicted: %d resident, %zu bytes", st.resident_plans,
			  st.resident_bytes);
	hb_device_plan_free(p[1]);
	hb_device_stats(&st);
	tu_report(st.resident_plans == 0 && st.resident_bytes == 0,
			  "freeing the plan frees its device copy (%d resident, %zu bytes)",
			  st.resident_plans, st.resident_bytes);

done:
	hb_device_set_budget(HB_DEVICE_DEFAULT_BUDGET);
	for (int i = 0; i < 2; i++)
	{
		hb_plan_free(p[i]);
		hb_model_free(m[i]);
	}
}

static void
check_conformance(const char *dir)
{
	char		path[4096];
	char	   *bytes;
	HbJsonDoc  *doc = NULL;
	HbError		err = {0};
	const HbJson *cases;
	int			checked = 0;

	switch (tu_read_manifest(dir, &bytes, &doc))
	{
		case 0:
			skip("conformance corpus", "not found (pass --conformance DIR or set HB_CONFORMANCE)");
			return;
		case -1:
			return;
	}
	cases = hb_json_get(hb_json_root(doc), "cases");
	for (size_t i = 0; i < hb_json_len(cases); i++)
	{
		const HbJson *c = hb_json_at(cases, i);
		const char *id = hb_json_string(hb_json_get(c, "id"));
		const char *format = hb_json_string(hb_json_get(c, "format"));
		const char *status = hb_json_string(hb_json_get(c, "status"));
		const char *input = hb_json_string(hb_json_get(c, "input"));
		char	   *mb;
		size_t		mlen;
		HbModel    *m = NULL;
		HbPlan	   *p = NULL;
		TuTable		in;
		double	   *x;
		int			nf;

		if (!format || !id || !input || !status ||
			(strcmp(format, "xgboost_json") != 0 && strcmp(format, "lightgbm_text") != 0 &&
			 strcmp(format, "lightgbm_tree_block") != 0) ||
			(strcmp(status, "ok") != 0 && strcmp(status, "converted") != 0))
			continue;			/* test_conformance.c covers refusals */
		snprintf(path, sizeof(path), "%s/%s", dir, hb_json_string(hb_json_get(c, "model")));
		mb = tu_read_file(path, &mlen);
		memset(&err, 0, sizeof(err));
		if (mb == NULL || !hb_model_read(mb, mlen, HB_FORMAT_AUTO, &m, &err) ||
			!hb_plan_build(m, &p, &err))
		{
			/* not loading is test_conformance.c's business */
			free(mb);
			hb_model_free(m);
			continue;
		}
		free(mb);
		snprintf(path, sizeof(path), "%s/%s", dir, input);
		if (m->estimator != HB_EST_TREES || !tu_read_csv(path, &in))
		{
			hb_plan_free(p);
			hb_model_free(m);
			continue;
		}
		nf = m->n_features;
		x = malloc(sizeof(double) * (size_t) in.rows * nf + 8);
		for (int r = 0; r < in.rows; r++)
			for (int f = 0; f < nf; f++)
				x[(size_t) r * nf + f] = f < in.cols ? in.v[(size_t) r * in.cols + f] : NAN;
		check_plan(id, p, x, (size_t) in.rows);
		checked++;
		free(x);
		tu_free_table(&in);
		hb_plan_free(p);
		hb_model_free(m);
	}
	diag("conformance: %d tree models compared", checked);
	hb_json_free(doc);
	free(bytes);
}

/* ---------- throughput ---------- */

#ifdef HB_USE_CUDA
static void
bench(void)
{
	GenOpts		o;
	HbModel    *m;
	HbPlan	   *p = NULL;
	HbError		err = {0};
	const size_t max_rows = 1000000;
	const int	nf = 28;
	double	   *x,
			   *out,
			   *cpu;
	char		why[256] = "";
	HbCudaPlan *cp;
	double		resident_1m = 0.0;
	double		bw_pinned,
				bw_pageable;
	double		t0,
				cpu_rate;
	size_t		cpu_rows = 20000;

	memset(&o, 0, sizeof(o));
	o.depth = 8;
	o.cmp = HB_CMP_LT_F32;		/* XGBoost semantics: float32 compares and sums */
	o.n_outputs = 1;
	o.n_trees = 500;
	o.n_features = nf;
	o.default_left = -1;
	o.full = true;
	m = random_model(&o);
	if (m == NULL || !hb_plan_build(m, &p, &err))
	{
		tu_report(false, "benchmark model: %s", err.msg);
		return;
	}
	x = malloc(sizeof(double) * max_rows * nf);
	out = malloc(sizeof(double) * max_rows);
	cpu = malloc(sizeof(double) * max_rows);
	for (size_t i = 0; i < max_rows * nf; i++)
		x[i] = unif() < 0.02 ? NAN : (unif() - 0.5) * 8.0;

	diag("benchmark: 500 trees of depth 8 (perfect), 28 features, float32 (XGBoost) semantics");
	hb_set_strategy_override(HB_STRATEGY_AUTO);
	if (!hb_device_plan_upload(p, &err))
	{
		tu_report(false, "benchmark upload: %s", err.msg);
		goto done;
	}
	cp = hb_device_plan_handle(p);

	/* one CPU thread, for scale */
	t0 = now();
	hb_plan_margins_with(p, HB_STRATEGY_PTT, x, cpu_rows, cpu);
	cpu_rate = cpu_rows / (now() - t0);
	diag("cpu, one thread, PTT, batch %zu: %.0f rows/s", cpu_rows, cpu_rate);

	diag("%9s %16s %12s %16s %12s", "batch", "resident rows/s", "us/batch",
		 "from host rows/s", "us/batch");
	for (size_t n = 1; n <= max_rows; n *= 10)
	{
		void	   *dx = NULL,
				   *dm = NULL;
		int			reps = n >= 100000 ? 10 : n >= 1000 ? 50 : 200;
		double		tr,
					th;

		if (!hb_cuda_stage(cp, x, n, &dx, &dm, why, sizeof(why)))
		{
			tu_report(false, "benchmark batch %zu: %s", n, why);
			break;
		}
		tr = hb_cuda_time_resident(cp, dx, n, dm, reps, why, sizeof(why));
		if (tr < 0)
		{
			tu_report(false, "benchmark batch %zu (resident): %s", n, why);
			hb_cuda_free_device(dx);
			hb_cuda_free_device(dm);
			break;
		}
		if (n == max_rows)
		{
			/* the timed results: the same bits as the path from the host */
			double	   *fetched = malloc(sizeof(double) * n);

			if (!hb_cuda_fetch(cp, dm, n, fetched, why, sizeof(why)))
				tu_report(false, "benchmark fetch: %s", why);
			else
			{
				hb_device_margins(p, x, n, out, &err);
				tu_report(first_difference(fetched, out, n) < 0,
						  "benchmark: resident margins of %zu rows equal the host path's", n);
			}
			free(fetched);
			resident_1m = n / tr;
		}
		hb_cuda_free_device(dx);
		hb_cuda_free_device(dm);

		/* from the host: what a backend's batch pays */
		if (!hb_device_margins(p, x, n, out, &err))
		{
			tu_report(false, "benchmark batch %zu (from host): %s", n, err.msg);
			break;
		}
		reps = n >= 100000 ? 5 : n >= 1000 ? 20 : 100;
		t0 = now();
		for (int i = 0; i < reps; i++)
			hb_device_margins(p, x, n, out, &err);
		th = (now() - t0) / reps;
		diag("%9zu %16.0f %12.1f %16.0f %12.1f", n, n / tr, tr * 1e6, n / th, th * 1e6);
	}
	tu_report(first_difference(out, cpu, cpu_rows) < 0,
			  "benchmark: the first %zu of 1,000,000 margins equal the CPU's", cpu_rows);

	bw_pinned = hb_cuda_h2d_bandwidth((size_t) 256 << 20, 1, why, sizeof(why));
	bw_pageable = hb_cuda_h2d_bandwidth((size_t) 256 << 20, 0, why, sizeof(why));
	diag("host to device: %.1f GB/s pinned, %.1f GB/s pageable (256 MiB copies)",
		 bw_pinned / 1e9, bw_pageable / 1e9);
	diag("bound from the copy alone (28 float32 inputs = 112 bytes a row): %.0f rows/s pinned",
		 bw_pinned / (nf * sizeof(float)));
	diag("target, 50,000,000 rows/s resident at 1,000,000 rows: %s (%.0f rows/s)",
		 resident_1m >= 5e7 ? "met" : "not met", resident_1m);

	/* the TT kernel on the same model, for comparison */
	hb_set_strategy_override(HB_STRATEGY_TT);
	if (hb_device_plan_upload(p, &err))
	{
		void	   *dx = NULL,
				   *dm = NULL;

		cp = hb_device_plan_handle(p);
		if (hb_cuda_stage(cp, x, max_rows, &dx, &dm, why, sizeof(why)))
		{
			double		tr = hb_cuda_time_resident(cp, dx, max_rows, dm, 5, why, sizeof(why));

			diag("TT kernel, resident, batch %zu: %.0f rows/s", max_rows,
				 tr > 0 ? max_rows / tr : 0.0);
		}
		hb_cuda_free_device(dx);
		hb_cuda_free_device(dm);
	}
	hb_set_strategy_override(HB_STRATEGY_AUTO);

done:
	free(x);
	free(out);
	free(cpu);
	hb_plan_free(p);
	hb_model_free(m);
}
#endif

int
main(int argc, char **argv)
{
	const char *conformance = getenv("HB_CONFORMANCE");
	bool		cpu_only = false;
	bool		no_bench = false;
	HbError		err = {0};

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--cpu-only") == 0)
			cpu_only = true;
		else if (strcmp(argv[i], "--no-bench") == 0)
			no_bench = true;
		else if (strcmp(argv[i], "--conformance") == 0 && i + 1 < argc)
			conformance = argv[++i];
		else
		{
			fprintf(stderr, "usage: %s [--cpu-only] [--no-bench] [--conformance DIR]\n", argv[0]);
			return 2;
		}
	}
	if (conformance == NULL)
		conformance = "../shared/conformance";
#ifdef GPU_CHECK_NO_BENCH
	no_bench = true;
#endif
	init_pool();

	if (!hb_device_built())
		diag("built without CUDA: every GPU check is skipped");
	if (cpu_only)
	{
		diag("--cpu-only: the device is not used");
		/* still probe: the reason must come back, not a crash */
		have_device = false;
		if (hb_device_built())
		{
			bool		ok = hb_device_available(&err);

			tu_report(ok || (err.code == HB_ERR_DEVICE && err.msg[0] != '\0'),
					  "device probe answers (%s)", ok ? hb_device_name() : err.msg);
		}
		hb_device_set_mode(HB_DEVICE_CPU);
	}
	else
	{
		have_device = hb_device_available(&err);
		if (have_device)
			diag("device: %s", hb_device_name());
		else
			diag("no device: %s", err.msg);
	}

	if (!cpu_only)
	{
		check_dispatch();
		check_budget();
	}
	check_random_models();
	check_conformance(conformance);
#ifdef HB_USE_CUDA
	if (have_device && !no_bench)
		bench();
	else
#endif
		skip("throughput benchmark", have_device ? "--no-bench" : "no CUDA device");

	printf("# gpu_check: %d checks, %d failed, %d skipped\n", tu_n_test, tu_n_fail, n_skip);
	return tu_n_fail ? 1 : 0;
}
