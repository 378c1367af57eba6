/*
 * test_pipeline_reader.c
 *	  hbird pipeline JSON against scikit-learn: every pipeline in
 *	  test/fixtures/pipelines (written by gen_pipelines.py through
 *	  scripts/hbird_export_sklearn.py) is read, its inputs bound by name from
 *	  rows.csv, featurized and scored, and compared with scikit-learn's own
 *	  predict_proba / predict within 1e-6 relative; then the same after a
 *	  round trip through the compiled image.  Also the reader's errors.  TAP.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "plan.h"
#include "test_pipeline_rows.h"

#define DIR "test/fixtures/pipelines/"

static TuRows rows;

/* What a fixture's expected file holds */
typedef enum Expect
{
	EXPECT_PREDICT,				/* pred (or margin,pred) */
	EXPECT_PROBA,				/* p0 .. */
	EXPECT_TARGETS				/* t0 .. of a multi-target regressor */
} Expect;

/* Bind the given rows by input name, featurize, score. */
static bool
score(const HbModel *m, const HbPlan *plan, const int *ids, int n, Expect what,
	  double *out, HbError *err)
{
	const HbPipeline *p = m->pipeline;
	double	   *num = calloc((size_t) n * (p->n_num_inputs + 1), sizeof(double));
	HbText	   *text = calloc((size_t) n * (p->n_text_inputs + 1), sizeof(HbText));
	double	   *x = malloc(sizeof(double) * n * m->n_features);
	double	   *scratch = malloc(sizeof(double) * n * m->n_outputs);
	HbRawRows	raw = {(size_t) n, num, text};
	bool		r;

	for (int i = 0; i < n; i++)
		for (int k = 0; k < p->n_inputs; k++)
		{
			const HbInput *in = &p->inputs[k];
			const char *cell = rows.cells[ids[i]][tu_pipeline_column(in->name)];

			if (in->type == HB_INPUT_NUMERIC)
				num[(size_t) i * p->n_num_inputs + in->index] = cell ? strtod(cell, NULL) : NAN;
			else
			{
				text[(size_t) i * p->n_text_inputs + in->index].ptr = cell;
				text[(size_t) i * p->n_text_inputs + in->index].len = cell ? (int32_t) strlen(cell) : 0;
			}
		}
	r = hb_pipeline_run(p, &raw, x, err);
	if (r)
	{
		if (what == EXPECT_PROBA)
			hb_plan_proba(plan, x, n, scratch, out);
		else if (what == EXPECT_TARGETS)
			hb_plan_targets(plan, x, n, scratch, out);
		else
			hb_plan_predict(plan, x, n, scratch, out);
	}
	free(num);
	free(text);
	free(x);
	free(scratch);
	return r;
}

static bool
close_enough(double a, double b)
{
	return fabs(a - b) <= 1e-6 * fmax(fabs(b), 1e-6);
}

static void
check_model(const char *name, HbModel *m, const char *how)
{
	char		path[256];
	TuTable		exp;
	HbPlan	   *plan = NULL;
	HbError		err = {0};
	int			n,
				k;
	int		   *ids;
	double	   *got;
	Expect		what;
	double		worst = 0;
	int			bad = 0;

	snprintf(path, sizeof(path), DIR "%s.expected.csv", name);
	if (!tu_read_csv(path, &exp))
	{
		tu_report(false, "%s: %s unreadable", name, path);
		return;
	}
	what = strcmp(exp.names[1], "p0") == 0 ? EXPECT_PROBA :
		strcmp(exp.names[1], "t0") == 0 ? EXPECT_TARGETS : EXPECT_PREDICT;
	k = what == EXPECT_PREDICT ? 1 : exp.cols - 1;
	if (what == EXPECT_TARGETS)
		tu_report(hb_model_is_multi_target(m) && m->n_outputs == k,
				  "%s (%s): a model of %d targets (has %d outputs)", name, how, k,
				  m->n_outputs);
	n = exp.rows;
	ids = malloc(sizeof(int) * n);
	got = malloc(sizeof(double) * n * (k > m->n_outputs ? k : m->n_outputs + 1));
	for (int i = 0; i < n; i++)
		ids[i] = (int) exp.v[(size_t) i * exp.cols];
	if (!hb_plan_build(m, &plan, &err))
	{
		tu_report(false, "%s (%s): plan: %s", name, how, err.msg);
		goto done;
	}
	if (!score(m, plan, ids, n, what, got, &err))
	{
		tu_report(false, "%s (%s): run: %s", name, how, err.msg);
		goto done;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < k; j++)
		{
			/* "margin,pred" files: compare the prediction (last column) */
			double		want = exp.v[(size_t) i * exp.cols +
									 (what == EXPECT_PREDICT ? exp.cols - 1 : 1 + j)];
			double		g = got[(size_t) i * k + j];

			if (!close_enough(g, want))
			{
				if (bad++ < 3)
					fprintf(stderr, "  %s row %d col %d: got %.17g want %.17g\n",
							name, ids[i], j, g, want);
			}
			if (fabs(g - want) > worst)
				worst = fabs(g - want);
		}
	tu_report(bad == 0, "%s (%s): %d rows x %d equal scikit-learn's %s (max abs diff %.3g)",
			  name, how, n, k, what == EXPECT_PROBA ? "predict_proba" : "predict", worst);
done:
	hb_plan_free(plan);
	tu_free_table(&exp);
	free(ids);
	free(got);
}

static const char *const names[] = {
	"logreg_tfidf", "rf_hashing", "gb_multiclass", "ridge_char", "svc_words",
	"etr_hashing", "strict_dt", "gbr_sgd", "xgb_onehot", "ovr_charwb",
	"liblinear_ascii", "ridge_hash_wb", "hgb_binary", "hgb_multiclass", "hgb_poisson",
	/* several targets */
	"dt_targets", "rf_targets", "etr_targets", "linreg_targets", "ridge_targets",
	"multi_gbr", "multi_ridge"
};

static HbModel *
read_fixture(const char *name, char **bytes_out, size_t *len_out)
{
	char		path[256];
	size_t		len;
	char	   *bytes;
	HbModel    *m = NULL;
	HbError		err = {0};

	snprintf(path, sizeof(path), DIR "%s.json", name);
	bytes = tu_read_file(path, &len);
	if (bytes == NULL)
	{
		tu_report(false, "%s: unreadable", path);
		return NULL;
	}
	if (!hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err))
		tu_report(false, "%s: %s", name, err.msg);
	else
		tu_report(m->format == HB_FORMAT_HBIRD_PIPELINE && m->pipeline != NULL,
				  "%s: detected as an hbird pipeline", name);
	if (bytes_out)
	{
		*bytes_out = bytes;
		*len_out = len;
	}
	else
		free(bytes);
	return m;
}

/*
 * The image read in two parts, as a backend's cache reads it (the model in
 * scratch memory, the pipeline where the plan stays): the same scores as
 * the whole read; a pipeline part cut short or read from the wrong place
 * is refused as corrupt (the backend then parses the original).
 */
static void
check_split_read(const char *name, const char *img, size_t img_len)
{
	HbModel    *m = NULL;
	HbPipeline *p = NULL;
	size_t		at = 0;
	HbError		err = {0};

	if (!hb_model_image_read_split(img, img_len, &m, &at, &err) || at == 0 ||
		m->pipeline != NULL)
	{
		tu_report(false, "%s: split read: %s (pipeline at %zu)", name, err.msg, at);
		hb_model_free(m);
		return;
	}
	if (!hb_model_image_read_pipeline(img, img_len, at, m->n_features,
									  &m->pipeline, &err))
		tu_report(false, "%s: split read's pipeline: %s", name, err.msg);
	else
		check_model(name, m, "split image");

	memset(&err, 0, sizeof(err));
	tu_report(!hb_model_image_read_pipeline(img, img_len - 4, at, m->n_features, &p, &err) &&
			  err.code == HB_ERR_INVALID && p == NULL,
			  "%s: a pipeline cut short is refused: %s", name, err.msg);
	memset(&err, 0, sizeof(err));
	tu_report(!hb_model_image_read_pipeline(img, img_len, at + 4, m->n_features, &p, &err) &&
			  err.code == HB_ERR_INVALID && p == NULL,
			  "%s: a pipeline read from the wrong place is refused: %s", name, err.msg);
	memset(&err, 0, sizeof(err));
	tu_report(!hb_model_image_read_pipeline(img, img_len, at, m->n_features + 1, &p, &err) &&
			  err.code != HB_OK && p == NULL,
			  "%s: a pipeline for another feature count is refused: %s", name, err.msg);
	hb_model_free(m);
}

/*
 * A model without featurizers read in two parts: no pipeline part, and the
 * same trees as the whole read.
 */
static void
test_split_without_pipeline(void)
{
	size_t		len,
				img_len,
				at = 1;
	char	   *bytes = tu_read_file("test/fixtures/binary_logistic.json", &len);
	char	   *img = NULL;
	HbModel    *m = NULL;
	HbModel    *whole = NULL;
	HbModel    *split = NULL;
	HbError		err = {0};
	bool		same;

	if (bytes == NULL || !hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err) ||
		!hb_model_image_write(m, &img, &img_len, &err) ||
		!hb_model_image_read(img, img_len, &whole, &err) ||
		!hb_model_image_read_split(img, img_len, &split, &at, &err))
	{
		tu_report(false, "binary_logistic: split read: %s", err.msg);
		goto done;
	}
	same = split->n_trees == whole->n_trees && split->n_features == whole->n_features &&
		split->pipeline == NULL && at == 0;
	for (int t = 0; same && t < split->n_trees; t++)
		same = split->trees[t].n_nodes == whole->trees[t].n_nodes &&
			memcmp(split->trees[t].nodes, whole->trees[t].nodes,
				   sizeof(HbNode) * split->trees[t].n_nodes) == 0;
	tu_report(same, "binary_logistic: the split read has no pipeline part and the same %d trees",
			  split->n_trees);
	/* a byte past the end: corrupt, as the whole read finds it */
	memset(&err, 0, sizeof(err));
	img = hb_realloc(img, img_len + 1);
	img[img_len] = 0;
	hb_model_free(split);
	split = NULL;
	tu_report(!hb_model_image_read_split(img, img_len + 1, &split, &at, &err) &&
			  err.code == HB_ERR_INVALID && split == NULL,
			  "binary_logistic: a byte after the image is refused: %s", err.msg);
done:
	hb_model_free(split);
	hb_model_free(whole);
	hb_model_free(m);
	hb_free(img);
	free(bytes);
}

static void
test_fixtures(void)
{
	for (size_t f = 0; f < sizeof(names) / sizeof(names[0]); f++)
	{
		HbModel    *m = read_fixture(names[f], NULL, NULL);
		char	   *img = NULL;
		size_t		img_len;
		HbModel    *m2 = NULL;
		HbError		err = {0};

		if (m == NULL)
			continue;
		check_model(names[f], m, "read");
		if (!hb_model_image_write(m, &img, &img_len, &err) ||
			!hb_model_image_read(img, img_len, &m2, &err))
			tu_report(false, "%s: image round trip: %s", names[f], err.msg);
		else
		{
			check_model(names[f], m2, "image");
			check_split_read(names[f], img, img_len);
		}
		hb_free(img);
		hb_model_free(m2);
		hb_model_free(m);
	}
}

/*
 * Every featurizer on its own (all_steps: a ColumnTransformer of each
 * scaler, imputer, indicator, binarizer, discretizer, normalizer,
 * polynomial, encoder and vectorizer): our feature vector against
 * scikit-learn's transform output, column by column.
 */
static void
test_all_steps(void)
{
	HbModel    *m = read_fixture("all_steps", NULL, NULL);
	TuTable		exp;
	int			bad = 0;
	double		worst = 0;

	if (m == NULL)
		return;
	if (!tu_read_csv(DIR "all_steps.expected.csv", &exp))
	{
		tu_report(false, "all_steps.expected.csv unreadable");
		hb_model_free(m);
		return;
	}
	tu_report(exp.cols - 1 == m->n_features, "all_steps: %d features, scikit-learn has %d",
			  m->n_features, exp.cols - 1);
	for (int i = 0; i < exp.rows && exp.cols - 1 == m->n_features; i++)
	{
		const HbPipeline *p = m->pipeline;
		int			id = (int) exp.v[(size_t) i * exp.cols];
		double		num[16];
		HbText		text[16];
		double	   *x = malloc(sizeof(double) * m->n_features);
		HbRawRows	raw = {1, num, text};
		HbError		err = {0};

		for (int k = 0; k < p->n_inputs; k++)
		{
			const char *cell = rows.cells[id][tu_pipeline_column(p->inputs[k].name)];

			if (p->inputs[k].type == HB_INPUT_NUMERIC)
				num[p->inputs[k].index] = cell ? strtod(cell, NULL) : NAN;
			else
			{
				text[p->inputs[k].index].ptr = cell;
				text[p->inputs[k].index].len = cell ? (int32_t) strlen(cell) : 0;
			}
		}
		if (!hb_pipeline_run(p, &raw, x, &err))
		{
			bad++;
			fprintf(stderr, "  all_steps row %d: %s\n", id, err.msg);
		}
		else
			for (int j = 0; j < m->n_features; j++)
			{
				double		want = exp.v[(size_t) i * exp.cols + 1 + j];

				if (isnan(want) ? !isnan(x[j]) : !close_enough(x[j], want))
				{
					if (bad++ < 5)
						fprintf(stderr, "  all_steps row %d feature %d (%s): got %.17g want %.17g\n",
								id, j, m->features[j].name, x[j], want);
				}
				else if (!isnan(want) && fabs(x[j] - want) > worst)
					worst = fabs(x[j] - want);
			}
		free(x);
	}
	tu_report(bad == 0, "all_steps: %d rows x %d features equal scikit-learn's transform (max abs diff %.3g)",
			  exp.rows, m->n_features, worst);
	tu_free_table(&exp);
	hb_model_free(m);
}

/* handle_unknown='error': the unknown city is an error naming input and value */
static void
test_strict(void)
{
	HbModel    *m = read_fixture("strict_dt", NULL, NULL);
	HbPlan	   *plan = NULL;
	HbError		err = {0};
	int			id = -1;
	double		out[4];

	if (m == NULL)
		return;
	for (int i = 0; i < rows.n; i++)
		if (rows.cells[i][3] && strcmp(rows.cells[i][3], "Atlantis") == 0)
			id = i;
	hb_plan_build(m, &plan, &err);
	tu_report(id >= 0 && !score(m, plan, &id, 1, true, out, &err) &&
			  err.code == HB_ERR_ARGUMENT && strstr(err.msg, "\"city\"") &&
			  strstr(err.msg, "\"Atlantis\""),
			  "unknown category with handle_unknown=error: %s", err.msg);
	hb_plan_free(plan);
	hb_model_free(m);
}

static void
expect_error(const char *doc, HbErrCode code, const char *needle)
{
	HbModel    *m = NULL;
	HbError		err = {0};
	bool		r = hb_model_read(doc, strlen(doc), HB_FORMAT_AUTO, &m, &err);

	tu_report(!r && err.code == code && strstr(err.msg, needle) != NULL,
			  "refused (%s): %s", needle, err.msg);
	hb_model_free(m);
}

#define HEAD "{\"format\":\"hbird-pipeline\",\"version\":1,"
#define LIN "\"model\":{\"kind\":\"linear\",\"coef\":[[1]],\"intercept\":[0]}}"

/*
 * A feature listed twice keeps its name on its first position only; the
 * repeat gets the default name of its position.
 */
static void
test_repeated_features(void)
{
	const char *doc = HEAD "\"inputs\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
		"\"features\":[\"b\",\"a\",\"b\",\"a\"],"
		"\"model\":{\"kind\":\"linear\",\"coef\":[[1,2,3,4]],\"intercept\":[0]}}";
	HbModel    *m = NULL;
	HbError		err = {0};
	bool		r = hb_model_read(doc, strlen(doc), HB_FORMAT_AUTO, &m, &err);

	tu_report(r && m->n_features == 4 &&
			  strcmp(m->features[0].name, "b") == 0 &&
			  strcmp(m->features[1].name, "a") == 0 &&
			  strcmp(m->features[2].name, "f2") == 0 &&
			  strcmp(m->features[3].name, "f3") == 0,
			  "repeated features: first keeps the name, repeats get f<position> (%s)",
			  r ? "read" : err.msg);
	hb_model_free(m);
}

/*
 * Many inputs: 100,000 (the limit) read, each name found by its hash, and
 * a repeat among them is refused by name.  (A scan of the list per lookup
 * took 9.6 s for 40,000 inputs.)
 */
static void
test_many_inputs(void)
{
	const int	n = 100000;
	size_t		cap = (size_t) n * 24 + 512;

	for (int repeat = 0; repeat < 2; repeat++)
	{
		char	   *doc = malloc(cap);
		size_t		o = 0;
		HbModel    *m = NULL;
		HbError		err = {0};
		bool		r;

		o += snprintf(doc + o, cap - o, HEAD "\"inputs\":[");
		for (int i = 0; i < n; i++)
			o += snprintf(doc + o, cap - o, "%s{\"name\":\"x%d\"}", i ? "," : "",
						  repeat && i == n - 1 ? 4711 : i);
		snprintf(doc + o, cap - o, "],\"features\":[\"x%d\"]," LIN, n - 2);
		r = hb_model_read(doc, strlen(doc), HB_FORMAT_AUTO, &m, &err);
		if (repeat)
			tu_report(!r && strstr(err.msg, "input \"x4711\" is listed twice") != NULL,
					  "a repeated name among 100,000 inputs is refused by name (%s)",
					  r ? "read" : err.msg);
		else
			tu_report(r && m->pipeline->n_inputs == n,
					  "100,000 inputs read (%s)", r ? "read" : err.msg);
		hb_model_free(m);
		free(doc);
	}
}

static void
test_errors(void)
{
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"]," LIN "xx",
				 HB_ERR_PARSE, "offset");
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\",\"type\":\"blob\"}],\"features\":[\"a\"]," LIN,
				 HB_ERR_INVALID, "inputs[0].type");
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"b\"]," LIN,
				 HB_ERR_INVALID, "\"b\"");
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"steps\":[{\"op\":\"frobnicate\",\"in\":[\"a\"]}],"
				 "\"features\":[\"a\"]," LIN, HB_ERR_UNSUPPORTED, "steps[0] (frobnicate)");
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"steps\":[{\"op\":\"standard_scaler\",\"in\":[\"a\"],"
				 "\"mean\":[1,2]}],\"features\":[\"a\"]," LIN, HB_ERR_INVALID, "\"mean\" has 2 entries");
	expect_error(HEAD "\"inputs\":[{\"name\":\"t\",\"type\":\"text\"}],\"steps\":[{\"op\":\"standard_scaler\",\"in\":[\"t\"]}],"
				 "\"features\":[\"a\"]," LIN, HB_ERR_INVALID, "text input");
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
				 "\"model\":{\"kind\":\"linear\",\"coef\":[[1,2]]}}", HB_ERR_INVALID, "model.coef[0]");
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
				 "\"model\":{\"format\":\"lightgbm-text\",\"text\":\"nonsense\"}}", HB_ERR_PARSE, "");
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
				 "\"model\":{\"kind\":5,\"coef\":[[1]]}}", HB_ERR_INVALID, "model.kind");
	expect_error(HEAD "\"inputs\":[{\"name\":\"t\",\"type\":\"text\"}],\"steps\":[{\"op\":\"tfidf_vectorizer\","
				 "\"input\":\"t\",\"vocabulary\":{\"a\":0},\"token_pattern\":\"[a-z]+\"}],"
				 "\"features\":[\"tfidf_vectorizer\"]," LIN, HB_ERR_UNSUPPORTED, "token_pattern");
	/* several targets: one coefficient row (or tree group) per target */
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
				 "\"model\":{\"kind\":\"linear\",\"coef\":[[1],[2]]}}", HB_ERR_INVALID,
				 "model.coef has 2 rows for 1 outputs");
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
				 "\"model\":{\"kind\":\"linear\",\"n_targets\":3,\"coef\":[[1],[2]]}}",
				 HB_ERR_INVALID, "model.coef has 2 rows for 3 outputs");
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
				 "\"model\":{\"kind\":\"linear\",\"task\":\"binary\",\"n_targets\":2,"
				 "\"coef\":[[1],[2]]}}", HB_ERR_INVALID, "n_targets is for regression models");
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
				 "\"model\":{\"kind\":\"trees\",\"n_targets\":2,\"trees\":[{\"group\":2,"
				 "\"feature\":[0],\"threshold\":[0],\"left\":[-1],\"right\":[-1],\"value\":[1]}]}}",
				 HB_ERR_INVALID, "adds to output 2, but the model has 2 outputs");
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
				 "\"model\":{\"kind\":\"linear\",\"n_targets\":0,\"coef\":[[1]]}}",
				 HB_ERR_INVALID, "n_targets");
}

/*
 * One row of 0 through the pipeline doc: its margins, probabilities and
 * hb_predict's class (k outputs); false with err where it is not read.
 */
static bool
score_zero(const char *doc, int k, double *margins, double *proba, double *cls, HbError *err)
{
	HbModel    *m = NULL;
	HbPlan	   *plan = NULL;
	double		x = 0.0;
	bool		r = hb_model_read(doc, strlen(doc), HB_FORMAT_AUTO, &m, err) &&
		hb_plan_build(m, &plan, err) && hb_plan_n_outputs(plan) == k;

	if (r)
	{
		hb_plan_margins(plan, &x, 1, margins);
		hb_link_proba(plan, margins, 1, proba);
		hb_link_predict(plan, margins, 1, cls);
	}
	hb_plan_free(plan);
	hb_model_free(m);
	return r;
}

/*
 * The link "mean" divides each class's sum once it is summed, as
 * scikit-learn averages a forest: sums 1.5 + 2^-52 and 1.5 + 2^-51 over
 * three trees divide to the same 0.5 + 2^-53, so the classes tie and the
 * first wins (numpy's argmax), where the sums alone say class 1; leaves
 * divided before the sum (the earlier export) give other bits.  Outputs
 * with unequal tree counts are refused.
 */
#define LEAF(g, v) "{\"group\":" #g ",\"feature\":[0],\"threshold\":[0],\"left\":[-1],\"right\":[-1],\"value\":[" v "]}"
static void
test_mean_link(void)
{
	const char *doc = HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
		"\"model\":{\"kind\":\"trees\",\"task\":\"multiclass\",\"n_classes\":2,\"link\":\"mean\","
		"\"comparison\":\"le\",\"base\":[0,0],\"trees\":["
		LEAF(0, "1.5000000000000002") "," LEAF(1, "1.5000000000000004") ","
		LEAF(0, "0") "," LEAF(1, "0") "," LEAF(0, "0") "," LEAF(1, "0") "]}}";
	HbError		err = {0};
	double		margins[2],
				proba[2],
				cls = -1;
	bool		r = score_zero(doc, 2, margins, proba, &cls, &err);

	tu_report(r && margins[0] == 1.5 + ldexp(1, -52) && margins[1] == 1.5 + ldexp(1, -51) &&
			  proba[0] == 0.5 + ldexp(1, -53) && proba[1] == proba[0] && cls == 0,
			  "link mean: sums %.17g and %.17g divide to %.17g and %.17g, class %g (%s)",
			  r ? margins[0] : 0, r ? margins[1] : 0, r ? proba[0] : 0, r ? proba[1] : 0, cls,
			  r ? "read" : err.msg);
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
				 "\"model\":{\"kind\":\"trees\",\"task\":\"multiclass\",\"n_classes\":2,\"link\":\"mean\","
				 "\"base\":[0,0],\"trees\":[" LEAF(0, "1") "," LEAF(1, "1") "," LEAF(0, "1") "]}}",
				 HB_ERR_INVALID, "as many trees for each of the 2 outputs");
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
				 "\"model\":{\"kind\":\"trees\",\"task\":\"multiclass\",\"n_classes\":2,\"link\":\"mean\","
				 "\"base\":[0,0],\"trees\":[" LEAF(0, "1") "," LEAF(0, "1") "," LEAF(1, "1") "," LEAF(0, "1") "]}}",
				 HB_ERR_INVALID, "output 0 has another count");
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
				 "\"model\":{\"kind\":\"linear\",\"link\":\"mean\",\"coef\":[[1]],\"intercept\":[0]}}",
				 HB_ERR_INVALID, "the link \"mean\"");
}

/*
 * The link "l1": a decision tree's weighted counts, each over the row's
 * sum, and the class the largest count's: 0.8999999999999999 and 0.9 over
 * 2.4 are both 0.375, and the class is the second (scikit-learn's predict
 * takes the largest count, not the largest probability).
 */
static void
test_l1_link(void)
{
	const char *doc = HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
		"\"model\":{\"kind\":\"trees\",\"task\":\"multiclass\",\"n_classes\":3,\"link\":\"l1\","
		"\"comparison\":\"le\",\"base\":[0,0,0],\"trees\":["
		LEAF(0, "0.8999999999999999") "," LEAF(1, "0.9") "," LEAF(2, "0.6") "]}}";
	HbError		err = {0};
	double		margins[3],
				proba[3],
				cls = -1;
	bool		r = score_zero(doc, 3, margins, proba, &cls, &err);

	tu_report(r && proba[0] == 0.375 && proba[1] == 0.375 && proba[2] == 0.25 && cls == 1,
			  "link l1: counts over their sum %.17g %.17g %.17g, class %g (%s)",
			  r ? proba[0] : 0, r ? proba[1] : 0, r ? proba[2] : 0, cls, r ? "read" : err.msg);
	expect_error(HEAD "\"inputs\":[{\"name\":\"a\"}],\"features\":[\"a\"],"
				 "\"model\":{\"kind\":\"linear\",\"link\":\"l1\",\"coef\":[[1]],\"intercept\":[0]}}",
				 HB_ERR_INVALID, "the link \"l1\" is for multiclass models");
}

/* a hand-made pipeline over an embedded LightGBM model, base64 and text */
static void
test_embedded(void)
{
	size_t		len;
	char	   *lgb = tu_read_file("test/fixtures/lightgbm_tiny.txt", &len);
	HbModel    *m = NULL;
	HbError		err = {0};

	if (lgb == NULL)
	{
		tu_report(false, "lightgbm_tiny.txt unreadable");
		return;
	}
	{
		/* JSON-escape the text model */
		char	   *doc = malloc(len * 2 + 4096);
		char	   *o = doc;
		int			nf;
		HbModel    *plain = NULL;

		if (!hb_model_read(lgb, len, HB_FORMAT_AUTO, &plain, &err))
		{
			tu_report(false, "lightgbm_tiny: %s", err.msg);
			free(doc);
			free(lgb);
			return;
		}
		nf = plain->n_features;
		o += sprintf(o, HEAD "\"inputs\":[{\"name\":\"v\"}],\"steps\":[{\"op\":\"standard_scaler\","
					 "\"name\":\"s\",\"in\":[\"v\"],\"mean\":[1],\"scale\":[2]}],\"features\":[");
		for (int f = 0; f < nf; f++)
			o += sprintf(o, "%s\"%s\"", f ? "," : "", f % 2 ? "v" : "s");
		o += sprintf(o, "],\"model\":{\"format\":\"lightgbm-text\",\"text\":\"");
		for (size_t i = 0; i < len; i++)
		{
			if (lgb[i] == '\n')
				o += sprintf(o, "\\n");
			else if (lgb[i] == '"' || lgb[i] == '\\')
				o += sprintf(o, "\\%c", lgb[i]);
			else if ((unsigned char) lgb[i] >= 0x20)
				*o++ = lgb[i];
		}
		o += sprintf(o, "\"}}");
		tu_report(hb_model_read(doc, (size_t) (o - doc), HB_FORMAT_AUTO, &m, &err) &&
				  m->pipeline && m->n_features == nf, "embedded lightgbm text model: %s",
				  err.msg[0] ? err.msg : "read");
		if (m)
		{
			/* v = 3: s = 1; features alternate s, v -> the plain model on [1, 3, 1, ...] */
			double		v = 3,
						x[64],
						a,
						b,
						sc[8];
			HbRawRows	raw = {1, &v, NULL};
			HbPlan	   *p1 = NULL,
					   *p2 = NULL;

			for (int f = 0; f < nf && f < 64; f++)
				x[f] = f % 2 ? 3 : 1;
			hb_plan_build(plain, &p1, &err);
			hb_plan_build(m, &p2, &err);
			hb_plan_predict(p1, x, 1, sc, &a);
			hb_pipeline_run(m->pipeline, &raw, x, &err);
			hb_plan_predict(p2, x, 1, sc, &b);
			tu_report(nf <= 64 && a == b, "embedded model scores the featurized row (%g = %g)", a, b);
			hb_plan_free(p1);
			hb_plan_free(p2);
		}
		hb_model_free(m);
		hb_model_free(plain);
		free(doc);
	}
	free(lgb);
}

int
main(void)
{
	tu_load_pipeline_rows(&rows);
	test_fixtures();
	test_split_without_pipeline();
	test_all_steps();
	test_strict();
	test_errors();
	test_mean_link();
	test_l1_link();
	test_repeated_features();
	test_many_inputs();
	test_embedded();
	printf("1..%d\n", tu_n_test);
	tu_free_rows(&rows);
	return tu_n_fail ? 1 : 0;
}
