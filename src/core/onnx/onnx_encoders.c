/*
 * onnx_encoders.c
 *	  Category encoders of the ONNX reader (onnx_int.h): OneHotEncoder and
 *	  LabelEncoder over numbers or strings, one pipeline step per column.
 *	  A string column is a text input of the pipeline; its steps keep the
 *	  category strings and name the column in messages.
 */
#include "onnx_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Copies of cnt protobuf strings, NUL-terminated (hb_alloc'd, NULL with the
 * error set).  A string holding a NUL byte is refused: categories compare
 * as C strings.
 */
static char **
copy_strings(OnnxReader *r, const OnnxNode *n, const ProtobufCBinaryData *src,
			 size_t cnt)
{
	char	  **v = hb_alloc0(sizeof(char *) * (cnt > 0 ? cnt : 1));

	if (v == NULL)
	{
		hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < cnt; i++)
	{
		/* an empty string may come without data (protobuf-c: NULL, 0) */
		if (src[i].len > 0 && memchr(src[i].data, '\0', src[i].len) != NULL)
		{
			onnx_refuse(r, n, "a category string holds a NUL byte");
			goto fail;
		}
		v[i] = hb_alloc(src[i].len + 1);
		if (v[i] == NULL)
		{
			hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
			goto fail;
		}
		if (src[i].len > 0)
			memcpy(v[i], src[i].data, src[i].len);
		v[i][src[i].len] = '\0';
	}
	return v;
fail:
	for (size_t i = 0; i < cnt; i++)
		hb_free(v[i]);
	hb_free(v);
	return NULL;
}

/*
 * One category step over column c of in: a numeric step reads the column's
 * slot, a text step its text input.  The category table is copied from
 * strs (text) or nums (numbers).
 */
static HbStep *
add_category_step(OnnxReader *r, const OnnxNode *n, const OnnxVal *in, int32_t c,
				  HbStepKind kind, int32_t n_out, const ProtobufCBinaryData *strs,
				  const double *nums, size_t n_cats)
{
	bool		text = in->kind == VAL_TEXT;
	HbStep	   *s = onnx_add_step(r, n, kind, text ? NULL : &in->slots[c], text ? 0 : 1,
								  n_out);

	if (s == NULL)
		return NULL;
	s->text_input = text ? in->slots[c] : 0;
	if (text)
	{
		/* messages (an unknown category) name the column the text came from */
		for (int32_t i = 0; i < r->n_inputs; i++)
			if (r->inputs[i].type == HB_INPUT_TEXT && r->inputs[i].index == s->text_input)
			{
				char	   *name = hb_strdup(r->inputs[i].name);

				if (name == NULL)
				{
					hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
					return NULL;
				}
				hb_free(s->name);
				s->name = name;
				break;
			}
		s->categories_text = copy_strings(r, n, strs, n_cats);
		if (s->categories_text == NULL)
			return NULL;
	}
	else
	{
		s->categories_num = hb_alloc(sizeof(double) * n_cats);
		if (s->categories_num == NULL)
		{
			hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
			return NULL;
		}
		memcpy(s->categories_num, nums, sizeof(double) * n_cats);
	}
	s->n_categories = (int32_t) n_cats;
	return s;
}

/*
 * OneHotEncoder over integer (cats_int64s) or string (cats_strings)
 * categories, one step per column; the one-hot vectors of the columns side
 * by side, as onnxruntime lays out [rows, columns, categories].
 */
bool
onnx_featurize_onehot(OnnxReader *r, const OnnxNode *n, const OnnxVal *in)
{
	const OnnxAttr *cs = onnx_attr(n, "cats_strings");
	bool		text = in->kind == VAL_TEXT;
	size_t		n_cats;
	const int64_t *cats = onnx_attr_ints(n, "cats_int64s", &n_cats);
	bool		zeros = onnx_attr_int(n, "zeros", 1) != 0;
	double	   *nums = NULL;
	int32_t    *all;
	int32_t    *truncated = NULL;
	OnnxVal		whole;
	int32_t		width = 0;
	bool		ok;

	if (!onnx_slots_known(r, n, in))
		return false;
	if (text && (cs == NULL || cs->n_strings == 0))
		return onnx_refuse(r, n, "its input is text but its categories are not strings (cats_strings)");
	if (!text && cs && cs->n_strings > 0)
		return onnx_refuse(r, n, "its categories are strings (cats_strings) but its input is numeric");
	if (text)
		n_cats = cs->n_strings;
	if (n_cats == 0 || n_cats > 100000 || (size_t) in->width * n_cats > ONNX_MAX_NODES)
		return onnx_refuse(r, n, text ? "cats_strings is too long" : "cats_int64s is empty or too long");
	all = hb_alloc(sizeof(int32_t) * in->width * n_cats);
	if (!text)
		nums = hb_alloc(sizeof(double) * n_cats);
	if (all == NULL || (!text && nums == NULL))
	{
		hb_free(all);
		hb_free(nums);
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	}
	for (size_t k = 0; !text && k < n_cats; k++)
		nums[k] = (double) cats[k];
	if (!text && (in->elem == ONNX_FLOAT || in->elem == ONNX_DOUBLE))
	{
		/*
		 * onnxruntime looks a floating-point value up as its cast to int64,
		 * toward zero (2.7 is category 2, -0.5 category 0): the same step
		 * first
		 */
		HbStep	   *t = onnx_add_step(r, n, HB_STEP_ARITH, in->slots, in->width, in->width);

		if (t == NULL || (truncated = hb_alloc(sizeof(int32_t) * in->width)) == NULL)
		{
			hb_free(all);
			hb_free(nums);
			return t == NULL ? false : hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		}
		t->arith = HB_ARITH_TRUNC;
		t->f32 = in->elem == ONNX_FLOAT;
		for (int32_t c = 0; c < in->width; c++)
			truncated[c] = t->out + c;
		whole = *in;
		whole.slots = truncated;
		in = &whole;
	}
	for (int32_t c = 0; c < in->width; c++)
	{
		HbStep	   *s = add_category_step(r, n, in, c,
										  text ? HB_STEP_ONEHOT_TEXT : HB_STEP_ONEHOT_NUM,
										  (int32_t) n_cats, text ? cs->strings : NULL,
										  nums, n_cats);

		if (s == NULL)
		{
			hb_free(all);
			hb_free(nums);
			hb_free(truncated);
			return false;
		}
		s->onehot = true;
		for (size_t k = 0; k < n_cats; k++)
			all[width++] = s->out + (int32_t) k;
		s->unknown = zeros ? HB_UNKNOWN_IGNORE : HB_UNKNOWN_ERROR;
	}
	hb_free(nums);
	hb_free(truncated);
	ok = n->n_output < 1 || onnx_val_add_slots(r, n->output[0], ONNX_FLOAT, all, width);
	hb_free(all);
	return ok;
}

/* A numeric list attribute or tensor attribute; *found says whether present. */
static bool
label_numbers(OnnxReader *r, const OnnxNode *n, const char *name, double **out,
			  size_t *len, bool *found)
{
	*found = onnx_attr(n, name) != NULL;
	return onnx_attr_doubles(n, name, out, len, r->err);
}

/* A LabelEncoder's table, however the operator's version spells it. */
typedef struct LabelTable
{
	const ProtobufCBinaryData *key_strs;	/* string keys, or NULL */
	double	   *key_nums;		/* numeric keys (owned) */
	size_t		n_keys;
	double	   *vals;			/* one value per key (owned) */
	size_t		n_vals;
	double		dflt;			/* the value of an unknown key */
	bool		float_out;		/* the values are floats, not integers */
} LabelTable;

/* Opset 1: string -> its position in classes_strings, else default_int64. */
static bool
label_table_v1(OnnxReader *r, const OnnxNode *n, bool text,
			   const OnnxAttr *classes, LabelTable *lt)
{
	/* position -> string has a text output */
	if (!text)
		return onnx_refuse(r, n, "it maps numbers to strings (classes_strings with a numeric input): its output is text, which hbird's features cannot hold");
	lt->key_strs = classes->strings;
	lt->n_keys = classes->n_strings;
	if (lt->n_keys > 0)
	{
		lt->vals = hb_alloc(sizeof(double) * lt->n_keys);
		if (lt->vals == NULL)
			return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < lt->n_keys; i++)
		lt->vals[i] = (double) i;
	lt->n_vals = lt->n_keys;
	lt->dflt = (double) onnx_attr_int(n, "default_int64", -1);
	return true;
}

/* The keys: keys_strings, keys_tensor, keys_int64s or keys_floats. */
static bool
label_keys(OnnxReader *r, const OnnxNode *n, LabelTable *lt)
{
	const OnnxAttr *ks = onnx_attr(n, "keys_strings");
	const OnnxAttr *kt = onnx_attr(n, "keys_tensor");
	bool		found;

	if (ks && ks->n_strings > 0)
	{
		lt->key_strs = ks->strings;
		lt->n_keys = ks->n_strings;
		return true;
	}
	if (kt && kt->t && kt->t->data_type == ONNX_STRING)
	{
		lt->key_strs = kt->t->string_data;
		lt->n_keys = kt->t->n_string_data;
		return true;
	}
	if (kt && kt->t)
		return onnx_tensor_doubles(kt->t, "keys_tensor", &lt->key_nums, &lt->n_keys, r->err);
	if (!label_numbers(r, n, "keys_int64s", &lt->key_nums, &lt->n_keys, &found))
		return false;
	return lt->n_keys > 0 ||
		label_numbers(r, n, "keys_floats", &lt->key_nums, &lt->n_keys, &found);
}

/*
 * The values (values_tensor, values_int64s or values_floats) and the value
 * of an unknown key: default_tensor, else default_float (-0.0) for float
 * values and default_int64 (-1) for integers.
 */
static bool
label_values(OnnxReader *r, const OnnxNode *n, LabelTable *lt)
{
	const OnnxAttr *vt = onnx_attr(n, "values_tensor");
	const OnnxAttr *dt = onnx_attr(n, "default_tensor");
	bool		found;

	if (vt && vt->t)
	{
		lt->float_out = vt->t->data_type == ONNX_FLOAT || vt->t->data_type == ONNX_DOUBLE;
		if (!onnx_tensor_doubles(vt->t, "values_tensor", &lt->vals, &lt->n_vals, r->err))
			return false;
	}
	else
	{
		if (!label_numbers(r, n, "values_int64s", &lt->vals, &lt->n_vals, &found))
			return false;
		if (!found)
		{
			lt->float_out = true;
			if (!label_numbers(r, n, "values_floats", &lt->vals, &lt->n_vals, &found))
				return false;
		}
	}
	if (dt && dt->t)
	{
		double	   *d = NULL;
		size_t		dl;

		if (!onnx_tensor_doubles(dt->t, "default_tensor", &d, &dl, r->err))
			return false;
		lt->dflt = dl == 1 ? d[0] : NAN;
		hb_free(d);
		if (dl != 1)
			return onnx_refuse(r, n, "default_tensor does not hold one value");
	}
	else if (lt->float_out)
	{
		const OnnxAttr *df = onnx_attr(n, "default_float");

		lt->dflt = df && df->has_f ? (double) df->f : -0.0;
	}
	else
		lt->dflt = (double) onnx_attr_int(n, "default_int64", -1);
	return true;
}

/* One step per column of in, each with its copy of the table. */
static bool
label_steps(OnnxReader *r, const OnnxNode *n, const OnnxVal *in, bool text,
			const LabelTable *lt)
{
	int32_t    *all = hb_alloc(sizeof(int32_t) * in->width);
	bool		ok = false;

	if (all == NULL)
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	for (int32_t c = 0; c < in->width; c++)
	{
		HbStep	   *s = add_category_step(r, n, in, c,
										  text ? HB_STEP_LABEL_TEXT : HB_STEP_LABEL_NUM,
										  1, lt->key_strs, lt->key_nums, lt->n_keys);

		if (s == NULL)
			goto done;
		s->label_values = hb_alloc(sizeof(double) * lt->n_keys);
		if (s->label_values == NULL)
		{
			hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
			goto done;
		}
		memcpy(s->label_values, lt->vals, sizeof(double) * lt->n_keys);
		s->onehot = false;
		s->unknown = HB_UNKNOWN_VALUE;
		s->unknown_value = lt->dflt;
		all[c] = s->out;
	}
	ok = n->n_output < 1 ||
		onnx_val_add_slots(r, n->output[0], lt->float_out ? ONNX_FLOAT : ONNX_INT64,
						   all, in->width);
done:
	hb_free(all);
	return ok;
}

/*
 * LabelEncoder: a table from strings or numbers to numbers, one step per
 * column.  Opset 1 maps a string to its position in classes_strings
 * (default_int64 when absent); later opsets map keys_* to values_*, or
 * keys_tensor to values_tensor with default_tensor (opset 4).  Without a
 * default, an unknown key gives -1 for integer values and -0.0 for floats,
 * as the operator's definition says.  A table whose values are strings
 * has a text output, which no feature can hold: refused.
 */
bool
onnx_featurize_label(OnnxReader *r, const OnnxNode *n, const OnnxVal *in)
{
	bool		text = in->kind == VAL_TEXT;
	const OnnxAttr *classes = onnx_attr(n, "classes_strings");
	const OnnxAttr *vs = onnx_attr(n, "values_strings");
	const OnnxAttr *vt = onnx_attr(n, "values_tensor");
	LabelTable	lt;
	bool		ok = false;

	memset(&lt, 0, sizeof(lt));
	if (!onnx_slots_known(r, n, in))
		return false;
	if (classes)
	{
		if (!label_table_v1(r, n, text, classes, &lt))
			goto done;
	}
	else if ((vs && vs->n_strings > 0) || (vt && vt->t && vt->t->data_type == ONNX_STRING))
		return onnx_refuse(r, n, "it maps to strings (string values): its output is text, which hbird's features cannot hold");
	else if (!label_keys(r, n, &lt) || !label_values(r, n, &lt))
		goto done;
	if (lt.n_keys == 0 || lt.n_keys > (1 << 20) ||
		(size_t) in->width * lt.n_keys > (size_t) ONNX_MAX_NODES * 64)
		onnx_refuse(r, n, "it has no keys, or too many");
	else if (lt.n_vals != lt.n_keys)
		onnx_refuse(r, n, "its keys and values do not have the same length");
	else if (text != (lt.key_strs != NULL))
		onnx_refuse(r, n, text ? "its input is text but its keys are numbers" :
					"its keys are strings but its input is numeric");
	else
		ok = label_steps(r, n, in, text, &lt);
done:
	hb_free(lt.key_nums);
	hb_free(lt.vals);
	return ok;
}
