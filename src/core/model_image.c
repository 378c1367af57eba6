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
#define IMAGE_VERSION	1u

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

bool
hb_model_image_write(const HbModel *m, char **out, size_t *len, HbError *err)
{
	Buf			b = {0};
	uint32_t	flags = (m->has_feature_names ? 1 : 0) |
		(m->predict_class ? 2 : 0) | (m->sum_f32 ? 4 : 0) |
		(m->zero_snap ? 8 : 0);

	/* the image has no place for featurizers yet: refuse rather than drop */
	if (m->pipeline != NULL)
		return hb_fail(err, HB_ERR_UNSUPPORTED,
					   "models with featurizers (a pipeline) cannot be stored yet");
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
			put_u32(&b, (uint32_t) m->trees[t].n_nodes);
			put_u32(&b, (uint32_t) m->trees[t].group);
			put(&b, m->trees[t].nodes, sizeof(HbNode) * m->trees[t].n_nodes);
		}
		put_u32(&b, (uint32_t) m->n_cat_words);
		put(&b, m->cat_words, sizeof(uint32_t) * m->n_cat_words);
	}
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
 * Read an image.  Returns false with err->code HB_OK when the bytes are not
 * an image this build can use (the caller parses the original instead), and
 * with a real error code on allocation failure or corruption found after the
 * header matched.
 */
bool
hb_model_image_read(const char *bytes, size_t len, HbModel **out, HbError *err)
{
	Rd			r = {bytes, bytes + len, false};
	HbModel    *m;
	bool		nomem = false;
	uint32_t	flags;

	*out = NULL;
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
	if (!r.bad && r.p != r.end)
		r.bad = true;

	if (nomem || r.bad)
	{
		hb_model_free(m);
		if (nomem)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		return hb_fail(err, HB_ERR_INVALID, "stored model image is corrupt");
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
