/*
 * test_featurize.c
 *	  The featurizer executor, step by step, on values that can be checked
 *	  by hand (the expected text-vector values were confirmed with
 *	  scikit-learn 1.2's HashingVectorizer / CountVectorizer on the same
 *	  documents), and the structural checks of hb_pipeline_validate.  TAP.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "featurize.h"

static int	n_test = 0;
static int	n_fail = 0;
static HbError *last_err;

static void
ok(bool cond, const char *what)
{
	n_test++;
	if (!cond)
		n_fail++;
	printf("%s %d - %s\n", cond ? "ok" : "not ok", n_test, what);
	if (!cond && last_err)
		printf("# %s\n", last_err->msg);
}

static bool
near(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return fabs(a - b) <= 1e-12 * (1 + fabs(b));
}

static bool
same(const double *got, const double *want, int n)
{
	for (int i = 0; i < n; i++)
		if (!near(got[i], want[i]))
		{
			fprintf(stderr, "  [%d] got %.17g want %.17g\n", i, got[i], want[i]);
			return false;
		}
	return true;
}

static int32_t *
ints(int n, const int *v)
{
	int32_t    *a = hb_alloc(sizeof(int32_t) * (n ? n : 1));

	for (int i = 0; i < n; i++)
		a[i] = v[i];
	return a;
}

static double *
dbls(int n, const double *v)
{
	double	   *a = hb_alloc(sizeof(double) * (n ? n : 1));

	for (int i = 0; i < n; i++)
		a[i] = v[i];
	return a;
}

static char **
strs(int n, const char *const *v)
{
	char	  **a = hb_alloc(sizeof(char *) * (n ? n : 1));

	for (int i = 0; i < n; i++)
		a[i] = v[i] ? hb_strdup(v[i]) : NULL;
	return a;
}

/* A pipeline of n_num numeric inputs x0.. and n_text text inputs t0.. */
static HbPipeline *
new_pipeline(int n_num, int n_text)
{
	HbPipeline *p = hb_alloc0(sizeof(HbPipeline));

	p->n_inputs = n_num + n_text;
	p->n_num_inputs = n_num;
	p->n_text_inputs = n_text;
	p->inputs = hb_alloc0(sizeof(HbInput) * (p->n_inputs ? p->n_inputs : 1));
	for (int i = 0; i < p->n_inputs; i++)
	{
		char		name[16];

		snprintf(name, sizeof(name), i < n_num ? "x%d" : "t%d", i < n_num ? i : i - n_num);
		p->inputs[i].name = hb_strdup(name);
		p->inputs[i].type = i < n_num ? HB_INPUT_NUMERIC : HB_INPUT_TEXT;
		p->inputs[i].index = i < n_num ? i : i - n_num;
	}
	p->steps = hb_alloc0(sizeof(HbStep) * 16);
	return p;
}

/* Append a step; fills out from the running slot count. */
static HbStep *
add_step(HbPipeline *p, HbStepKind kind, int n_in, const int *in, int n_out)
{
	HbStep	   *s = &p->steps[p->n_steps++];
	int			next = p->n_num_inputs;

	for (int k = 0; k < p->n_steps - 1; k++)
		next += p->steps[k].n_out;
	s->kind = kind;
	s->n_in = n_in;
	s->in = ints(n_in, in);
	s->out = next;
	s->n_out = n_out;
	return s;
}

/* Select the last step's outputs as the features, validate. */
static bool
finish(HbPipeline *p, HbError *err)
{
	HbStep	   *s = &p->steps[p->n_steps - 1];

	last_err = err;
	memset(err, 0, sizeof(*err));

	p->n_features = s->n_out;
	p->feature_slot = hb_alloc(sizeof(int32_t) * s->n_out);
	for (int j = 0; j < s->n_out; j++)
		p->feature_slot[j] = s->out + j;
	return hb_pipeline_validate(p, -1, err);
}

/* Run one row of numeric inputs (and texts) and compare. */
static void
check_row(HbPipeline *p, const double *num, const HbText *text,
		  const double *want, const char *what)
{
	HbRawRows	rows = {1, num, text};
	double		x[64];
	HbError		err = {0};
	bool		r = hb_pipeline_run(p, &rows, x, &err);

	if (!r)
		fprintf(stderr, "  %s: %s\n", what, err.msg);
	ok(r && same(x, want, p->n_features), what);
}

static HbText
T(const char *s)
{
	HbText		t = {s, s ? (int32_t) strlen(s) : 0};

	return t;
}

static void
test_elementwise(void)
{
	HbError		err = {0};
	HbPipeline *p;
	HbStep	   *s;
	const int	in2[] = {0, 1};

	/* StandardScaler: (x - mean) / scale; NaN passes through */
	p = new_pipeline(2, 0);
	s = add_step(p, HB_STEP_AFFINE, 2, in2, 2);
	s->order = HB_AFFINE_SUB_DIV;
	s->sub = dbls(2, (double[]) {1, 10});
	s->mul = dbls(2, (double[]) {2, 4});
	ok(finish(p, &err), "standard scaler validates");
	check_row(p, (double[]) {3, 2}, NULL, (double[]) {1, -2}, "standard scaler");
	check_row(p, (double[]) {NAN, 14}, NULL, (double[]) {NAN, 1}, "standard scaler keeps NaN");
	hb_pipeline_free(p);

	/* MinMaxScaler: x * scale + min */
	p = new_pipeline(1, 0);
	s = add_step(p, HB_STEP_AFFINE, 1, in2, 1);
	s->order = HB_AFFINE_MUL_ADD;
	s->mul = dbls(1, (double[]) {0.5});
	s->add = dbls(1, (double[]) {-1});
	ok(finish(p, &err), "min-max scaler validates");
	check_row(p, (double[]) {6}, NULL, (double[]) {2}, "min-max scaler");
	hb_pipeline_free(p);

	/* SimpleImputer then MissingIndicator on the raw input */
	p = new_pipeline(2, 0);
	s = add_step(p, HB_STEP_IMPUTE, 2, in2, 2);
	s->value = dbls(2, (double[]) {5, -1});
	s = add_step(p, HB_STEP_MISSING_IND, 2, in2, 2);
	p->n_features = 4;
	p->feature_slot = ints(4, (int[]) {2, 3, 4, 5});
	ok(hb_pipeline_validate(p, 4, &err), "imputer + indicator validate");
	check_row(p, (double[]) {NAN, 7}, NULL, (double[]) {5, 7, 1, 0}, "imputer + indicator");
	hb_pipeline_free(p);

	/* imputer with a placeholder value (ONNX replaced_value_float) */
	p = new_pipeline(1, 0);
	s = add_step(p, HB_STEP_IMPUTE, 1, in2, 1);
	s->value = dbls(1, (double[]) {3});
	s->has_missing_value = true;
	s->missing_value = -999;
	ok(finish(p, &err), "placeholder imputer validates");
	check_row(p, (double[]) {-999}, NULL, (double[]) {3}, "placeholder imputer replaces the placeholder");
	check_row(p, (double[]) {NAN}, NULL, (double[]) {3}, "placeholder imputer replaces NaN");
	hb_pipeline_free(p);

	/* Binarizer: strictly greater */
	p = new_pipeline(1, 0);
	s = add_step(p, HB_STEP_BINARIZE, 1, in2, 1);
	s->threshold = 0.5;
	ok(finish(p, &err), "binarizer validates");
	check_row(p, (double[]) {0.5}, NULL, (double[]) {0}, "binarizer: equal is 0");
	check_row(p, (double[]) {0.7}, NULL, (double[]) {1}, "binarizer: above is 1");
	hb_pipeline_free(p);

	/* missing_below: scikit-learn's negative categories are missing */
	p = new_pipeline(2, 0);
	s = add_step(p, HB_STEP_MISSING_BELOW, 2, in2, 2);
	s->threshold = 0;
	ok(finish(p, &err), "missing_below validates");
	check_row(p, (double[]) {-0.5, 0}, NULL, (double[]) {NAN, 0},
			  "missing_below: below is missing, the threshold itself is not");
	check_row(p, (double[]) {-0.0, 2.5}, NULL, (double[]) {-0.0, 2.5},
			  "missing_below: -0 is not below 0");
	check_row(p, (double[]) {NAN, -INFINITY}, NULL, (double[]) {NAN, NAN},
			  "missing_below: NaN stays missing, -inf is below");
	s->threshold = NAN;
	ok(!hb_pipeline_validate(p, 2, &err) && strstr(err.msg, "missing_below") != NULL,
	   "missing_below: a NaN threshold is refused by name");
	hb_pipeline_free(p);

	/* cast, arithmetic, clip */
	p = new_pipeline(1, 0);
	s = add_step(p, HB_STEP_CAST_F32, 1, in2, 1);
	s = add_step(p, HB_STEP_ARITH, 1, (int[]) {1}, 1);
	s->arith = HB_ARITH_RSUB;
	s->constant = dbls(1, (double[]) {1});
	s = add_step(p, HB_STEP_CLIP, 1, (int[]) {2}, 1);
	s->lo = 0;
	s->hi = 0.5;
	ok(finish(p, &err), "cast/arith/clip validate");
	check_row(p, (double[]) {0.1}, NULL, (double[]) {0.5}, "clip high");
	check_row(p, (double[]) {0.75}, NULL, (double[]) {0.25}, "1 - x in float32");
	hb_pipeline_free(p);
}

static void
test_groups(void)
{
	HbError		err = {0};
	HbPipeline *p;
	HbStep	   *s;
	const int	in2[] = {0, 1};

	p = new_pipeline(2, 0);
	s = add_step(p, HB_STEP_NORMALIZE, 2, in2, 2);
	s->norm = HB_NORM_L2;
	ok(finish(p, &err), "normalizer validates");
	check_row(p, (double[]) {3, -4}, NULL, (double[]) {0.6, -0.8}, "l2 normalizer");
	check_row(p, (double[]) {0, 0}, NULL, (double[]) {0, 0}, "l2 normalizer: zero row stays");
	p->steps[0].norm = HB_NORM_L1;
	check_row(p, (double[]) {3, -1}, NULL, (double[]) {0.75, -0.25}, "l1 normalizer");
	p->steps[0].norm = HB_NORM_MAX;
	check_row(p, (double[]) {2, -8}, NULL, (double[]) {0.25, -1}, "max normalizer uses |x|");
	hb_pipeline_free(p);

	/* PolynomialFeatures(2): 1, a, b, a^2, ab, b^2 */
	p = new_pipeline(2, 0);
	s = add_step(p, HB_STEP_POLY, 2, in2, 6);
	s->powers = ints(12, (int[]) {0, 0, 1, 0, 0, 1, 2, 0, 1, 1, 0, 2});
	ok(finish(p, &err), "poly validates");
	check_row(p, (double[]) {2, 3}, NULL, (double[]) {1, 2, 3, 4, 6, 9}, "poly degree 2");
	hb_pipeline_free(p);

	/* KBinsDiscretizer: inner edges 1, 2; searchsorted right */
	p = new_pipeline(1, 0);
	s = add_step(p, HB_STEP_KBINS, 1, in2, 1);
	s->n_edges = 2;
	s->edges = dbls(2, (double[]) {1, 2});
	ok(finish(p, &err), "kbins validates");
	check_row(p, (double[]) {1}, NULL, (double[]) {1}, "kbins: on an edge goes right");
	check_row(p, (double[]) {0.5}, NULL, (double[]) {0}, "kbins: below");
	check_row(p, (double[]) {9}, NULL, (double[]) {2}, "kbins: above");
	hb_pipeline_free(p);

	p = new_pipeline(1, 0);
	s = add_step(p, HB_STEP_KBINS, 1, in2, 3);
	s->n_edges = 2;
	s->onehot = true;
	s->edges = dbls(2, (double[]) {1, 2});
	ok(finish(p, &err), "kbins one-hot validates");
	check_row(p, (double[]) {1.5}, NULL, (double[]) {0, 1, 0}, "kbins one-hot");
	hb_pipeline_free(p);
}

static void
test_categories(void)
{
	HbError		err = {0};
	HbPipeline *p;
	HbStep	   *s;
	HbText		t[1];
	double		x[8];
	HbRawRows	rows = {1, NULL, t};

	/* numeric categories given unsorted: positions follow the given order */
	p = new_pipeline(1, 0);
	s = add_step(p, HB_STEP_ONEHOT_NUM, 1, (int[]) {0}, 3);
	s->onehot = true;
	s->n_categories = 3;
	s->categories_num = dbls(3, (double[]) {30, 10, 20});
	s->unknown = HB_UNKNOWN_IGNORE;
	ok(finish(p, &err), "numeric one-hot validates");
	check_row(p, (double[]) {20}, NULL, (double[]) {0, 0, 1}, "numeric one-hot");
	check_row(p, (double[]) {30}, NULL, (double[]) {1, 0, 0}, "numeric one-hot, first");
	check_row(p, (double[]) {25}, NULL, (double[]) {0, 0, 0}, "numeric one-hot, unknown ignored");
	hb_pipeline_free(p);

	/* drop='first' */
	p = new_pipeline(1, 0);
	s = add_step(p, HB_STEP_ONEHOT_NUM, 1, (int[]) {0}, 2);
	s->onehot = true;
	s->drop_first = true;
	s->n_categories = 3;
	s->categories_num = dbls(3, (double[]) {1, 2, 3});
	s->unknown = HB_UNKNOWN_IGNORE;
	ok(finish(p, &err), "drop-first one-hot validates");
	check_row(p, (double[]) {1}, NULL, (double[]) {0, 0}, "dropped category is all zero");
	check_row(p, (double[]) {3}, NULL, (double[]) {0, 1}, "later categories shift");
	hb_pipeline_free(p);

	/* text categories with a missing category, error on unknown */
	p = new_pipeline(0, 1);
	s = add_step(p, HB_STEP_ONEHOT_TEXT, 0, NULL, 3);
	s->onehot = true;
	s->text_input = 0;
	s->n_categories = 3;
	s->categories_text = strs(3, (const char *[]) {"b", "a", NULL});
	s->unknown = HB_UNKNOWN_ERROR;
	ok(finish(p, &err), "text one-hot validates");
	t[0] = T("a");
	check_row(p, NULL, t, (double[]) {0, 1, 0}, "text one-hot");
	t[0] = T(NULL);
	check_row(p, NULL, t, (double[]) {0, 0, 1}, "text one-hot: NULL is its category");
	t[0] = T("Paris");
	memset(&err, 0, sizeof(err));
	ok(!hb_pipeline_run(p, &rows, x, &err) && err.code == HB_ERR_ARGUMENT &&
	   strstr(err.msg, "\"t0\"") && strstr(err.msg, "Paris"),
	   "unknown text category is an error naming input and value");
	t[0].len = 1;				/* "P": a prefix is no match either */
	memset(&err, 0, sizeof(err));
	ok(!hb_pipeline_run(p, &rows, x, &err), "a prefix of a category is unknown");
	hb_pipeline_free(p);

	/* ordinal over text, unknown -> value */
	p = new_pipeline(0, 1);
	s = add_step(p, HB_STEP_ONEHOT_TEXT, 0, NULL, 1);
	s->text_input = 0;
	s->n_categories = 2;
	s->categories_text = strs(2, (const char *[]) {"x", "w"});
	s->unknown = HB_UNKNOWN_VALUE;
	s->unknown_value = -1;
	ok(finish(p, &err), "ordinal text validates");
	t[0] = T("w");
	check_row(p, NULL, t, (double[]) {1}, "ordinal text: given position");
	t[0] = T("zz");
	check_row(p, NULL, t, (double[]) {-1}, "ordinal text: unknown value");
	t[0] = T(NULL);
	check_row(p, NULL, t, (double[]) {-1}, "ordinal text: NULL without a NULL category is unknown");
	hb_pipeline_free(p);

	/* LabelEncoder-like tables */
	p = new_pipeline(0, 1);
	s = add_step(p, HB_STEP_LABEL_TEXT, 0, NULL, 1);
	s->text_input = 0;
	s->n_categories = 2;
	s->categories_text = strs(2, (const char *[]) {"yes", "no"});
	s->label_values = dbls(2, (double[]) {1, 0});
	s->unknown = HB_UNKNOWN_VALUE;
	s->unknown_value = 0.5;
	ok(finish(p, &err), "text label table validates");
	t[0] = T("yes");
	check_row(p, NULL, t, (double[]) {1}, "label table");
	t[0] = T("maybe");
	check_row(p, NULL, t, (double[]) {0.5}, "label table default");
	hb_pipeline_free(p);

	/* duplicate categories are refused */
	p = new_pipeline(1, 0);
	s = add_step(p, HB_STEP_ONEHOT_NUM, 1, (int[]) {0}, 2);
	s->onehot = true;
	s->n_categories = 2;
	s->categories_num = dbls(2, (double[]) {1, 1});
	ok(!finish(p, &err) && strstr(err.msg, "twice"), "duplicate category refused");
	hb_pipeline_free(p);
}

static void
test_text(void)
{
	HbError		err = {0};
	HbPipeline *p;
	HbStep	   *s;
	HbText		t[1];

	/* sklearn: HashingVectorizer(n_features=16, norm=None) of "foo foo ab" */
	p = new_pipeline(0, 1);
	s = add_step(p, HB_STEP_HASHING, 0, NULL, 3);
	s->tok = (HbTokenizer) {true, false, 1, 1, 2, 0, NULL, false, HB_STRIP_NONE};
	s->n_cols = 16;
	s->alternate_sign = true;
	s->n_used = 3;
	s->used_cols = hb_alloc(sizeof(int64_t) * 3);
	s->used_cols[0] = 0;
	s->used_cols[1] = 1;
	s->used_cols[2] = 5;
	ok(finish(p, &err), "hashing validates");
	t[0] = T("foo FOO ab");
	check_row(p, NULL, t, (double[]) {-2, -1, 0}, "hashing counts with alternate sign");
	p->steps[0].norm = HB_NORM_L2;
	check_row(p, NULL, t, (double[]) {-2 / sqrt(5), -1 / sqrt(5), 0}, "hashing l2");
	p->steps[0].binary = true;
	check_row(p, NULL, t, (double[]) {1 / sqrt(2), 1 / sqrt(2), 0}, "hashing binary makes every entry 1");
	t[0] = T(NULL);
	check_row(p, NULL, t, (double[]) {0, 0, 0}, "hashing NULL is an empty document");
	hb_pipeline_free(p);

	/* tf-idf with bigrams, idf and l2 */
	p = new_pipeline(0, 1);
	s = add_step(p, HB_STEP_TFIDF, 0, NULL, 3);
	s->tok = (HbTokenizer) {true, false, 1, 2, 2, 0, NULL, false, HB_STRIP_NONE};
	s->n_cols = 3;
	s->n_vocab = 3;
	s->vocab_terms = strs(3, (const char *[]) {"world", "hello world", "hello"});
	s->vocab_cols = ints(3, (int[]) {1, 2, 0});
	s->idf = dbls(3, (double[]) {1, 2, 3});
	s->norm = HB_NORM_L2;
	s->n_used = 3;
	s->used_cols = hb_alloc(sizeof(int64_t) * 3);
	for (int i = 0; i < 3; i++)
		s->used_cols[i] = i;
	ok(finish(p, &err), "tf-idf validates");
	t[0] = T("Hello world, hello! a");
	check_row(p, NULL, t, (double[]) {2 / sqrt(17), 2 / sqrt(17), 3 / sqrt(17)},
			  "tf-idf: counts, bigrams, idf, l2");
	p->steps[0].sublinear_tf = true;
	p->steps[0].norm = HB_NORM_NONE;
	check_row(p, NULL, t, (double[]) {1 + log(2), 2, 3}, "tf-idf sublinear, no norm");
	hb_pipeline_free(p);

	/*
	 * Unicode lower-casing with the final sigma, as str.lower(): sklearn's
	 * vocabulary of "ΟΔΟΣ Σ ΑΣ.  hello" has 'οδος', 'ας', 'οδος ας'.
	 */
	p = new_pipeline(0, 1);
	s = add_step(p, HB_STEP_TFIDF, 0, NULL, 3);
	s->tok = (HbTokenizer) {true, false, 1, 2, 2, 0, NULL, false, HB_STRIP_NONE};
	s->n_cols = 3;
	s->n_vocab = 3;
	s->vocab_terms = strs(3, (const char *[]) {"οδος", "ας", "οδος ας"});
	s->vocab_cols = ints(3, (int[]) {0, 1, 2});
	s->n_used = 3;
	s->used_cols = hb_alloc(sizeof(int64_t) * 3);
	for (int i = 0; i < 3; i++)
		s->used_cols[i] = i;
	ok(finish(p, &err), "unicode vocabulary validates");
	t[0] = T("ΟΔΟΣ Σ ΑΣ.  hello");
	check_row(p, NULL, t, (double[]) {1, 1, 1}, "unicode lower-casing and final sigma");
	hb_pipeline_free(p);

	/* char 2-grams of "Ab  c": 'ab', 'b ', ' c' (white space runs collapse) */
	p = new_pipeline(0, 1);
	s = add_step(p, HB_STEP_TFIDF, 0, NULL, 3);
	s->tok = (HbTokenizer) {true, true, 2, 2, 1, 0, NULL, false, HB_STRIP_NONE};
	s->n_cols = 3;
	s->n_vocab = 3;
	s->vocab_terms = strs(3, (const char *[]) {" c", "ab", "b "});
	s->vocab_cols = ints(3, (int[]) {0, 1, 2});
	s->n_used = 3;
	s->used_cols = hb_alloc(sizeof(int64_t) * 3);
	for (int i = 0; i < 3; i++)
		s->used_cols[i] = i;
	ok(finish(p, &err), "char n-grams validate");
	t[0] = T("Ab  c");
	check_row(p, NULL, t, (double[]) {1, 1, 1}, "char 2-grams");
	hb_pipeline_free(p);
}

static void
test_validate(void)
{
	HbError		err = {0};
	HbPipeline *p;
	HbStep	   *s;

	p = new_pipeline(1, 0);
	s = add_step(p, HB_STEP_BINARIZE, 1, (int[]) {0}, 1);
	s->out = 5;
	ok(!finish(p, &err) && strstr(err.msg, "next free slot"), "a step must write the next slot");
	hb_pipeline_free(p);

	p = new_pipeline(1, 0);
	s = add_step(p, HB_STEP_BINARIZE, 1, (int[]) {3}, 1);
	ok(!finish(p, &err) && strstr(err.msg, "not written"), "a step reads only earlier slots");
	hb_pipeline_free(p);

	/* input names are checked by sorting: 100,000 of them, then a repeat */
	p = new_pipeline(100000, 0);
	s = add_step(p, HB_STEP_BINARIZE, 1, (int[]) {0}, 1);
	ok(finish(p, &err), "100,000 inputs validate");
	hb_free(p->inputs[99999].name);
	p->inputs[99999].name = hb_strdup("x4711");
	memset(&err, 0, sizeof(err));
	ok(!hb_pipeline_validate(p, -1, &err) && strstr(err.msg, "input \"x4711\" appears twice"),
	   "a repeated input name among 100,000 is refused, naming it");
	hb_pipeline_free(p);

	p = new_pipeline(1, 0);
	s = add_step(p, HB_STEP_BINARIZE, 1, (int[]) {0}, 1);
	ok(finish(p, &err), "binarize validates");
	p->feature_slot[0] = 9;
	memset(&err, 0, sizeof(err));
	ok(!hb_pipeline_validate(p, -1, &err), "feature slot out of range refused");
	p->feature_slot[0] = 1;
	memset(&err, 0, sizeof(err));
	ok(!hb_pipeline_validate(p, 2, &err) && strstr(err.msg, "model takes 2"),
	   "feature count must match the model");
	hb_pipeline_free(p);

	p = new_pipeline(0, 1);
	s = add_step(p, HB_STEP_HASHING, 0, NULL, 1);
	s->text_input = 1;
	s->tok = (HbTokenizer) {true, false, 1, 1, 2, 0, NULL, false, HB_STRIP_NONE};
	s->n_cols = 4;
	s->n_used = 1;
	s->used_cols = hb_alloc0(sizeof(int64_t));
	ok(!finish(p, &err) && strstr(err.msg, "text input 1"), "text input out of range refused");
	hb_pipeline_free(p);
}

int
main(void)
{
	test_elementwise();
	test_groups();
	test_categories();
	test_text();
	test_validate();
	printf("1..%d\n", n_test);
	return n_fail ? 1 : 0;
}
