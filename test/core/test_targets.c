/*
 * test_targets.c
 *	  Multi-target regression: hb_plan_targets / hb_link_targets and the
 *	  multi-target predicates, on XGBoost models with several targets (one
 *	  output per tree, from XGBoost 1.7 itself; vector-leaf trees of
 *	  XGBoost 2.x and 3.2+, hand-written with an independent evaluator), and
 *	  the reader's checks of vector-leaf trees.  Prints TAP lines; exits 1 on
 *	  any failure.
 *
 * Run from the repository root (fixtures: test/fixtures, or $HB_FIXTURES).
 */
#include "model.h"
#include "plan.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *fixtures;

/* Bit-identical doubles (NaN equal to NaN). */
static bool
same_bits(double a, double b)
{
	return memcmp(&a, &b, sizeof(a)) == 0 || (isnan(a) && isnan(b));
}

static HbModel *
read_model_file(const char *name, HbError *err)
{
	char		path[4096];
	size_t		len;
	char	   *bytes;
	HbModel    *m = NULL;

	snprintf(path, sizeof(path), "%s/%s.json", fixtures, name);
	bytes = tu_read_file(path, &len);
	memset(err, 0, sizeof(*err));
	if (bytes == NULL)
	{
		snprintf(err->msg, sizeof(err->msg), "cannot read %.400s", path);
		return NULL;
	}
	if (!hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, err))
		m = NULL;
	free(bytes);
	return m;
}

/* The fixture's input rows as the model's feature vectors (by name). */
static double *
fixture_rows(const char *name, const HbModel *m, int *rows)
{
	char		path[4096];
	TuTable		in;
	double	   *x;

	snprintf(path, sizeof(path), "%s/%s.csv", fixtures, name);
	if (!tu_read_csv(path, &in))
		return NULL;
	x = malloc(sizeof(double) * (size_t) in.rows * m->n_features);
	for (int f = 0; f < m->n_features; f++)
	{
		int			c = tu_find_column(&in, m->features[f].name);

		if (c < 0)
			c = f + 1;
		for (int r = 0; r < in.rows; r++)
			x[(size_t) r * m->n_features + f] = c < in.cols ?
				in.v[(size_t) r * in.cols + c] : NAN;
	}
	*rows = in.rows;
	tu_free_table(&in);
	return x;
}

/*
 * Compare n x k values with the expected file's columns prefix_0 ..
 * prefix_{k-1}, bit for bit; the first differing cell goes to *bad_row /
 * *bad_col.
 */
static bool
match_columns(const TuTable *want, const char *prefix, const double *got,
			  int n, int k, int *bad_row, int *bad_col)
{
	for (int g = 0; g < k; g++)
	{
		char		col[64];
		int			c;

		snprintf(col, sizeof(col), "%s_%d", prefix, g);
		c = tu_find_column(want, col);
		if (c < 0)
		{
			*bad_row = -1;
			*bad_col = g;
			return false;
		}
		for (int r = 0; r < n; r++)
			if (!same_bits(got[(size_t) r * k + g], want->v[(size_t) r * want->cols + c]))
			{
				*bad_row = r;
				*bad_col = g;
				return false;
			}
	}
	return true;
}

/* ", first difference at row r (1-based), target c", for a failed check */
static const char *
where(int r, int c)
{
	static char buf[96];

	snprintf(buf, sizeof(buf), " (first difference: row %d, target %d)", r + 1, c);
	return buf;
}

/*
 * A multi-target fixture: margins and targets equal the library's (or the
 * independent evaluator's) bit for bit, with every strategy.
 */
static void
test_fixture(const char *name, int want_targets)
{
	HbError		err;
	HbModel    *m = read_model_file(name, &err);
	HbPlan	   *p = NULL;
	TuTable		want;
	char		path[4096];
	double	   *x,
			   *margins,
			   *targets,
			   *linked,
			   *scratch;
	int			n = 0,
				k,
				br = 0,
				bc = 0;
	HbPlanOp	ops[16];
	int			n_ops;
	static const HbStrategy strategies[] = {HB_STRATEGY_TT, HB_STRATEGY_PTT, HB_STRATEGY_GEMM};
	bool		same = true;
	bool		ok;

	if (m == NULL || !hb_plan_build(m, &p, &err))
	{
		tu_report(false, "%s: reads and compiles (%s)", name, err.msg);
		hb_model_free(m);
		return;
	}
	k = m->n_outputs;
	tu_report(k == want_targets && m->task == HB_TASK_REGRESSION && m->n_classes == 0 &&
			  hb_model_is_multi_target(m) && hb_plan_is_multi_target(p) &&
			  hb_plan_n_outputs(p) == k,
			  "%s: a multi-target model of %d targets (has %d outputs, task %s)",
			  name, want_targets, k, hb_task_name(m->task));

	x = fixture_rows(name, m, &n);
	snprintf(path, sizeof(path), "%s/%s.expected.csv", fixtures, name);
	if (x == NULL || !tu_read_csv(path, &want) || want.rows != n)
	{
		tu_report(false, "%s: cannot read the rows or the expected values", name);
		free(x);
		hb_plan_free(p);
		hb_model_free(m);
		return;
	}
	margins = malloc(sizeof(double) * n * k);
	targets = malloc(sizeof(double) * n * k);
	linked = malloc(sizeof(double) * n * k);
	scratch = malloc(sizeof(double) * n * k);

	hb_plan_margins(p, x, n, margins);
	ok = match_columns(&want, "margin", margins, n, k, &br, &bc);
	tu_report(ok, "%s: margins of every target equal the expected ones bit for bit%s",
			  name, ok ? "" : where(br, bc));
	hb_plan_targets(p, x, n, scratch, targets);
	ok = match_columns(&want, "target", targets, n, k, &br, &bc);
	tu_report(ok, "%s: hb_plan_targets equals the predictions bit for bit%s",
			  name, ok ? "" : where(br, bc));
	hb_link_targets(p, margins, n, linked);
	tu_report(memcmp(linked, targets, sizeof(double) * n * k) == 0,
			  "%s: hb_link_targets on margins computed apart gives the same targets", name);
	memcpy(linked, margins, sizeof(double) * n * k);
	hb_link_targets(p, linked, n, linked);
	tu_report(memcmp(linked, targets, sizeof(double) * n * k) == 0,
			  "%s: hb_link_targets works in place", name);

	for (size_t s = 0; s < sizeof(strategies) / sizeof(strategies[0]); s++)
	{
		hb_plan_margins_with(p, strategies[s], x, n, scratch);
		if (memcmp(scratch, margins, sizeof(double) * n * k) != 0)
		{
			same = false;
			tu_report(false, "%s: %s margins differ", name, hb_strategy_name(strategies[s]));
		}
	}
	tu_report(same, "%s: TT, PTT and GEMM give the same margins of every target", name);

	{
		/* the compiled image a backend loads keeps every target */
		char	   *img = NULL;
		size_t		img_len = 0;
		HbModel    *m2 = NULL;
		HbPlan	   *p2 = NULL;

		ok = hb_model_image_write(m, &img, &img_len, &err) &&
			hb_model_image_read(img, img_len, &m2, &err) &&
			hb_plan_build(m2, &p2, &err);
		if (ok)
		{
			hb_plan_targets(p2, x, n, scratch, linked);
			ok = memcmp(linked, targets, sizeof(double) * n * k) == 0;
		}
		tu_report(ok, "%s: the model's image scores the same targets (%s)", name, err.msg);
		hb_plan_free(p2);
		hb_model_free(m2);
		hb_free(img);
	}

	n_ops = hb_plan_ops(p, 100, ops, 16);
	{
		char		shape[64];

		snprintf(shape, sizeof(shape), "100x%d", k);
		tu_report(n_ops > 0 && strcmp(ops[n_ops - 1].out_shape, shape) == 0,
				  "%s: the link op writes %s (got %s)", name, shape,
				  n_ops > 0 ? ops[n_ops - 1].out_shape : "none");
	}

	free(margins);
	free(targets);
	free(linked);
	free(scratch);
	free(x);
	tu_free_table(&want);
	hb_plan_free(p);
	hb_model_free(m);
}

/* Models of one output: hb_plan_targets is hb_plan_predict; not multi-target. */
static void
test_single(const char *name, bool classifier)
{
	HbError		err;
	HbModel    *m = read_model_file(name, &err);
	HbPlan	   *p = NULL;
	double	   *x,
			   *a,
			   *b,
			   *scratch;
	int			n = 0;

	if (m == NULL || !hb_plan_build(m, &p, &err))
	{
		tu_report(false, "%s: reads and compiles (%s)", name, err.msg);
		hb_model_free(m);
		return;
	}
	tu_report(!hb_model_is_multi_target(m) && !hb_plan_is_multi_target(p),
			  "%s: not a multi-target model", name);
	x = fixture_rows(name, m, &n);
	if (!classifier && x != NULL)
	{
		a = malloc(sizeof(double) * n);
		b = malloc(sizeof(double) * n);
		scratch = malloc(sizeof(double) * n);
		hb_plan_predict(p, x, n, scratch, a);
		hb_plan_targets(p, x, n, scratch, b);
		tu_report(memcmp(a, b, sizeof(double) * n) == 0,
				  "%s: hb_plan_targets gives hb_plan_predict's values (link %s)", name,
				  m->objective);
		free(a);
		free(b);
		free(scratch);
	}
	free(x);
	hb_plan_free(p);
	hb_model_free(m);
}


/* ---------- the reader's checks of multi-target models ---------- */

/*
 * A small XGBoost document: trees (JSON text of the "trees" array),
 * tree_info, num_target, objective and base_score filled in.
 */
static char *
doc(const char *objective, const char *num_class, const char *num_target,
	const char *base_score, const char *tree_info, const char *trees)
{
	const char *f = "{\"learner\":{\"feature_names\":[],\"feature_types\":[],"
		"\"gradient_booster\":{\"model\":{\"gbtree_model_param\":{\"num_parallel_tree\":\"1\"},"
		"\"tree_info\":%s,\"trees\":%s},\"name\":\"gbtree\"},"
		"\"learner_model_param\":{\"base_score\":\"%s\",\"num_class\":\"%s\","
		"\"num_feature\":\"2\",\"num_target\":\"%s\"},"
		"\"objective\":{\"name\":\"%s\"}},\"version\":[2,1,0]}";
	size_t		n = strlen(f) + strlen(objective) + strlen(num_class) +
		strlen(num_target) + strlen(base_score) + strlen(tree_info) + strlen(trees);
	char	   *s = malloc(n);

	snprintf(s, n, f, tree_info, trees, base_score, num_class, num_target, objective);
	return s;
}

/* A vector-leaf stump on feature 0 at 0.5, leaves 1 and 2, width 2. */
#define STUMP2(id, extra) \
	"{\"id\":" #id ",\"tree_param\":{\"num_nodes\":\"3\",\"size_leaf_vector\":\"2\"}," \
	"\"left_children\":[1,-1,-1],\"right_children\":[2,-1,-1],\"parents\":[-1,0,0]," \
	"\"split_indices\":[0,0,0],\"split_conditions\":[0.5,0,0],\"default_left\":[1,0,0]," \
	"\"split_type\":[0,0,0],\"categories\":[],\"categories_nodes\":[]," \
	"\"categories_segments\":[],\"categories_sizes\":[]" extra "}"
#define WEIGHTS2 ",\"base_weights\":[0,0,1,10,2,20]"

static HbModel *
read_doc(char *s, HbError *err)
{
	HbModel    *m = NULL;

	memset(err, 0, sizeof(*err));
	if (!hb_read_xgboost_json(s, strlen(s), &m, err))
		m = NULL;
	free(s);
	return m;
}

static void
expect_refused(char *s, HbErrCode code, const char *needle, const char *what)
{
	HbError		err;
	HbModel    *m = read_doc(s, &err);

	tu_report(m == NULL && err.code == code && strstr(err.msg, needle) != NULL,
			  "reader: %s is refused (%s)", what, m ? "accepted" : err.msg);
	hb_model_free(m);
}

static void
test_reader(void)
{
	HbError		err;
	HbModel    *m;

	/* a vector-leaf model of two trees: four IR trees, groups 0 1 0 1 */
	m = read_doc(doc("reg:squarederror", "0", "2", "[1E0,2E0]", "[0,0]",
					 "[" STUMP2(0, WEIGHTS2) "," STUMP2(1, WEIGHTS2) "]"), &err);
	tu_report(m != NULL && m->n_outputs == 2 && m->n_trees == 4 &&
			  m->trees[0].group == 0 && m->trees[1].group == 1 &&
			  m->trees[2].group == 0 && m->trees[3].group == 1 &&
			  m->trees[1].nodes[1].value == 10 && m->trees[1].nodes[2].value == 20 &&
			  m->trees[0].nodes[2].value == 2 && m->base_margin[1] == 2.0,
			  "reader: vector leaves become one tree per target, in tree order (%s)", err.msg);
	hb_model_free(m);

	/* multi:softprob with vector leaves: one tree per class */
	m = read_doc(doc("multi:softprob", "2", "1", "5E-1", "[0]", "[" STUMP2(0, WEIGHTS2) "]"), &err);
	tu_report(m != NULL && m->task == HB_TASK_MULTICLASS && m->n_trees == 2 &&
			  m->trees[1].group == 1 && !hb_model_is_multi_target(m),
			  "reader: vector leaves of a multiclass model become one tree per class (%s)",
			  err.msg);
	hb_model_free(m);

	/* binary:logistic on two labels: two targets, each a probability */
	m = read_doc(doc("binary:logistic", "0", "2", "5E-1", "[0,1]",
					 "[{\"left_children\":[-1],\"right_children\":[-1],\"split_indices\":[0],"
					 "\"split_conditions\":[0.25],\"default_left\":[0]},"
					 "{\"left_children\":[-1],\"right_children\":[-1],\"split_indices\":[0],"
					 "\"split_conditions\":[-0.5],\"default_left\":[0]}]"), &err);
	tu_report(m != NULL && m->task == HB_TASK_REGRESSION && m->n_outputs == 2 &&
			  m->link == HB_LINK_SIGMOID && hb_model_is_multi_target(m) &&
			  m->trees[1].group == 1,
			  "reader: binary:logistic with two targets is a multi-target model of probabilities (%s)",
			  err.msg);
	hb_model_free(m);

	expect_refused(doc("reg:squarederror", "0", "3", "5E-1", "[0]", "[" STUMP2(0, WEIGHTS2) "]"),
				   HB_ERR_INVALID, "leaf vectors of 2 values, but it has 3 outputs",
				   "a leaf vector narrower than the targets");
	expect_refused(doc("reg:squarederror", "0", "2", "5E-1", "[0,0]",
					   "[" STUMP2(0, WEIGHTS2) ",{\"left_children\":[-1],\"right_children\":[-1],"
					   "\"split_indices\":[0],\"split_conditions\":[1],\"default_left\":[0]}]"),
				   HB_ERR_INVALID, "differ in leaf size (tree 0: 2 values per leaf, tree 1: 1)",
				   "scalar and vector-leaf trees mixed");
	expect_refused(doc("reg:squarederror", "0", "2", "5E-1", "[1]", "[" STUMP2(0, WEIGHTS2) "]"),
				   HB_ERR_INVALID, "a vector-leaf tree belongs to group 0",
				   "a vector-leaf tree filed under target 1");
	expect_refused(doc("reg:squarederror", "0", "2", "5E-1", "[0]",
					   "[" STUMP2(0, ",\"base_weights\":[0,0,1,10,2]") "]"),
				   HB_ERR_INVALID, "base_weights has 5 entries, expected 6",
				   "base_weights short of one value");
	expect_refused(doc("reg:squarederror", "0", "2", "5E-1", "[0]",
					   "[{\"id\":0,\"tree_param\":{\"num_nodes\":\"3\",\"size_leaf_vector\":\"2\"},"
					   "\"left_children\":[1,-1,-1],\"right_children\":[2,0,2],"
					   "\"split_indices\":[0,0,0],\"split_conditions\":[0.5,0,0],"
					   "\"default_left\":[1,0,0],\"base_weights\":[0,0,0,0,0,0],"
					   "\"leaf_weights\":[1,10,2,20]}]"),
				   HB_ERR_INVALID, "leaf 2 has row 2 of leaf_weights, which has 2 rows",
				   "a 3.2 leaf whose row is beyond leaf_weights");
	expect_refused(doc("reg:squarederror", "0", "2", "5E-1", "[0]",
					   "[{\"id\":0,\"tree_param\":{\"num_nodes\":\"3\",\"size_leaf_vector\":\"2\"},"
					   "\"left_children\":[1,-1,-1],\"right_children\":[2,0,1],"
					   "\"split_indices\":[0,0,0],\"split_conditions\":[0.5,0,0],"
					   "\"default_left\":[1,0,0],\"base_weights\":[0,0,0,0,0,0],"
					   "\"leaf_weights\":[1,10,2]}]"),
				   HB_ERR_INVALID, "not a multiple of the 2 targets",
				   "leaf_weights of an odd length");
	expect_refused(doc("multi:softprob", "3", "2", "5E-1", "[0]", "[" STUMP2(0, WEIGHTS2) "]"),
				   HB_ERR_UNSUPPORTED, "3 classes and 2 targets",
				   "classes and targets at once");
	expect_refused(doc("rank:pairwise", "0", "2", "5E-1", "[0]", "[" STUMP2(0, WEIGHTS2) "]"),
				   HB_ERR_UNSUPPORTED, "multi-target models are read for regression",
				   "a ranking objective with two targets");
	expect_refused(doc("reg:squarederror", "0", "2", "5E-1", "[0,2]",
					   "[{\"left_children\":[-1],\"right_children\":[-1],\"split_indices\":[0],"
					   "\"split_conditions\":[1],\"default_left\":[0]},"
					   "{\"left_children\":[-1],\"right_children\":[-1],\"split_indices\":[0],"
					   "\"split_conditions\":[1],\"default_left\":[0]}]"),
				   HB_ERR_INVALID, "tree_info[1] is not an output group (the model has 2 outputs)",
				   "a tree filed under a target the model lacks");
}

int
main(void)
{
	fixtures = getenv("HB_FIXTURES") ? getenv("HB_FIXTURES") : "test/fixtures";

	/* XGBoost 1.7's own predictions */
	test_fixture("multi_target", 3);
	test_fixture("multi_target_logistic", 2);
	/* vector-leaf trees, hand-written (test/fixtures/gen_vector_leaf.py) */
	test_fixture("vector_leaf", 3);
	test_fixture("vector_leaf_v32", 3);

	test_single("reg_squarederror", false);
	test_single("reg_logistic", false);
	test_single("count_poisson", false);
	test_single("rank_ndcg", false);
	test_single("binary_logistic", true);
	test_single("multi_softprob", true);

	test_reader();

	printf("# targets: %d checks, %d failed\n", tu_n_test, tu_n_fail);
	printf("1..%d\n", tu_n_test);
	return tu_n_fail ? 1 : 0;
}
