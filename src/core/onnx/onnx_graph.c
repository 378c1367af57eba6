/*
 * onnx_graph.c
 *	  The graph of an ONNX model, node by node (onnx_int.h): its inputs
 *	  become the pipeline's inputs, each node a featurizer, the estimator,
 *	  or what may follow it; a graph of featurizers alone becomes an
 *	  identity linear model over its output.
 */
#include "onnx_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------
 * The graph
 * ---------------------------------------------------------------------
 */
static bool
is_ml_domain(const OnnxNode *n)
{
	return n->domain && strcmp(n->domain, "ai.onnx.ml") == 0;
}

static bool
is_std_domain(const OnnxNode *n)
{
	return n->domain == NULL || n->domain[0] == '\0' ||
		strcmp(n->domain, "ai.onnx") == 0;
}

static bool
op_is(const OnnxNode *n, const char *op, bool ml)
{
	return strcmp(onnx_op(n), op) == 0 && (ml ? is_ml_domain(n) : is_std_domain(n));
}

/*
 * The columns of a graph input of shape tt: its last dimension, or for
 * more than two dimensions the product of all but the first (the input is
 * then read as [rows, columns]: r->flat_dims); -1 when not declared.
 */
static bool
input_width(OnnxReader *r, const Hbonnx__ValueInfoProto *vi,
			const Hbonnx__TypeProto__Tensor *tt, bool text, int64_t *width)
{
	*width = -1;
	if (tt->shape && tt->shape->n_dim > 2)
	{
		/* [rows, d1, d2, ...]: the columns are d1 x d2 x ... */
		*width = 1;
		for (size_t d = 1; d < tt->shape->n_dim; d++)
		{
			const Hbonnx__TensorShapeProto__Dimension *dd = tt->shape->dim[d];

			if (!dd->has_dim_value || dd->dim_value <= 0)
				return hb_fail(r->err, HB_ERR_UNSUPPORTED,
							   "ONNX graph input \"%s\" has %zu dimensions, not all declared; hbird reads [rows, features]",
							   vi->name, tt->shape->n_dim);
			if (dd->dim_value > HB_MAX_FEATURES || *width > HB_MAX_FEATURES / dd->dim_value)
				return hb_fail(r->err, HB_ERR_LIMIT,
							   "ONNX graph input \"%s\" has too many columns", vi->name);
			*width *= dd->dim_value;
		}
		r->flat_dims = (int) tt->shape->n_dim;
	}
	else if (tt->shape && tt->shape->n_dim > 0)
	{
		const Hbonnx__TensorShapeProto__Dimension *d =
			tt->shape->dim[tt->shape->n_dim - 1];

		if (d->has_dim_value && d->dim_value > 0)
			*width = d->dim_value;
		else if (text && tt->shape->n_dim == 1)
			*width = 1;
	}
	if (*width > HB_MAX_FEATURES || r->n_inputs > HB_MAX_FEATURES - *width)
		return hb_fail(r->err, HB_ERR_LIMIT,
					   "ONNX graph input \"%s\" has too many columns", vi->name);
	return true;
}

/*
 * Pipeline inputs for the width columns of graph input vi; slots[c] gets
 * column c's slot.
 */
static bool
add_columns(OnnxReader *r, const Hbonnx__ValueInfoProto *vi, int64_t width,
			bool text, int n_graph_inputs, int32_t *slots)
{
	for (int64_t c = 0; c < width; c++)
	{
		HbInput    *in;
		char		name[300];

		in = hb_grow(r->inputs, &r->cap_inputs, (size_t) r->n_inputs + 1,
					 sizeof(HbInput));
		if (in == NULL)
			return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		r->inputs = in;
		in = &r->inputs[r->n_inputs];
		memset(in, 0, sizeof(*in));
		if (n_graph_inputs == 1)
			snprintf(name, sizeof(name), "f%lld", (long long) c);
		else if (width == 1)
			snprintf(name, sizeof(name), "%.250s", vi->name);
		else
			snprintf(name, sizeof(name), "%.250s_%lld", vi->name, (long long) c);
		in->name = hb_strdup(name);
		if (in->name == NULL)
			return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		r->n_inputs++;
		/* numeric inputs are slots 0 .. n_num_inputs - 1 */
		in->type = text ? HB_INPUT_TEXT : HB_INPUT_NUMERIC;
		in->index = text ? r->n_text_inputs++ : r->n_num_inputs++;
		slots[c] = in->index;
	}
	return true;
}

/* Graph input vi, one of n_graph_inputs: a value of its columns. */
static bool
read_input(OnnxReader *r, const Hbonnx__ValueInfoProto *vi, int n_graph_inputs)
{
	const Hbonnx__TypeProto__Tensor *tt = vi->type ? vi->type->tensor_type : NULL;
	int			elem;
	int64_t		width;
	int32_t    *slots;
	bool		text;
	bool		ok;

	if (tt == NULL)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "ONNX graph input \"%s\" is not a tensor (maps and sequences are not supported)",
					   vi->name);
	elem = tt->has_elem_type ? tt->elem_type : ONNX_FLOAT;
	if (elem != ONNX_FLOAT && elem != ONNX_DOUBLE &&
		elem != ONNX_INT64 && elem != ONNX_INT32 && elem != ONNX_STRING)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "ONNX graph input \"%s\" has element type %d; hbird reads numeric tensors (float, double, int32, int64) and strings",
					   vi->name, elem);
	text = elem == ONNX_STRING;
	if (!input_width(r, vi, tt, text, &width))
		return false;
	if (width < 0)
	{
		if (n_graph_inputs > 1 || text)
			return hb_fail(r->err, HB_ERR_UNSUPPORTED,
						   "ONNX graph input \"%s\" does not declare its number of columns",
						   vi->name);
		/* one input of unknown width: the estimator will say */
		return onnx_val_add_slots(r, vi->name, elem, NULL, -1);
	}
	slots = hb_alloc(sizeof(int32_t) * width);
	if (slots == NULL)
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	ok = add_columns(r, vi, width, text, n_graph_inputs, slots) &&
		onnx_val_add_slots(r, vi->name, elem, slots, (int32_t) width);
	if (ok && text && r->n_vals > 0 && r->vals[r->n_vals - 1].name == vi->name)
		r->vals[r->n_vals - 1].kind = VAL_TEXT;
	hb_free(slots);
	return ok;
}

/*
 * The graph inputs that are not initializers: tensors of [rows, columns],
 * each column an input of the pipeline, named f0, f1, ... for a graph of
 * one input, else after the input (with _<i> when it has several
 * columns).  Numeric tensors give numeric inputs; string tensors give text
 * inputs, which only the text featurizers (LabelEncoder, OneHotEncoder)
 * read.  A string tensor of one dimension of unknown length is a batch of
 * strings: one text column.  A tensor of more than two dimensions is read
 * as [rows, product of the others] when every operator of the graph works
 * element by element (checked node by node).
 */
static bool
find_inputs(OnnxReader *r)
{
	const Hbonnx__GraphProto *g = r->g;
	int			n_graph_inputs = 0;

	for (size_t i = 0; i < g->n_initializer; i++)
		if (!onnx_val_add(r, g->initializer[i]->name, VAL_CONST, g->initializer[i], 0))
			return false;
	for (size_t i = 0; i < g->n_input; i++)
		if (g->input[i]->name && !onnx_val_find(r, g->input[i]->name))
			n_graph_inputs++;
	if (n_graph_inputs == 0)
		return hb_fail(r->err, HB_ERR_INVALID, "ONNX graph has no input");
	for (size_t i = 0; i < g->n_input; i++)
	{
		const Hbonnx__ValueInfoProto *vi = g->input[i];

		if (vi->name == NULL || onnx_val_find(r, vi->name))
			continue;
		if (!read_input(r, vi, n_graph_inputs))
			return false;
	}
	r->next_slot = r->n_num_inputs;
	return true;
}

/* Integer value of a constant holding one index. */
static bool
const_index(OnnxReader *r, const OnnxVal *v, int64_t *out)
{
	double	   *d = NULL;
	size_t		len;
	bool		ok;

	if (v == NULL || v->kind != VAL_CONST)
		return false;
	if (!onnx_tensor_doubles(v->tensor, "index", &d, &len, r->err))
		return false;
	ok = len == 1;
	if (ok)
		*out = (int64_t) d[0];
	hb_free(d);
	return ok;
}

/* Operators read_node handles in some form */
static bool
op_known(const OnnxNode *n)
{
	static const char *const ml[] = {
		"TreeEnsembleClassifier", "TreeEnsembleRegressor", "TreeEnsemble", "LinearClassifier",
		"LinearRegressor", "SVMClassifier", "SVMRegressor", "ZipMap", "Normalizer",
		"ArrayFeatureExtractor", "Scaler", "Imputer", "Binarizer", "OneHotEncoder",
	"FeatureVectorizer", "LabelEncoder"};
	static const char *const std[] = {
	"MatMul", "Identity", "Cast", "Concat", "Add", "Sub", "Mul", "Div"};

	for (size_t i = 0; i < sizeof(ml) / sizeof(ml[0]); i++)
		if (op_is(n, ml[i], true))
			return true;
	for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++)
		if (op_is(n, std[i], false))
			return true;
	return false;
}

/*
 * Operators that work element by element whatever the shape, so that an
 * input of more than two dimensions can be read as [rows, columns]
 * (their per-column parameters must then be single values).
 */
static bool
op_elementwise(const OnnxNode *n)
{
	return op_is(n, "Identity", false) || op_is(n, "Cast", false) ||
		op_is(n, "Add", false) || op_is(n, "Sub", false) ||
		op_is(n, "Mul", false) || op_is(n, "Div", false) ||
		op_is(n, "Binarizer", true) || op_is(n, "Scaler", true) ||
		op_is(n, "Imputer", true) || op_is(n, "LabelEncoder", true);
}

static bool
is_estimator(const OnnxNode *n, const OnnxVal *in0)
{
	return op_is(n, "TreeEnsembleClassifier", true) ||
		op_is(n, "TreeEnsembleRegressor", true) ||
		op_is(n, "TreeEnsemble", true) ||
		op_is(n, "LinearClassifier", true) ||
		op_is(n, "LinearRegressor", true) ||
		op_is(n, "SVMClassifier", true) ||
		op_is(n, "SVMRegressor", true) ||
		(op_is(n, "MatMul", false) && in0 && in0->kind == VAL_INPUT);
}

/* The estimator, reading the feature vector in0: the model. */
static bool
read_estimator(OnnxReader *r, const OnnxNode *n, const OnnxVal *in0,
			   const OnnxVal *in1)
{
	const char *op = onnx_op(n);
	bool		classifier = strstr(op, "Classifier") != NULL;
	bool		ok;

	if (in0 && in0->kind == VAL_TEXT)
		return onnx_refuse(r, n, "its input is text (a string tensor); an encoder (LabelEncoder, OneHotEncoder) must turn it into numbers first");
	if (in0 == NULL || in0->kind != VAL_INPUT)
		return onnx_refuse(r, n, "its input is not a feature vector");
	r->input_name = in0->name;
	r->input_elem = in0->elem;
	r->input_width = in0->width;
	if (strcmp(op, "TreeEnsemble") == 0)
		ok = onnx_read_tree_ensemble5(r, n);
	else if (strncmp(op, "Tree", 4) == 0)
		ok = onnx_read_tree_ensemble(r, n, classifier);
	else if (strncmp(op, "Linear", 6) == 0)
		ok = onnx_read_linear(r, n, classifier);
	else if (strncmp(op, "SVM", 3) == 0)
		ok = onnx_read_svm(r, n, classifier);
	else if (n->n_input != 2 || in1 == NULL || in1->kind != VAL_CONST)
		return onnx_refuse(r, n, "only a product with a constant matrix is supported");
	else
		ok = onnx_read_matmul(r, n, in1->tensor);
	if (!ok || !onnx_attach_pipeline(r, in0))
		return false;
	if (classifier)
		return (n->n_output < 1 || onnx_val_add(r, n->output[0], VAL_LABEL, NULL, 0)) &&
			(n->n_output < 2 || onnx_val_add(r, n->output[1], VAL_SCORES, NULL, 0));
	return n->n_output < 1 || onnx_val_add(r, n->output[0], VAL_SCORES, NULL, 0);
}

/*
 * Identity and Cast: the same value under another name; a cast of double
 * features to float is a step (the values change), a widening is not.
 */
static bool
read_passthrough(OnnxReader *r, const OnnxNode *n, const OnnxVal *in0)
{
	int			elem = in0->elem;

	if (in0->kind == VAL_TEXT)
	{
		OnnxVal    *v;

		if (op_is(n, "Cast", false))
			return onnx_refuse(r, n, "a cast of text (a string tensor) is not supported");
		if (!onnx_val_add_slots(r, n->output[0], ONNX_STRING, in0->slots, in0->width))
			return false;
		v = onnx_val_find(r, n->output[0]);
		if (v)
			v->kind = VAL_TEXT;
		return true;
	}
	if (in0->kind == VAL_SCORES && op_is(n, "Cast", false))
	{
		int64_t		to = onnx_attr_int(n, "to", 0);

		/* truncated to integers the scores would be other numbers */
		if (to != ONNX_FLOAT && to != ONNX_DOUBLE)
			return onnx_refuse(r, n, "a cast of the model's scores to a non-floating type is not supported");
	}
	if (in0->kind != VAL_INPUT)
		return onnx_val_add(r, n->output[0], in0->kind, in0->tensor, in0->elem);
	if (op_is(n, "Cast", false))
	{
		int64_t		to = onnx_attr_int(n, "to", 0);

		if (to != ONNX_FLOAT && to != ONNX_DOUBLE)
			return onnx_refuse(r, n, "a cast of the features to a non-floating type is not supported");
		if (to == ONNX_FLOAT && in0->elem == ONNX_DOUBLE && in0->width > 0)
		{
			HbStep	   *s = onnx_add_step(r, n, HB_STEP_CAST_F32, in0->slots,
										  in0->width, in0->width);

			return s != NULL && onnx_add_step_value(r, n, s, ONNX_FLOAT);
		}
		/* float stays float when widened: the values are floats */
		elem = to == ONNX_DOUBLE && in0->elem == ONNX_FLOAT ? ONNX_FLOAT : (int) to;
	}
	return onnx_val_add_slots(r, n->output[0], elem, in0->slots, in0->width);
}

/*
 * What may follow the estimator's scores (the input of n): ZipMap, an L1 Normalizer of
 * per-class sigmoids (LogisticRegression ovr), and the positive class's
 * column of two opposite score columns.  *done: n was one of them.
 */
static bool
read_on_scores(OnnxReader *r, const OnnxNode *n, const OnnxVal *in1,
			   bool *done)
{
	*done = true;
	if (op_is(n, "ZipMap", true))
		return n->n_output < 1 || onnx_val_add(r, n->output[0], VAL_SCORES, NULL, 0);
	if (op_is(n, "Normalizer", true) && r->m)
	{
		char		norm[16];

		onnx_attr_str(n, "norm", norm, sizeof(norm));
		if (strcmp(norm, "L1") != 0)
			return onnx_refuse(r, n, "only an L1 normalisation of the probabilities is supported");
		if (r->m->link == HB_LINK_LOGISTIC && r->m->task == HB_TASK_MULTICLASS)
			r->m->link = HB_LINK_SIGMOID_L1;
		else if (!(r->m->link == HB_LINK_LOGISTIC && r->m->task == HB_TASK_BINARY) &&
				 r->m->link != HB_LINK_SOFTMAX && r->m->link != HB_LINK_SOFTMAX_PAIR)
			return onnx_refuse(r, n, "an L1 normalisation is supported only after LOGISTIC or SOFTMAX");
		return n->n_output < 1 || onnx_val_add(r, n->output[0], VAL_SCORES, NULL, 0);
	}
	if (op_is(n, "ArrayFeatureExtractor", true) && n->n_input == 2 && r->m)
	{
		int64_t		idx;

		if (r->two_col_binary && const_index(r, in1, &idx) && idx == 1)
			return n->n_output < 1 || onnx_val_add(r, n->output[0], VAL_SCORES, NULL, 0);
		if (r->err->code != HB_OK)
			return false;
		return onnx_refuse(r, n, "only the positive-class column of a binary model's scores can be selected");
	}
	*done = false;
	return true;
}

/* Featurizers of the features or text in0, before the estimator. */
static bool
read_featurizer(OnnxReader *r, const OnnxNode *n, const OnnxVal *in0,
				const OnnxVal *in1, bool *done)
{
	*done = true;
	if (op_is(n, "LabelEncoder", true))
		return onnx_featurize_label(r, n, in0);
	if (op_is(n, "OneHotEncoder", true))
		return onnx_featurize_onehot(r, n, in0);
	if (op_is(n, "ArrayFeatureExtractor", true) && n->n_input == 2)
		return onnx_featurize_select(r, n, in0, in1);
	if (in0->kind == VAL_TEXT)
		return onnx_refuse(r, n, "its input is text (a string tensor); only LabelEncoder, OneHotEncoder and ArrayFeatureExtractor read strings");
	if (op_is(n, "Scaler", true) || op_is(n, "Normalizer", true) ||
		op_is(n, "Imputer", true) || op_is(n, "Binarizer", true))
		return onnx_featurize_elementwise(r, n, in0);
	if (op_is(n, "FeatureVectorizer", true) || op_is(n, "Concat", false))
		return onnx_featurize_concat(r, n);
	*done = false;
	return true;
}

static bool
read_node(OnnxReader *r, const OnnxNode *n)
{
	OnnxVal    *in0 = n->n_input > 0 ? onnx_val_find(r, n->input[0]) : NULL;
	OnnxVal    *in1 = n->n_input > 1 ? onnx_val_find(r, n->input[1]) : NULL;
	bool		done,
				ok;

	if (r->flat_dims > 0 && !op_elementwise(n))
	{
		char		why[200];

		snprintf(why, sizeof(why),
				 "the graph's input has %d dimensions, read as [rows, columns], so only element-wise operators can follow it",
				 r->flat_dims);
		return onnx_refuse(r, n, why);
	}
	if (is_estimator(n, in0))
		return read_estimator(r, n, in0, in1);
	if ((op_is(n, "Identity", false) || op_is(n, "Cast", false)) && in0 &&
		n->n_input == 1 && n->n_output >= 1)
		return read_passthrough(r, n, in0);
	if (in0 && in0->kind == VAL_SCORES)
	{
		ok = read_on_scores(r, n, in1, &done);
		if (done)
			return ok;
	}
	if (in0 && (in0->kind == VAL_INPUT || in0->kind == VAL_TEXT) && r->m == NULL)
	{
		ok = read_featurizer(r, n, in0, in1, &done);
		if (done)
			return ok;
	}
	if ((op_is(n, "Add", false) || op_is(n, "Sub", false) ||
		 op_is(n, "Mul", false) || op_is(n, "Div", false)) && n->n_input == 2 &&
		in0 && in1 && r->m == NULL && in0->kind != VAL_TEXT && in1->kind != VAL_TEXT &&
		(in0->kind == VAL_INPUT || in1->kind == VAL_INPUT))
		return onnx_featurize_arith(r, n, in0, in1);
	return onnx_refuse(r, n, "operator not supported");
}

/*
 * A graph of featurizers alone: a model whose outputs are the features
 * (an identity linear map), so hb_predict_margin returns them.
 */
static bool
transform_only(OnnxReader *r)
{
	const Hbonnx__GraphProto *g = r->g;
	OnnxVal    *out = g->n_output > 0 ? onnx_val_find(r, g->output[0]->name) : NULL;
	HbModel    *m;
	double	   *eye;
	bool		ok;
	OnnxNode	fake = HBONNX__NODE_PROTO__INIT;

	if (out && out->kind == VAL_TEXT)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "ONNX graph output \"%s\" is text (a string tensor); hbird's outputs are numbers",
					   out->name);
	if (out && out->kind == VAL_INPUT && r->flat_dims > 0)
	{
		const Hbonnx__TypeProto__Tensor *tt = g->output[0]->type ?
			g->output[0]->type->tensor_type : NULL;
		int64_t		cols = 1;

		/* the output keeps the input's shape: its columns must agree */
		for (size_t d = 1; tt && tt->shape && d < tt->shape->n_dim && cols > 0; d++)
		{
			const Hbonnx__TensorShapeProto__Dimension *dd = tt->shape->dim[d];

			/* an undeclared dimension: nothing to check */
			cols = dd->has_dim_value && dd->dim_value > 0 && cols <= HB_MAX_FEATURES &&
				dd->dim_value <= HB_MAX_FEATURES ? cols * dd->dim_value : 0;
		}
		if (tt && tt->shape && tt->shape->n_dim > 1 && cols > 0 && cols != out->width)
			return hb_fail(r->err, HB_ERR_UNSUPPORTED,
						   "ONNX graph output \"%s\" does not have the shape of its input, read as [rows, %d]",
						   out->name, out->width);
	}
	if (out == NULL || out->kind != VAL_INPUT || out->width <= 0)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "ONNX graph has no estimator (TreeEnsemble*, Linear*, SVM*) and its output is not a feature vector");
	if (out->width > 4096)
		return hb_fail(r->err, HB_ERR_LIMIT,
					   "ONNX graph of featurizers alone has %d outputs (at most 4096)",
					   out->width);
	fake.name = (char *) "featurizers";
	fake.op_type = (char *) "featurizers";
	r->input_width = out->width;
	r->input_elem = out->elem;
	if (!onnx_new_model(r, &fake, out->width, out->width))
		return false;
	m = r->m;
	m->task = HB_TASK_REGRESSION;
	eye = hb_alloc0(sizeof(double) * out->width * out->width);
	if (eye == NULL)
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	for (int32_t i = 0; i < out->width; i++)
		eye[(size_t) i * out->width + i] = 1.0;
	ok = onnx_set_linear(r, eye, NULL, out->width, out->width);
	hb_free(eye);
	return ok && onnx_attach_pipeline(r, out);
}

bool
onnx_read_graph(OnnxReader *r, const Hbonnx__ModelProto *mp)
{
	const Hbonnx__GraphProto *g = mp->graph;

	if (g == NULL)
		return hb_fail(r->err, HB_ERR_PARSE, "ONNX model has no graph");
	if (g->n_node == 0)
		return hb_fail(r->err, HB_ERR_INVALID, "ONNX graph has no nodes");
	if (g->n_node > ONNX_MAX_NODES)
		return hb_fail(r->err, HB_ERR_LIMIT, "ONNX graph has %zu nodes (at most %d)",
					   g->n_node, ONNX_MAX_NODES);
	r->g = g;
	/*
	 * Refuse the first unsupported operator whatever the inputs look like,
	 * so that the message names what the graph needs.
	 */
	if (!find_inputs(r))
	{
		HbError		save = *r->err;

		for (size_t i = 0; i < g->n_node; i++)
			if (!op_known(g->node[i]))
			{
				memset(r->err, 0, sizeof(HbError));
				return onnx_refuse(r, g->node[i], "operator not supported");
			}
		*r->err = save;
		return false;
	}
	for (size_t i = 0; i < g->n_node; i++)
	{
		if ((i & 255) == 0)
			hb_check_interrupts();
		if (!read_node(r, g->node[i]))
			return false;
	}
	if (r->m == NULL)
		return transform_only(r);
	return true;
}
