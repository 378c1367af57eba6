/*
 * test_xgboost_reader.c
 *	  Unit tests of the JSON parser and the XGBoost JSON reader, on small
 *	  hand-written documents.  Prints TAP lines; exits 1 on any failure.
 *
 * Every input is copied into a buffer of exactly its length (no NUL after
 * it), so a run under AddressSanitizer or valgrind also checks that the
 * parser never reads past the end.
 */
#include "json.h"
#include "model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int	n_pass = 0;
static int	n_fail = 0;

/* strings built by fmt(), freed at the end */
static char *garbage[4096];
static int	n_garbage = 0;

static void
ok(bool cond, const char *fmt,...)
{
	va_list		ap;

	printf("%s %d - ", cond ? "ok" : "not ok", n_pass + n_fail + 1);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (cond)
		n_pass++;
	else
		n_fail++;
}

static char *
fmt(const char *f,...)
{
	va_list		ap;
	int			n;
	char	   *s;

	va_start(ap, f);
	n = vsnprintf(NULL, 0, f, ap);
	va_end(ap);
	s = malloc(n + 1);
	if (s == NULL)
		abort();
	va_start(ap, f);
	vsnprintf(s, n + 1, f, ap);
	va_end(ap);
	if (n_garbage < 4096)
		garbage[n_garbage++] = s;
	return s;
}

/* Read with the input in a buffer of exactly its length. */
static bool
read_bytes(const char *json, size_t len, HbModel **m, HbError *err)
{
	char	   *copy = malloc(len ? len : 1);
	bool		r;

	memcpy(copy, json, len);
	memset(err, 0, sizeof(*err));
	r = hb_read_xgboost_json(copy, len, m, err);
	free(copy);
	return r;
}

static HbModel *
read_ok(const char *json, const char *what)
{
	HbModel    *m = NULL;
	HbError		err;

	if (!read_bytes(json, strlen(json), &m, &err))
	{
		ok(false, "%s: reads (error %d: %s)", what, err.code, err.msg);
		return NULL;
	}
	ok(m != NULL, "%s: reads", what);
	return m;
}

static void
expect_err(const char *json, HbErrCode code, const char *what)
{
	HbModel    *m = NULL;
	HbError		err;
	bool		r = read_bytes(json, strlen(json), &m, &err);

	if (r)
	{
		ok(false, "%s: refused (but it was accepted)", what);
		hb_model_free(m);
		return;
	}
	ok(err.code == code && m == NULL && err.msg[0] != '\0',
	   "%s: refused with code %d (got %d: %s)", what, code, err.code, err.msg);
}

/* ---------- model builders ---------- */

/*
 * A depth-2 tree over two features:
 *	 node 0: f0 < 0.5 ? node 1 : node 2	 (missing: right)
 *	 node 1: leaf 1.5
 *	 node 2: f1 < 1.0 ? node 3 : node 4	 (missing: left)
 *	 node 3: leaf -1, node 4: leaf 2
 */
#define T_LEFT	"[1,-1,3,-1,-1]"
#define T_RIGHT "[2,-1,4,-1,-1]"
#define T_FEAT	"[0,0,1,0,0]"
#define T_COND	"[5E-1,1.5E0,1E0,-1E0,2E0]"
#define T_DL	"[0,0,1,0,0]"
#define T_TYPE	"[0,0,0,0,0]"
#define NO_CATS "\"categories\":[],\"categories_nodes\":[],\"categories_segments\":[],\"categories_sizes\":[]"

static char *
tree_ex(int id, const char *left, const char *right, const char *feat,
		const char *cond, const char *dl, const char *type, const char *cats)
{
	return fmt("{\"base_weights\":[0,0,0,0,0],%s,\"default_left\":%s,\"id\":%d,"
			   "\"left_children\":%s,\"loss_changes\":[0,0,0,0,0],"
			   "\"parents\":[2147483647,0,0,2,2],\"right_children\":%s,"
			   "\"split_conditions\":%s,\"split_indices\":%s,\"split_type\":%s,"
			   "\"sum_hessian\":[1,1,1,1,1],"
			   "\"tree_param\":{\"num_deleted\":\"0\",\"num_feature\":\"2\","
			   "\"size_leaf_vector\":\"1\"}}",
			   cats, dl, id, left, right, cond, feat, type);
}

static char *
tree(int id)
{
	return tree_ex(id, T_LEFT, T_RIGHT, T_FEAT, T_COND, T_DL, T_TYPE, NO_CATS);
}

static char *
gbtree(const char *trees, const char *info, int ntrees)
{
	return fmt("{\"model\":{\"gbtree_model_param\":{\"num_parallel_tree\":\"1\","
			   "\"num_trees\":\"%d\"},\"iteration_indptr\":[],\"tree_info\":[%s],"
			   "\"trees\":[%s]},\"name\":\"gbtree\"}", ntrees, info, trees);
}

static char *
learner(const char *objective, const char *params, const char *booster,
		const char *extra)
{
	return fmt("{\"learner\":{\"attributes\":{},%s\"gradient_booster\":%s,"
			   "\"learner_model_param\":{%s},"
			   "\"objective\":{\"name\":\"%s\",\"reg_loss_param\":"
			   "{\"scale_pos_weight\":\"1\"}}},\"version\":[1,7,4]}",
			   extra, booster, params, objective);
}

#define P1(bs) "\"base_score\":\"" bs "\",\"num_class\":\"0\",\"num_feature\":\"2\""

/* A one-tree model with the given objective and base_score text. */
static char *
simple(const char *objective, const char *bs)
{
	return learner(objective,
				   fmt("\"base_score\":\"%s\",\"num_class\":\"0\",\"num_feature\":\"2\"", bs),
				   gbtree(tree(0), "0", 1), "");
}

static bool
feq(double a, float b)
{
	return a == (double) b;
}

/* ---------- JSON parser ---------- */

static HbJsonDoc *
parse(const char *s, HbError *err)
{
	HbJsonDoc  *doc = NULL;
	size_t		len = strlen(s);
	char	   *copy = malloc(len ? len : 1);

	memcpy(copy, s, len);
	memset(err, 0, sizeof(*err));
	if (!hb_json_parse(copy, len, &doc, err))
		doc = NULL;
	/* numbers point into the input: keep it for the test's lifetime */
	if (n_garbage < 4096)
		garbage[n_garbage++] = copy;
	return doc;
}

static void
expect_json_err(const char *s, HbErrCode code, const char *needle,
				const char *what)
{
	HbError		err;
	HbJsonDoc  *doc = parse(s, &err);

	ok(doc == NULL && err.code == code &&
	   (needle == NULL || strstr(err.msg, needle) != NULL),
	   "json: %s refused (code %d, got %d: %s)", what, code, err.code, err.msg);
	hb_json_free(doc);
}

static void
test_json(void)
{
	HbError		err;
	HbJsonDoc  *doc;
	const HbJson *r;
	double		d;
	float		f;
	int64_t		i;
	size_t		span;
	bool		b;

	doc = parse(" {\"a\": [1, -2.5e1, NaN, -NaN, Infinity, -Infinity, inf],"
				" \"b\": \"x\\u00e9\\ud83d\\ude00\\n\", \"c\": true, \"d\": null,"
				" \"a2\": {}, \"e\": \"500\", \"f\": \"5E2\", \"g\": 1.5,"
				" \"c\": false} ", &err);
	ok(doc != NULL, "json: document parses (%s)", err.msg);
	r = hb_json_root(doc);
	ok(hb_json_is_object(r) && hb_json_len(r) == 9, "json: object with 9 members");
	ok(strcmp(hb_json_key_at(r, 0), "a") == 0 &&
	   strcmp(hb_json_key_at(r, 8), "c") == 0 &&
	   hb_json_key_at(r, 9) == NULL, "json: members keep file order");
	ok(hb_json_bool(hb_json_get(r, "c"), &b) && !b, "json: last duplicate key wins");
	ok(hb_json_len(hb_json_get(r, "a")) == 7 &&
	   hb_json_number(hb_json_at(hb_json_get(r, "a"), 1), &d) && d == -25.0,
	   "json: array and number");
	ok(hb_json_number(hb_json_at(hb_json_get(r, "a"), 2), &d) && isnan(d) &&
	   hb_json_number(hb_json_at(hb_json_get(r, "a"), 3), &d) && isnan(d) &&
	   hb_json_number(hb_json_at(hb_json_get(r, "a"), 4), &d) && d == INFINITY &&
	   hb_json_number(hb_json_at(hb_json_get(r, "a"), 5), &d) && d == -INFINITY &&
	   hb_json_float(hb_json_at(hb_json_get(r, "a"), 6), &f) && f == INFINITY,
	   "json: NaN, -NaN, Infinity, -Infinity, inf");
	ok(hb_json_at(hb_json_get(r, "a"), 7) == NULL, "json: index out of range is NULL");
	ok(strcmp(hb_json_string(hb_json_get(r, "b")), "x\xc3\xa9\xf0\x9f\x98\x80\n") == 0 &&
	   hb_json_len(hb_json_get(r, "b")) == 8,
	   "json: escapes and surrogate pairs decode to UTF-8");
	ok(hb_json_is_null(hb_json_get(r, "d")) && hb_json_get(r, "zz") == NULL &&
	   hb_json_get(hb_json_get(r, "zz"), "y") == NULL,
	   "json: null, missing keys, chained lookups on NULL");
	ok(hb_json_is_object(hb_json_get(r, "a2")) && hb_json_len(hb_json_get(r, "a2")) == 0,
	   "json: empty object");
	ok(hb_json_int(hb_json_get(r, "e"), &i) && i == 500 &&
	   hb_json_int(hb_json_get(r, "f"), &i) && i == 500,
	   "json: integers from numeric strings \"500\" and \"5E2\"");
	ok(!hb_json_int(hb_json_get(r, "g"), &i) && !hb_json_int(hb_json_get(r, "b"), &i) &&
	   !hb_json_int(hb_json_at(hb_json_get(r, "a"), 2), &i),
	   "json: 1.5, a word and NaN are not integers");
	hb_json_free(doc);

	doc = parse("[9223372036854775807,-9223372036854775808,9223372036854775808,"
				"0.1,\"0.1\",1e-45,12345678901234567890123]", &err);
	r = hb_json_root(doc);
	ok(hb_json_int(hb_json_at(r, 0), &i) && i == INT64_MAX &&
	   hb_json_int(hb_json_at(r, 1), &i) && i == INT64_MIN &&
	   !hb_json_int(hb_json_at(r, 2), &i) && !hb_json_int(hb_json_at(r, 6), &i),
	   "json: int64 limits are exact, overflow refused");
	ok(hb_json_float(hb_json_at(r, 3), &f) && f == 0.1f &&
	   hb_json_float(hb_json_at(r, 4), &f) && f == 0.1f &&
	   hb_json_float(hb_json_at(r, 5), &f) && f > 0.0f,
	   "json: float conversion, numeric strings, denormals");
	ok(hb_json_number_text(hb_json_at(r, 3), &span) != NULL && span == 3 &&
	   hb_json_number_text(hb_json_at(r, 4), &span) != NULL && span == 3 &&
	   hb_json_number_text(hb_json_get(r, "x"), &span) == NULL,
	   "json: number text span");
	hb_json_free(doc);

	doc = parse("\xEF\xBB\xBF 42", &err);
	ok(doc && hb_json_number(hb_json_root(doc), &d) && d == 42,
	   "json: byte order mark and scalar document");
	hb_json_free(doc);

	expect_json_err("", HB_ERR_PARSE, "offset 0", "empty input");
	expect_json_err("[1 2]", HB_ERR_PARSE, "offset 3: expected ',' or ']'", "missing comma");
	expect_json_err("{\"a\" 1}", HB_ERR_PARSE, "expected ':'", "missing colon");
	expect_json_err("{\"a\":1,}", HB_ERR_PARSE, "string key", "trailing comma in object");
	expect_json_err("[1,]", HB_ERR_PARSE, NULL, "trailing comma in array");
	expect_json_err("[1] x", HB_ERR_PARSE, "offset 4", "trailing garbage");
	expect_json_err("[tru]", HB_ERR_PARSE, NULL, "bad literal");
	expect_json_err("[01]", HB_ERR_PARSE, NULL, "leading zero");
	expect_json_err("[1.]", HB_ERR_PARSE, NULL, "bare decimal point");
	expect_json_err("[-]", HB_ERR_PARSE, NULL, "lone minus");
	expect_json_err("[Nan]", HB_ERR_PARSE, NULL, "misspelt NaN");
	expect_json_err("\"abc", HB_ERR_PARSE, "unterminated", "unterminated string");
	expect_json_err("\"a\\", HB_ERR_PARSE, "unterminated", "backslash at the end");
	expect_json_err("\"\\x\"", HB_ERR_PARSE, "escape", "bad escape");
	expect_json_err("\"\\u12\"", HB_ERR_PARSE, "escape", "short \\u escape");
	expect_json_err("\"\\ud800\"", HB_ERR_PARSE, "surrogate", "lone high surrogate");
	expect_json_err("\"\\udc00\"", HB_ERR_PARSE, "surrogate", "lone low surrogate");
	expect_json_err("\"\\u0000\"", HB_ERR_PARSE, NULL, "\\u0000");
	expect_json_err("\"\xC3\"", HB_ERR_PARSE, "UTF-8", "truncated UTF-8");
	expect_json_err("\"\xC0\xAF\"", HB_ERR_PARSE, "UTF-8", "overlong UTF-8");
	expect_json_err("\"a\tb\"", HB_ERR_PARSE, "control", "raw tab in string");
	{
		char	   *deep = malloc(2 * 600 + 1);

		memset(deep, '[', 600);
		memset(deep + 600, ']', 600);
		deep[1200] = '\0';
		expect_json_err(deep, HB_ERR_LIMIT, "deeper", "600 nested arrays");
		memset(deep, '[', 512);
		memset(deep + 512, ']', 512);
		deep[1024] = '\0';
		doc = parse(deep, &err);
		ok(doc != NULL, "json: 512 nested arrays are fine");
		hb_json_free(doc);
		free(deep);
	}
	{
		char	   *deep = malloc(6 * 600 + 600 + 2);
		size_t		o = 0;

		for (int k = 0; k < 600; k++)
		{
			memcpy(deep + o, "{\"a\":", 5);
			o += 5;
		}
		deep[o++] = '1';
		memset(deep + o, '}', 600);
		deep[o + 600] = '\0';
		expect_json_err(deep, HB_ERR_LIMIT, NULL, "600 nested objects");
		free(deep);
	}
	{
		/* a long array: one allocation run, index access */
		size_t		n = 200000;
		char	   *big = malloc(n * 8 + 16);
		size_t		o = 0;

		big[o++] = '[';
		for (size_t k = 0; k < n; k++)
			o += sprintf(big + o, "%s%zu", k ? "," : "", k % 1000);
		big[o++] = ']';
		big[o] = '\0';
		doc = parse(big, &err);
		ok(doc && hb_json_len(hb_json_root(doc)) == n &&
		   hb_json_int(hb_json_at(hb_json_root(doc), n - 1), &i) &&
		   i == (int64_t) ((n - 1) % 1000), "json: array of 200000 numbers");
		hb_json_free(doc);
		free(big);
	}
}

/* ---------- objectives and base scores ---------- */

static void
test_objectives(void)
{
	HbModel    *m;
	static const struct
	{
		const char *name;
		HbTask		task;
		HbLink		link;
	}			identity[] = {
		{"reg:squarederror", HB_TASK_REGRESSION, HB_LINK_IDENTITY},
		{"reg:linear", HB_TASK_REGRESSION, HB_LINK_IDENTITY},
		{"reg:squaredlogerror", HB_TASK_REGRESSION, HB_LINK_IDENTITY},
		{"reg:pseudohubererror", HB_TASK_REGRESSION, HB_LINK_IDENTITY},
		{"reg:absoluteerror", HB_TASK_REGRESSION, HB_LINK_IDENTITY},
		{"rank:pairwise", HB_TASK_RANKING, HB_LINK_IDENTITY},
		{"rank:ndcg", HB_TASK_RANKING, HB_LINK_IDENTITY},
		{"rank:map", HB_TASK_RANKING, HB_LINK_IDENTITY},
	};

	/* the basic model, looked at closely */
	m = read_ok(simple("reg:squarederror", "5E-1"), "reg:squarederror");
	if (m)
	{
		HbNode	   *n = m->trees[0].nodes;

		ok(m->format == HB_FORMAT_XGBOOST_JSON && m->estimator == HB_EST_TREES &&
		   m->task == HB_TASK_REGRESSION && m->link == HB_LINK_IDENTITY &&
		   m->n_outputs == 1 && m->n_classes == 0 && !m->predict_class &&
		   strcmp(m->objective, "reg:squarederror") == 0,
		   "reg:squarederror: task, link, outputs");
		ok(m->cmp == HB_CMP_LT_F32 && m->sum_f32, "reg:squarederror: float32 semantics");
		ok(m->base_margin[0] == 0.5, "reg:squarederror: base_score \"5E-1\" is margin 0.5");
		ok(m->n_features == 2 && !m->has_feature_names &&
		   strcmp(m->features[0].name, "f0") == 0 &&
		   strcmp(m->features[1].name, "f1") == 0 &&
		   m->features[1].type == HB_FEATURE_NUMERIC,
		   "default feature names f0, f1");
		ok(m->n_trees == 1 && m->trees[0].n_nodes == 5 && m->trees[0].group == 0 &&
		   m->trees[0].depth == 2 && m->trees[0].n_leaves == 3 && m->max_depth == 2,
		   "tree shape: 5 nodes, depth 2, 3 leaves");
		ok(n[0].left == 1 && n[0].right == 2 && n[0].feature == 0 &&
		   n[0].threshold == 0.5 && !n[0].default_left &&
		   n[2].left == 3 && n[2].right == 4 && n[2].feature == 1 &&
		   n[2].threshold == 1.0 && n[2].default_left &&
		   n[0].missing == HB_MISSING_NAN && !n[0].is_cat,
		   "split nodes: children, features, thresholds, default_left");
		ok(n[1].left == HB_LEAF && n[1].right == HB_LEAF && n[1].value == 1.5 &&
		   n[3].value == -1.0 && n[4].value == 2.0,
		   "leaves take their value from split_conditions");
		hb_model_free(m);
	}

	for (size_t k = 0; k < sizeof(identity) / sizeof(identity[0]); k++)
	{
		m = read_ok(simple(identity[k].name, "0.25"), identity[k].name);
		if (m)
		{
			ok(m->task == identity[k].task && m->link == identity[k].link &&
			   m->base_margin[0] == 0.25 && m->n_outputs == 1,
			   "%s: task %s, identity link, base_score as is",
			   identity[k].name, hb_task_name(identity[k].task));
			hb_model_free(m);
		}
	}

	m = read_ok(simple("reg:logistic", "3E-1"), "reg:logistic");
	if (m)
	{
		ok(m->task == HB_TASK_REGRESSION && m->link == HB_LINK_SIGMOID &&
		   feq(m->base_margin[0], -logf(1.0f / 0.3f - 1.0f)),
		   "reg:logistic: sigmoid link, margin = logit(base_score) in float");
		hb_model_free(m);
	}
	m = read_ok(simple("binary:logistic", "0.500000"), "binary:logistic");
	if (m)
	{
		ok(m->task == HB_TASK_BINARY && m->link == HB_LINK_SIGMOID &&
		   m->n_outputs == 1 && m->n_classes == 2 && m->base_margin[0] == 0.0,
		   "binary:logistic: binary, sigmoid, 2 classes, margin logit(0.5) = 0");
		hb_model_free(m);
	}
	m = read_ok(simple("binary:logitraw", "0.3"), "binary:logitraw");
	if (m)
	{
		ok(m->task == HB_TASK_BINARY && m->link == HB_LINK_IDENTITY &&
		   m->n_classes == 2 && feq(m->base_margin[0], 0.3f),
		   "binary:logitraw: binary, identity link, base_score as is");
		hb_model_free(m);
	}
	{
		const char *exp_objs[] = {"count:poisson", "reg:gamma", "reg:tweedie"};

		for (int k = 0; k < 3; k++)
		{
			m = read_ok(simple(exp_objs[k], "2E0"), exp_objs[k]);
			if (m)
			{
				ok(m->link == HB_LINK_EXP && m->task == HB_TASK_REGRESSION &&
				   feq(m->base_margin[0], logf(2.0f)),
				   "%s: exp link, margin = log(base_score)", exp_objs[k]);
				hb_model_free(m);
			}
		}
	}

	/* multiclass: three trees, one per class */
	{
		char	   *trees = fmt("%s,%s,%s", tree(0), tree(1), tree(2));
		const char *p3 = "\"base_score\":\"[1E-1,2E-1,3E-1]\",\"num_class\":\"3\","
			"\"num_feature\":\"2\",\"num_target\":\"1\"";

		m = read_ok(learner("multi:softprob", p3, gbtree(trees, "0,1,2", 3), ""),
					"multi:softprob");
		if (m)
		{
			ok(m->task == HB_TASK_MULTICLASS && m->link == HB_LINK_SOFTMAX &&
			   m->n_outputs == 3 && m->n_classes == 3 && !m->predict_class &&
			   m->trees[0].group == 0 && m->trees[1].group == 1 && m->trees[2].group == 2,
			   "multi:softprob: 3 outputs, tree_info groups");
			ok(feq(m->base_margin[0], 0.1f) && feq(m->base_margin[1], 0.2f) &&
			   feq(m->base_margin[2], 0.3f),
			   "multi:softprob: bracketed base_score vector, one per class");
			hb_model_free(m);
		}
		m = read_ok(learner("multi:softmax",
							"\"base_score\":\"0.5\",\"num_class\":\"3\",\"num_feature\":\"2\"",
							gbtree(trees, "0,1,2", 3), ""), "multi:softmax");
		if (m)
		{
			ok(m->predict_class && m->n_outputs == 3 && m->base_margin[2] == 0.5,
			   "multi:softmax: predict_class, scalar base_score broadcast");
			hb_model_free(m);
		}
		expect_err(learner("multi:softprob",
						   "\"base_score\":\"[1E-1,2E-1]\",\"num_class\":\"3\",\"num_feature\":\"2\"",
						   gbtree(trees, "0,1,2", 3), ""),
				   HB_ERR_INVALID, "base_score vector of the wrong length");
		expect_err(learner("multi:softprob",
						   "\"base_score\":\"0.5\",\"num_class\":\"0\",\"num_feature\":\"2\"",
						   gbtree(trees, "0,0,0", 3), ""),
				   HB_ERR_INVALID, "multi:softprob without num_class");
		expect_err(learner("reg:squarederror",
						   "\"base_score\":\"0.5\",\"num_class\":\"3\",\"num_feature\":\"2\"",
						   gbtree(trees, "0,1,2", 3), ""),
				   HB_ERR_UNSUPPORTED, "num_class 3 with a regression objective");
		/* XGBoost predicts with whole rounds only; a partial one is refused */
		expect_err(learner("multi:softprob", p3,
						   gbtree(fmt("%s,%s,%s,%s", tree(0), tree(1), tree(2), tree(3)),
								  "0,1,2,0", 4), ""),
				   HB_ERR_INVALID, "4 trees of 3 classes: not a whole number of rounds");
		m = read_ok(learner("multi:softprob", p3,
							gbtree(fmt("%s,%s,%s,%s,%s,%s", tree(0), tree(1), tree(2),
									   tree(3), tree(4), tree(5)), "0,1,2,0,1,2", 6), ""),
					"multi:softprob, two rounds");
		if (m)
		{
			ok(m->n_trees == 6, "6 trees of 3 classes: two whole rounds");
			hb_model_free(m);
		}
	}

	m = read_ok(simple("reg:squarederror", "[2.5E0]"), "3.x bracketed base_score");
	if (m)
	{
		ok(m->base_margin[0] == 2.5, "base_score \"[2.5E0]\" is margin 2.5");
		hb_model_free(m);
	}
	m = read_ok(learner("binary:logistic",
						"\"base_score\":0.5,\"num_class\":0,\"num_feature\":2",
						gbtree(tree(0), "0", 1), ""), "numbers instead of strings");
	if (m)
	{
		ok(m->base_margin[0] == 0.0 && m->n_features == 2,
		   "parameters may be JSON numbers");
		hb_model_free(m);
	}
	m = read_ok(learner("binary:logistic", "\"num_feature\":\"2\"",
						gbtree(tree(0), "0", 1), ""), "no base_score, no num_class");
	if (m)
	{
		ok(m->base_margin[0] == 0.0, "missing base_score defaults to 0.5");
		hb_model_free(m);
	}

	expect_err(simple("binary:hinge", "0.5"), HB_ERR_UNSUPPORTED, "binary:hinge");
	expect_err(simple("survival:cox", "0.5"), HB_ERR_UNSUPPORTED, "survival:cox");
	expect_err(simple("survival:aft", "0.5"), HB_ERR_UNSUPPORTED, "survival:aft");
	{
		HbModel    *mm = NULL;
		HbError		err;
		const char *j = simple("reg:nonsense", "0.5");

		read_bytes(j, strlen(j), &mm, &err);
		ok(err.code == HB_ERR_UNSUPPORTED && strstr(err.msg, "reg:nonsense") != NULL,
		   "unknown objective refused, named in the message (%s)", err.msg);
	}
	expect_err(simple("binary:logistic", "1.5"), HB_ERR_INVALID,
			   "binary:logistic base_score outside [0, 1]");
	expect_err(simple("count:poisson", "0"), HB_ERR_INVALID,
			   "count:poisson base_score 0");
	expect_err(simple("reg:squarederror", "abc"), HB_ERR_INVALID,
			   "base_score that is not a number");
	expect_err(simple("reg:squarederror", "[1,"), HB_ERR_INVALID,
			   "base_score vector that does not parse");
	expect_err(simple("reg:squarederror", "NaN"), HB_ERR_INVALID,
			   "base_score NaN");
}

/* ---------- trees ---------- */

static void
test_trees(void)
{
	HbModel    *m;

	/* default_left as booleans (old files) and as ints (new files) */
	m = read_ok(learner("reg:squarederror", P1("0.5"),
						gbtree(tree_ex(0, T_LEFT, T_RIGHT, T_FEAT, T_COND,
									   "[false,false,true,false,false]", T_TYPE, NO_CATS),
							   "0", 1), ""),
				"default_left as booleans");
	if (m)
	{
		ok(!m->trees[0].nodes[0].default_left && m->trees[0].nodes[2].default_left,
		   "default_left booleans read");
		hb_model_free(m);
	}
	/* 1.0 files: no split_type nor categories at all */
	m = read_ok(learner("reg:squarederror", P1("0.5"),
						gbtree(fmt("{\"default_left\":[false,false,true,false,false],"
								   "\"id\":0,\"left_children\":" T_LEFT ","
								   "\"right_children\":" T_RIGHT ","
								   "\"split_conditions\":" T_COND ","
								   "\"split_indices\":" T_FEAT ","
								   "\"tree_param\":{\"num_feature\":\"2\","
								   "\"num_nodes\":\"5\",\"size_leaf_vector\":\"0\"}}"),
							   "0", 1), ""),
				"1.0-style tree without split_type");
	if (m)
		hb_model_free(m);

	/* feature names and types */
	m = read_ok(learner("reg:squarederror", P1("0.5"), gbtree(tree(0), "0", 1),
						"\"feature_names\":[\"amount\",\"\\u00e2ge\"],"
						"\"feature_types\":[\"float\",\"int\"],"),
				"feature names and types");
	if (m)
	{
		ok(m->has_feature_names && strcmp(m->features[0].name, "amount") == 0 &&
		   strcmp(m->features[1].name, "\xc3\xa2ge") == 0 &&
		   m->features[0].type == HB_FEATURE_NUMERIC &&
		   m->features[1].type == HB_FEATURE_INTEGER,
		   "feature names from the file, float and int types");
		hb_model_free(m);
	}
	m = read_ok(learner("reg:squarederror", P1("0.5"), gbtree(tree(0), "0", 1),
						"\"feature_names\":[],\"feature_types\":[\"q\",\"i\"],"),
				"empty feature_names");
	if (m)
	{
		ok(!m->has_feature_names && strcmp(m->features[1].name, "f1") == 0 &&
		   m->features[1].type == HB_FEATURE_NUMERIC,
		   "empty feature_names gives f0, f1; \"i\" is numeric");
		hb_model_free(m);
	}
	expect_err(learner("reg:squarederror", P1("0.5"), gbtree(tree(0), "0", 1),
					   "\"feature_names\":[\"a\"],"),
			   HB_ERR_INVALID, "one feature name for two features");
	expect_err(learner("reg:squarederror", P1("0.5"), gbtree(tree(0), "0", 1),
					   "\"feature_types\":[\"q\",\"blob\"],"),
			   HB_ERR_UNSUPPORTED, "unknown feature type");

	/* trees are placed by their id */
	{
		char	   *t0 = tree_ex(1, T_LEFT, T_RIGHT, T_FEAT,
								 "[5E-1,1E1,1E0,-1E0,2E0]", T_DL, T_TYPE, NO_CATS);
		char	   *t1 = tree(0);

		m = read_ok(learner("reg:squarederror", P1("0.5"),
							gbtree(fmt("%s,%s", t0, t1), "0,0", 2), ""),
					"trees listed out of id order");
		if (m)
		{
			ok(m->trees[1].nodes[1].value == 10.0 && m->trees[0].nodes[1].value == 1.5,
			   "trees are placed by id");
			hb_model_free(m);
		}
		expect_err(learner("reg:squarederror", P1("0.5"),
						   gbtree(fmt("%s,%s", t1, t1), "0,0", 2), ""),
				   HB_ERR_INVALID, "two trees with the same id");
	}

	/* an unreachable (deleted) node becomes a zero leaf */
	m = read_ok(learner("reg:squarederror", P1("0.5"),
						gbtree(tree_ex(0, "[1,-1,-1,-1,-1]", "[2,-1,-1,-1,-1]",
									   "[0,0,0,4294967295,0]",
									   "[5E-1,1.5E0,1E0,NaN,2E0]", T_DL, T_TYPE, NO_CATS),
							   "0", 1), ""),
				"tree with unreachable nodes");
	if (m)
	{
		ok(m->trees[0].n_nodes == 5 && m->trees[0].n_leaves == 2 &&
		   m->trees[0].nodes[3].left == HB_LEAF && m->trees[0].nodes[3].value == 0.0 &&
		   m->trees[0].nodes[2].value == 1.0,
		   "unreachable nodes are zero leaves, ids kept");
		hb_model_free(m);
	}

	/* a single-leaf tree */
	m = read_ok(learner("reg:squarederror", P1("0.5"),
						gbtree("{\"default_left\":[0],\"id\":0,\"left_children\":[-1],"
							   "\"right_children\":[-1],\"split_conditions\":[7.5E-1],"
							   "\"split_indices\":[0],\"split_type\":[0],"
							   "\"categories\":[],\"categories_nodes\":[],"
							   "\"categories_segments\":[],\"categories_sizes\":[]}",
							   "0", 1), ""),
				"single-leaf tree");
	if (m)
	{
		ok(m->trees[0].n_nodes == 1 && m->trees[0].depth == 0 &&
		   m->trees[0].n_leaves == 1 && m->trees[0].nodes[0].value == 0.75,
		   "single leaf: depth 0, its value");
		hb_model_free(m);
	}

	/* a model with no trees at all scores its base score */
	m = read_ok(learner("reg:squarederror", P1("0.5"), gbtree("", "", 0), ""),
				"model with zero trees");
	if (m)
		hb_model_free(m);

	/* categorical splits */
	{
		const char *cats =
			"\"categories\":[1,3,40],\"categories_nodes\":[0],"
			"\"categories_segments\":[0],\"categories_sizes\":[3]";
		char	   *t = tree_ex(0, T_LEFT, T_RIGHT, "[1,0,0,0,0]",
								"[NaN,1.5E0,1E0,-1E0,2E0]", "[1,0,0,0,0]",
								"[1,0,0,0,0]", cats);

		m = read_ok(learner("reg:squarederror", P1("0.5"), gbtree(t, "0", 1), ""),
					"categorical split (1.4 style NaN condition)");
		if (m)
		{
			HbNode	   *n = &m->trees[0].nodes[0];

			ok(n->is_cat && !n->cat_in_left && n->feature == 1 && n->cat_nwords == 2 &&
			   n->cat_off >= 0 && m->n_cat_words >= 2 && n->default_left,
			   "categorical node: set of 2 words, in-set goes right");
			ok(m->cat_words[n->cat_off] == ((1u << 1) | (1u << 3)) &&
			   m->cat_words[n->cat_off + 1] == (1u << (40 - 32)),
			   "category bitset: bits 1, 3 and 40");
			ok(m->features[1].type == HB_FEATURE_CATEGORICAL &&
			   m->features[0].type == HB_FEATURE_NUMERIC,
			   "without feature_types, a feature with categorical splits is categorical");
			hb_model_free(m);
		}
		m = read_ok(learner("reg:squarederror", P1("0.5"), gbtree(t, "0", 1),
							"\"feature_types\":[\"q\",\"q\"],"),
					"categorical split, feature_types given");
		if (m)
		{
			ok(m->features[1].type == HB_FEATURE_NUMERIC,
			   "feature_types, when given, decide the feature type");
			hb_model_free(m);
		}
		expect_err(learner("reg:squarederror", P1("0.5"),
						   gbtree(tree_ex(0, T_LEFT, T_RIGHT, "[1,0,0,0,0]", T_COND, T_DL,
										  "[1,0,0,0,0]",
										  "\"categories\":[-1],\"categories_nodes\":[0],"
										  "\"categories_segments\":[0],\"categories_sizes\":[1]"),
								  "0", 1), ""),
				   HB_ERR_INVALID, "negative category");
		expect_err(learner("reg:squarederror", P1("0.5"),
						   gbtree(tree_ex(0, T_LEFT, T_RIGHT, "[1,0,0,0,0]", T_COND, T_DL,
										  "[1,0,0,0,0]",
										  "\"categories\":[16777216],\"categories_nodes\":[0],"
										  "\"categories_segments\":[0],\"categories_sizes\":[1]"),
								  "0", 1), ""),
				   HB_ERR_INVALID, "category 2^24");
		expect_err(learner("reg:squarederror", P1("0.5"),
						   gbtree(tree_ex(0, T_LEFT, T_RIGHT, "[1,0,0,0,0]", T_COND, T_DL,
										  "[1,0,0,0,0]",
										  "\"categories\":[1],\"categories_nodes\":[0],"
										  "\"categories_segments\":[1],\"categories_sizes\":[1]"),
								  "0", 1), ""),
				   HB_ERR_INVALID, "category segment beyond the categories");
		expect_err(learner("reg:squarederror", P1("0.5"),
						   gbtree(tree_ex(0, T_LEFT, T_RIGHT, "[1,0,0,0,0]", T_COND, T_DL,
										  "[1,0,0,0,0]", NO_CATS), "0", 1), ""),
				   HB_ERR_INVALID, "categorical node without categories");
		expect_err(learner("reg:squarederror", P1("0.5"),
						   gbtree(tree_ex(0, T_LEFT, T_RIGHT, "[1,0,0,0,0]", T_COND, T_DL,
										  "[1,0,1,0,0]",
										  "\"categories\":[1,2],\"categories_nodes\":[2,0],"
										  "\"categories_segments\":[0,1],\"categories_sizes\":[1,1]"),
								  "0", 1), ""),
				   HB_ERR_INVALID, "categories_nodes out of order");
		expect_err(learner("reg:squarederror", P1("0.5"),
						   gbtree(tree_ex(0, T_LEFT, T_RIGHT, T_FEAT, T_COND, T_DL,
										  "[2,0,0,0,0]", NO_CATS), "0", 1), ""),
				   HB_ERR_INVALID, "split_type 2");
		expect_err(learner("reg:squarederror", P1("0.5"),
						   fmt("{\"model\":{\"cats\":{\"enc\":[[\"red\",\"blue\"]],"
							   "\"feature_segments\":[0],\"sorted_idx\":[0,1]},"
							   "\"gbtree_model_param\":{\"num_trees\":\"1\"},"
							   "\"tree_info\":[0],\"trees\":[%s]},\"name\":\"gbtree\"}",
							   tree(0)), ""),
				   HB_ERR_UNSUPPORTED, "3.x cats block with string categories");
		m = read_ok(learner("reg:squarederror", P1("0.5"),
							fmt("{\"model\":{\"cats\":{\"enc\":[],"
								"\"feature_segments\":[],\"sorted_idx\":[]},"
								"\"gbtree_model_param\":{\"num_trees\":\"1\"},"
								"\"tree_info\":[0],\"trees\":[%s]},\"name\":\"gbtree\"}",
								tree(0)), ""),
					"3.x empty cats block");
		if (m)
			hb_model_free(m);
	}
}

/* ---------- dart and gblinear ---------- */

static void
test_boosters(void)
{
	HbModel    *m;

	m = read_ok(learner("reg:squarederror", P1("[5E-1]"),
						fmt("{\"gbtree\":%s,\"name\":\"dart\",\"weight_drop\":[3E-1,1E0]}",
							gbtree(fmt("%s,%s", tree(0), tree(1)), "0,0", 2)), ""),
				"dart");
	if (m)
	{
		ok(feq(m->trees[0].nodes[1].value, 1.5f * 0.3f) &&
		   feq(m->trees[0].nodes[3].value, -1.0f * 0.3f) &&
		   m->trees[1].nodes[1].value == 1.5,
		   "dart: leaf values times weight_drop, in float");
		ok(m->trees[0].nodes[0].threshold == 0.5, "dart: thresholds untouched");
		hb_model_free(m);
	}
	expect_err(learner("reg:squarederror", P1("0.5"),
					   fmt("{\"gbtree\":%s,\"name\":\"dart\",\"weight_drop\":[1]}",
						   gbtree(fmt("%s,%s", tree(0), tree(1)), "0,0", 2)), ""),
			   HB_ERR_INVALID, "dart weight_drop length");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   fmt("{\"gbtree\":%s,\"name\":\"dart\",\"weight_drop\":[NaN]}",
						   gbtree(tree(0), "0", 1)), ""),
			   HB_ERR_INVALID, "dart weight NaN");

	m = read_ok(learner("binary:logistic", P1("5E-1"),
						"{\"model\":{\"boosted_rounds\":3,\"weights\":[1.5E0,-2E0,2.5E-1]},"
						"\"name\":\"gblinear\"}", ""),
				"gblinear binary");
	if (m)
	{
		ok(m->estimator == HB_EST_LINEAR && m->n_trees == 0 &&
		   m->weights[0] == 1.5 && m->weights[1] == -2.0 && m->bias[0] == 0.25 &&
		   m->base_margin[0] == 0.0 && m->task == HB_TASK_BINARY,
		   "gblinear: weights, bias from the last row, base margin");
		hb_model_free(m);
	}
	m = read_ok(learner("multi:softprob",
						"\"base_score\":\"[5E-1,5E-1,5E-1]\",\"num_class\":\"3\",\"num_feature\":\"2\"",
						"{\"model\":{\"weights\":[1,2,3,4,5,6,7,8,9]},\"name\":\"gblinear\"}", ""),
				"gblinear multiclass");
	if (m)
	{
		/* row-major (feature, class), bias last: weights[f * 3 + g] */
		ok(m->n_outputs == 3 && m->weights[0] == 1 && m->weights[2] == 3 &&
		   m->weights[3] == 4 && m->weights[5] == 6 &&
		   m->bias[0] == 7 && m->bias[2] == 9,
		   "gblinear multiclass: weights[f * n_outputs + g], bias[g]");
		hb_model_free(m);
	}
	expect_err(learner("reg:squarederror", P1("0.5"),
					   "{\"model\":{\"weights\":[1,2]},\"name\":\"gblinear\"}", ""),
			   HB_ERR_INVALID, "gblinear weights of the wrong length");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   "{\"model\":{},\"name\":\"gbfoo\"}", ""),
			   HB_ERR_UNSUPPORTED, "unknown booster");
}

/* ---------- malformed models ---------- */

static void
test_malformed(void)
{
	const char *valid = simple("binary:logistic", "5E-1");
	size_t		len = strlen(valid);
	int			bad = 0;
	HbModel    *m;
	HbError		err;

	/* every proper prefix of a valid file is broken JSON */
	for (size_t cut = 0; cut < len; cut++)
	{
		m = NULL;
		if (read_bytes(valid, cut, &m, &err) || err.code != HB_ERR_PARSE ||
			strstr(err.msg, "offset") == NULL)
		{
			if (bad++ == 0)
				printf("# truncated at %zu: code %d, %s\n", cut, err.code, err.msg);
			hb_model_free(m);
		}
	}
	ok(bad == 0, "truncated at each of %zu offsets: HB_ERR_PARSE with the offset", len);

	expect_err(fmt("%s}", valid), HB_ERR_PARSE, "trailing garbage");
	expect_err("[1,2,3]", HB_ERR_INVALID, "json array instead of an object");
	expect_err("{\"version\":[1,7,4]}", HB_ERR_INVALID, "no learner");
	expect_err("{\"learner\":{\"objective\":{\"name\":\"reg:squarederror\"}}}",
			   HB_ERR_INVALID, "no learner_model_param");
	expect_err(learner("reg:squarederror", "\"num_feature\":\"2\"", "{\"name\":\"gbtree\"}", ""),
			   HB_ERR_INVALID, "gbtree without model");
	expect_err(fmt("{\"learner\":{\"gradient_booster\":%s,\"learner_model_param\":{%s},"
				   "\"objective\":{}}}", gbtree(tree(0), "0", 1), P1("0.5")),
			   HB_ERR_INVALID, "objective without name");
	expect_err(learner("reg:squarederror", "\"base_score\":\"0.5\"", gbtree(tree(0), "0", 1), ""),
			   HB_ERR_INVALID, "no num_feature");
	expect_err(learner("reg:squarederror", "\"num_feature\":\"two\"", gbtree(tree(0), "0", 1), ""),
			   HB_ERR_INVALID, "num_feature not a number");
	expect_err(learner("reg:squarederror", "\"num_feature\":\"0\"", gbtree(tree(0), "0", 1), ""),
			   HB_ERR_INVALID, "num_feature 0");
	expect_err(learner("reg:squarederror", "\"num_feature\":\"-3\"", gbtree(tree(0), "0", 1), ""),
			   HB_ERR_INVALID, "negative num_feature");
	expect_err(learner("reg:squarederror", "\"num_feature\":\"2000000\"", gbtree(tree(0), "0", 1), ""),
			   HB_ERR_LIMIT, "num_feature beyond HB_MAX_FEATURES");
	{
		/* two targets (test/core/test_targets.c has the real models) */
		HbModel    *m = read_ok(learner("reg:squarederror",
										"\"num_feature\":\"2\",\"num_target\":\"2\"",
										gbtree(fmt("%s,%s", tree(0), tree(1)), "0,1", 2), ""),
								"two-target model");

		ok(m && m->n_outputs == 2 && m->n_classes == 0 && hb_model_is_multi_target(m),
		   "two-target model: two outputs, no classes");
		hb_model_free(m);
	}
	{
		/* the later of two "tree_param" members counts */
		char	   *t = tree(0);

		expect_err(learner("reg:squarederror", P1("0.5"),
						   gbtree(fmt("%.*s,\"tree_param\":{\"size_leaf_vector\":\"3\"}}",
									  (int) strlen(t) - 1, t), "0", 1), ""),
				   HB_ERR_INVALID, "vector-leaf tree in a model of one output");
	}
	expect_err(learner("reg:squarederror", P1("0.5"), gbtree(tree(0), "1", 1), ""),
			   HB_ERR_INVALID, "tree_info group out of range");
	expect_err(learner("reg:squarederror", P1("0.5"), gbtree(tree(0), "\"x\"", 1), ""),
			   HB_ERR_INVALID, "tree_info entry not an integer");
	expect_err(learner("reg:squarederror", P1("0.5"), gbtree(tree(0), "0,0", 1), ""),
			   HB_ERR_INVALID, "tree_info longer than trees");
	expect_err(learner("reg:squarederror", P1("0.5"), gbtree(tree(0), "0", 2), ""),
			   HB_ERR_INVALID, "num_trees disagrees");
	expect_err(learner("reg:squarederror", P1("0.5"), gbtree("7", "0", 1), ""),
			   HB_ERR_INVALID, "tree that is not an object");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree(tree_ex(0, T_LEFT, T_RIGHT, "[5,0,1,0,0]", T_COND, T_DL,
									  T_TYPE, NO_CATS), "0", 1), ""),
			   HB_ERR_INVALID, "split index beyond num_feature");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree(tree_ex(0, "[1,-1,9,-1,-1]", T_RIGHT, T_FEAT, T_COND, T_DL,
									  T_TYPE, NO_CATS), "0", 1), ""),
			   HB_ERR_INVALID, "child index out of range");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree(tree_ex(0, "[1,-1,-5,-1,-1]", T_RIGHT, T_FEAT, T_COND, T_DL,
									  T_TYPE, NO_CATS), "0", 1), ""),
			   HB_ERR_INVALID, "negative child index");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree(tree_ex(0, "[0,-1,3,-1,-1]", T_RIGHT, T_FEAT, T_COND, T_DL,
									  T_TYPE, NO_CATS), "0", 1), ""),
			   HB_ERR_INVALID, "root as its own child");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree(tree_ex(0, "[1,-1,-1,-1,-1]", "[2,-1,4,-1,-1]", T_FEAT, T_COND,
									  T_DL, T_TYPE, NO_CATS), "0", 1), ""),
			   HB_ERR_INVALID, "node with only a right child");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree(tree_ex(0, "[1,-1,1,-1,-1]", T_RIGHT, T_FEAT, T_COND, T_DL,
									  T_TYPE, NO_CATS), "0", 1), ""),
			   HB_ERR_INVALID, "node reached twice (shared subtree)");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree(tree_ex(0, T_LEFT, "[2,-1,2,-1,-1]", T_FEAT, T_COND,
									  T_DL, T_TYPE, NO_CATS), "0", 1), ""),
			   HB_ERR_INVALID, "cycle (a node is its own child)");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree(tree_ex(0, T_LEFT, "[2,-1,4,-1]", T_FEAT, T_COND, T_DL,
									  T_TYPE, NO_CATS), "0", 1), ""),
			   HB_ERR_INVALID, "arrays of mismatched lengths");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree(tree_ex(0, T_LEFT, T_RIGHT, T_FEAT,
									  "[\"abc\",1.5,1,-1,2]", T_DL, T_TYPE, NO_CATS),
							  "0", 1), ""),
			   HB_ERR_INVALID, "split condition of the wrong type");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree(tree_ex(0, T_LEFT, T_RIGHT, T_FEAT,
									  "[NaN,1.5,1,-1,2]", T_DL, T_TYPE, NO_CATS),
							  "0", 1), ""),
			   HB_ERR_INVALID, "NaN threshold on a numeric split");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree(tree_ex(0, T_LEFT, T_RIGHT, T_FEAT,
									  "[0.5,1.5,-Infinity,-1,2]", T_DL, T_TYPE, NO_CATS),
							  "0", 1), ""),
			   HB_ERR_INVALID, "infinite threshold on a numeric split");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree(tree_ex(0, T_LEFT, T_RIGHT, T_FEAT, T_COND,
									  "[0,0,2,0,0]", T_TYPE, NO_CATS), "0", 1), ""),
			   HB_ERR_INVALID, "default_left neither boolean nor 0/1");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree(tree(0), "0", 1), "\"feature_names\":{},"),
			   HB_ERR_INVALID, "feature_names not an array");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree("{\"left_children\":[],\"right_children\":[],"
							  "\"split_indices\":[],\"split_conditions\":[],"
							  "\"default_left\":[]}", "0", 1), ""),
			   HB_ERR_INVALID, "tree with no nodes");
	expect_err(learner("reg:squarederror", P1("0.5"),
					   gbtree("{\"right_children\":[-1],\"split_indices\":[0],"
							  "\"split_conditions\":[1],\"default_left\":[0]}", "0", 1), ""),
			   HB_ERR_INVALID, "tree without left_children");

	/* a chain 70 levels deep */
	{
		int			n = 2 * 70 + 1;
		char	   *l = malloc(n * 8 + 4),
				   *r = malloc(n * 8 + 4),
				   *z = malloc(n * 4 + 4);
		size_t		ol = 0,
					orr = 0,
					oz = 0;

		l[ol++] = r[orr++] = z[oz++] = '[';
		for (int i = 0; i < n; i++)
		{
			/* node 2k splits into 2k+1 (leaf) and 2k+2 */
			bool		leaf = (i % 2 == 1) || i == n - 1;

			ol += sprintf(l + ol, "%s%d", i ? "," : "", leaf ? -1 : i + 1);
			orr += sprintf(r + orr, "%s%d", i ? "," : "", leaf ? -1 : i + 2);
			oz += sprintf(z + oz, "%s0", i ? "," : "");
		}
		l[ol++] = r[orr++] = z[oz++] = ']';
		l[ol] = r[orr] = z[oz] = '\0';
		expect_err(learner("reg:squarederror", P1("0.5"),
						   gbtree(fmt("{\"left_children\":%s,\"right_children\":%s,"
									  "\"split_indices\":%s,\"split_conditions\":%s,"
									  "\"default_left\":%s}", l, r, z, z, z), "0", 1), ""),
				   HB_ERR_LIMIT, "tree 70 levels deep");
		free(l);
		free(r);
		free(z);
	}

	/* JSON too deep for the parser */
	{
		char	   *deep = malloc(2000);

		memset(deep, '[', 1000);
		memset(deep + 1000, ']', 999);
		deep[1999] = '\0';
		expect_err(deep, HB_ERR_LIMIT, "json nested 1000 deep");
		free(deep);
	}

	/* UBJSON: refused as not JSON, with a hint */
	{
		const char ubj[] = "{L\0\0\0\0\0\0\0\x07learner{";

		m = NULL;
		ok(!read_bytes(ubj, sizeof(ubj) - 1, &m, &err) && err.code == HB_ERR_PARSE &&
		   strstr(err.detail, "UBJSON") != NULL,
		   "UBJSON bytes: parse error with a hint (%s)", err.detail);
	}
	expect_err("", HB_ERR_PARSE, "empty input");
}

/*
 * Flip bytes of a valid model: every result must be a clean accept or a
 * clean refusal (this is a smoke test; the fuzzer does the real work).
 */
static void
test_mutations(void)
{
	const char *cats =
		"\"categories\":[1,3,40],\"categories_nodes\":[0],"
		"\"categories_segments\":[0],\"categories_sizes\":[3]";
	const char *valid = learner("multi:softprob",
								"\"base_score\":\"[1E-1,2E-1]\",\"num_class\":\"2\",\"num_feature\":\"2\"",
								gbtree(fmt("%s,%s", tree_ex(0, T_LEFT, T_RIGHT, "[1,0,0,0,0]",
															"[NaN,1.5E0,1E0,-1E0,2E0]", T_DL,
															"[1,0,0,0,0]", cats), tree(1)),
									   "0,1", 2), "");
	size_t		len = strlen(valid);
	char	   *buf = malloc(len);
	const char	subst[] = "0129-[]{}\",:.eEN\\ ";
	int			accepted = 0,
				refused = 0,
				bad = 0;
	unsigned	seed = 12345;

	for (int iter = 0; iter < 20000; iter++)
	{
		HbModel    *m = NULL;
		HbError		err;

		memcpy(buf, valid, len);
		for (int k = 0; k < 1 + iter % 3; k++)
		{
			seed = seed * 1103515245 + 12345;
			buf[(seed >> 8) % len] = subst[(seed >> 20) % (sizeof(subst) - 1)];
		}
		if (read_bytes(buf, len, &m, &err))
		{
			/* validation may still refuse it; it must not crash */
			if (m != NULL)
				(void) hb_model_validate(m, &err);
			accepted++;
			hb_model_free(m);
		}
		else if (err.code == HB_OK || err.msg[0] == '\0' || m != NULL)
			bad++;
		else
			refused++;
	}
	free(buf);
	ok(bad == 0, "20000 mutated models: %d accepted, %d refused cleanly, %d bad",
	   accepted, refused, bad);
}

int
main(void)
{
	test_json();
	test_objectives();
	test_trees();
	test_boosters();
	test_malformed();
	test_mutations();

	for (int i = 0; i < n_garbage; i++)
		free(garbage[i]);
	printf("1..%d\n", n_pass + n_fail);
	printf("# passed %d failed %d\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
