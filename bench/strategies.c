/*
 * strategies.c - throughput of hbird's tree strategies (TT, PTT, GEMM) side
 * by side with XGBoost's own predictor, single thread, same rows in memory.
 *
 *   strategies DATADIR [CELL_SECONDS]
 *
 * DATADIR holds d{D}_t{T}.json and rows.f32 (bench/gen_strategy_models.py).
 * Grid: depth {2,4,6,8,10} x trees {10,100,500} x batch {1,64,1024,65536},
 * 28 features.  Writes a markdown report on stdout, progress on stderr.
 *
 * Timing: each cell calls its scorer on consecutive batches of the rows
 * (wrapping around) until CELL_SECONDS (default 0.2) have passed, at least
 * once, and keeps the best of ROUNDS such rounds, the methods taking turns
 * round by round (the machine may be shared).  A cell whose single call would take more than MAX_CALL
 * seconds, judged from the rows/s of the same method on the same model at
 * a smaller batch of 64 rows or more, is not run: it shows that smaller
 * batch's rate, marked "~" (GEMM on deep trees, where each row costs about
 * I x L multiply-adds per tree).
 *
 * XGBoost: XGBoosterPredictFromDense on the float32 rows, nthread=1, as
 * bench/xgb_capi.c.  hbird reads the same values as doubles (its input
 * format), converted before timing.  OpenBLAS is held to one thread.
 * Before timing, every model is checked: PTT (every kernel) and GEMM margins
 * must equal TT's bit for bit, and TT's must equal XGBoost's margins.
 * "PTT" is hb_ptt_margins with the kernel it chooses; "PTT, eight-row walk"
 * forces the kernel PTT had before the compact one, so that the two are
 * compared in one run.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#include <xgboost/c_api.h>

#include "plan_int.h"
#include "../test/core/test_util.h"
#include "bench_clock.h"

#define N_FEATURES	28
#define MAX_CALL	3.0			/* seconds: longer calls are extrapolated */
#define ROUNDS		3			/* best of: the machine may be shared */

#define XGB_CHECK(call) \
	do { \
		if ((call) != 0) { \
			fprintf(stderr, "strategies: %s failed: %s\n", #call, XGBGetLastError()); \
			exit(1); \
		} \
	} while (0)

enum
{
	M_XGB, M_TT, M_PTT, M_PTT8, M_GEMM, N_METHODS
};
static const char *method_names[N_METHODS] = {
	"XGBoost", "hbird TT", "hbird PTT", "hbird PTT, eight-row walk", "hbird GEMM"
};

static const int depths[] = {2, 4, 6, 8, 10};
static const int tree_counts[] = {10, 30, 100, 500};
static const size_t batches[] = {1, 64, 1024, 65536};

#define N_DEPTHS	(sizeof(depths) / sizeof(depths[0]))
#define N_TREES		(sizeof(tree_counts) / sizeof(tree_counts[0]))
#define N_BATCHES	(sizeof(batches) / sizeof(batches[0]))

typedef struct Cell
{
	double		rows_per_s;
	double		seconds;		/* of the timed calls */
	size_t		rows;			/* scored while timed */
	bool		estimated;		/* from a smaller batch */
	bool		absent;			/* strategy refused the model */
} Cell;

static Cell cells[N_DEPTHS][N_TREES][N_BATCHES][N_METHODS];
/* what hbird.tree_strategy = auto runs for each cell (hb_plan_strategy) */
static HbStrategy picks[N_DEPTHS][N_TREES][N_BATCHES];

static float *rows_f;			/* N_ROWS x 28, float32 */
static double *rows_d;			/* the same values as double */
static size_t n_rows;

/* XGBoost's inplace predictor: type 0 = prediction, 1 = margin. */
static const float *
xgb_predict(BoosterHandle h, const float *data, size_t nrows, int type)
{
	char		array[256];
	char		config[256];
	const bst_ulong *shape;
	bst_ulong	dim;
	const float *out;

	snprintf(array, sizeof(array),
			 "{\"data\": [%llu, true], \"shape\": [%zu, %d],"
			 " \"typestr\": \"<f4\", \"version\": 3}",
			 (unsigned long long) (uintptr_t) data, nrows, N_FEATURES);
	snprintf(config, sizeof(config),
			 "{\"type\": %d, \"training\": false, \"iteration_begin\": 0,"
			 " \"iteration_end\": 0, \"strict_shape\": false, \"missing\": NaN,"
			 " \"cache_id\": 0}", type);
	XGB_CHECK(XGBoosterPredictFromDense(h, array, config, NULL, &shape, &dim, &out));
	return out;
}

typedef struct Scorer
{
	int			method;
	const HbPlan *plan;
	BoosterHandle xgb;
	double	   *out;
} Scorer;

static volatile double sink;	/* keeps the results alive */

static void
score(Scorer *s, size_t first, size_t b)
{
	switch (s->method)
	{
		case M_XGB:
			sink += xgb_predict(s->xgb, rows_f + first * N_FEATURES, b, 0)[0];
			return;
		case M_TT:
			hb_tt_margins(s->plan, rows_d + first * N_FEATURES, b, s->out);
			break;
		case M_PTT:
			hb_ptt_margins(s->plan, rows_d + first * N_FEATURES, b, s->out);
			break;
		case M_PTT8:
			/* the kernel PTT had before the compact one (strategy_ptt.c) */
			hb_ptt_set_kernel(HB_PTT_KERNEL_WALK8);
			hb_ptt_margins(s->plan, rows_d + first * N_FEATURES, b, s->out);
			hb_ptt_set_kernel(HB_PTT_KERNEL_AUTO);
			break;
		case M_GEMM:
			hb_gemm_margins(s->plan, rows_d + first * N_FEATURES, b, s->out);
			break;
	}
	sink += s->out[0];
}

/* One round: calls on consecutive batches until budget; keeps the best. */
static double
time_round(Scorer *s, size_t b, double budget, Cell *c)
{
	static size_t first = 0;
	size_t		rows = 0;
	double		t0 = now(),
				t;

	do
	{
		if (first + b > n_rows)
			first = 0;
		score(s, first, b);
		first += b;
		rows += b;
		t = now() - t0;
	} while (t < budget);
	if (rows / t > c->rows_per_s)
	{
		c->rows_per_s = rows / t;
		c->rows = rows;
		c->seconds = t;
	}
	return t;
}

/* Margins of n rows: PTT and GEMM vs TT (bits), TT vs XGBoost (float). */
static bool
check_model(const char *name, const HbPlan *p, BoosterHandle h, size_t n,
			double *worst_xgb)
{
	double	   *tt = malloc(sizeof(double) * n);
	double	   *other = malloc(sizeof(double) * n);
	const float *xm = xgb_predict(h, rows_f, n, 1);
	bool		ok = true;

	hb_tt_margins(p, rows_d, n, tt);
	*worst_xgb = 0;
	for (size_t i = 0; i < n; i++)
		if (fabs(tt[i] - xm[i]) > *worst_xgb)
			*worst_xgb = fabs(tt[i] - xm[i]);
	if (p->ptt)
	{
		/* every PTT kernel: the choice, the eight-row walk, compact, portable */
		for (int k = HB_PTT_KERNEL_AUTO; k <= HB_PTT_KERNEL_PORTABLE; k++)
		{
			hb_ptt_set_kernel((HbPttKernel) k);
			hb_ptt_margins(p, rows_d, n, other);
			if (memcmp(tt, other, sizeof(double) * n) != 0)
			{
				fprintf(stderr, "%s: PTT margins (kernel %d) differ from TT\n", name, k);
				ok = false;
			}
		}
		hb_ptt_set_kernel(HB_PTT_KERNEL_AUTO);
	}
	if (p->gemm)
	{
		hb_gemm_margins(p, rows_d, n, other);
		if (memcmp(tt, other, sizeof(double) * n) != 0)
		{
			fprintf(stderr, "%s: GEMM margins differ from TT\n", name);
			ok = false;
		}
	}
	free(tt);
	free(other);
	return ok;
}

static double
cpu_ghz(char *model, size_t len)
{
	FILE	   *f = fopen("/proc/cpuinfo", "r");
	char		line[512];
	double		mhz = 0;

	snprintf(model, len, "unknown CPU");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
	{
		if (strncmp(line, "model name", 10) == 0 && strchr(line, ':'))
		{
			snprintf(model, len, "%s", strchr(line, ':') + 2);
			model[strcspn(model, "\n")] = '\0';
		}
		if (mhz == 0 && strncmp(line, "cpu MHz", 7) == 0 && strchr(line, ':'))
			mhz = atof(strchr(line, ':') + 1);
	}
	fclose(f);
	return mhz / 1000.0;
}

static void
fmt_rate(char *buf, size_t len, const Cell *c)
{
	double		r = c->rows_per_s;

	if (c->absent)
		snprintf(buf, len, "—");
	else if (r >= 1e6)
		snprintf(buf, len, "%s%.2fM", c->estimated ? "~" : "", r / 1e6);
	else if (r >= 1e3)
		snprintf(buf, len, "%s%.1fk", c->estimated ? "~" : "", r / 1e3);
	else
		snprintf(buf, len, "%s%.0f", c->estimated ? "~" : "", r);
}

int
main(int argc, char **argv)
{
	const char *dir;
	double		budget = 0.2;
	char		path[4096];
	size_t		len;
	char	   *bytes;
	char		cpu[256];
	double		ghz;
	int			major,
				minor,
				patch;
	bool		all_ok = true;
	double		worst_xgb_all = 0;
	double		t_start = now();
	double		load_start = load_avg();
	double	   *out;
	time_t		wall = time(NULL);
	char		date[64];

	if (argc < 2)
	{
		fprintf(stderr, "usage: %s DATADIR [CELL_SECONDS]\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	if (argc > 2)
		budget = atof(argv[2]);
	openblas_set_num_threads(1);
	ghz = cpu_ghz(cpu, sizeof(cpu));

	snprintf(path, sizeof(path), "%s/rows.f32", dir);
	bytes = tu_read_file(path, &len);
	if (bytes == NULL)
	{
		fprintf(stderr, "strategies: cannot read %s\n", path);
		return 1;
	}
	rows_f = (float *) bytes;
	n_rows = len / (sizeof(float) * N_FEATURES);
	rows_d = malloc(sizeof(double) * n_rows * N_FEATURES);
	for (size_t i = 0; i < n_rows * N_FEATURES; i++)
		rows_d[i] = rows_f[i];
	out = malloc(sizeof(double) * n_rows);
	if (n_rows < batches[N_BATCHES - 1])
	{
		fprintf(stderr, "strategies: %s has %zu rows, fewer than %zu\n",
				path, n_rows, batches[N_BATCHES - 1]);
		return 1;
	}

	for (size_t di = 0; di < N_DEPTHS; di++)
		for (size_t ti = 0; ti < N_TREES; ti++)
		{
			HbModel    *m = NULL;
			HbPlan	   *p = NULL;
			HbError		err = {0};
			BoosterHandle h;
			char		name[64];
			double		worst_xgb;

			snprintf(name, sizeof(name), "d%d_t%d", depths[di], tree_counts[ti]);
			snprintf(path, sizeof(path), "%s/%s.json", dir, name);
			{
				char	   *model_bytes = tu_read_file(path, &len);

				if (model_bytes == NULL ||
					!hb_model_read(model_bytes, len, HB_FORMAT_AUTO, &m, &err) ||
					!hb_plan_build(m, &p, &err))
				{
					fprintf(stderr, "strategies: %s: %s\n", path,
							model_bytes ? err.msg : "cannot read");
					return 1;
				}
				free(model_bytes);
			}
			/* every layout, whatever the plan's own heuristic would build */
			memset(&err, 0, sizeof(err));
			if (!hb_ptt_build(p, m, (size_t) 1 << 30, &err))
				fprintf(stderr, "%s: PTT refused: %s\n", name, err.msg);
			memset(&err, 0, sizeof(err));
			if (!hb_gemm_build(p, m, (size_t) 1 << 30, &err))
				fprintf(stderr, "%s: GEMM refused: %s\n", name, err.msg);

			XGB_CHECK(XGBoosterCreate(NULL, 0, &h));
			XGB_CHECK(XGBoosterLoadModel(h, path));
			XGB_CHECK(XGBoosterSetParam(h, "nthread", "1"));

			if (!check_model(name, p, h, 4096, &worst_xgb))
				all_ok = false;
			if (worst_xgb > worst_xgb_all)
				worst_xgb_all = worst_xgb;

			/*
			 * Methods take turns round by round, so that other work on the
			 * machine hits them alike; each keeps its best round.
			 */
			for (size_t bi = 0; bi < N_BATCHES; bi++)
			{
				size_t		b = batches[bi];
				bool		active[N_METHODS];

				picks[di][ti][bi] = hb_plan_strategy(p, b);

				for (int me = 0; me < N_METHODS; me++)
				{
					Cell	   *c = &cells[di][ti][bi][me];
					int			prev = -1;

					active[me] = false;
					if (((me == M_PTT || me == M_PTT8) && !p->ptt) ||
						(me == M_GEMM && !p->gemm))
					{
						c->absent = true;
						continue;
					}
					/* the largest smaller batch that was measured */
					for (int pb = (int) bi - 1; pb >= 0 && prev < 0; pb--)
						if (!cells[di][ti][pb][me].estimated)
							prev = pb;
					/* judged from 64 rows or more: GEMM pads a row to 16 */
					if (prev >= 0 && batches[prev] >= 64 &&
						b / cells[di][ti][prev][me].rows_per_s > MAX_CALL)
					{
						*c = cells[di][ti][prev][me];
						c->estimated = true;
						continue;
					}
					active[me] = true;
				}
				for (int round = 0; round < ROUNDS; round++)
					for (int me = 0; me < N_METHODS; me++)
					{
						Scorer		s = {me, p, h, out};

						if (!active[me])
							continue;
						/* warm-up: caches, OpenBLAS buffers, XGBoost's set-up */
						if (round == 0)
							score(&s, 0, b < 64 ? b : 64);
						/* two long calls are a fair sample */
						if (time_round(&s, b, budget, &cells[di][ti][bi][me]) > MAX_CALL / 2 &&
							round >= 1)
							active[me] = false;
					}
			}
			fprintf(stderr, "%-9s nodes %7lld  TT %8.0f  PTT %8.0f  PTT8 %8.0f  GEMM %8.0f  XGB %8.0f rows/s at %zu  (%.0f s)\n",
					name, (long long) p->n_nodes,
					cells[di][ti][N_BATCHES - 1][M_TT].rows_per_s,
					cells[di][ti][N_BATCHES - 1][M_PTT].rows_per_s,
					cells[di][ti][N_BATCHES - 1][M_PTT8].rows_per_s,
					cells[di][ti][N_BATCHES - 1][M_GEMM].rows_per_s,
					cells[di][ti][N_BATCHES - 1][M_XGB].rows_per_s,
					batches[N_BATCHES - 1], now() - t_start);
			XGBoosterFree(h);
			hb_plan_free(p);
			hb_model_free(m);
		}

	/* ---- the report ---- */
	XGBoostVersion(&major, &minor, &patch);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&wall));
	printf("# hbird tree strategies vs XGBoost, one thread\n\n");
	printf("Generated by `bench/strategies.sh` on %s in %.0f s.\n\n", date, now() - t_start);
	printf("- machine: %s, %.2f GHz (/proc/cpuinfo), one core used; 1-minute load average"
		   " %.2f at the start, %.2f at the end (above 1 on this 2-core machine, other"
		   " work competed and the numbers are low)\n", cpu, ghz, load_start, load_avg());
	printf("- XGBoost %d.%d.%d C API: `XGBoosterPredictFromDense`, float32 rows, nthread=1\n",
		   major, minor, patch);
	printf("- hbird core built with `gcc -O2` (as PGXS builds it); GEMM on %s, 1 thread\n",
		   openblas_get_config());
	printf("- models: XGBoost 1.7.4 `binary:logistic`, 28 features, about 1%% missing"
		   " cells, trained on 50,000 synthetic rows (`bench/gen_strategy_models.py`);"
		   " scoring rows: 65,536 others\n");
	printf("- rows/s: best of %d rounds of at least %.1f s of calls per cell; \"~\" = not run,"
		   " the rate of the largest batch of the same method and model that was (a call"
		   " would have taken over %.1f s); ratio = rows/s / XGBoost's rows/s at the same"
		   " batch\n", ROUNDS, budget, MAX_CALL);
	printf("- PTT: `hb_ptt_margins` with the kernel it chooses (the compact kernel where"
		   " it pays, else the eight-row walk; `src/core/strategy_ptt.c`); PTT, eight-row"
		   " walk: the same layout with the kernel PTT had before the compact one, forced"
		   " (`HB_PTT_KERNEL_WALK8`)\n");
	printf("- checks: PTT (every kernel) and GEMM margins bit-identical to TT's on 4,096"
		   " rows of every model: %s; TT vs XGBoost margins: max |diff| %.3g\n\n",
		   all_ok ? "yes" : "**NO**", worst_xgb_all);

	{
		/* the headline: 500 trees of depth 8 at the largest batch */
		size_t		di = 3,
					ti = N_TREES - 1,
					bi = N_BATCHES - 1;
		double		visits = (double) batches[bi] * tree_counts[ti] * depths[di];

		printf("## 500 trees, depth 8, batch %zu\n\n", batches[bi]);
		printf("| method | rows/s | vs XGBoost | node visits per cycle |\n");
		printf("|---|---:|---:|---:|\n");
		for (int me = 0; me < N_METHODS; me++)
		{
			Cell	   *c = &cells[di][ti][bi][me];
			double		secs = batches[bi] / c->rows_per_s;
			char		rate[32];

			fmt_rate(rate, sizeof(rate), c);
			if (c->absent)
				printf("| %s | — | — | — |\n", method_names[me]);
			else
				printf("| %s | %s | %.2f× | %.3f |\n", method_names[me], rate,
					   c->rows_per_s / cells[di][ti][bi][M_XGB].rows_per_s,
					   visits / (secs * ghz * 1e9));
		}
		printf("\nnode visits = rows × trees × depth (%.3g per batch); cycles ="
			   " seconds × %.2f GHz.  PTT / PTT, eight-row walk: %.2f×.\n\n", visits, ghz,
			   cells[di][ti][bi][M_PTT].rows_per_s / cells[di][ti][bi][M_PTT8].rows_per_s);
	}

	printf("## Grid (rows/s, and ratio vs XGBoost)\n\n");
	printf("\"auto\": the strategy `hbird.tree_strategy = auto` takes for the cell"
		   " (`hb_plan_strategy`), and its rate over the best of TT, PTT and GEMM.\n\n");
	printf("| depth | trees | batch | XGBoost | TT | PTT | PTT, eight-row walk | GEMM |"
		   " PTT / eight-row walk | auto |\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (size_t di = 0; di < N_DEPTHS; di++)
		for (size_t ti = 0; ti < N_TREES; ti++)
			for (size_t bi = 0; bi < N_BATCHES; bi++)
			{
				double		xr = cells[di][ti][bi][M_XGB].rows_per_s;
				char		rate[32];

				printf("| %d | %d | %zu |", depths[di], tree_counts[ti], batches[bi]);
				fmt_rate(rate, sizeof(rate), &cells[di][ti][bi][M_XGB]);
				printf(" %s |", rate);
				for (int me = M_TT; me < N_METHODS; me++)
				{
					Cell	   *c = &cells[di][ti][bi][me];

					fmt_rate(rate, sizeof(rate), c);
					if (c->absent)
						printf(" — |");
					else
						printf(" %s (%.2f×) |", rate, c->rows_per_s / xr);
				}
				if (cells[di][ti][bi][M_PTT].absent)
					printf(" — |");
				else
					printf(" %.2f× |", cells[di][ti][bi][M_PTT].rows_per_s /
						   cells[di][ti][bi][M_PTT8].rows_per_s);
				{
					HbStrategy	pk = picks[di][ti][bi];
					int			pm = pk == HB_STRATEGY_GEMM ? M_GEMM :
						pk == HB_STRATEGY_PTT ? M_PTT : M_TT;
					double		best = 0;

					for (int me = M_TT; me < N_METHODS; me++)
						if (me != M_PTT8 && !cells[di][ti][bi][me].absent &&
							cells[di][ti][bi][me].rows_per_s > best)
							best = cells[di][ti][bi][me].rows_per_s;
					printf(" %s (%.2f×) |\n", hb_strategy_name(pk),
						   cells[di][ti][bi][pm].rows_per_s / best);
				}
			}
	free(rows_d);
	free(rows_f);
	free(out);
	return all_ok ? 0 : 1;
}
