/*
 * read_pipeline.c
 *	  Reader of hbird pipeline JSON ("format": "hbird-pipeline"): named raw
 *	  inputs, featurizer steps in scikit-learn's terms, the feature list and
 *	  a model, either embedded in another format or native (linear, trees).
 *	  docs/pipeline.md describes the format, docs/pipeline.schema.json its
 *	  schema.
 *
 * Steps refer to their inputs by name: an input's name, a step's name (all
 * its outputs) or "step:k" (its output k).  Text vectorizers have very wide
 * outputs, so the reader first collects which of their columns are referred
 * to at all and gives slots to those only.
 */
#include "featurize_int.h"
#include "json.h"
#include "model_builder.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WHOLE_TEXT 1000000	/* widest text step a whole reference may take */

typedef struct JStep
{
	const char *name;
	const char *op;
	bool		text;			/* a text vectorizer: sparse, kept columns */
	int64_t		width;			/* outputs (text: columns) */
	int32_t		out;			/* first slot */
	int64_t    *used;			/* text: referenced columns, sorted, unique */
	size_t		n_used;
	size_t		used_cap;
	bool		built;
} JStep;

typedef struct Reader
{
	HbError    *err;
	HbPipeline *p;
	size_t		steps_cap;
	JStep	   *js;
	int32_t		n_js;
	int32_t		next;			/* next free slot */
	int32_t		cur;			/* JSON step being read, for messages */
	int32_t    *slots;			/* one step's resolved inputs */
	size_t		n_slots;
	size_t		slots_cap;
	char	  **in_names;		/* the inputs' names, for in_index */
	HbNameIndex *in_index;		/* input name -> index */
} Reader;

static bool
fail(Reader *r, HbErrCode code, const char *fmt,...)
	__attribute__((format(printf, 3, 4)));

static bool
fail(Reader *r, HbErrCode code, const char *fmt,...)
{
	char		msg[400];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->cur >= 0 && r->cur < r->n_js)
		return hb_fail(r->err, code, "hbird pipeline: steps[%d] (%s): %s", r->cur,
					   r->js[r->cur].op ? r->js[r->cur].op : "?", msg);
	return hb_fail(r->err, code, "hbird pipeline: %s", msg);
}

static bool
nomem(Reader *r)
{
	return hb_fail(r->err, HB_ERR_NOMEM, "out of memory while reading the hbird pipeline");
}

/* ------------------------------------------------------------ json helpers */

static const char *
get_str(const HbJson *o, const char *key)
{
	return hb_json_string(hb_json_get(o, key));
}

static bool
get_bool(Reader *r, const HbJson *o, const char *key, bool dflt, bool *out)
{
	const HbJson *v = hb_json_get(o, key);

	*out = dflt;
	if (v == NULL || hb_json_is_null(v))
		return true;
	if (!hb_json_bool(v, out))
		return fail(r, HB_ERR_INVALID, "field \"%s\" must be true or false", key);
	return true;
}

static bool
get_int(Reader *r, const HbJson *o, const char *key, int64_t dflt, bool required,
		int64_t lo, int64_t hi, int64_t *out)
{
	const HbJson *v = hb_json_get(o, key);

	*out = dflt;
	if (v == NULL || hb_json_is_null(v))
	{
		if (required)
			return fail(r, HB_ERR_INVALID, "field \"%s\" is missing", key);
		return true;
	}
	if (!hb_json_int(v, out) || *out < lo || *out > hi)
		return fail(r, HB_ERR_INVALID, "field \"%s\" must be an integer from %lld to %lld",
					key, (long long) lo, (long long) hi);
	return true;
}

static bool
get_num(Reader *r, const HbJson *o, const char *key, double dflt, bool required,
		double *out)
{
	const HbJson *v = hb_json_get(o, key);

	*out = dflt;
	if (v == NULL || hb_json_is_null(v))
	{
		if (required)
			return fail(r, HB_ERR_INVALID, "field \"%s\" is missing", key);
		return true;
	}
	if (!hb_json_number(v, out))
		return fail(r, HB_ERR_INVALID, "field \"%s\" must be a number", key);
	return true;
}

/*
 * A number array of n entries (n < 0: any, *n_out gets it); null entries
 * are NaN when nulls are allowed.  Absent: *out NULL (error if required).
 */
static bool
get_nums(Reader *r, const HbJson *o, const char *key, int64_t n, bool required,
		 bool nulls, double **out, int64_t *n_out)
{
	const HbJson *v = hb_json_get(o, key);
	size_t		len;

	*out = NULL;
	if (v == NULL || hb_json_is_null(v))
	{
		if (required)
			return fail(r, HB_ERR_INVALID, "field \"%s\" is missing", key);
		return true;
	}
	if (!hb_json_is_array(v))
		return fail(r, HB_ERR_INVALID, "field \"%s\" must be an array of numbers", key);
	len = hb_json_len(v);
	if (n >= 0 && (int64_t) len != n)
		return fail(r, HB_ERR_INVALID, "field \"%s\" has %zu entries, expected %lld",
					key, len, (long long) n);
	*out = hb_alloc(sizeof(double) * (len ? len : 1));
	if (*out == NULL)
		return nomem(r);
	for (size_t i = 0; i < len; i++)
	{
		const HbJson *e = hb_json_at(v, i);

		if (nulls && hb_json_is_null(e))
			(*out)[i] = NAN;
		else if (!hb_json_number(e, &(*out)[i]))
		{
			hb_free(*out);
			*out = NULL;
			return fail(r, HB_ERR_INVALID, "field \"%s\"[%zu] must be a number", key, i);
		}
	}
	if (n_out)
		*n_out = (int64_t) len;
	return true;
}

/* ---------------------------------------------------------------- refs */

/*
 * The input named name (len bytes), or -1.  Through an index of the names:
 * a pipeline takes up to 100,000 inputs, each named again by the steps,
 * and scanning the list made reading quadratic (9.6 s for 40,000 inputs).
 */
static int32_t
find_input(const Reader *r, const char *name, size_t len)
{
	return r->in_index ? hb_name_index_find(r->in_index, r->in_names, name, len) : -1;
}

static int32_t
find_jstep(const Reader *r, const char *name, size_t len, int32_t before)
{
	for (int32_t i = before - 1; i >= 0; i--)
		if (r->js[i].name && strlen(r->js[i].name) == len &&
			memcmp(r->js[i].name, name, len) == 0)
			return i;
	return -1;
}

/* Split "name:k" (k digits); *k = -1 without a suffix. */
static size_t
split_ref(const char *ref, int64_t *k)
{
	const char *colon = strrchr(ref, ':');
	size_t		len = strlen(ref);

	*k = -1;
	if (colon && colon[1] != '\0' && strspn(colon + 1, "0123456789") == strlen(colon + 1) &&
		strlen(colon + 1) <= 10)
	{
		*k = strtoll(colon + 1, NULL, 10);
		return (size_t) (colon - ref);
	}
	return len;
}

static bool
mark_used(Reader *r, JStep *j, int64_t col)
{
	void	   *g = hb_grow(j->used, &j->used_cap, j->n_used + 1, sizeof(int64_t));

	if (g == NULL)
		return nomem(r);
	j->used = g;
	j->used[j->n_used++] = col;
	return true;
}

/* First pass: a reference to a text step marks the columns it needs. */
static bool
mark_ref(Reader *r, const char *ref, int32_t before)
{
	int64_t		k;
	size_t		len = split_ref(ref, &k);
	int32_t		s = find_input(r, ref, strlen(ref)) >= 0 ? -1 :
		find_jstep(r, ref, len, before);
	JStep	   *j;

	if (s < 0 || !r->js[s].text)
		return true;			/* resolved (or refused) in the second pass */
	j = &r->js[s];
	if (k >= 0)
		return k < j->width ? mark_used(r, j, k) : true;
	if (j->width > MAX_WHOLE_TEXT)
		return fail(r, HB_ERR_LIMIT,
					"reference \"%s\" takes all %lld columns of a text step; refer to the columns used (\"%s:k\")",
					ref, (long long) j->width, ref);
	for (int64_t c = 0; c < j->width; c++)
		if (!mark_used(r, j, c))
			return false;
	return true;
}

static bool
add_slot(Reader *r, int32_t slot)
{
	void	   *g = hb_grow(r->slots, &r->slots_cap, r->n_slots + 1, sizeof(int32_t));

	if (g == NULL)
		return nomem(r);
	r->slots = g;
	r->slots[r->n_slots++] = slot;
	return true;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a,
				y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/* Second pass: a numeric reference to its slots, appended to r->slots. */
static bool
resolve_ref(Reader *r, const char *ref, int32_t before)
{
	int64_t		k;
	size_t		len;
	int32_t		i = find_input(r, ref, strlen(ref));
	int32_t		s;
	JStep	   *j;

	if (i >= 0)
	{
		int64_t		k2;

		/* an input "s1:0" and a step "s1" would read either: refused */
		if (find_jstep(r, ref, split_ref(ref, &k2), before) >= 0)
			return fail(r, HB_ERR_INVALID,
						"reference \"%s\" names both an input and an earlier step's output", ref);
		if (r->p->inputs[i].type != HB_INPUT_NUMERIC)
			return fail(r, HB_ERR_INVALID,
						"\"%s\" is a text input; only text steps (encoders, vectorizers) read it", ref);
		return add_slot(r, r->p->inputs[i].index);
	}
	len = split_ref(ref, &k);
	s = find_jstep(r, ref, len, before);
	if (s < 0)
		return fail(r, HB_ERR_INVALID, "reference \"%s\" names no input and no earlier step", ref);
	j = &r->js[s];
	if (k >= j->width)
		return fail(r, HB_ERR_INVALID, "reference \"%s\": step \"%s\" has %lld outputs",
					ref, j->name, (long long) j->width);
	if (j->text && k >= 0)
	{
		/* used is sorted and unique (build_text): one column is a search */
		const int64_t *u = bsearch(&k, j->used, j->n_used, sizeof(int64_t), cmp_i64);

		return u == NULL || add_slot(r, j->out + (int32_t) (u - j->used));
	}
	if (j->text)
	{
		for (size_t u = 0; u < j->n_used; u++)
			if (!add_slot(r, j->out + (int32_t) u))
				return false;
		return true;
	}
	if (k >= 0)
		return add_slot(r, j->out + (int32_t) k);
	for (int64_t c = 0; c < j->width; c++)
		if (!add_slot(r, j->out + (int32_t) c))
			return false;
	return true;
}

/* A step's "in": the slots of its references, in r->slots. */
static bool
resolve_in(Reader *r, const HbJson *js, bool required)
{
	const HbJson *in = hb_json_get(js, "in");

	r->n_slots = 0;
	if (in == NULL && !required)
		return true;
	if (!hb_json_is_array(in) || hb_json_len(in) == 0)
		return fail(r, HB_ERR_INVALID, "field \"in\" must be a non-empty array of references");
	for (size_t i = 0; i < hb_json_len(in); i++)
	{
		const char *ref = hb_json_string(hb_json_at(in, i));

		if (ref == NULL)
			return fail(r, HB_ERR_INVALID, "field \"in\"[%zu] must be a string", i);
		if (!resolve_ref(r, ref, r->cur))
			return false;
	}
	return true;
}

/* The text input a step reads ("input"). */
static bool
text_input(Reader *r, const HbJson *js, const char *key, int32_t *out)
{
	const char *name = get_str(js, key);
	int32_t		i;

	if (name == NULL)
		return fail(r, HB_ERR_INVALID, "field \"%s\" must name a text input", key);
	i = find_input(r, name, strlen(name));
	if (i < 0 || r->p->inputs[i].type != HB_INPUT_TEXT)
		return fail(r, HB_ERR_INVALID, "field \"%s\": \"%s\" is not a text input", key, name);
	*out = r->p->inputs[i].index;
	return true;
}

/* ---------------------------------------------------------------- steps */

static HbStep *
new_step(Reader *r, HbStepKind kind, int32_t n_in, const int32_t *in, int32_t n_out)
{
	HbPipeline *p = r->p;
	void	   *g = hb_grow(p->steps, &r->steps_cap, p->n_steps + 1, sizeof(HbStep));
	HbStep	   *s;

	if (g == NULL)
	{
		nomem(r);
		return NULL;
	}
	p->steps = g;
	s = &p->steps[p->n_steps++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->n_in = n_in;
	s->out = r->next;
	s->n_out = n_out;
	if (n_in > 0)
	{
		s->in = hb_alloc(sizeof(int32_t) * n_in);
		if (s->in == NULL)
		{
			nomem(r);
			return NULL;
		}
		memcpy(s->in, in, sizeof(int32_t) * n_in);
	}
	if ((int64_t) r->next + n_out > 16000000)
	{
		fail(r, HB_ERR_LIMIT, "the pipeline has too many slots");
		return NULL;
	}
	r->next += n_out;
	return s;
}

/* Element-wise step over r->slots. */
static HbStep *
elementwise(Reader *r, HbStepKind kind)
{
	return new_step(r, kind, (int32_t) r->n_slots, r->slots, (int32_t) r->n_slots);
}

static bool
build_affine(Reader *r, const HbJson *js, const char *op)
{
	int64_t		n = (int64_t) r->n_slots;
	HbStep	   *s = elementwise(r, HB_STEP_AFFINE);

	if (s == NULL)
		return false;
	if (strcmp(op, "standard_scaler") == 0)
	{
		s->order = HB_AFFINE_SUB_DIV;
		return get_nums(r, js, "mean", n, false, false, &s->sub, NULL) &&
			get_nums(r, js, "scale", n, false, false, &s->mul, NULL);
	}
	if (strcmp(op, "robust_scaler") == 0)
	{
		s->order = HB_AFFINE_SUB_DIV;
		return get_nums(r, js, "center", n, false, false, &s->sub, NULL) &&
			get_nums(r, js, "scale", n, false, false, &s->mul, NULL);
	}
	if (strcmp(op, "maxabs_scaler") == 0)
	{
		s->order = HB_AFFINE_SUB_DIV;
		return get_nums(r, js, "scale", n, true, false, &s->mul, NULL);
	}
	if (strcmp(op, "minmax_scaler") == 0)
	{
		s->order = HB_AFFINE_MUL_ADD;
		return get_nums(r, js, "scale", n, true, false, &s->mul, NULL) &&
			get_nums(r, js, "min", n, true, false, &s->add, NULL);
	}
	/* "affine": ((x - sub) * mul) + add */
	s->order = HB_AFFINE_SUB_MUL_ADD;
	return get_nums(r, js, "sub", n, false, false, &s->sub, NULL) &&
		get_nums(r, js, "mul", n, false, false, &s->mul, NULL) &&
		get_nums(r, js, "add", n, false, false, &s->add, NULL);
}

static bool
missing_value(Reader *r, const HbJson *js, HbStep *s)
{
	const HbJson *v = hb_json_get(js, "missing_value");

	if (v == NULL || hb_json_is_null(v))
		return true;
	if (!hb_json_number(v, &s->missing_value))
		return fail(r, HB_ERR_INVALID, "field \"missing_value\" must be a number or null");
	if (!isnan(s->missing_value))
		s->has_missing_value = true;
	return true;
}

/*
 * One category list entry: text or number (null: the missing category).
 * Fills categories_text or categories_num of s at i.
 */
static bool
read_categories(Reader *r, const HbJson *cats, HbStep *s, bool text)
{
	size_t		n = hb_json_len(cats);

	if (!hb_json_is_array(cats))
		return fail(r, HB_ERR_INVALID, "field \"categories\" must hold one array per input");
	s->n_categories = (int32_t) n;
	/* one spare entry for the NULL category of "null_as" */
	if (text)
		s->categories_text = hb_alloc0(sizeof(char *) * (n + 1));
	else
		s->categories_num = hb_alloc(sizeof(double) * (n + 1));
	if (text ? s->categories_text == NULL : s->categories_num == NULL)
		return nomem(r);
	for (size_t i = 0; i < n; i++)
	{
		const HbJson *e = hb_json_at(cats, i);

		if (hb_json_is_null(e))
		{
			if (!text)
				s->categories_num[i] = NAN;
			continue;
		}
		if (text)
		{
			const char *str = hb_json_string(e);
			char		num[64];
			double		d;

			/* integer categories over a text column read as their text */
			if (str == NULL && hb_json_number(e, &d))
			{
				snprintf(num, sizeof(num), "%.17g", d);
				str = num;
			}
			if (str == NULL)
				return fail(r, HB_ERR_INVALID, "category %zu must be a string or null", i);
			s->categories_text[i] = hb_strdup(str);
			if (s->categories_text[i] == NULL)
				return nomem(r);
		}
		else if (!hb_json_number(e, &s->categories_num[i]))
			return fail(r, HB_ERR_INVALID, "category %zu of a numeric input must be a number or null", i);
	}
	return true;
}

/*
 * one_hot_encoder / ordinal_encoder: one IR step per entry of "in", which
 * names text inputs or numeric references.
 */
static bool
build_encoder(Reader *r, const HbJson *js, bool onehot)
{
	const HbJson *in = hb_json_get(js, "in");
	const HbJson *cats = hb_json_get(js, "categories");
	const HbJson *drop = hb_json_get(js, "drop");
	const HbJson *null_as = hb_json_get(js, "null_as");
	const HbJson *null_codes = onehot ? NULL : hb_json_get(js, "null_codes");
	const char *hu = get_str(js, "handle_unknown");
	HbUnknown	unknown = HB_UNKNOWN_ERROR;
	double		unknown_value = NAN,
				missing_out = NAN;
	bool		has_missing_out = hb_json_get(js, "encoded_missing_value") != NULL;

	if (!hb_json_is_array(in) || hb_json_len(in) == 0)
		return fail(r, HB_ERR_INVALID, "field \"in\" must be a non-empty array");
	if (!hb_json_is_array(cats) || hb_json_len(cats) != hb_json_len(in))
		return fail(r, HB_ERR_INVALID, "field \"categories\" must hold one array per input");
	if (drop && !hb_json_is_null(drop) &&
		(!hb_json_is_array(drop) || hb_json_len(drop) != hb_json_len(in)))
		return fail(r, HB_ERR_INVALID, "field \"drop\" must hold one index (or null) per input");
	if (null_as && !hb_json_is_null(null_as) &&
		(!hb_json_is_array(null_as) || hb_json_len(null_as) != hb_json_len(in)))
		return fail(r, HB_ERR_INVALID, "field \"null_as\" must hold one value (or null) per input");
	if (null_as && hb_json_is_null(null_as))
		null_as = NULL;
	if (null_codes && !hb_json_is_null(null_codes) &&
		(!hb_json_is_array(null_codes) || hb_json_len(null_codes) != hb_json_len(in)))
		return fail(r, HB_ERR_INVALID, "field \"null_codes\" must hold one number (or null) per input");
	if (null_codes && hb_json_is_null(null_codes))
		null_codes = NULL;
	if (hu == NULL || strcmp(hu, "error") == 0)
		unknown = HB_UNKNOWN_ERROR;
	else if (strcmp(hu, "ignore") == 0)
		unknown = HB_UNKNOWN_IGNORE;
	else if (strcmp(hu, "use_encoded_value") == 0 && !onehot)
	{
		unknown = HB_UNKNOWN_VALUE;
		/* null: NaN (scikit-learn's unknown_value=np.nan) */
		if (hb_json_get(js, "unknown_value") == NULL)
			return fail(r, HB_ERR_INVALID, "field \"unknown_value\" is missing");
		if (!get_num(r, js, "unknown_value", NAN, false, &unknown_value))
			return false;
		if (isnan(unknown_value))
			unknown = HB_UNKNOWN_IGNORE;
	}
	else
		return fail(r, HB_ERR_UNSUPPORTED, "handle_unknown \"%s\" is not supported", hu);
	if (has_missing_out && !get_num(r, js, "encoded_missing_value", NAN, false, &missing_out))
		return false;

	for (size_t f = 0; f < hb_json_len(in); f++)
	{
		const char *ref = hb_json_string(hb_json_at(in, f));
		int32_t		i;
		bool		text;
		HbStep	   *s;
		const HbJson *c = hb_json_at(cats, f);
		int64_t		dropi = -1;
		int32_t		n_cat = (int32_t) hb_json_len(c);
		int32_t		slot = -1;

		if (ref == NULL)
			return fail(r, HB_ERR_INVALID, "field \"in\"[%zu] must be a string", f);
		i = find_input(r, ref, strlen(ref));
		text = i >= 0 && r->p->inputs[i].type == HB_INPUT_TEXT;
		if (!text)
		{
			r->n_slots = 0;
			if (!resolve_ref(r, ref, r->cur))
				return false;
			if (r->n_slots != 1)
				return fail(r, HB_ERR_INVALID, "encoder input \"%s\" must be one column", ref);
			slot = r->slots[0];
		}
		if (drop && !hb_json_is_null(drop) && !hb_json_is_null(hb_json_at(drop, f)) &&
			(!hb_json_int(hb_json_at(drop, f), &dropi) || dropi < 0 || dropi >= n_cat))
			return fail(r, HB_ERR_INVALID, "field \"drop\"[%zu] is out of range", f);
		s = new_step(r, text ? HB_STEP_ONEHOT_TEXT : HB_STEP_ONEHOT_NUM,
					 text ? 0 : 1, &slot,
					 onehot ? n_cat - (dropi >= 0) : 1);
		if (s == NULL)
			return false;
		s->name = hb_strdup(ref);
		if (s->name == NULL)
			return nomem(r);
		s->onehot = onehot;
		s->unknown = unknown;
		s->unknown_value = unknown_value;
		if (text)
			s->text_input = r->p->inputs[i].index;
		if (!read_categories(r, c, s, text))
			return false;
		s->category_pos = hb_alloc(sizeof(int32_t) * (n_cat + 1));
		if (s->category_pos == NULL)
			return nomem(r);
		for (int32_t k = 0; k < n_cat; k++)
			s->category_pos[k] = dropi < 0 || k < dropi ? k : k == dropi ? -1 : k - 1;
		if (!onehot)
		{
			/*
			 * scikit-learn's OrdinalEncoder: the missing category (NaN)
			 * encodes as encoded_missing_value; a text category None is an
			 * ordinary one there, encoded as its index, which null_codes
			 * gives (SQL NULL is both)
			 */
			double		null_out = missing_out;
			const HbJson *nc = null_codes ? hb_json_at(null_codes, f) : NULL;

			if (nc && !hb_json_is_null(nc))
			{
				if (!hb_json_is_number(nc) || !hb_json_number(nc, &null_out) || !isfinite(null_out))
					return fail(r, HB_ERR_INVALID, "field \"null_codes\"[%zu] must be a finite number or null", f);
			}
			s->label_values = hb_alloc(sizeof(double) * (n_cat + 1));
			if (s->label_values == NULL)
				return nomem(r);
			for (int32_t k = 0; k < n_cat; k++)
			{
				bool		miss = text ? s->categories_text[k] == NULL : isnan(s->categories_num[k]);

				s->label_values[k] = miss ? null_out : k;
			}
		}
		if (text && null_as && !hb_json_is_null(hb_json_at(null_as, f)))
		{
			/* an imputer's fill value in front: NULL encodes as that category */
			const char *fill = hb_json_string(hb_json_at(null_as, f));
			bool		has_null = false;
			int32_t		at = -1;

			if (fill == NULL)
				return fail(r, HB_ERR_INVALID, "field \"null_as\"[%zu] must be a string or null", f);
			for (int32_t k = 0; k < n_cat; k++)
			{
				if (s->categories_text[k] == NULL)
					has_null = true;
				else if (strcmp(s->categories_text[k], fill) == 0)
					at = k;
			}
			if (!has_null && at >= 0)
			{
				s->categories_text[n_cat] = NULL;
				s->category_pos[n_cat] = s->category_pos[at];
				if (s->label_values)
					s->label_values[n_cat] = s->label_values[at];
				s->n_categories = n_cat + 1;
			}
		}
	}
	return true;
}

static bool
build_kbins(Reader *r, const HbJson *js)
{
	const HbJson *edges = hb_json_get(js, "edges");
	const char *enc = get_str(js, "encode");
	bool		onehot;
	size_t		n = r->n_slots;
	int32_t    *in;

	if (enc == NULL || strcmp(enc, "onehot-dense") == 0 || strcmp(enc, "onehot") == 0)
		onehot = true;
	else if (strcmp(enc, "ordinal") == 0)
		onehot = false;
	else
		return fail(r, HB_ERR_UNSUPPORTED, "encode \"%s\" is not supported", enc);
	if (!hb_json_is_array(edges) || hb_json_len(edges) != n)
		return fail(r, HB_ERR_INVALID, "field \"edges\" must hold one array of bin edges per input");
	in = hb_alloc(sizeof(int32_t) * n);
	if (in == NULL)
		return nomem(r);
	memcpy(in, r->slots, sizeof(int32_t) * n);
	for (size_t f = 0; f < n; f++)
	{
		const HbJson *e = hb_json_at(edges, f);
		size_t		ne = hb_json_len(e);
		HbStep	   *s;

		if (!hb_json_is_array(e) || ne < 2)
		{
			hb_free(in);
			return fail(r, HB_ERR_INVALID, "edges[%zu] must hold at least two edges", f);
		}
		/* the outer edges bound the training data only: bins use the inner ones */
		s = new_step(r, HB_STEP_KBINS, 1, &in[f], onehot ? (int32_t) ne - 1 : 1);
		if (s == NULL)
		{
			hb_free(in);
			return false;
		}
		s->onehot = onehot;
		s->n_edges = (int32_t) ne - 2;
		s->edges = hb_alloc(sizeof(double) * ne);
		if (s->edges == NULL)
		{
			hb_free(in);
			return nomem(r);
		}
		for (size_t k = 1; k + 1 < ne; k++)
			if (!hb_json_number(hb_json_at(e, k), &s->edges[k - 1]))
			{
				hb_free(in);
				return fail(r, HB_ERR_INVALID, "edges[%zu][%zu] must be a number", f, k);
			}
	}
	hb_free(in);
	return true;
}

static bool
build_poly(Reader *r, const HbJson *js)
{
	const HbJson *pw = hb_json_get(js, "powers");
	size_t		n_out = hb_json_len(pw);
	int32_t		n_in = (int32_t) r->n_slots;
	HbStep	   *s;

	if (!hb_json_is_array(pw) || n_out == 0)
		return fail(r, HB_ERR_INVALID, "field \"powers\" must be a non-empty array (scikit-learn's powers_)");
	s = new_step(r, HB_STEP_POLY, n_in, r->slots, (int32_t) n_out);
	if (s == NULL)
		return false;
	s->powers = hb_alloc(sizeof(int32_t) * n_out * (n_in ? n_in : 1));
	if (s->powers == NULL)
		return nomem(r);
	for (size_t k = 0; k < n_out; k++)
	{
		const HbJson *row = hb_json_at(pw, k);

		if (!hb_json_is_array(row) || hb_json_len(row) != (size_t) n_in)
			return fail(r, HB_ERR_INVALID, "powers[%zu] must hold one exponent per input", k);
		for (int32_t i = 0; i < n_in; i++)
		{
			int64_t		e;

			if (!hb_json_int(hb_json_at(row, i), &e) || e < 0 || e > 32)
				return fail(r, HB_ERR_INVALID, "powers[%zu][%d] must be an integer from 0 to 32", k, i);
			s->powers[k * n_in + i] = (int32_t) e;
		}
	}
	return true;
}

static bool
read_tokenizer(Reader *r, const HbJson *js, HbStep *s)
{
	HbTokenizer *t = &s->tok;
	const char *an = get_str(js, "analyzer");
	const char *pat = get_str(js, "token_pattern");
	const char *sa = get_str(js, "strip_accents");
	const HbJson *ng = hb_json_get(js, "ngram_range");
	const HbJson *sw = hb_json_get(js, "stop_words");
	int64_t		lo = 1,
				hi = 1;

	if (!get_bool(r, js, "lowercase", true, &t->lowercase))
		return false;
	if (an == NULL || strcmp(an, "word") == 0)
		t->char_ngrams = false;
	else if (strcmp(an, "char") == 0)
		t->char_ngrams = true;
	else if (strcmp(an, "char_wb") == 0)
		t->char_ngrams = t->char_wb = true;
	else
		return fail(r, HB_ERR_UNSUPPORTED, "analyzer \"%s\" is not supported (word, char, char_wb)", an);
	if (sa == NULL && !hb_json_is_null(hb_json_get(js, "strip_accents")) &&
		hb_json_get(js, "strip_accents") != NULL)
		return fail(r, HB_ERR_INVALID, "field \"strip_accents\" must be null, \"unicode\" or \"ascii\"");
	if (sa == NULL)
		t->strip_accents = HB_STRIP_NONE;
	else if (strcmp(sa, "unicode") == 0)
		t->strip_accents = HB_STRIP_UNICODE;
	else if (strcmp(sa, "ascii") == 0)
		t->strip_accents = HB_STRIP_ASCII;
	else
		return fail(r, HB_ERR_UNSUPPORTED, "strip_accents \"%s\" is not supported (unicode, ascii)", sa);
	t->min_token_len = 2;
	if (pat != NULL)
	{
		if (strcmp(pat, "(?u)\\b\\w\\w+\\b") == 0 || strcmp(pat, "\\b\\w\\w+\\b") == 0)
			t->min_token_len = 2;
		else if (strcmp(pat, "(?u)\\b\\w+\\b") == 0 || strcmp(pat, "\\b\\w+\\b") == 0)
			t->min_token_len = 1;
		else
			return fail(r, HB_ERR_UNSUPPORTED,
						"token_pattern \"%.100s\" is not supported (\\b\\w\\w+\\b or \\b\\w+\\b)", pat);
	}
	if (ng != NULL)
	{
		if (!hb_json_is_array(ng) || hb_json_len(ng) != 2 ||
			!hb_json_int(hb_json_at(ng, 0), &lo) || !hb_json_int(hb_json_at(ng, 1), &hi) ||
			lo < 1 || hi < lo || hi > 16)
			return fail(r, HB_ERR_INVALID, "field \"ngram_range\" must be [min, max] with 1 <= min <= max <= 16");
	}
	t->ngram_min = (int32_t) lo;
	t->ngram_max = (int32_t) hi;
	if (sw != NULL && !hb_json_is_null(sw))
	{
		if (!hb_json_is_array(sw))
			return fail(r, HB_ERR_INVALID, "field \"stop_words\" must be an array of strings");
		t->stop_words = hb_alloc0(sizeof(char *) * (hb_json_len(sw) + 1));
		if (t->stop_words == NULL)
			return nomem(r);
		for (size_t i = 0; i < hb_json_len(sw); i++)
		{
			const char *w = hb_json_string(hb_json_at(sw, i));

			if (w == NULL)
				return fail(r, HB_ERR_INVALID, "stop_words[%zu] must be a string", i);
			t->stop_words[t->n_stop_words] = hb_strdup(w);
			if (t->stop_words[t->n_stop_words++] == NULL)
				return nomem(r);
		}
	}
	return true;
}

static bool
read_norm(Reader *r, const HbJson *js, HbNorm dflt, HbNorm *out)
{
	const HbJson *v = hb_json_get(js, "norm");
	const char *n = hb_json_string(v);

	*out = dflt;
	if (v == NULL)
		return true;
	if (hb_json_is_null(v))
		*out = HB_NORM_NONE;
	else if (n && strcmp(n, "l1") == 0)
		*out = HB_NORM_L1;
	else if (n && strcmp(n, "l2") == 0)
		*out = HB_NORM_L2;
	else if (n && strcmp(n, "max") == 0)
		*out = HB_NORM_MAX;
	else
		return fail(r, HB_ERR_INVALID, "field \"norm\" must be \"l1\", \"l2\", \"max\" or null");
	return true;
}

/* Width of a text step, for the first pass. */
static bool
text_width(Reader *r, const HbJson *js, const char *op, int64_t *w)
{
	if (strcmp(op, "hashing_vectorizer") == 0)
		return get_int(r, js, "n_features", 1048576, false, 1, INT32_MAX, w);
	{
		const HbJson *voc = hb_json_get(js, "vocabulary");
		int64_t		maxc = -1;

		if (!hb_json_is_object(voc))
			return fail(r, HB_ERR_INVALID, "field \"vocabulary\" must be an object of term: column");
		for (size_t i = 0; i < hb_json_len(voc); i++)
		{
			int64_t		c;

			if (!hb_json_int(hb_json_value_at(voc, i), &c) || c < 0 || c >= INT32_MAX)
				return fail(r, HB_ERR_INVALID, "vocabulary term \"%.100s\" has a bad column",
							hb_json_key_at(voc, i));
			if (c > maxc)
				maxc = c;
		}
		*w = maxc + 1 > 0 ? maxc + 1 : 1;
	}
	return true;
}

static bool
build_text(Reader *r, const HbJson *js, const char *op, JStep *j)
{
	bool		hashing = strcmp(op, "hashing_vectorizer") == 0;
	bool		tfidf = strcmp(op, "tfidf_vectorizer") == 0;
	HbStep	   *s;
	int32_t		ti = 0;

	if (!text_input(r, js, "input", &ti))
		return false;
	/* kept columns: sorted and unique */
	if (j->n_used > 1)
	{
		size_t		m = 1;

		qsort(j->used, j->n_used, sizeof(int64_t), cmp_i64);
		for (size_t i = 1; i < j->n_used; i++)
			if (j->used[i] != j->used[m - 1])
				j->used[m++] = j->used[i];
		j->n_used = m;
	}
	s = new_step(r, hashing ? HB_STEP_HASHING : HB_STEP_TFIDF, 0, NULL, (int32_t) j->n_used);
	if (s == NULL)
		return false;
	s->text_input = ti;
	s->n_cols = j->width;
	s->n_used = (int32_t) j->n_used;
	s->used_cols = hb_alloc(sizeof(int64_t) * (j->n_used ? j->n_used : 1));
	if (s->used_cols == NULL)
		return nomem(r);
	if (j->n_used)
		memcpy(s->used_cols, j->used, sizeof(int64_t) * j->n_used);
	if (!read_tokenizer(r, js, s) ||
		!get_bool(r, js, "binary", false, &s->binary) ||
		!read_norm(r, js, (hashing || tfidf) ? HB_NORM_L2 : HB_NORM_NONE, &s->norm))
		return false;
	if (hashing)
		return get_bool(r, js, "alternate_sign", true, &s->alternate_sign);
	{
		const HbJson *voc = hb_json_get(js, "vocabulary");
		size_t		n = hb_json_len(voc);
		int64_t		n_idf;

		s->n_vocab = (int32_t) n;
		s->vocab_terms = hb_alloc0(sizeof(char *) * (n ? n : 1));
		s->vocab_cols = hb_alloc(sizeof(int32_t) * (n ? n : 1));
		if (s->vocab_terms == NULL || s->vocab_cols == NULL)
			return nomem(r);
		for (size_t i = 0; i < n; i++)
		{
			int64_t		c = 0;

			(void) hb_json_int(hb_json_value_at(voc, i), &c);
			s->vocab_terms[i] = hb_strdup(hb_json_key_at(voc, i));
			if (s->vocab_terms[i] == NULL)
				return nomem(r);
			s->vocab_cols[i] = (int32_t) c;
		}
		if (!get_bool(r, js, "sublinear_tf", false, &s->sublinear_tf))
			return false;
		if (tfidf && !get_nums(r, js, "idf", s->n_cols, false, false, &s->idf, &n_idf))
			return false;
	}
	return true;
}

static bool
build_step(Reader *r, const HbJson *js, JStep *j)
{
	const char *op = j->op;
	HbStep	   *s;

	j->out = r->next;
	if (j->text)
		return build_text(r, js, op, j);
	if (strcmp(op, "one_hot_encoder") == 0 || strcmp(op, "ordinal_encoder") == 0)
		return build_encoder(r, js, op[1] == 'n');
	if (!resolve_in(r, js, true))
		return false;
	if (strcmp(op, "standard_scaler") == 0 || strcmp(op, "robust_scaler") == 0 ||
		strcmp(op, "maxabs_scaler") == 0 || strcmp(op, "minmax_scaler") == 0 ||
		strcmp(op, "affine") == 0)
	{
		if (!build_affine(r, js, op))
			return false;
		if (strcmp(op, "minmax_scaler") == 0)
		{
			const HbJson *clip = hb_json_get(js, "clip");

			if (clip != NULL && !hb_json_is_null(clip))
			{
				/* MinMaxScaler(clip=True): clip to feature_range */
				double		lo,
							hi;

				if (!hb_json_is_array(clip) || hb_json_len(clip) != 2 ||
					!hb_json_number(hb_json_at(clip, 0), &lo) ||
					!hb_json_number(hb_json_at(clip, 1), &hi))
					return fail(r, HB_ERR_INVALID, "field \"clip\" must be [min, max]");
				for (size_t i = 0; i < r->n_slots; i++)
					r->slots[i] = r->next - (int32_t) r->n_slots + (int32_t) i;
				s = elementwise(r, HB_STEP_CLIP);
				if (s == NULL)
					return false;
				s->lo = lo;
				s->hi = hi;
				/* the step's name stands for the clipped values */
				j->out = s->out;
			}
		}
		return true;
	}
	if (strcmp(op, "simple_imputer") == 0)
	{
		s = elementwise(r, HB_STEP_IMPUTE);
		return s && get_nums(r, js, "values", s->n_in, true, false, &s->value, NULL) &&
			missing_value(r, js, s);
	}
	if (strcmp(op, "missing_indicator") == 0)
	{
		s = elementwise(r, HB_STEP_MISSING_IND);
		return s && missing_value(r, js, s);
	}
	if (strcmp(op, "binarizer") == 0)
	{
		s = elementwise(r, HB_STEP_BINARIZE);
		return s && get_num(r, js, "threshold", 0.0, false, &s->threshold);
	}
	if (strcmp(op, "missing_below") == 0)
	{
		s = elementwise(r, HB_STEP_MISSING_BELOW);
		return s && get_num(r, js, "threshold", 0.0, false, &s->threshold);
	}
	if (strcmp(op, "normalizer") == 0)
	{
		s = elementwise(r, HB_STEP_NORMALIZE);
		return s && read_norm(r, js, HB_NORM_L2, &s->norm) &&
			(s->norm != HB_NORM_NONE || fail(r, HB_ERR_INVALID, "a normalizer needs a norm"));
	}
	if (strcmp(op, "clip") == 0)
	{
		s = elementwise(r, HB_STEP_CLIP);
		return s && get_num(r, js, "min", -INFINITY, false, &s->lo) &&
			get_num(r, js, "max", INFINITY, false, &s->hi);
	}
	if (strcmp(op, "cast_float32") == 0)
		return elementwise(r, HB_STEP_CAST_F32) != NULL;
	if (strcmp(op, "kbins_discretizer") == 0)
		return build_kbins(r, js);
	if (strcmp(op, "polynomial_features") == 0)
		return build_poly(r, js);
	return fail(r, HB_ERR_UNSUPPORTED, "unknown step \"%s\"", op);
}

/* How many outputs a JSON step has, known once it is built (non-text). */
static void
finish_jstep(Reader *r, JStep *j)
{
	if (!j->text)
		j->width = r->next - j->out;
	j->built = true;
}

/* ---------------------------------------------------------------- model */

/*
 * The byte span of member key of the object at bytes[*pos]: a raw scan
 * over a document the parser has already accepted.
 */
static size_t
skip_ws(const char *b, size_t len, size_t i)
{
	while (i < len && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r'))
		i++;
	return i;
}

static size_t
skip_string(const char *b, size_t len, size_t i)
{
	for (i++; i < len && b[i] != '"'; i++)
		if (b[i] == '\\')
			i++;
	return i + 1;
}

static size_t
skip_value(const char *b, size_t len, size_t i)
{
	int			depth = 0;

	i = skip_ws(b, len, i);
	if (i < len && b[i] == '"')
		return skip_string(b, len, i);
	if (i < len && (b[i] == '{' || b[i] == '['))
	{
		for (; i < len; i++)
		{
			if (b[i] == '"')
			{
				i = skip_string(b, len, i) - 1;
				continue;
			}
			if (b[i] == '{' || b[i] == '[')
				depth++;
			else if (b[i] == '}' || b[i] == ']')
			{
				if (--depth == 0)
					return i + 1;
			}
		}
		return len;
	}
	while (i < len && b[i] != ',' && b[i] != '}' && b[i] != ']' &&
		   b[i] != ' ' && b[i] != '\n' && b[i] != '\r' && b[i] != '\t')
		i++;
	return i;
}

static bool
member_span(const char *b, size_t len, size_t start, const char *key,
			size_t *vs, size_t *ve)
{
	size_t		i = skip_ws(b, len, start);
	size_t		klen = strlen(key);

	if (i >= len || b[i] != '{')
		return false;
	i++;
	while (i < len)
	{
		size_t		ks,
					ke;

		i = skip_ws(b, len, i);
		if (i >= len || b[i] != '"')
			return false;
		ks = i + 1;
		i = skip_string(b, len, i);
		ke = i - 1;
		i = skip_ws(b, len, i);
		if (i >= len || b[i] != ':')
			return false;
		i = skip_ws(b, len, i + 1);
		*vs = i;
		i = skip_value(b, len, i);
		*ve = i;
		if (ke - ks == klen && memcmp(b + ks, key, klen) == 0)
			return true;
		i = skip_ws(b, len, i);
		if (i < len && b[i] == ',')
			i++;
		else
			return false;
	}
	return false;
}

static int
b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

static char *
base64_decode(const char *s, size_t *out_len)
{
	size_t		n = strlen(s);
	char	   *o = hb_alloc(n / 4 * 3 + 4);
	size_t		k = 0;
	uint32_t	acc = 0;
	int			bits = 0;

	if (o == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
	{
		int			v;

		if (s[i] == '=' || s[i] == '\n' || s[i] == '\r' || s[i] == ' ')
			continue;
		v = b64val((unsigned char) s[i]);
		if (v < 0)
		{
			hb_free(o);
			*out_len = (size_t) -1;
			return NULL;
		}
		acc = (acc << 6) | (uint32_t) v;
		bits += 6;
		if (bits >= 8)
		{
			bits -= 8;
			o[k++] = (char) ((acc >> bits) & 0xFF);
		}
	}
	*out_len = k;
	return o;
}

static bool
read_embedded(Reader *r, const char *bytes, size_t len, const HbJson *jm,
			  HbModel **out)
{
	const char *fname = get_str(jm, "format");
	HbFormat	f = HB_FORMAT_AUTO;
	const HbJson *text = hb_json_get(jm, "text");
	const HbJson *b64 = hb_json_get(jm, "base64");
	bool		ok;

	if (fname && !hb_format_parse(fname, &f))
		return fail(r, HB_ERR_UNSUPPORTED, "model.format \"%s\" is not a known format", fname);
	if (f == HB_FORMAT_HBIRD_PIPELINE)
		return fail(r, HB_ERR_UNSUPPORTED, "a pipeline cannot embed another pipeline");
	if (hb_json_get(jm, "model") != NULL)
	{
		size_t		ms,
					me,
					vs,
					ve;

		if (!member_span(bytes, len, 0, "model", &ms, &me) ||
			!member_span(bytes, len, ms, "model", &vs, &ve))
			return fail(r, HB_ERR_INVALID, "model.model could not be located");
		ok = hb_model_read(bytes + vs, ve - vs, f, out, r->err);
	}
	else if (hb_json_is_string(text))
		ok = hb_model_read(hb_json_string(text), hb_json_len(text), f, out, r->err);
	else if (hb_json_is_string(b64))
	{
		size_t		n;
		char	   *raw = base64_decode(hb_json_string(b64), &n);

		if (raw == NULL)
			return n == (size_t) -1 ?
				fail(r, HB_ERR_PARSE, "model.base64 is not valid base64") : nomem(r);
		ok = hb_model_read(raw, n, f, out, r->err);
		hb_free(raw);
	}
	else
		return fail(r, HB_ERR_INVALID, "model needs \"kind\", or \"format\" with \"model\", \"text\" or \"base64\"");
	if (!ok)
	{
		hb_fail_detail(r->err, "in the model embedded in an hbird pipeline");
		return false;
	}
	if ((*out)->pipeline != NULL)
		return fail(r, HB_ERR_UNSUPPORTED, "a pipeline cannot embed another pipeline");
	return true;
}

static bool
read_link(Reader *r, const HbJson *jm, HbModel *m)
{
	const char *link = get_str(jm, "link");

	if (link == NULL || strcmp(link, "identity") == 0)
		m->link = HB_LINK_IDENTITY;
	else if (strcmp(link, "sigmoid") == 0 || strcmp(link, "logistic") == 0)
		m->link = HB_LINK_SIGMOID;
	else if (strcmp(link, "softmax") == 0)
		m->link = HB_LINK_SOFTMAX;
	else if (strcmp(link, "exp") == 0)
		m->link = HB_LINK_EXP;
	else if (strcmp(link, "ovr") == 0)
		m->link = HB_LINK_SIGMOID_SUM;
	else if (strcmp(link, "mean") == 0)
		m->link = HB_LINK_MEAN;
	else if (strcmp(link, "l1") == 0)
		m->link = HB_LINK_L1;
	else
		return fail(r, HB_ERR_UNSUPPORTED, "model.link \"%s\" is not supported", link);
	return true;
}

/*
 * task from "task" or the class count; outputs.  A regression model has one
 * output per target: "n_targets" (default 1) of them, one coefficient row
 * or one group of trees each (scikit-learn's estimators fitted on a 2-D y).
 */
static bool
read_task(Reader *r, const HbJson *jm, HbModel *m, int64_t n_outputs_seen)
{
	const char *task = get_str(jm, "task");
	int64_t		nc,
				nt;

	if (!get_int(r, jm, "n_classes", 0, false, 0, 100000, &nc) ||
		!get_int(r, jm, "n_targets", 1, false, 1, 100000, &nt))
		return false;
	if (task == NULL)
		task = nc == 0 ? "regression" : (nc == 2 && n_outputs_seen == 1) ? "binary" : "multiclass";
	if (nt != 1 && strcmp(task, "regression") != 0)
		return fail(r, HB_ERR_INVALID, "model.n_targets is for regression models, not %s ones", task);
	if (strcmp(task, "regression") == 0)
	{
		m->task = HB_TASK_REGRESSION;
		m->n_classes = 0;
		m->n_outputs = (int32_t) nt;
	}
	else if (strcmp(task, "binary") == 0)
	{
		m->task = HB_TASK_BINARY;
		m->n_classes = 2;
		m->n_outputs = 1;
	}
	else if (strcmp(task, "multiclass") == 0)
	{
		m->task = HB_TASK_MULTICLASS;
		m->n_classes = (int32_t) (nc ? nc : n_outputs_seen);
		m->n_outputs = m->n_classes;
	}
	else
		return fail(r, HB_ERR_UNSUPPORTED, "model.task \"%s\" is not supported", task);
	if (m->n_outputs < 1)
		return fail(r, HB_ERR_INVALID, "model has no outputs");
	if (!get_bool(r, jm, "predict_class", false, &m->predict_class))
		return false;
	return true;
}

#define MAX_TREE_CATEGORY 65536

/*
 * A categorical split: [[categories going left], [categories going right]].
 * A category in neither list (unseen when the model was fitted) goes where
 * a missing value goes, so the set stored is the list on the side missing
 * values do not take.
 */
static bool
read_cat_split(Reader *r, HbModelBuilder *b, const HbJson *e, size_t t,
			   int32_t i, int32_t feature, bool default_left, int32_t left,
			   int32_t right)
{
	const HbJson *set;
	uint32_t   *cats;
	size_t		n;
	bool		ok;

	if (!hb_json_is_array(e) || hb_json_len(e) != 2 ||
		!hb_json_is_array(hb_json_at(e, 0)) || !hb_json_is_array(hb_json_at(e, 1)))
		return fail(r, HB_ERR_INVALID,
					"model.trees[%zu]: cat_sets[%d] must be null or [[left categories], [right categories]]", t, i);
	for (int side = 0; side < 2; side++)
	{
		const HbJson *l = hb_json_at(e, side);

		for (size_t k = 0; k < hb_json_len(l); k++)
		{
			int64_t		c;

			if (!hb_json_int(hb_json_at(l, k), &c) || c < 0 || c >= MAX_TREE_CATEGORY)
				return fail(r, HB_ERR_INVALID,
							"model.trees[%zu]: cat_sets[%d] holds a category that is not an integer in [0, %d)",
							t, i, MAX_TREE_CATEGORY);
		}
	}
	set = hb_json_at(e, default_left ? 1 : 0);
	n = hb_json_len(set);
	cats = hb_alloc(sizeof(uint32_t) * (n ? n : 1));
	if (cats == NULL)
		return nomem(r);
	for (size_t k = 0; k < n; k++)
	{
		int64_t		c;

		(void) hb_json_int(hb_json_at(set, k), &c);
		cats[k] = (uint32_t) c;
	}
	ok = hb_mb_categorical(b, i, feature, cats, n, !default_left, default_left,
						   HB_MISSING_NAN, left, right);
	hb_free(cats);
	return ok;
}

/* model.coef and model.intercept: one row of coefficients per output. */
static bool
read_native_linear(Reader *r, const HbJson *jm, int32_t nf, HbModel *m)
{
	const HbJson *coef = hb_json_get(jm, "coef");
	size_t		k = hb_json_len(coef);
	double	   *ic = NULL;

	m->estimator = HB_EST_LINEAR;
	if (!hb_json_is_array(coef) || k == 0)
		return fail(r, HB_ERR_INVALID, "model.coef must be an array with one row per output");
	if (!read_task(r, jm, m, (int64_t) k))
		return false;
	if ((size_t) m->n_outputs != k)
		return fail(r, HB_ERR_INVALID, "model.coef has %zu rows for %d outputs", k, m->n_outputs);
	m->weights = hb_alloc(sizeof(double) * (size_t) nf * k);
	m->bias = hb_alloc0(sizeof(double) * k);
	m->base_margin = hb_alloc0(sizeof(double) * k);
	if (!m->weights || !m->bias || !m->base_margin)
		return nomem(r);
	for (size_t g = 0; g < k; g++)
	{
		const HbJson *row = hb_json_at(coef, g);

		if (!hb_json_is_array(row) || hb_json_len(row) != (size_t) nf)
			return fail(r, HB_ERR_INVALID, "model.coef[%zu] must have %d entries (the features)", g, nf);
		for (int32_t f = 0; f < nf; f++)
			if (!hb_json_number(hb_json_at(row, f), &m->weights[(size_t) f * k + g]))
				return fail(r, HB_ERR_INVALID, "model.coef[%zu][%d] must be a number", g, f);
	}
	if (!get_nums(r, jm, "intercept", (int64_t) k, false, false, &ic, NULL))
		return false;
	if (ic)
	{
		memcpy(m->bias, ic, sizeof(double) * k);
		hb_free(ic);
	}
	return true;
}

/* missing_left[i]: 0 or 1, or a boolean */
static bool
read_missing_left(Reader *r, const HbJson *mleft, size_t t, int32_t i, bool *out)
{
	const HbJson *e = hb_json_at(mleft, i);
	int64_t		v;

	if (hb_json_bool(e, out))
		return true;
	if (hb_json_int(e, &v) && (v == 0 || v == 1))
	{
		*out = v == 1;
		return true;
	}
	return fail(r, HB_ERR_INVALID, "model.trees[%zu]: missing_left[%d] must be 0 or 1", t, i);
}

/*
 * Tree t: arrays feature, threshold, left, right, value (a child of -1:
 * a leaf), and optionally missing_left and cat_sets, one entry per node.
 * Splits send x <= threshold left; NaN goes right unless missing_left says.
 */
static bool
read_native_tree(Reader *r, HbModelBuilder *b, const HbJson *jt, size_t t, int32_t nf)
{
	const HbJson *feat = hb_json_get(jt, "feature"),
			   *thr = hb_json_get(jt, "threshold"),
			   *left = hb_json_get(jt, "left"),
			   *right = hb_json_get(jt, "right"),
			   *val = hb_json_get(jt, "value"),
			   *mleft = hb_json_get(jt, "missing_left"),
			   *cats = hb_json_get(jt, "cat_sets");
	size_t		nn = hb_json_len(left);
	int64_t		g;

	if (!hb_json_is_array(left) || nn == 0 || hb_json_len(right) != nn ||
		hb_json_len(feat) != nn || hb_json_len(thr) != nn || hb_json_len(val) != nn)
		return fail(r, HB_ERR_INVALID,
					"model.trees[%zu] needs arrays feature, threshold, left, right, value of one length", t);
	if ((mleft != NULL && (!hb_json_is_array(mleft) || hb_json_len(mleft) != nn)) ||
		(cats != NULL && (!hb_json_is_array(cats) || hb_json_len(cats) != nn)))
		return fail(r, HB_ERR_INVALID,
					"model.trees[%zu]: missing_left and cat_sets must have one entry per node", t);
	(void) get_int(r, jt, "group", 0, false, 0, 100000, &g);
	if (!hb_mb_start_tree(b, (int32_t) t, (int32_t) g, (int32_t) nn, 1))
		return false;
	for (int32_t i = 0; i < (int32_t) nn; i++)
	{
		int64_t		lc,
					rc,
					f;
		double		th,
					v;
		bool		dl = false;

		if (!hb_json_int(hb_json_at(left, i), &lc) || !hb_json_int(hb_json_at(right, i), &rc) ||
			lc < -1 || rc < -1 || lc >= (int64_t) nn || rc >= (int64_t) nn)
			return fail(r, HB_ERR_INVALID, "model.trees[%zu]: node %d has a bad child", t, i);
		if ((lc < 0) != (rc < 0))
			return fail(r, HB_ERR_INVALID, "model.trees[%zu]: node %d has one child", t, i);
		if (lc < 0)
		{
			if (!hb_json_number(hb_json_at(val, i), &v))
				return fail(r, HB_ERR_INVALID, "model.trees[%zu]: value[%d] must be a number", t, i);
			hb_mb_leaf(b, i, v);
			continue;
		}
		if (!hb_json_int(hb_json_at(feat, i), &f) || f < 0 || f >= nf ||
			!hb_json_number(hb_json_at(thr, i), &th))
			return fail(r, HB_ERR_INVALID, "model.trees[%zu]: node %d has a bad feature or threshold", t, i);
		if (mleft != NULL && !read_missing_left(r, mleft, t, i, &dl))
			return false;
		if (cats != NULL && !hb_json_is_null(hb_json_at(cats, i)))
		{
			if (!read_cat_split(r, b, hb_json_at(cats, i), t, i, (int32_t) f, dl,
								(int32_t) lc, (int32_t) rc))
				return false;
		}
		else
			hb_mb_numeric(b, i, (int32_t) f, HB_SPLIT_LE, th, dl, HB_MISSING_NAN,
						  (int32_t) lc, (int32_t) rc);
	}
	/* the one shape check (model_builder.h): reached once, depth, ranges */
	return hb_mb_end_tree(b);
}

/* model.trees: each adds to output "group" (default 0); model.base */
static bool
read_native_trees(Reader *r, const HbJson *jm, int32_t nf, HbModel *m)
{
	const HbJson *trees = hb_json_get(jm, "trees");
	size_t		nt = hb_json_len(trees);
	int64_t		n_out_seen = 1;
	double	   *base = NULL;
	int64_t		nb = 0;
	HbModelBuilder b;
	bool		ok = true;

	m->estimator = HB_EST_TREES;
	if (!hb_json_is_array(trees))
		return fail(r, HB_ERR_INVALID, "model.trees must be an array");
	for (size_t t = 0; t < nt; t++)
	{
		int64_t		g;

		if (!get_int(r, hb_json_at(trees, t), "group", 0, false, 0, 100000, &g))
			return false;
		if (g + 1 > n_out_seen)
			n_out_seen = g + 1;
	}
	if (!read_task(r, jm, m, n_out_seen))
		return false;
	m->base_margin = hb_alloc0(sizeof(double) * m->n_outputs);
	if (!m->base_margin)
		return nomem(r);
	/* messages name trees as hb_model_validate does */
	hb_mb_start_model(&b, m, "", r->err);
	ok = hb_mb_reserve_trees(&b, (int64_t) nt);
	for (size_t t = 0; t < nt && ok; t++)
		ok = read_native_tree(r, &b, hb_json_at(trees, t), t, nf);
	hb_mb_free(&b);
	if (!ok || !get_nums(r, jm, "base", m->n_outputs, false, false, &base, &nb))
		return false;
	if (base)
	{
		memcpy(m->base_margin, base, sizeof(double) * m->n_outputs);
		hb_free(base);
	}
	return true;
}

static bool
read_native(Reader *r, const HbJson *jm, int32_t nf, HbModel **out)
{
	const char *kind = get_str(jm, "kind");
	HbModel    *m = hb_alloc0(sizeof(HbModel));

	if (m == NULL)
		return nomem(r);
	*out = m;
	if (kind == NULL)
		return fail(r, HB_ERR_INVALID, "model.kind must be \"linear\" or \"trees\"");
	m->n_features = nf;
	m->cmp = HB_CMP_LE_F64;
	m->objective = hb_strdup(kind);
	if (m->objective == NULL)
		return nomem(r);
	if (!read_link(r, jm, m))
		return false;
	if (strcmp(kind, "linear") == 0)
		return read_native_linear(r, jm, nf, m);
	if (strcmp(kind, "trees") == 0)
		return read_native_trees(r, jm, nf, m);
	return fail(r, HB_ERR_UNSUPPORTED, "model.kind \"%s\" is not supported (linear, trees)", kind);
}

/* ---------------------------------------------------------------- top */

static bool
read_inputs(Reader *r, const HbJson *root)
{
	const HbJson *in = hb_json_get(root, "inputs");
	HbPipeline *p = r->p;
	size_t		n = hb_json_len(in);

	if (!hb_json_is_array(in) || n == 0)
		return fail(r, HB_ERR_INVALID, "field \"inputs\" must be a non-empty array");
	if (n > 100000)
		return fail(r, HB_ERR_LIMIT, "too many inputs");
	p->inputs = hb_alloc0(sizeof(HbInput) * n);
	r->in_names = hb_alloc(sizeof(char *) * n);
	if (p->inputs == NULL || r->in_names == NULL)
		return nomem(r);
	for (size_t i = 0; i < n; i++)
	{
		const HbJson *e = hb_json_at(in, i);
		const char *name = get_str(e, "name");
		const char *type = get_str(e, "type");
		const char *cost = get_str(e, "cost");
		HbInput    *x = &p->inputs[i];

		if (name == NULL || name[0] == '\0')
			return fail(r, HB_ERR_INVALID, "inputs[%zu] needs a \"name\"", i);
		x->name = hb_strdup(name);
		if (x->name == NULL)
			return nomem(r);
		r->in_names[p->n_inputs++] = x->name;
		if (type == NULL || strcmp(type, "numeric") == 0)
		{
			x->type = HB_INPUT_NUMERIC;
			x->index = p->n_num_inputs++;
		}
		else if (strcmp(type, "text") == 0)
		{
			x->type = HB_INPUT_TEXT;
			x->index = p->n_text_inputs++;
		}
		else
			return fail(r, HB_ERR_INVALID, "inputs[%zu].type must be \"numeric\" or \"text\"", i);
		if (cost == NULL)
			x->cost = HB_COST_UNKNOWN;
		else if (strcmp(cost, "cheap") == 0)
			x->cost = HB_COST_CHEAP;
		else if (strcmp(cost, "medium") == 0)
			x->cost = HB_COST_MEDIUM;
		else if (strcmp(cost, "expensive") == 0)
			x->cost = HB_COST_EXPENSIVE;
		else
			return fail(r, HB_ERR_INVALID, "inputs[%zu].cost must be \"cheap\", \"medium\" or \"expensive\"", i);
	}
	r->in_index = hb_name_index_build(r->in_names, p->n_inputs);
	if (r->in_index == NULL)
		return nomem(r);
	/* of equal names the index finds the first: a later one is a repeat */
	for (int32_t i = 0; i < p->n_inputs; i++)
		if (find_input(r, r->in_names[i], strlen(r->in_names[i])) != i)
			return fail(r, HB_ERR_INVALID, "input \"%s\" is listed twice", r->in_names[i]);
	return true;
}

static bool
read_steps(Reader *r, const HbJson *root)
{
	const HbJson *steps = hb_json_get(root, "steps");
	const HbJson *feats = hb_json_get(root, "features");
	size_t		n = hb_json_len(steps);

	if (steps != NULL && !hb_json_is_array(steps))
		return fail(r, HB_ERR_INVALID, "field \"steps\" must be an array");
	if (!hb_json_is_array(feats) || hb_json_len(feats) == 0)
		return fail(r, HB_ERR_INVALID, "field \"features\" must be a non-empty array of references");
	r->js = hb_alloc0(sizeof(JStep) * (n ? n : 1));
	if (r->js == NULL)
		return nomem(r);
	r->n_js = (int32_t) n;

	/* first pass: names, kinds, text widths, columns referred to */
	for (size_t k = 0; k < n; k++)
	{
		const HbJson *js = hb_json_at(steps, k);
		JStep	   *j = &r->js[k];
		const HbJson *in = hb_json_get(js, "in");

		r->cur = (int32_t) k;
		j->op = get_str(js, "op");
		j->name = get_str(js, "name");
		if (!hb_json_is_object(js) || j->op == NULL)
			return fail(r, HB_ERR_INVALID, "steps[%zu] must be an object with an \"op\"", k);
		if (j->name && (find_input(r, j->name, strlen(j->name)) >= 0 ||
						find_jstep(r, j->name, strlen(j->name), (int32_t) k) >= 0))
			return fail(r, HB_ERR_INVALID, "step name \"%s\" is already used", j->name);
		j->text = strcmp(j->op, "hashing_vectorizer") == 0 ||
			strcmp(j->op, "tfidf_vectorizer") == 0 ||
			strcmp(j->op, "count_vectorizer") == 0;
		if (j->text && !text_width(r, js, j->op, &j->width))
			return false;
		for (size_t i = 0; i < hb_json_len(in); i++)
		{
			const char *ref = hb_json_string(hb_json_at(in, i));

			if (ref && !mark_ref(r, ref, (int32_t) k))
				return false;
		}
	}
	r->cur = -1;
	for (size_t i = 0; i < hb_json_len(feats); i++)
	{
		const char *ref = hb_json_string(hb_json_at(feats, i));

		if (ref == NULL)
			return fail(r, HB_ERR_INVALID, "features[%zu] must be a string", i);
		if (!mark_ref(r, ref, (int32_t) n))
			return false;
	}

	/* second pass: build */
	r->next = r->p->n_num_inputs;
	for (size_t k = 0; k < n; k++)
	{
		r->cur = (int32_t) k;
		if (!build_step(r, hb_json_at(steps, k), &r->js[k]))
			return false;
		finish_jstep(r, &r->js[k]);
	}
	r->cur = -1;
	r->n_slots = 0;
	for (size_t i = 0; i < hb_json_len(feats); i++)
		if (!resolve_ref(r, hb_json_string(hb_json_at(feats, i)), (int32_t) n))
			return false;
	if (r->n_slots == 0 || r->n_slots > HB_MAX_FEATURES)
		return fail(r, HB_ERR_INVALID, "the features select %zu columns", r->n_slots);
	r->p->n_features = (int32_t) r->n_slots;
	r->p->feature_slot = hb_alloc(sizeof(int32_t) * r->n_slots);
	if (r->p->feature_slot == NULL)
		return nomem(r);
	memcpy(r->p->feature_slot, r->slots, sizeof(int32_t) * r->n_slots);
	return true;
}

/* A feature name and its position, for finding repeats by sorting. */
typedef struct NameIndex
{
	const char *name;
	int32_t		index;
} NameIndex;

/* By name, then position: the first of equal names sorts first. */
static int
cmp_name_index(const void *a, const void *b)
{
	const NameIndex *x = a;
	const NameIndex *y = b;
	int			c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	return (x->index > y->index) - (x->index < y->index);
}

/* Feature names of a native model: its slots' references. */
static bool
name_features(Reader *r, HbModel *m, const HbJson *feats)
{
	bool		named = hb_json_len(feats) == (size_t) m->n_features;
	NameIndex  *order = NULL;

	m->features = hb_alloc0(sizeof(HbFeature) * m->n_features);
	if (m->features == NULL)
		return nomem(r);

	/*
	 * A name given twice keeps it on its first feature; the others get their
	 * default name.  Sorted, not pairwise: text vectorizers give tens of
	 * thousands of features.
	 */
	if (named)
	{
		order = hb_alloc(sizeof(NameIndex) * ((size_t) m->n_features + 1));
		if (order == NULL)
			return nomem(r);
		for (int32_t f = 0; f < m->n_features; f++)
		{
			order[f].name = hb_json_string(hb_json_at(feats, f));
			order[f].index = f;
		}
		qsort(order, m->n_features, sizeof(NameIndex), cmp_name_index);
	}
	for (int32_t f = 0; f < m->n_features; f++)
	{
		if (!named)
			m->features[f].name = hb_feature_default_name(f);
		else if (f > 0 && strcmp(order[f].name, order[f - 1].name) == 0)
			m->features[order[f].index].name = hb_feature_default_name(order[f].index);
		else
			m->features[order[f].index].name = hb_strdup(order[f].name);
	}
	hb_free(order);
	for (int32_t f = 0; f < m->n_features; f++)
	{
		if (m->features[f].name == NULL)
			return nomem(r);
		m->features[f].type = HB_FEATURE_NUMERIC;
	}
	m->has_feature_names = true;
	return true;
}

/* sklearn trees compare float32(x) <= t: cast the features first */
static bool
cast_features(Reader *r)
{
	HbPipeline *p = r->p;
	HbStep	   *s = new_step(r, HB_STEP_CAST_F32, p->n_features, p->feature_slot, p->n_features);

	if (s == NULL)
		return false;
	for (int32_t j = 0; j < p->n_features; j++)
		p->feature_slot[j] = s->out + j;
	return true;
}

bool
hb_read_hbird_pipeline(const char *bytes, size_t len, HbModel **out, HbError *err)
{
	HbJsonDoc  *doc = NULL;
	const HbJson *root;
	const HbJson *jm;
	const char *fmt;
	Reader		r;
	HbModel    *m = NULL;
	int64_t		version;
	bool		ok = false;

	*out = NULL;
	memset(&r, 0, sizeof(r));
	r.err = err;
	r.cur = -1;
	if (!hb_json_parse(bytes, len, &doc, err))
		return false;
	root = hb_json_root(doc);
	fmt = get_str(root, "format");
	if (!hb_json_is_object(root) || fmt == NULL || strcmp(fmt, "hbird-pipeline") != 0)
	{
		fail(&r, HB_ERR_PARSE, "the document is not an object with \"format\": \"hbird-pipeline\"");
		goto done;
	}
	if (!get_int(&r, root, "version", 1, true, 1, 1000, &version))
		goto done;
	if (version != 1)
	{
		fail(&r, HB_ERR_UNSUPPORTED, "version %lld is not supported (1)", (long long) version);
		goto done;
	}
	r.p = hb_alloc0(sizeof(HbPipeline));
	if (r.p == NULL)
	{
		nomem(&r);
		goto done;
	}
	if (!read_inputs(&r, root) || !read_steps(&r, root))
		goto done;

	jm = hb_json_get(root, "model");
	if (!hb_json_is_object(jm))
	{
		fail(&r, HB_ERR_INVALID, "field \"model\" must be an object");
		goto done;
	}
	if (hb_json_get(jm, "kind") != NULL)
	{
		const char *cmp = get_str(jm, "comparison");

		if (!read_native(&r, jm, r.p->n_features, &m) ||
			!name_features(&r, m, hb_json_get(root, "features")))
			goto done;
		if (m->estimator == HB_EST_TREES && (cmp == NULL || strcmp(cmp, "le_f32") == 0))
		{
			if (!cast_features(&r))
				goto done;
		}
		else if (m->estimator == HB_EST_TREES && strcmp(cmp, "le") != 0)
		{
			fail(&r, HB_ERR_UNSUPPORTED, "model.comparison \"%s\" is not supported (le_f32, le)", cmp);
			goto done;
		}
	}
	else
	{
		bool		zmiss;

		if (!read_embedded(&r, bytes, len, jm, &m) ||
			!get_bool(&r, jm, "zero_is_missing", false, &zmiss))
			goto done;
		/*
		 * features from a sparse matrix: an absent (zero) entry is missing,
		 * a stored one present however small (not LightGBM's zero
		 * threshold, which took |x| <= 1e-35 for missing)
		 */
		r.p->zero_is_missing = zmiss;
		if (m->n_features != r.p->n_features)
		{
			fail(&r, HB_ERR_INVALID, "the features select %d columns but the embedded model takes %d",
				 r.p->n_features, m->n_features);
			goto done;
		}
	}
	r.p->n_slots = r.next;
	m->pipeline = r.p;
	r.p = NULL;
	ok = true;

done:
	if (r.js)
	{
		for (int32_t i = 0; i < r.n_js; i++)
			hb_free(r.js[i].used);
		hb_free(r.js);
	}
	hb_free(r.slots);
	hb_free(r.in_names);
	hb_name_index_free(r.in_index);
	hb_pipeline_free(r.p);
	hb_json_free(doc);
	if (!ok)
	{
		hb_model_free(m);
		return false;
	}
	*out = m;
	return true;
}

/* Is this JSON document an hbird pipeline?  (detection from the bytes) */
bool
hb_is_hbird_pipeline(const char *bytes, size_t len)
{
	static const char tag[] = "\"hbird-pipeline\"";
	size_t		lim = len < 4096 ? len : 4096;

	for (size_t i = 0; i + sizeof(tag) - 1 <= lim; i++)
		if (bytes[i] == '"' && memcmp(bytes + i, tag, sizeof(tag) - 1) == 0)
			return true;
	return false;
}
