/*
 * test_large_categories.c
 *	  Category sets whose ids are large (XGBoost allows up to 2^24 - 1):
 *	  what they cost and which rows they send where.
 *
 * A set used to be a bitset from category 0 to its largest, so a 55 kB
 * XGBoost file whose 128 nodes each test one category near 2^24 compiled to
 * 256 MB of bits.  Checked here:
 *	- the model built by test/fixtures/gen_large_categories.py (XGBoost
 *	  1.7.4, ids up to 2^24 - 1) takes a few words per set, and every
 *	  executor (TT, PTT, GEMM, the CUDA kernels' CPU emulation, a model read
 *	  back from its image) gives XGBoost's own margins;
 *	- 128 one-category nodes near 2^24, and 128 nodes of categories
 *	  {t, 2^24 - 1 - t}, take a few words each;
 *	- membership at every edge: below a set's first word, past its last,
 *	  between members, negatives, fractions, NaN, infinities, 2^24 and
 *	  beyond, in float32 (XGBoost) and in float64 with LightGBM's
 *	  truncation toward zero (the pipeline reader's trees), against a plain
 *	  reading of the rules.
 * Fixtures: test/fixtures, or $HB_FIXTURES.  TAP output.
 */
#include "plan_int.h"
#include "device.h"
#include "test_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOP 16777216.0			/* 2^24: the first id no set can hold */

/* ---------- a growing string ---------- */

typedef struct Str
{
	char	   *s;
	size_t		len;
	size_t		cap;
} Str;

static void
add(Str *b, const char *fmt,...)
{
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (b->len + n + 1 > b->cap)
	{
		b->cap = (b->len + n + 1) * 2;
		b->s = realloc(b->s, b->cap);
		if (b->s == NULL)
			abort();
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
}

/* ---------- models ---------- */

/* One categorical split: feature, its categories, and where a set member goes. */
typedef struct Split
{
	int			feature;
	int			n;
	const uint32_t *cats;
	double		in_value;		/* leaf of the rows in the set */
} Split;

/*
 * An XGBoost 1.7 JSON model of one three-node tree per split: a category in
 * the set goes right (XGBoost's rule) to a leaf of in_value, other rows
 * and NaN (default_left) go left to a leaf of 0.  base_score 0.
 */
static char *
xgb_model(const Split *sp, int n_trees, int n_features)
{
	Str			b = {0};

	add(&b, "{\"learner\":{\"attributes\":{},\"gradient_booster\":{\"model\":"
		"{\"gbtree_model_param\":{\"num_parallel_tree\":\"1\",\"num_trees\":\"%d\"},"
		"\"iteration_indptr\":[],\"tree_info\":[", n_trees);
	for (int t = 0; t < n_trees; t++)
		add(&b, "%s0", t ? "," : "");
	add(&b, "],\"trees\":[");
	for (int t = 0; t < n_trees; t++)
	{
		add(&b, "%s{\"base_weights\":[0,0,0],\"categories\":[", t ? "," : "");
		for (int k = 0; k < sp[t].n; k++)
			add(&b, "%s%u", k ? "," : "", sp[t].cats[k]);
		add(&b, "],\"categories_nodes\":[0],\"categories_segments\":[0],"
			"\"categories_sizes\":[%d],\"default_left\":[1,0,0],\"id\":%d,"
			"\"left_children\":[1,-1,-1],\"loss_changes\":[0,0,0],"
			"\"parents\":[2147483647,0,0],\"right_children\":[2,-1,-1],"
			"\"split_conditions\":[NaN,0E0,%.17g],\"split_indices\":[%d,0,0],"
			"\"split_type\":[1,0,0],\"sum_hessian\":[1,1,1],"
			"\"tree_param\":{\"num_deleted\":\"0\",\"num_feature\":\"%d\","
			"\"size_leaf_vector\":\"1\"}}",
			sp[t].n, t, sp[t].in_value, sp[t].feature, n_features);
	}
	add(&b, "]},\"name\":\"gbtree\"},\"learner_model_param\":{\"base_score\":\"0\","
		"\"num_class\":\"0\",\"num_feature\":\"%d\"},\"objective\":{\"name\":"
		"\"reg:squarederror\",\"reg_loss_param\":{\"scale_pos_weight\":\"1\"}}},"
		"\"version\":[1,7,4]}", n_features);
	return b.s;
}

/*
 * The same splits as native trees of a pipeline document, compared in
 * float64 ("le"): a set member goes left to in_value, other categories and
 * NaN right to 0.  Its categories are truncated toward zero, as LightGBM's.
 */
static char *
pipeline_model(const Split *sp, int n_trees, int n_features)
{
	Str			b = {0};

	add(&b, "{\"format\":\"hbird-pipeline\",\"version\":1,\"inputs\":[");
	for (int f = 0; f < n_features; f++)
		add(&b, "%s{\"name\":\"f%d\"}", f ? "," : "", f);
	add(&b, "],\"features\":[");
	for (int f = 0; f < n_features; f++)
		add(&b, "%s\"f%d\"", f ? "," : "", f);
	add(&b, "],\"model\":{\"kind\":\"trees\",\"task\":\"regression\","
		"\"comparison\":\"le\",\"link\":\"identity\",\"base\":[0],\"trees\":[");
	for (int t = 0; t < n_trees; t++)
	{
		add(&b, "%s{\"group\":0,\"feature\":[%d,0,0],\"threshold\":[0,0,0],"
			"\"left\":[1,-1,-1],\"right\":[2,-1,-1],\"value\":[0,%.17g,0],"
			"\"missing_left\":[0,0,0],\"cat_sets\":[[[",
			t ? "," : "", sp[t].feature, sp[t].in_value);
		for (int k = 0; k < sp[t].n; k++)
			add(&b, "%s%u", k ? "," : "", sp[t].cats[k]);
		add(&b, "],[]],null,null]}");
	}
	add(&b, "]}}");
	return b.s;
}

static HbModel *
read_model(const char *doc, const char *what)
{
	HbModel    *m = NULL;
	HbError		err = {0};

	if (!hb_model_read(doc, strlen(doc), HB_FORMAT_AUTO, &m, &err))
	{
		tu_report(false, "%s: read: %s", what, err.msg);
		return NULL;
	}
	return m;
}

static HbPlan *
build_plan(const HbModel *m, const char *what)
{
	HbPlan	   *p = NULL;
	HbError		err = {0};

	if (!hb_plan_build(m, &p, &err))
	{
		tu_report(false, "%s: plan: %s", what, err.msg);
		return NULL;
	}
	return p;
}

/* The model through its stored image, as a backend loads it. */
static HbModel *
image_copy(const HbModel *m, const char *what)
{
	char	   *img = NULL;
	size_t		len = 0;
	HbModel    *back = NULL;
	HbError		err = {0};

	if (!hb_model_image_write(m, &img, &len, &err) ||
		!hb_model_image_read(img, len, &back, &err))
	{
		tu_report(false, "%s: image round trip: %s", what, err.msg);
		back = NULL;
	}
	hb_free(img);
	return back;
}

/*
 * Margins of x by every executor: TT, PTT, GEMM, AUTO, the CUDA kernels'
 * per-row code on the CPU (three variants; skipped in a build without
 * CUDA), and TT on a plan of the model read back from its image.  Each is
 * checked against want (abs/rel tolerance tol; 0: bit for bit); a failure
 * names the first row that differs.
 */
static void
check_executors(const HbModel *m, const HbPlan *p, const double *x, size_t n,
				const double *want, double tol, const char *what)
{
	static const HbStrategy strategies[] = {HB_STRATEGY_TT, HB_STRATEGY_PTT,
	HB_STRATEGY_GEMM, HB_STRATEGY_AUTO};
	double	   *got = malloc(sizeof(double) * n);
	HbModel    *back;

	for (int v = 0; v < 8; v++)
	{
		char		name[64];
		long		bad = -1;

		if (v < 4)
		{
			hb_plan_margins_with(p, strategies[v], x, n, got);
			snprintf(name, sizeof(name), "%s", hb_strategy_name(strategies[v]));
		}
		else if (v < 7)
		{
			const char *kernel = "none";
			HbError		err = {0};

			if (!hb_device_emulate_margins(p, v - 4, x, n, got, &kernel, &err))
			{
				tu_n_test++;
				printf("ok %d - %s: CUDA emulation %d # SKIP %s\n", tu_n_test, what,
					   v - 4, err.msg);
				continue;
			}
			snprintf(name, sizeof(name), "CUDA emulation %d (%s)", v - 4, kernel);
		}
		else
		{
			HbPlan	   *p2;

			if ((back = image_copy(m, what)) == NULL)
				continue;
			p2 = build_plan(back, what);
			if (p2)
				hb_plan_margins_with(p2, HB_STRATEGY_TT, x, n, got);
			hb_plan_free(p2);
			hb_model_free(back);
			if (p2 == NULL)
				continue;
			snprintf(name, sizeof(name), "model read back from its image");
		}
		for (size_t i = 0; i < n && bad < 0; i++)
			if (!(tol == 0 ? got[i] == want[i] :
				  fabs(got[i] - want[i]) <= tol + tol * fabs(want[i])))
				bad = (long) i;
		tu_report(bad < 0, "%s: %s gives the expected margins of %zu rows%s", what,
				  name, n, bad < 0 ? "" : " (first difference below)");
		if (bad >= 0)
			printf("#   row %ld: got %.17g, want %.17g\n", bad, got[bad], want[bad]);
	}
	free(got);
}

/* ---------- the XGBoost fixture ---------- */

static void
test_fixture(void)
{
	const char *dir = getenv("HB_FIXTURES") ? getenv("HB_FIXTURES") : "test/fixtures";
	char		path[4096];
	char	   *bytes;
	size_t		len;
	HbModel    *m;
	HbPlan	   *p;
	TuTable		in,
				out;
	double	   *x,
			   *want;
	int64_t		n_cat = 0;

	snprintf(path, sizeof(path), "%s/large_categories.json", dir);
	bytes = tu_read_file(path, &len);
	if (bytes == NULL)
	{
		tu_report(false, "read %s", path);
		return;
	}
	m = read_model(bytes, "fixture");
	free(bytes);
	if (m == NULL)
		return;
	for (int t = 0; t < m->n_trees; t++)
		for (int i = 0; i < m->trees[t].n_nodes; i++)
			n_cat += m->trees[t].nodes[i].is_cat && m->trees[t].nodes[i].left != HB_LEAF;
	p = build_plan(m, "fixture");
	if (p == NULL)
	{
		hb_model_free(m);
		return;
	}
	printf("# fixture: %lld categorical nodes, %d set words, plan %zu bytes\n",
		   (long long) n_cat, m->n_cat_words, hb_plan_bytes(p));
	tu_report(n_cat >= 100 && m->n_cat_words <= 3 * n_cat &&
			  p->n_cat_words == m->n_cat_words,
			  "fixture: %lld sets of ids up to 2^24 - 1 take %d words (at most 3 a set)",
			  (long long) n_cat, m->n_cat_words);
	tu_report(hb_plan_bytes(p) < ((size_t) 1 << 20),
			  "fixture: the plan takes %zu bytes (under 1 MB)", hb_plan_bytes(p));

	snprintf(path, sizeof(path), "%s/large_categories.csv", dir);
	if (!tu_read_csv(path, &in))
		tu_report(false, "read %s", path);
	else
	{
		snprintf(path, sizeof(path), "%s/large_categories.expected.csv", dir);
		if (!tu_read_csv(path, &out) || out.rows != in.rows || in.cols != 4)
			tu_report(false, "read %s (as many rows as the input)", path);
		else
		{
			x = malloc(sizeof(double) * 3 * in.rows);
			want = malloc(sizeof(double) * in.rows);
			for (int r = 0; r < in.rows; r++)
			{
				for (int f = 0; f < 3; f++)
					x[r * 3 + f] = in.v[r * in.cols + 1 + f];
				want[r] = out.v[r * out.cols + 1];
			}
			/* XGBoost's float32 sums, base first, trees in order: to the bit */
			check_executors(m, p, x, in.rows, want, 0, "fixture");
			free(x);
			free(want);
		}
		tu_free_table(&out);
	}
	tu_free_table(&in);
	hb_plan_free(p);
	hb_model_free(m);
}

/* ---------- 128 nodes near 2^24 ---------- */

/*
 * 128 one-split trees, tree t testing sets[t] (of k categories); each
 * member row reaches in_value = 1 in its trees.  Checks the words the model
 * and the plan hold, and the count of trees holding each probe.
 */
static void
test_many_nodes(const char *what, uint32_t (*set_of) (int t, int k), int k)
{
	enum
	{
		T = 128
	};
	static uint32_t cats[T][2];
	Split		sp[T];
	char	   *doc;
	HbModel    *m;
	HbPlan	   *p;
	double		x[8],
				want[8],
				got[8];
	int			nx = 0;

	for (int t = 0; t < T; t++)
	{
		for (int j = 0; j < k; j++)
			cats[t][j] = set_of(t, j);
		sp[t].feature = 0;
		sp[t].n = k;
		sp[t].cats = cats[t];
		sp[t].in_value = 1.0;
	}
	doc = xgb_model(sp, T, 1);
	m = read_model(doc, what);
	p = m ? build_plan(m, what) : NULL;
	if (p)
	{
		/* the sets before: 2^19 words each, whatever the other members */
		double		old_mb = (double) T * (TOP / 32) * 4 / 1048576;

		printf("# %s: %zu-byte XGBoost JSON; sets %d words (%d bytes), plan %zu bytes "
			   "(bitsets from category 0: %.0f MB)\n", what, strlen(doc),
			   m->n_cat_words, 4 * m->n_cat_words, hb_plan_bytes(p), old_mb);
		tu_report(m->n_cat_words <= T * k && p->n_cat_words == m->n_cat_words,
				  "%s: 128 sets take %d words (at most %d)", what, m->n_cat_words, T * k);
		tu_report(hb_plan_bytes(p) < ((size_t) 1 << 20),
				  "%s: the plan takes %zu bytes (under 1 MB)", what, hb_plan_bytes(p));

		/* probes: members of some trees, and ids no tree holds */
		for (int j = 0; j < k; j++)
			x[nx++] = set_of(5, j);
		x[nx++] = set_of(T - 1, k - 1);
		x[nx++] = TOP - 1 - T - 1;
		x[nx++] = 64;
		x[nx++] = TOP;
		for (int i = 0; i < nx; i++)
		{
			want[i] = 0;
			for (int t = 0; t < T; t++)
				for (int j = 0; j < k; j++)
					if ((double) cats[t][j] == x[i])
					{
						want[i] += 1;
						break;
					}
		}
		hb_plan_margins_with(p, HB_STRATEGY_TT, x, nx, got);
		{
			bool		same = true;

			for (int i = 0; i < nx; i++)
				same &= got[i] == want[i];
			tu_report(same, "%s: each probe reaches the leaves of the trees whose set holds it", what);
		}
	}
	hb_plan_free(p);
	hb_model_free(m);
	free(doc);
}

static uint32_t
near_top(int t, int k)
{
	(void) k;
	return (uint32_t) (TOP - 1) - (uint32_t) t;
}

static uint32_t
far_apart(int t, int k)
{
	return k == 0 ? (uint32_t) t : (uint32_t) (TOP - 1) - (uint32_t) t;
}

/* ---------- membership at the edges ---------- */

/* bitset from word 31 (3 words); a list; the very last id; across word 0 / 1 */
static const uint32_t set_a[] = {1000, 1005, 1040, 1063};
static const uint32_t set_b[] = {0, 7, 16777215};
static const uint32_t set_c[] = {16777215};
static const uint32_t set_d[] = {31, 32};
/* the pipeline reader's categories are below 65536 */
static const uint32_t set_e[] = {0, 7, 65535};
static const uint32_t set_f[] = {65535};
static const uint32_t set_g[] = {40000, 40031, 40032};

/*
 * Is v in the set, by the rules written out: NaN is in none (the callers'
 * models send it the other way); float32 models see the float, and take
 * categories 0 <= c < 2^24 (XGBoost); float64 ones truncate toward zero
 * first, so that -1 < v < 0 is category 0 (LightGBM); ids are compared as
 * integers, one by one.
 */
static bool
ref_in(const uint32_t *set, int n, double v, bool f32)
{
	double		c;

	if (isnan(v))
		return false;
	if (f32)
		v = (double) (float) v;
	c = trunc(v);
	if (f32 ? !(v >= 0) : !(c >= 0))
		return false;
	if (c >= TOP)
		return false;
	for (int i = 0; i < n; i++)
		if ((double) set[i] == c)
			return true;
	return false;
}

/* Values around every member of the sets, and the awkward ones. */
static int
edge_values(const Split *sp, int n_trees, double *v, int max)
{
	static const double offs[] = {-65, -64, -33, -32, -31, -2, -1, -0.5, -0.001,
	0, 0.001, 0.25, 0.5, 0.999, 1, 2, 31, 32, 33, 64, 65};
	static const double special[] = {-INFINITY, -1e300, -TOP - 1, -TOP, -1.5, -1,
		-0.999, -0.5, -1e-300, -0.0, 0, 1e-300, 0.5, 1, TOP - 1.6, TOP - 1.5,
		TOP - 1.4, TOP - 1, TOP - 0.6, TOP - 0.5, TOP - 0.4, TOP, TOP + 0.5,
		TOP + 1, TOP + 2, 2147483647.0, 2147483648.0, 4294967295.0,
	4294967296.0, 9007199254740993.0, 1e30, 1e300, INFINITY, NAN};
	int			n = 0;

	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]) && n < max; i++)
		v[n++] = special[i];
	for (int t = 0; t < n_trees; t++)
		for (int k = 0; k < sp[t].n; k++)
			for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]) && n < max; i++)
				v[n++] = (double) sp[t].cats[k] + offs[i];
	return n;
}

/*
 * Every feature of a row holds the same value v; tree t tests feature t and
 * adds 2^t when v is in its set, so the margin spells out the trees that
 * took it in.
 */
static void
test_membership(const char *what, const Split *sp0, int n_trees, bool xgb)
{
	Split		sp[8];
	char	   *doc;
	HbModel    *m;
	HbPlan	   *p;
	double		v[2048],
			   *x,
			   *want;
	int			n;
	bool		f32;

	for (int t = 0; t < n_trees; t++)
	{
		sp[t] = sp0[t];
		sp[t].feature = t;
		sp[t].in_value = (double) (1 << t);
	}
	doc = xgb ? xgb_model(sp, n_trees, n_trees) : pipeline_model(sp, n_trees, n_trees);
	m = read_model(doc, what);
	free(doc);
	if (m == NULL)
		return;
	p = build_plan(m, what);
	if (p == NULL)
	{
		hb_model_free(m);
		return;
	}
	f32 = p->cmp == HB_CMP_LT_F32;
	tu_report(f32 == xgb, "%s: compares in %s", what, f32 ? "float32" : "float64");
#ifdef HB_FN_CAT_LIST
	{
		int			lists = 0,
					based = 0;

		/* the sets take both forms: sorted lists, bitsets from a word above 0 */
		for (int64_t i = 0; i < p->n_nodes; i++)
			if (p->nodes[i].flags & HB_FN_CAT_LIST)
				lists++;
			else if ((p->nodes[i].flags & HB_FN_CAT) && p->cat_base[i] > 0)
				based++;
		tu_report(lists >= 1 && based >= 2, "%s: %d sets are lists, %d bitsets start above category 31",
				  what, lists, based);
	}
#endif
	n = edge_values(sp, n_trees, v, 2048);
	x = malloc(sizeof(double) * n * n_trees);
	want = malloc(sizeof(double) * n);
	for (int i = 0; i < n; i++)
	{
		want[i] = 0;
		for (int t = 0; t < n_trees; t++)
		{
			x[i * n_trees + t] = v[i];
			if (ref_in(sp[t].cats, sp[t].n, v[i], f32))
				want[i] += sp[t].in_value;
		}
	}
	check_executors(m, p, x, n, want, 0, what);
	free(x);
	free(want);
	hb_plan_free(p);
	hb_model_free(m);
}

/*
 * A model whose only set is empty holds no words at all: every value is
 * outside it, and looking it up must not touch the (absent) words (found
 * by the model_image fuzzer: offsetting a null pointer, under UBSan).
 * XGBoost's reader refuses such a node; a pipeline document may hold it.
 */
static void
test_empty_set(void)
{
	const Split sp[] = {{0, 0, NULL, 5}};
	char	   *doc = pipeline_model(sp, 1, 1);
	HbModel    *m = read_model(doc, "empty set");
	HbPlan	   *p;
	double		v[64],
				want[64];
	int			n;

	free(doc);
	if (m == NULL)
		return;
	p = build_plan(m, "empty set");
	if (p == NULL)
	{
		hb_model_free(m);
		return;
	}
	n = edge_values(sp, 1, v, 64);
	for (int i = 0; i < n; i++)
		want[i] = 0;
	check_executors(m, p, v, n, want, 0, "empty set: no value is in it");
	hb_plan_free(p);
	hb_model_free(m);
}

int
main(void)
{
	const Split xgb_sets[] = {
		{0, 4, set_a, 0}, {0, 3, set_b, 0}, {0, 1, set_c, 0}, {0, 2, set_d, 0}
	};
	/* (the last, empty: no category is in it) */
	const Split lgb_sets[] = {
		{0, 4, set_a, 0}, {0, 3, set_e, 0}, {0, 1, set_f, 0}, {0, 2, set_d, 0},
		{0, 3, set_g, 0}, {0, 0, NULL, 0}
	};

	test_fixture();
	test_many_nodes("one id near 2^24 per node", near_top, 1);
	test_many_nodes("ids t and 2^24 - 1 - t per node", far_apart, 2);
	test_membership("membership, XGBoost (float32)", xgb_sets, 4, true);
	test_membership("membership, truncated toward zero (float64)", lgb_sets, 6, false);
	test_empty_set();

	printf("# passed %d failed %d\n", tu_n_test - tu_n_fail, tu_n_fail);
	printf("1..%d\n", tu_n_test);
	return tu_n_fail ? 1 : 0;
}
