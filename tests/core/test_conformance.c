/*
 * test_conformance.c
 *	  Scores every model of the shared conformance corpus and compares with
 *	  the outputs of the library that wrote it.
 *
 * The corpus is read in place: $HB_CONFORMANCE, else ../shared/conformance
 * from the repository root.  Without it every case is reported as skipped
 * with the reason.  One TAP line per case.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "plan.h"

typedef struct Table
{
	int			rows;
	int			cols;
	double	   *v;				/* rows x cols, NaN for an empty cell */
} Table;

static int	n_test = 0;
static int	n_fail = 0;

static char *
read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *buf;
	long		n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n + 1);
	if (fread(buf, 1, n, f) != (size_t) n)
	{
		fclose(f);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	fclose(f);
	*len = n;
	return buf;
}

/* CSV with a header line; empty cells are missing values. */
static bool
read_csv(const char *path, Table *t)
{
	size_t		len;
	char	   *buf = read_file(path, &len);
	char	   *p;
	int			cap = 0;

	memset(t, 0, sizeof(*t));
	if (!buf)
		return false;
	p = buf;
	t->cols = 1;
	while (*p && *p != '\n')
		if (*p++ == ',')
			t->cols++;
	if (*p == '\n')
		p++;
	while (*p)
	{
		if (*p == '\n' || *p == '\r')
		{
			p++;
			continue;
		}
		if (t->rows == cap)
		{
			cap = cap ? cap * 2 : 256;
			t->v = realloc(t->v, sizeof(double) * cap * t->cols);
		}
		for (int c = 0; c < t->cols; c++)
		{
			double	   *cell = &t->v[(size_t) t->rows * t->cols + c];

			if (*p == ',' || *p == '\n' || *p == '\r' || *p == '\0')
				*cell = NAN;
			else
				*cell = strtod(p, &p);
			while (*p && *p != ',' && *p != '\n')
				p++;
			if (*p == ',')
				p++;
		}
		t->rows++;
	}
	free(buf);
	return true;
}

static void
report(bool ok, const char *fmt,...)
{
	va_list		ap;

	n_test++;
	if (!ok)
		n_fail++;
	printf("%s %d - ", ok ? "ok" : "not ok", n_test);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void
skip(const char *id, const char *why)
{
	n_test++;
	printf("ok %d - %s # SKIP %s\n", n_test, id, why);
}

/* Largest violation of the tolerance; <= 0 means within it. */
static double
compare(const double *got, const Table *want, int cols, double abs_tol,
		double rel_tol, int *bad_row)
{
	double		worst = 0.0;

	*bad_row = -1;
	for (int r = 0; r < want->rows; r++)
		for (int c = 0; c < cols; c++)
		{
			double		g = got[(size_t) r * cols + c];
			double		w = want->v[(size_t) r * want->cols + c];
			double		diff = fabs(g - w);
			double		allowed = fmax(abs_tol, rel_tol * fabs(w));

			if (isnan(g) != isnan(w) || diff > allowed)
			{
				double		excess = isnan(diff) ? INFINITY : diff - allowed;

				if (*bad_row < 0 || excess > worst)
				{
					worst = excess;
					*bad_row = r;
				}
			}
		}
	return *bad_row < 0 ? 0.0 : worst;
}

static void
run_case(const char *dir, const HbJson *c)
{
	const char *id = hb_json_string(hb_json_get(c, "id"));
	const char *format = hb_json_string(hb_json_get(c, "format"));
	const char *status = hb_json_string(hb_json_get(c, "status"));
	const HbJson *expected = hb_json_get(c, "expected");
	const HbJson *tol = hb_json_get(c, "tolerance");
	double		abs_tol = 0.0,
				rel_tol = 0.0;
	char		path[4096];
	size_t		len;
	char	   *bytes;
	HbModel    *m = NULL;
	HbPlan	   *plan = NULL;
	HbError		err = {0};
	Table		in;
	double	   *x;
	int			nf;

	if (strcmp(format, "xgboost_json") != 0)
	{
		char		why[256];

		snprintf(why, sizeof(why), "format %s is not read by hbird yet", format);
		skip(id, why);
		return;
	}
	if (strcmp(status, "ok") != 0 && strcmp(status, "converted") != 0)
	{
		skip(id, status);
		return;
	}
	hb_json_number(hb_json_get(tol, "abs"), &abs_tol);
	hb_json_number(hb_json_get(tol, "rel"), &rel_tol);

	snprintf(path, sizeof(path), "%s/%s", dir,
			 hb_json_string(hb_json_get(c, "model")));
	bytes = read_file(path, &len);
	if (!bytes)
	{
		report(false, "%s: cannot read %s", id, path);
		return;
	}
	if (!hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err) ||
		!hb_plan_build(m, &plan, &err))
	{
		report(false, "%s: %s", id, err.msg);
		free(bytes);
		hb_model_free(m);
		return;
	}
	free(bytes);

	snprintf(path, sizeof(path), "%s/%s", dir,
			 hb_json_string(hb_json_get(c, "input")));
	if (!read_csv(path, &in))
	{
		report(false, "%s: cannot read %s", id, path);
		goto done;
	}
	/* inputs narrower than the model leave the rest missing */
	nf = m->n_features;
	x = malloc(sizeof(double) * (size_t) in.rows * nf);
	for (int r = 0; r < in.rows; r++)
		for (int f = 0; f < nf; f++)
			x[(size_t) r * nf + f] = f < in.cols ? in.v[(size_t) r * in.cols + f] : NAN;

	for (size_t k = 0; k < hb_json_len(expected); k++)
	{
		const char *kind = hb_json_key_at(expected, k);
		Table		want;
		double	   *got;
		double	   *scratch;
		int			cols;
		int			bad_row;
		double		excess;

		snprintf(path, sizeof(path), "%s/%s", dir,
				 hb_json_string(hb_json_value_at(expected, k)));
		if (!read_csv(path, &want) || want.rows != in.rows)
		{
			report(false, "%s %s: cannot read %s or wrong row count", id, kind, path);
			free(want.v);
			continue;
		}
		got = malloc(sizeof(double) * (size_t) in.rows * (m->n_outputs + m->n_classes + 1));
		scratch = malloc(sizeof(double) * (size_t) in.rows * m->n_outputs);
		if (strcmp(kind, "margin") == 0 || strcmp(kind, "raw") == 0)
		{
			cols = m->n_outputs;
			hb_plan_margins(plan, x, in.rows, got);
		}
		else if (want.cols > 1 && want.cols == m->n_classes)
		{
			cols = m->n_classes;
			hb_plan_proba(plan, x, in.rows, scratch, got);
		}
		else
		{
			cols = 1;
			hb_plan_predict(plan, x, in.rows, scratch, got);
		}
		if (want.cols != cols)
			report(false, "%s %s: expected %d columns, hbird gives %d", id, kind,
				   want.cols, cols);
		else
		{
			excess = compare(got, &want, cols, abs_tol, rel_tol, &bad_row);
			if (bad_row < 0)
				report(true, "%s %s (%d rows)", id, kind, in.rows);
			else
				report(false, "%s %s: row %d is %.9g beyond tolerance (got %.9g, want %.9g)",
					   id, kind, bad_row, excess, got[(size_t) bad_row * cols],
					   want.v[(size_t) bad_row * want.cols]);
		}
		free(got);
		free(scratch);
		free(want.v);
	}
	free(x);
	free(in.v);
done:
	hb_plan_free(plan);
	hb_model_free(m);
}

int
main(void)
{
	const char *dir = getenv("HB_CONFORMANCE");
	char		path[4096];
	size_t		len;
	char	   *bytes;
	HbJsonDoc  *doc = NULL;
	HbError		err = {0};
	const HbJson *cases;

	if (dir == NULL)
		dir = "../shared/conformance";
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	bytes = read_file(path, &len);
	if (bytes == NULL)
	{
		printf("ok 1 - conformance corpus # SKIP not found at %s (set HB_CONFORMANCE)\n", dir);
		return 0;
	}
	if (!hb_json_parse(bytes, len, &doc, &err))
	{
		printf("not ok 1 - conformance manifest: %s\n", err.msg);
		return 1;
	}
	cases = hb_json_get(hb_json_root(doc), "cases");
	for (size_t i = 0; i < hb_json_len(cases); i++)
		run_case(dir, hb_json_at(cases, i));
	printf("# conformance: %d checks, %d failed\n", n_test, n_fail);
	hb_json_free(doc);
	free(bytes);
	return n_fail ? 1 : 0;
}
