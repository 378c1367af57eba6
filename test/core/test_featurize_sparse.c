/*
 * test_featurize_sparse.c
 *	  The sparse linear scorer (featurize_sparse.h) against the dense path
 *	  it replaces (hb_pipeline_run, then hb_plan_margins) on random
 *	  pipelines: hashing and tf-idf steps of every option, numeric steps
 *	  beside them, features shared and shuffled, one to three outputs, a
 *	  text step whose columns another step reads (which must stay dense);
 *	  the vocabulary's hash index against the binary search it replaces;
 *	  and on the exported scikit-learn pipelines of test/fixtures/pipelines
 *	  against scikit-learn's own outputs.  TAP.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "featurize_sparse.h"
#include "model.h"
#include "plan.h"
#include "test_pipeline_rows.h"

#define DIR "test/fixtures/pipelines/"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) ((rng >> 11) % n);
}

static double
unif(double lo, double hi)
{
	return lo + (hi - lo) * (double) rnd(1u << 30) / (double) (1u << 30);
}

static const char *const words[] = {
	"good", "bad", "fast", "slow", "broken", "fine", "love", "hate", "the",
	"a", "x", "ok", "42", "Überall", "ÉTÉ", "naïve", "straße", "ΣΟΦΟΣ", "日本",
	"never", "again", "works", "great", "poor", "I", "it"
};
#define N_WORDS ((int) (sizeof(words) / sizeof(words[0])))

static char *
random_doc(void)
{
	char		buf[512];
	int			n = rnd(12);
	size_t		len = 0;

	buf[0] = '\0';
	for (int i = 0; i < n; i++)
	{
		const char *w = words[rnd(N_WORDS)];
		static const char *const sep[] = {" ", "  ", ", ", "! ", "-", "\t"};

		len += snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? sep[rnd(6)] : "", w);
		if (rnd(4) == 0)
			buf[len - 1] = (char) (buf[len - 1] >= 'a' && buf[len - 1] <= 'z' ?
								   buf[len - 1] - 32 : buf[len - 1]);
	}
	return strdup(buf);
}

static int64_t *
random_subset(int64_t n_cols, int32_t want, int32_t *n_out)
{
	int64_t    *c = hb_alloc(sizeof(int64_t) * (want > 0 ? want : 1));
	int32_t		n = 0;

	/* ascending, distinct: walk the columns, keep each with a fitting chance */
	for (int64_t i = 0; i < n_cols && n < want; i++)
		if (rnd(1000000) < (uint32_t) (1000000.0 * (want - n) / (double) (n_cols - i)))
			c[n++] = i;
	*n_out = n;
	return c;
}

static void
random_tokenizer(HbTokenizer *t)
{
	t->lowercase = rnd(4) != 0;
	t->char_ngrams = rnd(4) == 0;
	t->ngram_min = 1 + rnd(2);
	t->ngram_max = t->ngram_min + rnd(2);
	t->min_token_len = 1 + rnd(2);
	if (!t->char_ngrams && rnd(3) == 0)
	{
		t->n_stop_words = 2;
		t->stop_words = hb_alloc(sizeof(char *) * 2);
		t->stop_words[0] = hb_strdup("the");
		t->stop_words[1] = hb_strdup("never");
	}
}

/* A text step writing its kept columns from slot out. */
static void
random_text_step(HbStep *s, int32_t text_input, int32_t out)
{
	s->text_input = text_input;
	s->out = out;
	random_tokenizer(&s->tok);
	s->binary = rnd(4) == 0;
	s->norm = (HbNorm) rnd(4);
	if (rnd(2) == 0)
	{
		static const int64_t widths[] = {16, 64, 1024, 1 << 18};

		s->kind = HB_STEP_HASHING;
		s->n_cols = widths[rnd(4)];
		s->alternate_sign = rnd(2) == 0;
		s->used_cols = random_subset(s->n_cols, s->n_cols < 64 ? 1 + rnd(s->n_cols) : 40 + rnd(200), &s->n_used);
	}
	else
	{
		/* vocabulary: the words lower-cased or not, and a few bigrams */
		int32_t		n = 0;

		s->kind = HB_STEP_TFIDF;
		s->vocab_terms = hb_alloc(sizeof(char *) * (N_WORDS + 8));
		s->vocab_cols = hb_alloc(sizeof(int32_t) * (N_WORDS + 8));
		for (int i = 0; i < N_WORDS; i++)
			if (rnd(5) != 0)
				s->vocab_terms[n++] = hb_strdup(words[i]);
		s->vocab_terms[n++] = hb_strdup("good fast");
		s->vocab_terms[n++] = hb_strdup("go");
		s->vocab_terms[n++] = hb_strdup("ok");
		for (int32_t i = 0; i < n; i++)
			for (int32_t j = 0; j < i; j++)
				if (strcmp(s->vocab_terms[i], s->vocab_terms[j]) == 0)
					s->vocab_terms[i][0] = 'q' + (char) (i % 8);	/* no duplicates */
		s->n_vocab = n;
		s->n_cols = n;
		for (int32_t i = 0; i < n; i++)
			s->vocab_cols[i] = i;
		for (int32_t i = n - 1; i > 0; i--)
		{
			int32_t		j = rnd(i + 1),
						t = s->vocab_cols[i];

			s->vocab_cols[i] = s->vocab_cols[j];
			s->vocab_cols[j] = t;
		}
		s->sublinear_tf = rnd(2) == 0;
		if (rnd(3) != 0)
		{
			s->idf = hb_alloc(sizeof(double) * n);
			for (int32_t i = 0; i < n; i++)
				s->idf[i] = unif(1.0, 4.0);
		}
		s->used_cols = random_subset(n, 1 + rnd(n), &s->n_used);
	}
	s->n_out = s->n_used;
}

typedef struct Case
{
	HbModel    *m;
	int			n_rows;
	double	   *num;
	HbText	   *text;
	char	  **docs;
	bool		dense_step;		/* a text step another step reads */
} Case;

static void
random_case(Case *c, int trial)
{
	HbModel    *m = hb_alloc0(sizeof(HbModel));
	HbPipeline *p = hb_alloc0(sizeof(HbPipeline));
	int			n_text = 1 + rnd(2);
	int			n_text_steps = 1 + rnd(3);
	int32_t		next;
	int32_t		n_pool = 0;
	int32_t    *pool;
	int			k = rnd(2) ? 1 : 3;
	HbStep	   *s;

	memset(c, 0, sizeof(*c));
	p->n_num_inputs = 2;
	p->n_text_inputs = n_text;
	p->n_inputs = 2 + n_text;
	p->inputs = hb_alloc0(sizeof(HbInput) * p->n_inputs);
	for (int i = 0; i < p->n_inputs; i++)
	{
		char		name[16];

		snprintf(name, sizeof(name), "in%d", i);
		p->inputs[i].name = hb_strdup(name);
		p->inputs[i].type = i < 2 ? HB_INPUT_NUMERIC : HB_INPUT_TEXT;
		p->inputs[i].index = i < 2 ? i : i - 2;
	}
	p->steps = hb_alloc0(sizeof(HbStep) * 8);

	/* a scaler over the numeric inputs */
	s = &p->steps[p->n_steps++];
	s->kind = HB_STEP_AFFINE;
	s->order = HB_AFFINE_SUB_DIV;
	s->n_in = 2;
	s->in = hb_alloc(sizeof(int32_t) * 2);
	s->in[0] = 0;
	s->in[1] = 1;
	s->sub = hb_alloc(sizeof(double) * 2);
	s->mul = hb_alloc(sizeof(double) * 2);
	s->sub[0] = 1.5;
	s->sub[1] = -3;
	s->mul[0] = 2;
	s->mul[1] = 0.25;
	s->out = 2;
	s->n_out = 2;
	next = 4;
	for (int t = 0; t < n_text_steps; t++)
	{
		s = &p->steps[p->n_steps++];
		random_text_step(s, rnd(n_text), next);
		next += s->n_out;
	}
	/* every fourth case: an l2 normalizer over a text step's first columns */
	if (trial % 4 == 3 && p->steps[1].n_used >= 2)
	{
		HbStep	   *t = &p->steps[1];

		s = &p->steps[p->n_steps++];
		s->kind = HB_STEP_NORMALIZE;
		s->norm = HB_NORM_L2;
		s->n_in = 2;
		s->in = hb_alloc(sizeof(int32_t) * 2);
		s->in[0] = t->out;
		s->in[1] = t->out + 1;
		s->out = next;
		s->n_out = 2;
		next += 2;
		c->dense_step = true;
	}
	p->n_slots = next;

	/* features: most slots past the inputs, shuffled, some twice */
	pool = hb_alloc(sizeof(int32_t) * next * 2);
	for (int32_t i = 2; i < next; i++)
		if (rnd(8) != 0)
			pool[n_pool++] = i;
	for (int32_t i = 0; i < 3; i++)
		pool[n_pool++] = 2 + rnd(next - 2);
	for (int32_t i = n_pool - 1; i > 0; i--)
	{
		int32_t		j = rnd(i + 1),
					t = pool[i];

		pool[i] = pool[j];
		pool[j] = t;
	}
	p->n_features = n_pool;
	p->feature_slot = pool;

	m->format = HB_FORMAT_HBIRD_PIPELINE;
	m->task = k == 1 ? HB_TASK_REGRESSION : HB_TASK_MULTICLASS;
	m->estimator = HB_EST_LINEAR;
	m->n_features = n_pool;
	m->features = hb_alloc0(sizeof(HbFeature) * n_pool);
	for (int32_t j = 0; j < n_pool; j++)
	{
		char		name[16];

		snprintf(name, sizeof(name), "f%d", j);
		m->features[j].name = hb_strdup(name);
	}
	m->n_outputs = k;
	m->n_classes = k == 1 ? 0 : k;
	m->link = k == 1 ? HB_LINK_IDENTITY : HB_LINK_SOFTMAX;
	m->base_margin = hb_alloc(sizeof(double) * k);
	m->bias = hb_alloc(sizeof(double) * k);
	m->weights = hb_alloc(sizeof(double) * n_pool * k);
	for (int g = 0; g < k; g++)
	{
		m->base_margin[g] = unif(-0.5, 0.5);
		m->bias[g] = unif(-2, 2);
	}
	for (int32_t i = 0; i < n_pool * k; i++)
		m->weights[i] = rnd(10) == 0 ? 0.0 : unif(-3, 3);
	m->pipeline = p;
	c->m = m;

	c->n_rows = 40;
	c->num = malloc(sizeof(double) * c->n_rows * 2);
	c->text = malloc(sizeof(HbText) * c->n_rows * n_text);
	c->docs = malloc(sizeof(char *) * c->n_rows * n_text);
	for (int r = 0; r < c->n_rows; r++)
	{
		for (int i = 0; i < 2; i++)
			c->num[r * 2 + i] = rnd(6) == 0 ? NAN : unif(-10, 10);
		for (int i = 0; i < n_text; i++)
		{
			char	   *d = rnd(10) == 0 ? NULL : random_doc();

			c->docs[r * n_text + i] = d;
			c->text[r * n_text + i].ptr = d;
			c->text[r * n_text + i].len = d ? (int32_t) strlen(d) : 0;
		}
	}
}

static void
free_case(Case *c)
{
	int			n_text = c->m->pipeline->n_text_inputs;

	for (int i = 0; i < c->n_rows * n_text; i++)
		free(c->docs[i]);
	free(c->docs);
	free(c->num);
	free(c->text);
	hb_model_free(c->m);
}

static bool
near(double a, double b, double scale)
{
	return fabs(a - b) <= 1e-12 * (1.0 + scale);
}

/* sparse margins vs the dense path's on the case's rows; worst difference */
static bool
compare(const HbModel *m, const HbSparseLinear *sl, const HbRawRows *raw,
		double *worst, char *why, size_t why_len)
{
	const HbPipeline *p = m->pipeline;
	HbPlan	   *plan = NULL;
	HbError		err = {0};
	size_t		n = raw->n;
	int			k = m->n_outputs;
	double	   *x = malloc(sizeof(double) * n * m->n_features);
	double	   *dense = malloc(sizeof(double) * n * k);
	double	   *sparse = malloc(sizeof(double) * n * k);
	double	   *slots = malloc(sizeof(double) * hb_pipeline_row_slots(p));
	bool		good = true;

	*worst = 0;
	if (!hb_plan_build(m, &plan, &err) || !hb_pipeline_run(p, raw, x, &err))
	{
		snprintf(why, why_len, "dense: %s", err.msg);
		good = false;
		goto done;
	}
	hb_plan_margins(plan, x, n, dense);

	/* the vocabulary's hash index finds what the binary search finds */
	{
		HbPipeline *pw = (HbPipeline *) p;
		struct HbNameIndex *saved[16];
		double	   *x2 = malloc(sizeof(double) * n * m->n_features);

		for (int32_t i = 0; i < pw->n_steps && i < 16; i++)
		{
			saved[i] = pw->steps[i].vocab_index;
			pw->steps[i].vocab_index = NULL;
		}
		if (!hb_pipeline_run(p, raw, x2, &err) ||
			memcmp(x, x2, sizeof(double) * n * m->n_features) != 0)
		{
			snprintf(why, why_len, "features differ without the vocabulary index");
			good = false;
		}
		for (int32_t i = 0; i < pw->n_steps && i < 16; i++)
			pw->steps[i].vocab_index = saved[i];
		free(x2);
		if (!good)
			goto done;
	}
	if (!hb_sparse_linear_margins(sl, raw, sparse, slots, &err))
	{
		snprintf(why, why_len, "sparse: %s", err.msg);
		good = false;
		goto done;
	}
	for (size_t r = 0; r < n; r++)
	{
		/* scale: the sum of |w x|, what rounding is relative to */
		double		scale = 0;

		for (int32_t j = 0; j < m->n_features; j++)
			for (int g = 0; g < k; g++)
				if (!isnan(x[r * m->n_features + j]))
					scale += fabs(x[r * m->n_features + j] * m->weights[(size_t) j * k + g]);
		for (int g = 0; g < k; g++)
		{
			double		d = fabs(dense[r * k + g] - sparse[r * k + g]);

			if (d > *worst)
				*worst = d;
			if (!near(sparse[r * k + g], dense[r * k + g], scale) && good)
			{
				snprintf(why, why_len, "row %zu output %d: sparse %.17g dense %.17g",
						 r, g, sparse[r * k + g], dense[r * k + g]);
				good = false;
			}
		}
	}
done:
	hb_plan_free(plan);
	free(x);
	free(dense);
	free(sparse);
	free(slots);
	return good;
}

static void
test_random(void)
{
	int			trials = 300;
	int			bad = 0;
	int			built = 0;
	int			with_dense_step = 0;
	int			dense_kept_right = 0;
	double		worst_all = 0;
	char		why[1024] = "";

	for (int trial = 0; trial < trials; trial++)
	{
		Case		c;
		HbError		err = {0};
		HbSparseLinear *sl = NULL;
		HbRawRows	raw;
		double		worst;
		char		w[1024];

		random_case(&c, trial);
		raw.n = c.n_rows;
		raw.num = c.num;
		raw.text = c.text;
		if (!hb_pipeline_validate(c.m->pipeline, c.m->n_features, &err))
		{
			snprintf(why, sizeof(why), "trial %d: invalid: %s", trial, err.msg);
			bad++;
			free_case(&c);
			continue;
		}
		if (!hb_sparse_linear_build(c.m, c.m->pipeline, &sl, &err))
		{
			snprintf(why, sizeof(why), "trial %d: %s", trial, err.msg);
			bad++;
			free_case(&c);
			continue;
		}
		if (c.dense_step)
		{
			int			n_text = 0;

			with_dense_step++;
			for (int32_t i = 0; i < c.m->pipeline->n_steps; i++)
				n_text += c.m->pipeline->steps[i].kind == HB_STEP_HASHING ||
					c.m->pipeline->steps[i].kind == HB_STEP_TFIDF;
			if (hb_sparse_linear_n_text_steps(sl) == n_text - 1)
				dense_kept_right++;
		}
		if (sl == NULL)
		{
			/* right only when its one text step is read by another step */
			if (!c.dense_step)
			{
				snprintf(why, sizeof(why), "trial %d: no sparse scorer", trial);
				bad++;
			}
			free_case(&c);
			continue;
		}
		built++;
		if (!compare(c.m, sl, &raw, &worst, w, sizeof(w)))
		{
			if (bad == 0)
				snprintf(why, sizeof(why), "trial %d: %.900s", trial, w);
			bad++;
		}
		if (worst > worst_all)
			worst_all = worst;
		hb_sparse_linear_free(sl);
		free_case(&c);
	}
	tu_report(bad == 0 && built > trials * 9 / 10,
			  "%d random pipelines (%d with a sparse scorer): sparse margins equal the "
			  "dense path's to rounding (max abs diff %.3g)%s%s", trials, built, worst_all, bad ? "; " : "", why);
	tu_report(with_dense_step > 0 && dense_kept_right == with_dense_step,
			  "a text step read by another step stays dense (%d of %d cases)",
			  dense_kept_right, with_dense_step);
}

static TuRows rows;

/*
 * An exported pipeline: sparse against dense on every row, and the sparse
 * probabilities / predictions against scikit-learn's (1e-6 relative, as
 * test_pipeline_reader holds the dense path to).
 */
/*
 * A text term whose value is NaN (an idf of 1e308 overflows to infinity, and
 * the l2 norm divides it by infinity) is missing in both paths: the dense
 * path skips a NaN feature, and the sparse one used to add NaN.
 */
static void
test_nan_term(void)
{
	const char *doc = "{\"format\":\"hbird-pipeline\",\"version\":1,"
		"\"inputs\":[{\"name\":\"t\",\"type\":\"text\"}],"
		"\"steps\":[{\"op\":\"tfidf_vectorizer\",\"name\":\"tf\",\"input\":\"t\","
		"\"vocabulary\":{\"ab\":0,\"cd\":1},\"idf\":[1e308,1],\"norm\":\"l2\"}],"
		"\"features\":[\"tf:0\",\"tf:1\"],"
		"\"model\":{\"kind\":\"linear\",\"coef\":[[2,0.5]],\"intercept\":[0.25]}}";
	HbModel    *m = NULL;
	HbSparseLinear *sl = NULL;
	HbError		err = {0};
	HbText		text = {"ab ab cd", 8};
	HbRawRows	raw = {1, NULL, &text};
	double		worst;
	char		why[512] = "";

	if (!hb_model_read(doc, strlen(doc), HB_FORMAT_AUTO, &m, &err) ||
		!hb_sparse_linear_build(m, m->pipeline, &sl, &err) || sl == NULL)
	{
		tu_report(false, "NaN text term: %s", sl == NULL && !err.msg[0] ? "no sparse scorer" : err.msg);
		hb_model_free(m);
		return;
	}
	tu_report(compare(m, sl, &raw, &worst, why, sizeof(why)),
			  "a NaN text term (idf 1e308, l2 norm) is missing in the sparse path as in the dense one%s%s",
			  why[0] ? ": " : "", why);
	hb_sparse_linear_free(sl);
	hb_model_free(m);
}

static void
check_fixture(const char *name, bool want_sparse)
{
	char		path[256];
	size_t		len;
	char	   *bytes;
	HbModel    *m = NULL;
	HbSparseLinear *sl = NULL;
	HbPlan	   *plan = NULL;
	HbError		err = {0};
	TuTable		exp;
	const HbPipeline *p;
	double	   *num,
			   *margins,
			   *out,
			   *slots;
	HbText	   *text;
	HbRawRows	raw;
	int			n,
				k,
				bad = 0;
	bool		proba;
	double		worst = 0,
				worst_dense = 0;
	char		w[1024];

	snprintf(path, sizeof(path), DIR "%s.json", name);
	bytes = tu_read_file(path, &len);
	if (bytes == NULL || !hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err))
	{
		tu_report(false, "%s: %s", name, bytes ? err.msg : "unreadable");
		free(bytes);
		return;
	}
	free(bytes);
	if (!hb_sparse_linear_build(m, m->pipeline, &sl, &err))
	{
		tu_report(false, "%s: %s", name, err.msg);
		hb_model_free(m);
		return;
	}
	tu_report((sl != NULL) == want_sparse, "%s: %s", name,
			  want_sparse ? "a linear model over text gets a sparse scorer" :
			  "not a linear model over text: no sparse scorer");
	if (sl == NULL)
	{
		hb_model_free(m);
		return;
	}
	snprintf(path, sizeof(path), DIR "%s.expected.csv", name);
	if (!tu_read_csv(path, &exp) || !hb_plan_build(m, &plan, &err))
	{
		tu_report(false, "%s: expected output or plan", name);
		hb_sparse_linear_free(sl);
		hb_model_free(m);
		return;
	}
	p = m->pipeline;
	proba = strcmp(exp.names[1], "p0") == 0;
	n = exp.rows;
	k = m->n_outputs;
	num = calloc((size_t) n * (p->n_num_inputs + 1), sizeof(double));
	text = calloc((size_t) n * (p->n_text_inputs + 1), sizeof(HbText));
	margins = malloc(sizeof(double) * n * k);
	out = malloc(sizeof(double) * n * (m->n_classes + k + 1));
	slots = malloc(sizeof(double) * hb_pipeline_row_slots(p));
	for (int i = 0; i < n; i++)
	{
		int			id = (int) exp.v[(size_t) i * exp.cols];

		for (int q = 0; q < p->n_inputs; q++)
		{
			const HbInput *in = &p->inputs[q];
			const char *cell = rows.cells[id][tu_pipeline_column(in->name)];

			if (in->type == HB_INPUT_NUMERIC)
				num[(size_t) i * p->n_num_inputs + in->index] = cell ? strtod(cell, NULL) : NAN;
			else
			{
				text[(size_t) i * p->n_text_inputs + in->index].ptr = cell;
				text[(size_t) i * p->n_text_inputs + in->index].len = cell ? (int32_t) strlen(cell) : 0;
			}
		}
	}
	raw.n = n;
	raw.num = num;
	raw.text = text;
	if (!compare(m, sl, &raw, &worst_dense, w, sizeof(w)))
		tu_report(false, "%s: sparse vs dense: %s", name, w);
	else
		tu_report(true, "%s: %d rows, sparse margins equal the dense path's (max abs diff %.3g)",
				  name, n, worst_dense);
	if (!hb_sparse_linear_margins(sl, &raw, margins, slots, &err))
		tu_report(false, "%s: %s", name, err.msg);
	else
	{
		int			cols = proba ? exp.cols - 1 : 1;

		if (proba)
			hb_link_proba(plan, margins, n, out);
		else
			hb_link_predict(plan, margins, n, out);
		for (int i = 0; i < n; i++)
			for (int j = 0; j < cols; j++)
			{
				double		want = exp.v[(size_t) i * exp.cols + (proba ? 1 + j : exp.cols - 1)];
				double		g = out[(size_t) i * cols + j];

				if (fabs(g - want) > 1e-6 * fmax(fabs(want), 1e-6))
					bad++;
				if (fabs(g - want) > worst)
					worst = fabs(g - want);
			}
		tu_report(bad == 0, "%s: sparse %s equals scikit-learn's on %d rows (max abs diff %.3g)",
				  name, proba ? "predict_proba" : "predict", n, worst);
	}
	free(num);
	free(text);
	free(margins);
	free(out);
	free(slots);
	tu_free_table(&exp);
	hb_plan_free(plan);
	hb_sparse_linear_free(sl);
	hb_model_free(m);
}

int
main(void)
{
	test_random();
	test_nan_term();
	tu_load_pipeline_rows(&rows);
	check_fixture("logreg_tfidf", true);
	check_fixture("ridge_char", true);
	check_fixture("svc_words", true);
	check_fixture("rf_hashing", false);
	check_fixture("etr_hashing", false);
	printf("1..%d\n", tu_n_test);
	tu_free_rows(&rows);
	return tu_n_fail ? 1 : 0;
}
