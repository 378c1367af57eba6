/*
 * onnx_featurize.c
 *	  Numeric featurizers of the ONNX reader (onnx_int.h): Scaler,
 *	  Normalizer, Imputer, Binarizer, Add / Sub / Mul / Div by a constant,
 *	  Concat / FeatureVectorizer and ArrayFeatureExtractor become steps of
 *	  the model's pipeline (featurize.h), computed as onnxruntime computes
 *	  them (in float where it does); attach_pipeline hands the steps to the
 *	  model.
 *
 * A step reads slots and writes fresh ones; a value of the graph that is a
 * feature vector is the list of slots its columns are in.
 */
#include "onnx_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A new step reading n_in slots and writing n_out fresh ones. */
HbStep *
onnx_add_step(OnnxReader *r, const OnnxNode *n, HbStepKind kind, const int32_t *in,
			  int32_t n_in, int32_t n_out)
{
	HbStep	   *steps;
	HbStep	   *s;

	if (r->n_steps >= ONNX_MAX_NODES || n_out > ONNX_MAX_NODES ||
		r->next_slot > INT32_MAX / 2 - n_out)
	{
		hb_fail(r->err, HB_ERR_LIMIT, "ONNX graph makes too many features");
		return NULL;
	}
	steps = hb_grow(r->steps, &r->cap_steps, (size_t) r->n_steps + 1, sizeof(HbStep));
	if (steps == NULL)
	{
		hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		return NULL;
	}
	r->steps = steps;
	s = &steps[r->n_steps++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->n_in = n_in;
	s->n_out = n_out;
	s->out = r->next_slot;
	s->name = hb_strdup(onnx_node_label(n));
	if (n_in > 0)
	{
		s->in = hb_alloc(sizeof(int32_t) * n_in);
		if (s->in)
			memcpy(s->in, in, sizeof(int32_t) * n_in);
	}
	if (s->name == NULL || (n_in > 0 && s->in == NULL))
	{
		hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		return NULL;
	}
	r->next_slot += n_out;
	return s;
}

/* Output slots of step s: out .. out + n_out - 1. */
static int32_t *
step_slots(OnnxReader *r, const HbStep *s)
{
	int32_t    *v = hb_alloc(sizeof(int32_t) * (s->n_out > 0 ? s->n_out : 1));

	if (v == NULL)
	{
		hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (int32_t i = 0; i < s->n_out; i++)
		v[i] = s->out + i;
	return v;
}

bool
onnx_add_step_value(OnnxReader *r, const OnnxNode *n, const HbStep *s, int elem)
{
	int32_t    *slots = step_slots(r, s);
	bool		ok;

	if (slots == NULL)
		return false;
	ok = n->n_output < 1 || onnx_val_add_slots(r, n->output[0], elem, slots, s->n_out);
	hb_free(slots);
	return ok;
}

/*
 * Per-column parameters: a list of 1 (broadcast) or width values, as
 * doubles (hb_alloc'd, width long).
 */
static bool
per_column(OnnxReader *r, const OnnxNode *n, const char *name, int32_t width,
		   double dflt, bool required, double **out)
{
	double	   *v = NULL;
	size_t		len;
	double	   *res;

	*out = NULL;
	if (!onnx_attr_doubles(n, name, &v, &len, r->err))
		return false;
	if (len == 0 && required)
	{
		char		why[128];

		snprintf(why, sizeof(why), "attribute %s is missing", name);
		return onnx_refuse(r, n, why);
	}
	if (len > 1 && r->flat_dims > 0)
	{
		char		why[200];

		hb_free(v);
		snprintf(why, sizeof(why),
				 "attribute %s has one value per column, but the input of %d dimensions is read as [rows, columns]",
				 name, r->flat_dims);
		return onnx_refuse(r, n, why);
	}
	if (len != 0 && len != 1 && len != (size_t) width)
	{
		char		why[160];

		hb_free(v);
		snprintf(why, sizeof(why), "attribute %s has %zu values for %d columns",
				 name, len, width);
		return onnx_refuse(r, n, why);
	}
	res = hb_alloc(sizeof(double) * width);
	if (res == NULL)
	{
		hb_free(v);
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	}
	for (int32_t i = 0; i < width; i++)
		res[i] = len == 0 ? dflt : len == 1 ? v[0] : v[i];
	hb_free(v);
	*out = res;
	return true;
}

bool
onnx_slots_known(OnnxReader *r, const OnnxNode *n, const OnnxVal *v)
{
	if (v->width <= 0)
		return onnx_refuse(r, n, "the width of its input is not known (declare the graph input's last dimension)");
	return true;
}

/* Scaler: onnxruntime's (x - offset) * scale, in float. */
static bool
featurize_scaler(OnnxReader *r, const OnnxNode *n, const OnnxVal *in)
{
	double	   *offset,
			   *scale;
	HbStep	   *s;

	if (!per_column(r, n, "offset", in->width, 0.0, false, &offset))
		return false;
	if (!per_column(r, n, "scale", in->width, 1.0, false, &scale))
	{
		hb_free(offset);
		return false;
	}
	s = onnx_add_step(r, n, HB_STEP_AFFINE, in->slots, in->width, in->width);
	if (s == NULL)
	{
		hb_free(offset);
		hb_free(scale);
		return false;
	}
	s->order = HB_AFFINE_SUB_MUL_ADD;
	s->sub = offset;
	s->mul = scale;
	s->f32 = true;
	return onnx_add_step_value(r, n, s, ONNX_FLOAT);
}

/* Imputer: the replaced value (NaN unless given) becomes the imputed one. */
static bool
featurize_imputer(OnnxReader *r, const OnnxNode *n, const OnnxVal *in)
{
	double	   *value;
	const OnnxAttr *rv = onnx_attr(n, "replaced_value_float");
	double		replaced = rv && rv->has_f ? (double) rv->f : 0.0;
	HbStep	   *s;

	if (onnx_attr(n, "imputed_value_floats") == NULL &&
		onnx_attr(n, "imputed_value_int64s") == NULL)
		return onnx_refuse(r, n, "no imputed values");
	if (!per_column(r, n, onnx_attr(n, "imputed_value_floats") ?
					"imputed_value_floats" : "imputed_value_int64s",
					in->width, 0.0, true, &value))
		return false;
	if (onnx_attr(n, "replaced_value_int64"))
		replaced = (double) onnx_attr_int(n, "replaced_value_int64", 0);
	s = onnx_add_step(r, n, HB_STEP_IMPUTE, in->slots, in->width, in->width);
	if (s == NULL)
	{
		hb_free(value);
		return false;
	}
	s->value = value;
	if (!isnan(replaced))
	{
		/* onnxruntime replaces that value only: a NaN (NULL) stays */
		s->has_missing_value = true;
		s->nan_kept = true;
		s->missing_value = replaced;
	}
	return onnx_add_step_value(r, n, s, in->elem);
}

/* Scaler, Normalizer, Imputer, Binarizer: one step over the columns. */
bool
onnx_featurize_elementwise(OnnxReader *r, const OnnxNode *n, const OnnxVal *in)
{
	const char *op = onnx_op(n);
	HbStep	   *s;

	if (!onnx_slots_known(r, n, in))
		return false;
	if (strcmp(op, "Normalizer") == 0)
	{
		char		norm[16];
		HbNorm		nm;

		onnx_attr_str(n, "norm", norm, sizeof(norm));
		nm = strcmp(norm, "L1") == 0 ? HB_NORM_L1 :
			strcmp(norm, "L2") == 0 ? HB_NORM_L2 :
			strcmp(norm, "MAX") == 0 ? HB_NORM_MAX : HB_NORM_NONE;
		if (nm == HB_NORM_NONE)
			return onnx_refuse(r, n, "unknown norm");
		s = onnx_add_step(r, n, HB_STEP_NORMALIZE, in->slots, in->width, in->width);
		if (s == NULL)
			return false;
		s->norm = nm;
		return onnx_add_step_value(r, n, s, ONNX_FLOAT);
	}
	if (strcmp(op, "Binarizer") == 0)
	{
		const OnnxAttr *a = onnx_attr(n, "threshold");

		s = onnx_add_step(r, n, HB_STEP_BINARIZE, in->slots, in->width, in->width);
		if (s == NULL)
			return false;
		/* onnxruntime compares in the input's type (float) */
		s->threshold = a && a->has_f ? (double) a->f : 0.0;
		return onnx_add_step_value(r, n, s, in->elem);
	}
	if (strcmp(op, "Scaler") == 0)
		return featurize_scaler(r, n, in);
	return featurize_imputer(r, n, in);
}

/* Add / Sub / Mul / Div between the features and a constant */
bool
onnx_featurize_arith(OnnxReader *r, const OnnxNode *n, const OnnxVal *a, const OnnxVal *b)
{
	const char *op = onnx_op(n);
	const OnnxVal *x = a->kind == VAL_INPUT ? a : b;
	const OnnxVal *c = a->kind == VAL_INPUT ? b : a;
	bool		const_first = x == b;
	double	   *v = NULL,
			   *cv;
	size_t		len;
	HbStep	   *s;
	HbArithOp	aop;

	if (!onnx_slots_known(r, n, x))
		return false;
	if (c->kind != VAL_CONST)
		return onnx_refuse(r, n, "only arithmetic between the features and a constant is supported");
	if (!onnx_tensor_doubles(c->tensor, "B", &v, &len, r->err))
		return false;
	if (len != 1 && (len != (size_t) x->width || r->flat_dims > 0))
	{
		hb_free(v);
		return onnx_refuse(r, n, "the constant does not broadcast over the features");
	}
	cv = hb_alloc(sizeof(double) * x->width);
	if (cv == NULL)
	{
		hb_free(v);
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	}
	for (int32_t i = 0; i < x->width; i++)
		cv[i] = len == 1 ? v[0] : v[i];
	hb_free(v);
	aop = strcmp(op, "Add") == 0 ? HB_ARITH_ADD :
		strcmp(op, "Mul") == 0 ? HB_ARITH_MUL :
		strcmp(op, "Sub") == 0 ? (const_first ? HB_ARITH_RSUB : HB_ARITH_SUB) :
		(const_first ? HB_ARITH_RDIV : HB_ARITH_DIV);
	s = onnx_add_step(r, n, HB_STEP_ARITH, x->slots, x->width, x->width);
	if (s == NULL)
	{
		hb_free(cv);
		return false;
	}
	s->arith = aop;
	s->constant = cv;
	s->f32 = x->elem != ONNX_DOUBLE;
	return onnx_add_step_value(r, n, s, x->elem);
}

/* Concat, FeatureVectorizer: the columns of several inputs side by side */
bool
onnx_featurize_concat(OnnxReader *r, const OnnxNode *n)
{
	size_t		n_dims;
	const int64_t *dims = onnx_attr_ints(n, "inputdimensions", &n_dims);
	int32_t    *all = NULL;
	int32_t		width = 0;
	int			elem = ONNX_FLOAT;
	bool		ok;

	if (strcmp(onnx_op(n), "Concat") == 0)
	{
		int64_t		axis = onnx_attr_int(n, "axis", 1);

		if (axis != 1 && axis != -1)
			return onnx_refuse(r, n, "only a concatenation of columns (axis 1) is supported");
	}
	else if (n_dims != 0 && n_dims != n->n_input)
		return onnx_refuse(r, n, "inputdimensions does not have one entry per input");
	for (size_t i = 0; i < n->n_input; i++)
	{
		OnnxVal    *v = onnx_val_find(r, n->input[i]);
		int32_t    *grown;

		if (v == NULL || v->kind != VAL_INPUT)
		{
			hb_free(all);
			return onnx_refuse(r, n, "only feature columns can be concatenated");
		}
		if (!onnx_slots_known(r, n, v))
		{
			hb_free(all);
			return false;
		}
		if (n_dims && dims[i] != v->width)
		{
			hb_free(all);
			return onnx_refuse(r, n, "an input's width differs from inputdimensions");
		}
		if (width > ONNX_MAX_NODES)
		{
			hb_free(all);
			return hb_fail(r->err, HB_ERR_LIMIT, "ONNX graph makes too many features");
		}
		grown = hb_realloc(all, sizeof(int32_t) * (width + v->width));
		if (grown == NULL)
		{
			hb_free(all);
			return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		}
		all = grown;
		memcpy(all + width, v->slots, sizeof(int32_t) * v->width);
		width += v->width;
		if (v->elem == ONNX_DOUBLE)
			elem = ONNX_DOUBLE;
	}
	ok = n->n_output < 1 || onnx_val_add_slots(r, n->output[0], elem, all, width);
	hb_free(all);
	return ok;
}

/* ArrayFeatureExtractor with constant indexes: a column selection (of
 * numbers or of strings) */
bool
onnx_featurize_select(OnnxReader *r, const OnnxNode *n, const OnnxVal *in, const OnnxVal *idx)
{
	double	   *v = NULL;
	size_t		len;
	int32_t    *sel;
	bool		ok;

	if (!onnx_slots_known(r, n, in))
		return false;
	if (idx && idx->kind == VAL_INPUT)
	{
		char		why[400];

		/*
		 * The selected columns become the model's features when it is
		 * read; indexes that arrive with each call would change them.
		 */
		snprintf(why, sizeof(why),
				 "its indexes are the graph input \"%.200s\", known only when the graph runs; hbird fixes the selected columns when it reads the model (give the indexes as an initializer)",
				 idx->name);
		return onnx_refuse(r, n, why);
	}
	if (idx == NULL || idx->kind != VAL_CONST)
		return onnx_refuse(r, n, "only constant indexes are supported");
	if (!onnx_tensor_doubles(idx->tensor, "indices", &v, &len, r->err))
		return false;
	if (len == 0 || len > (size_t) ONNX_MAX_NODES)
	{
		hb_free(v);
		return onnx_refuse(r, n, "no indexes");
	}
	sel = hb_alloc(sizeof(int32_t) * len);
	if (sel == NULL)
	{
		hb_free(v);
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < len; i++)
	{
		if (!(v[i] >= 0 && v[i] < in->width))
		{
			double		bad = v[i];

			hb_free(v);
			hb_free(sel);
			return hb_fail(r->err, HB_ERR_INVALID,
						   "ONNX node \"%s\" (op %s) selects column %g of %d",
						   onnx_node_label(n), onnx_op(n), bad, in->width);
		}
		sel[i] = in->slots[(int32_t) v[i]];
	}
	hb_free(v);
	ok = n->n_output < 1 || onnx_val_add_slots(r, n->output[0], in->elem, sel, (int32_t) len);
	hb_free(sel);
	if (ok && n->n_output >= 1 && in->kind == VAL_TEXT)
	{
		/* string columns stay text inputs */
		OnnxVal    *out = onnx_val_find(r, n->output[0]);

		if (out)
			out->kind = VAL_TEXT;
	}
	return ok;
}

/*
 * Give the model read from value v its pipeline, unless v is the graph's
 * only input, untouched.
 */
bool
onnx_attach_pipeline(OnnxReader *r, const OnnxVal *v)
{
	HbPipeline *p;
	bool		plain = r->n_steps == 0 && r->n_text_inputs == 0 &&
		v->width == r->n_inputs;

	for (int32_t i = 0; plain && i < v->width; i++)
		plain = v->slots[i] == i;
	if (plain || v->width <= 0)
		return true;
	p = hb_alloc0(sizeof(HbPipeline));
	if (p == NULL)
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	r->m->pipeline = p;
	p->n_inputs = r->n_inputs;
	p->n_num_inputs = r->n_num_inputs;
	p->n_text_inputs = r->n_text_inputs;
	p->inputs = r->inputs;
	r->inputs = NULL;
	r->n_inputs = 0;
	p->n_steps = r->n_steps;
	p->steps = r->steps;
	r->steps = NULL;
	r->n_steps = 0;
	p->n_slots = r->next_slot;
	p->n_features = v->width;
	p->feature_slot = hb_alloc(sizeof(int32_t) * v->width);
	if (p->feature_slot == NULL)
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	memcpy(p->feature_slot, v->slots, sizeof(int32_t) * v->width);
	return true;
}
