/*
 * model_image.c
 *	  A compact binary image of the IR, written once at upload.
 *
 * Parsing a large JSON model (hundreds of thousands of numbers) is what a
 * backend's first call pays for; loading this image is a few memcpys.  The
 * image is derived data: it carries a version, the byte order and the sizes
 * of the structs it copies, and a reader that sees anything else reports
 * "not an image it can use" so the caller parses the original bytes instead.
 */
#include "model.h"

#include <string.h>

#define IMAGE_MAGIC		0x52494248u	/* "HBIR" little-endian */
/*
 * 2: featurizer pipelines.  3: category sets from the word of their smallest
 * category, or sorted lists (HbNode.cat_base, cat_list).  Version 2 images
 * are not converted: they are only derived data, the caller parses the
 * model's original bytes instead, and that makes the new compact sets,
 * where a version 2 image of a model with large category ids holds its
 * bitsets sized by the largest id.  4: a pipeline's zero_is_missing
 * (version 3 images marked the model's nodes instead).  5: an imputer's
 * nan_kept (ONNX Imputer with a placeholder: a version 4 image would
 * replace NaN too, so the original bytes are parsed again instead).
 */
#define IMAGE_VERSION	5u

typedef struct Buf
{
	char	   *data;
	size_t		len;
	size_t		cap;
	bool		failed;
} Buf;

static void
put(Buf *b, const void *p, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n > b->cap)
	{
		size_t		cap = b->cap ? b->cap * 2 : 4096;
		char	   *d;

		while (cap < b->len + n)
			cap *= 2;
		d = hb_realloc(b->data, cap);
		if (d == NULL)
		{
			b->failed = true;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void
put_u32(Buf *b, uint32_t v)
{
	put(b, &v, sizeof(v));
}

static void
put_str(Buf *b, const char *s)
{
	uint32_t	n = s ? (uint32_t) strlen(s) : UINT32_MAX;

	put_u32(b, n);
	if (s)
		put(b, s, n);
}

/* An array with its element count; NULL is written as UINT32_MAX. */
static void
put_arr(Buf *b, const void *a, size_t count, size_t elem)
{
	if (a == NULL)
	{
		put_u32(b, UINT32_MAX);
		return;
	}
	put_u32(b, (uint32_t) count);
	put(b, a, count * elem);
}

static void
put_strs(Buf *b, char *const *a, int32_t n)
{
	if (a == NULL)
	{
		put_u32(b, UINT32_MAX);
		return;
	}
	put_u32(b, (uint32_t) n);
	for (int32_t i = 0; i < n; i++)
		put_str(b, a[i]);
}

static void
put_f64(Buf *b, double v)
{
	put(b, &v, sizeof(v));
}

static void
put_pipeline(Buf *b, const HbPipeline *p)
{
	put_u32(b, p ? 1 : 0);
	if (p == NULL)
		return;
	put_u32(b, (uint32_t) p->n_inputs);
	for (int32_t i = 0; i < p->n_inputs; i++)
	{
		put_str(b, p->inputs[i].name);
		put_u32(b, (uint32_t) p->inputs[i].type);
		put_u32(b, (uint32_t) p->inputs[i].cost);
		put_u32(b, (uint32_t) p->inputs[i].index);
	}
	put_u32(b, (uint32_t) p->n_num_inputs);
	put_u32(b, (uint32_t) p->n_text_inputs);
	put_u32(b, (uint32_t) p->n_steps);
	for (int32_t k = 0; k < p->n_steps; k++)
	{
		const HbStep *s = &p->steps[k];
		uint32_t	flags = (s->f32 ? 1 : 0) | (s->has_missing_value ? 2 : 0) |
			(s->onehot ? 4 : 0) | (s->drop_first ? 8 : 0) |
			(s->alternate_sign ? 16 : 0) | (s->binary ? 32 : 0) |
			(s->sublinear_tf ? 64 : 0) | (s->tok.lowercase ? 128 : 0) |
			(s->tok.char_ngrams ? 256 : 0) | (s->tok.char_wb ? 512 : 0) |
			((uint32_t) s->tok.strip_accents << 10) | (s->nan_kept ? 1u << 16 : 0);

		put_u32(b, (uint32_t) s->kind);
		put_str(b, s->name);
		put_u32(b, flags);
		put_u32(b, (uint32_t) s->n_in);
		put_u32(b, (uint32_t) s->text_input);
		put_u32(b, (uint32_t) s->out);
		put_u32(b, (uint32_t) s->n_out);
		put_u32(b, (uint32_t) s->order);
		put_u32(b, (uint32_t) s->arith);
		put_u32(b, (uint32_t) s->norm);
		put_u32(b, (uint32_t) s->unknown);
		put_u32(b, (uint32_t) s->n_edges);
		put_u32(b, (uint32_t) s->n_categories);
		put_u32(b, (uint32_t) s->tok.ngram_min);
		put_u32(b, (uint32_t) s->tok.ngram_max);
		put_u32(b, (uint32_t) s->tok.min_token_len);
		put_u32(b, (uint32_t) s->tok.n_stop_words);
		put_u32(b, (uint32_t) s->n_vocab);
		put_u32(b, (uint32_t) s->n_used);
		put(b, &s->n_cols, sizeof(s->n_cols));
		put_f64(b, s->missing_value);
		put_f64(b, s->threshold);
		put_f64(b, s->lo);
		put_f64(b, s->hi);
		put_f64(b, s->unknown_value);
		put_arr(b, s->in, s->n_in, sizeof(int32_t));
		put_arr(b, s->sub, s->n_in, sizeof(double));
		put_arr(b, s->mul, s->n_in, sizeof(double));
		put_arr(b, s->add, s->n_in, sizeof(double));
		put_arr(b, s->value, s->n_in, sizeof(double));
		put_arr(b, s->constant, s->n_in, sizeof(double));
		put_arr(b, s->powers, (size_t) s->n_out * s->n_in, sizeof(int32_t));
		put_arr(b, s->edges, s->n_edges, sizeof(double));
		put_arr(b, s->categories_num, s->n_categories, sizeof(double));
		put_strs(b, s->categories_text, s->n_categories);
		put_arr(b, s->category_pos, s->n_categories, sizeof(int32_t));
		put_arr(b, s->label_values, s->n_categories, sizeof(double));
		put_strs(b, s->tok.stop_words, s->tok.n_stop_words);
		put_strs(b, s->vocab_terms, s->n_vocab);
		put_arr(b, s->vocab_cols, s->n_vocab, sizeof(int32_t));
		put_arr(b, s->idf, (size_t) s->n_cols, sizeof(double));
		put_arr(b, s->used_cols, s->n_used, sizeof(int64_t));
	}
	put_u32(b, (uint32_t) p->n_slots);
	put_u32(b, (uint32_t) p->n_features);
	put_arr(b, p->feature_slot, p->n_features, sizeof(int32_t));
	put_u32(b, p->zero_is_missing ? 1 : 0);
}

bool
hb_model_image_write(const HbModel *m, char **out, size_t *len, HbError *err)
{
	Buf			b = {0};
	uint32_t	flags = (m->has_feature_names ? 1 : 0) |
		(m->predict_class ? 2 : 0) | (m->sum_f32 ? 4 : 0) |
		(m->zero_snap ? 8 : 0);

	put_u32(&b, IMAGE_MAGIC);
	put_u32(&b, IMAGE_VERSION);
	put_u32(&b, (uint32_t) sizeof(HbNode));
	put_u32(&b, (uint32_t) m->format);
	put_u32(&b, (uint32_t) m->task);
	put_u32(&b, (uint32_t) m->estimator);
	put_u32(&b, (uint32_t) m->link);
	put_u32(&b, (uint32_t) m->cmp);
	put_u32(&b, flags);
	put_str(&b, m->objective);
	put_u32(&b, (uint32_t) m->n_features);
	for (int i = 0; i < m->n_features; i++)
	{
		put_str(&b, m->features[i].name);
		put_u32(&b, (uint32_t) m->features[i].type);
	}
	put_u32(&b, (uint32_t) m->n_outputs);
	put_u32(&b, (uint32_t) m->n_classes);
	put(&b, m->base_margin, sizeof(double) * m->n_outputs);
	if (m->estimator == HB_EST_LINEAR)
	{
		put(&b, m->weights, sizeof(double) * m->n_features * m->n_outputs);
		put(&b, m->bias, sizeof(double) * m->n_outputs);
	}
	else
	{
		put_u32(&b, (uint32_t) m->n_trees);
		for (int t = 0; t < m->n_trees; t++)
		{
			if ((t & 63) == 0)
				hb_check_interrupts();
			put_u32(&b, (uint32_t) m->trees[t].n_nodes);
			put_u32(&b, (uint32_t) m->trees[t].group);
			put(&b, m->trees[t].nodes, sizeof(HbNode) * m->trees[t].n_nodes);
		}
		put_u32(&b, (uint32_t) m->n_cat_words);
		put(&b, m->cat_words, sizeof(uint32_t) * m->n_cat_words);
	}
	put_pipeline(&b, m->pipeline);
	if (b.failed)
	{
		hb_free(b.data);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	*out = b.data;
	*len = b.len;
	return true;
}

typedef struct Rd
{
	const char *p;
	const char *end;
	bool		bad;
} Rd;

static bool
get(Rd *r, void *dst, size_t n)
{
	if (r->bad || (size_t) (r->end - r->p) < n)
	{
		r->bad = true;
		return false;
	}
	if (n)
		memcpy(dst, r->p, n);
	r->p += n;
	return true;
}

static uint32_t
get_u32(Rd *r)
{
	uint32_t	v = 0;

	get(r, &v, sizeof(v));
	return v;
}

static char *
get_str(Rd *r, bool *nomem)
{
	uint32_t	n = get_u32(r);
	char	   *s;

	if (r->bad || n == UINT32_MAX)
		return NULL;
	if ((size_t) (r->end - r->p) < n)
	{
		r->bad = true;
		return NULL;
	}
	s = hb_strndup(r->p, n);
	if (s == NULL)
		*nomem = true;
	r->p += n;
	return s;
}

/* Arrays whose element count comes from the image: bounded by what is left. */
static void *
get_array(Rd *r, size_t count, size_t elem, bool *nomem)
{
	void	   *a;

	if (r->bad || count > (size_t) (r->end - r->p) / (elem ? elem : 1))
	{
		r->bad = true;
		return NULL;
	}
	a = hb_alloc(count * elem + 1);
	if (a == NULL)
	{
		*nomem = true;
		r->bad = true;
		return NULL;
	}
	get(r, a, count * elem);
	return a;
}

/*
 * An array written by put_arr: NULL when written as NULL; its count must be
 * the one the step's sizes imply, else the image is corrupt.
 */
static void *
get_arr(Rd *r, size_t want, size_t elem, bool *nomem)
{
	uint32_t	n = get_u32(r);

	if (r->bad || n == UINT32_MAX)
		return NULL;
	if ((size_t) n != want)
	{
		r->bad = true;
		return NULL;
	}
	return get_array(r, n, elem, nomem);
}

static char **
get_strs(Rd *r, size_t want, bool *nomem)
{
	uint32_t	n = get_u32(r);
	char	  **a;

	if (r->bad || n == UINT32_MAX)
		return NULL;
	if ((size_t) n != want || n > (size_t) (r->end - r->p) / 4)
	{
		r->bad = true;
		return NULL;
	}
	a = hb_alloc0(sizeof(char *) * (n + 1));
	if (a == NULL)
	{
		*nomem = r->bad = true;
		return NULL;
	}
	for (uint32_t i = 0; i < n && !r->bad; i++)
		a[i] = get_str(r, nomem);
	return a;
}

static double
get_f64(Rd *r)
{
	double		v = 0;

	get(r, &v, sizeof(v));
	return v;
}

/* Sizes are bounded by what is left of the image before anything is allocated. */
static bool
count_ok(Rd *r, int64_t n)
{
	if (r->bad || n < 0 || n > (int64_t) (r->end - r->p) + 1)
		r->bad = true;
	return !r->bad;
}

static HbPipeline *
get_pipeline(Rd *r, bool *nomem)
{
	HbPipeline *p;

	if (get_u32(r) != 1 || r->bad)
		return NULL;
	p = hb_alloc0(sizeof(HbPipeline));
	if (p == NULL)
	{
		*nomem = r->bad = true;
		return NULL;
	}
	p->n_inputs = (int32_t) get_u32(r);
	if (count_ok(r, p->n_inputs))
	{
		p->inputs = hb_alloc0(sizeof(HbInput) * (p->n_inputs + 1));
		if (p->inputs == NULL)
			*nomem = r->bad = true;
	}
	for (int32_t i = 0; i < p->n_inputs && !r->bad; i++)
	{
		p->inputs[i].name = get_str(r, nomem);
		p->inputs[i].type = (HbInputType) get_u32(r);
		p->inputs[i].cost = (HbCostClass) get_u32(r);
		p->inputs[i].index = (int32_t) get_u32(r);
	}
	p->n_num_inputs = (int32_t) get_u32(r);
	p->n_text_inputs = (int32_t) get_u32(r);
	p->n_steps = (int32_t) get_u32(r);
	if (count_ok(r, p->n_steps))
	{
		p->steps = hb_alloc0(sizeof(HbStep) * (p->n_steps + 1));
		if (p->steps == NULL)
			*nomem = r->bad = true;
	}
	for (int32_t k = 0; k < p->n_steps && !r->bad; k++)
	{
		HbStep	   *s = &p->steps[k];
		uint32_t	flags;

		s->kind = (HbStepKind) get_u32(r);
		s->name = get_str(r, nomem);
		flags = get_u32(r);
		s->f32 = (flags & 1) != 0;
		s->has_missing_value = (flags & 2) != 0;
		s->nan_kept = (flags & (1u << 16)) != 0;
		s->onehot = (flags & 4) != 0;
		s->drop_first = (flags & 8) != 0;
		s->alternate_sign = (flags & 16) != 0;
		s->binary = (flags & 32) != 0;
		s->sublinear_tf = (flags & 64) != 0;
		s->tok.lowercase = (flags & 128) != 0;
		s->tok.char_ngrams = (flags & 256) != 0;
		s->tok.char_wb = (flags & 512) != 0;
		s->tok.strip_accents = (uint8_t) ((flags >> 10) & 3);
		s->n_in = (int32_t) get_u32(r);
		s->text_input = (int32_t) get_u32(r);
		s->out = (int32_t) get_u32(r);
		s->n_out = (int32_t) get_u32(r);
		s->order = (HbAffineOrder) get_u32(r);
		s->arith = (HbArithOp) get_u32(r);
		s->norm = (HbNorm) get_u32(r);
		s->unknown = (HbUnknown) get_u32(r);
		s->n_edges = (int32_t) get_u32(r);
		s->n_categories = (int32_t) get_u32(r);
		s->tok.ngram_min = (int32_t) get_u32(r);
		s->tok.ngram_max = (int32_t) get_u32(r);
		s->tok.min_token_len = (int32_t) get_u32(r);
		s->tok.n_stop_words = (int32_t) get_u32(r);
		s->n_vocab = (int32_t) get_u32(r);
		s->n_used = (int32_t) get_u32(r);
		get(r, &s->n_cols, sizeof(s->n_cols));
		s->missing_value = get_f64(r);
		s->threshold = get_f64(r);
		s->lo = get_f64(r);
		s->hi = get_f64(r);
		s->unknown_value = get_f64(r);
		if (!count_ok(r, s->n_in) || !count_ok(r, s->n_out) || !count_ok(r, s->n_edges) ||
			!count_ok(r, s->n_categories) || !count_ok(r, s->tok.n_stop_words) ||
			!count_ok(r, s->n_vocab) || !count_ok(r, s->n_used) ||
			s->n_cols < 0 || s->n_cols > INT32_MAX)
		{
			/* counts an array-free step never uses are still bounded */
			r->bad = true;
			break;
		}
		s->in = get_arr(r, s->n_in, sizeof(int32_t), nomem);
		s->sub = get_arr(r, s->n_in, sizeof(double), nomem);
		s->mul = get_arr(r, s->n_in, sizeof(double), nomem);
		s->add = get_arr(r, s->n_in, sizeof(double), nomem);
		s->value = get_arr(r, s->n_in, sizeof(double), nomem);
		s->constant = get_arr(r, s->n_in, sizeof(double), nomem);
		s->powers = get_arr(r, (size_t) s->n_out * s->n_in, sizeof(int32_t), nomem);
		s->edges = get_arr(r, s->n_edges, sizeof(double), nomem);
		s->categories_num = get_arr(r, s->n_categories, sizeof(double), nomem);
		s->categories_text = get_strs(r, s->n_categories, nomem);
		s->category_pos = get_arr(r, s->n_categories, sizeof(int32_t), nomem);
		s->label_values = get_arr(r, s->n_categories, sizeof(double), nomem);
		s->tok.stop_words = get_strs(r, s->tok.n_stop_words, nomem);
		s->vocab_terms = get_strs(r, s->n_vocab, nomem);
		s->vocab_cols = get_arr(r, s->n_vocab, sizeof(int32_t), nomem);
		s->idf = get_arr(r, (size_t) s->n_cols, sizeof(double), nomem);
		s->used_cols = get_arr(r, s->n_used, sizeof(int64_t), nomem);
		/* arrays the executor indexes must be there */
		if (!r->bad && ((s->n_in > 0 && s->in == NULL) ||
						(s->n_categories > 0 && s->category_pos == NULL) ||
						(s->kind == HB_STEP_IMPUTE && s->n_in > 0 && s->value == NULL)))
			r->bad = true;
	}
	p->n_slots = (int32_t) get_u32(r);
	p->n_features = (int32_t) get_u32(r);
	if (count_ok(r, p->n_features))
		p->feature_slot = get_arr(r, p->n_features, sizeof(int32_t), nomem);
	p->zero_is_missing = get_u32(r) == 1;
	return p;
}

/* A read that ran out of memory, or found the image corrupt: false. */
static bool
read_failed(bool nomem, HbError *err)
{
	if (nomem)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	return hb_fail(err, HB_ERR_INVALID, "stored model image is corrupt");
}

/*
 * Read an image: its model, then its pipeline.  Returns false with
 * err->code HB_OK when the bytes are not an image this build can use (the
 * caller parses the original instead), and with a real error code on
 * allocation failure or corruption found after the header matched.
 */
bool
hb_model_image_read(const char *bytes, size_t len, HbModel **out, HbError *err)
{
	size_t		at;

	if (!hb_model_image_read_split(bytes, len, out, &at, err))
		return false;
	if (at != 0 &&
		!hb_model_image_read_pipeline(bytes, len, at, (*out)->n_features,
									  &(*out)->pipeline, err))
	{
		hb_model_free(*out);
		*out = NULL;
		return false;
	}
	return true;
}

/*
 * The pipeline of an image hb_model_image_read_split read, at pipeline_at,
 * for a model of n_features features: read and checked as
 * hb_model_image_read checks it.
 */
bool
hb_model_image_read_pipeline(const char *bytes, size_t len, size_t pipeline_at,
							 int32_t n_features, HbPipeline **out, HbError *err)
{
	Rd			r = {bytes + pipeline_at, bytes + len, false};
	bool		nomem = false;
	HbPipeline *p;

	*out = NULL;
	if (pipeline_at == 0 || pipeline_at >= len)
		return hb_fail(err, HB_ERR_INVALID, "stored model image is corrupt");
	p = get_pipeline(&r, &nomem);
	if (!r.bad && (p == NULL || r.p != r.end))
		r.bad = true;
	if (nomem || r.bad)
	{
		hb_pipeline_free(p);
		return read_failed(nomem, err);
	}
	if (!hb_pipeline_validate(p, n_features, err))
	{
		hb_pipeline_free(p);
		return false;
	}
	*out = p;
	return true;
}

/*
 * An image's model without its pipeline (as hb_model_image_read reads
 * it); *pipeline_at is where the image holds one (read it with
 * hb_model_image_read_pipeline), 0 where it holds none.  For a caller that
 * keeps the pipeline in other memory than the model (a backend's cache:
 * the pipeline with the plan, the trees freed once compiled): reading it
 * there costs less than copying it.
 */
bool
hb_model_image_read_split(const char *bytes, size_t len, HbModel **out,
						  size_t *pipeline_at, HbError *err)
{
	Rd			r = {bytes, bytes + len, false};
	HbModel    *m;
	bool		nomem = false;
	uint32_t	flags;

	*out = NULL;
	*pipeline_at = 0;
	if (get_u32(&r) != IMAGE_MAGIC || get_u32(&r) != IMAGE_VERSION ||
		get_u32(&r) != sizeof(HbNode) || r.bad)
		return false;

	m = hb_alloc0(sizeof(HbModel));
	if (m == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	m->format = (HbFormat) get_u32(&r);
	m->task = (HbTask) get_u32(&r);
	m->estimator = (HbEstimator) get_u32(&r);
	m->link = (HbLink) get_u32(&r);
	m->cmp = (HbCmp) get_u32(&r);
	flags = get_u32(&r);
	m->has_feature_names = (flags & 1) != 0;
	m->predict_class = (flags & 2) != 0;
	m->sum_f32 = (flags & 4) != 0;
	m->zero_snap = (flags & 8) != 0;
	m->objective = get_str(&r, &nomem);
	m->n_features = (int32_t) get_u32(&r);
	if (!r.bad && (m->n_features <= 0 || m->n_features > HB_MAX_FEATURES))
		r.bad = true;
	if (!r.bad)
	{
		m->features = hb_alloc0(sizeof(HbFeature) * m->n_features);
		if (m->features == NULL)
			nomem = r.bad = true;
		for (int i = 0; i < m->n_features && !r.bad; i++)
		{
			m->features[i].name = get_str(&r, &nomem);
			m->features[i].type = (HbFeatureType) get_u32(&r);
		}
	}
	m->n_outputs = (int32_t) get_u32(&r);
	m->n_classes = (int32_t) get_u32(&r);
	if (!r.bad && (m->n_outputs <= 0 || m->n_outputs > 100000))
		r.bad = true;
	if (!r.bad)
		m->base_margin = get_array(&r, m->n_outputs, sizeof(double), &nomem);
	if (m->estimator == HB_EST_LINEAR)
	{
		if (!r.bad)
			m->weights = get_array(&r, (size_t) m->n_features * m->n_outputs,
								   sizeof(double), &nomem);
		if (!r.bad)
			m->bias = get_array(&r, m->n_outputs, sizeof(double), &nomem);
	}
	else
	{
		m->n_trees = (int32_t) get_u32(&r);
		if (!r.bad && (m->n_trees < 0 || (size_t) m->n_trees > len / 8))
			r.bad = true;
		if (!r.bad)
		{
			m->trees = hb_alloc0(sizeof(HbTree) * (m->n_trees + 1));
			if (m->trees == NULL)
				nomem = r.bad = true;
		}
		for (int t = 0; t < m->n_trees && !r.bad; t++)
		{
			HbTree	   *tree = &m->trees[t];

			if ((t & 63) == 0)
				hb_check_interrupts();

			tree->n_nodes = (int32_t) get_u32(&r);
			tree->group = (int32_t) get_u32(&r);
			if (tree->n_nodes <= 0)
				r.bad = true;
			else
				tree->nodes = get_array(&r, tree->n_nodes, sizeof(HbNode), &nomem);
		}
		if (!r.bad)
		{
			m->n_cat_words = (int32_t) get_u32(&r);
			if (m->n_cat_words < 0)
				r.bad = true;
			else if (m->n_cat_words > 0)
				m->cat_words = get_array(&r, m->n_cat_words, sizeof(uint32_t), &nomem);
		}
	}
	if (!r.bad)
	{
		/* the pipeline's flag word: 1 where one follows (not read here) */
		size_t		at = (size_t) (r.p - bytes);

		if (get_u32(&r) == 1 && !r.bad)
			*pipeline_at = at;
		else if (r.p != r.end)
			r.bad = true;
	}

	if (nomem || r.bad)
	{
		hb_model_free(m);
		return read_failed(nomem, err);
	}
	/* the same checks as any freshly read model: depth, indices, cycles */
	if (!hb_model_validate(m, err))
	{
		hb_model_free(m);
		return false;
	}
	*out = m;
	return true;
}

/*
 * A deep copy of a pipeline in the current allocator's memory (a backend's
 * cache keeps it next to the compiled plan): through its image form, so the
 * copy and the image can never disagree.
 */
bool
hb_pipeline_copy(const HbPipeline *p, HbPipeline **out, HbError *err)
{
	Buf			b = {0};
	Rd			r;
	bool		nomem = false;
	HbPipeline *c;

	*out = NULL;
	put_pipeline(&b, p);
	if (b.failed)
	{
		hb_free(b.data);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	r.p = b.data;
	r.end = b.data + b.len;
	r.bad = false;
	c = get_pipeline(&r, &nomem);
	hb_free(b.data);
	if (nomem || r.bad || c == NULL)
	{
		hb_pipeline_free(c);
		return hb_fail(err, nomem ? HB_ERR_NOMEM : HB_ERR_INVALID, "could not copy the pipeline");
	}
	if (!hb_pipeline_validate(c, p->n_features, err))
	{
		hb_pipeline_free(c);
		return false;
	}
	*out = c;
	return true;
}
