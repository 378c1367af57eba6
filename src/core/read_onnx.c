/*
 * read_onnx.c
 *	  Reader for ONNX-ML models (what skl2onnx and onnxmltools write).
 *
 * The protobuf is decoded by protobuf-c from the project's own description
 * of the messages it needs (onnx/onnx_ml.proto, ONNX's field numbers), with
 * an allocator that charges every byte to a budget proportional to the
 * input, so that a hostile file cannot make the decoder exhaust memory.
 * The schema has no recursive message, so the decoder's recursion is
 * bounded too.
 *
 * An ONNX graph is a program; hbird accepts the programs converters write
 * for one estimator and lowers them to the IR:
 *
 *	input -> [Identity, Cast] -> estimator -> [ZipMap, Normalizer, Cast,
 *	Identity, ArrayFeatureExtractor] -> outputs
 *
 * Estimators: TreeEnsembleClassifier / TreeEnsembleRegressor (legacy
 * attributes), TreeEnsemble (opset 5, BRANCH_MEMBER sets included),
 * LinearClassifier / LinearRegressor, SVMClassifier (two
 * classes) / SVMRegressor with a LINEAR kernel (the support vectors are
 * folded into one weight vector), and MatMul by a constant matrix.  Any
 * other node is refused with its op type and name.
 *
 * Featurizers in front of the estimator become steps of the model's
 * pipeline (featurize.h).  String graph inputs are text inputs of the
 * pipeline: LabelEncoder and OneHotEncoder turn them into numbers; a graph
 * that outputs strings has nothing hbird can return and is refused.
 *
 * Trees: onnxruntime compares float32 inputs with float32 thresholds in
 * six ways (BRANCH_LEQ, _LT, _GTE, _GT, _EQ, _NEQ).  The IR has one
 * comparison per model, so every mode is rewritten into it:
 *	float32 (HB_CMP_LT_F32):  x <= t  <=>  x < nextafterf(t, +inf)
 *	double  (HB_CMP_LE_F64):  x < t   <=>  x <= nextafter(t, -inf)
 * GTE / GT are the negations of LT / LEQ (children swapped); EQ and NEQ
 * become two nodes (x below t, then x above t), the subtree on the
 * "different" side copied.  A missing value follows the true branch when
 * nodes_missing_value_tracks_true is set, else the false branch (a NaN
 * comparison is false).  A leaf may feed several classes
 * (class_ids / target_ids): the tree is emitted once per class it feeds,
 * each copy adding to that class's margin.  AVERAGE divides the leaves by
 * the number of trees; base_values are added last, as a one-leaf tree per
 * output (onnxruntime adds them after the sum, in float32).
 *
 * Classifiers: two class labels with a single score column are binary
 * (the column is the positive class's score); two columns are binary too
 * when they are exact opposites (scikit-learn's linear models), else the
 * model is multiclass with one margin per class.  A SOFTMAX over two
 * opposite columns (scikit-learn's multinomial logistic regression on two
 * classes) is onnxruntime's float32 softmax over [-s, s]
 * (HB_LINK_SOFTMAX_PAIR); over a single column it is refused, as
 * onnxruntime's LinearClassifier then ignores the post-transform and
 * returns [1 - s, s].  Class labels (strings or
 * integers) are not kept: predictions are class indexes, in label order.
 */
#include "model.h"
#include "onnx/onnx_ml.pb-c.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ONNX_MAX_NODES		100000	/* graph nodes */
#define ONNX_MAX_TREE_NODES (1 << 22)	/* IR nodes of one emitted tree */
#define ONNX_MAX_ALL_NODES	(1 << 27)	/* IR nodes of the model */

/* ONNX TensorProto.DataType values hbird reads */
enum
{
	ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3, ONNX_UINT16 = 4,
	ONNX_INT16 = 5, ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_STRING = 8,
	ONNX_BOOL = 9, ONNX_DOUBLE = 11, ONNX_UINT32 = 12, ONNX_UINT64 = 13
};

/* ---------------------------------------------------------------------
 * Budgeted allocator for protobuf-c
 * ---------------------------------------------------------------------
 */
typedef struct PbBudget
{
	size_t		used;
	size_t		budget;
	bool		exceeded;
} PbBudget;

#define PB_HDR 16				/* keeps the payload 16-byte aligned */

static void *
pb_alloc(void *data, size_t size)
{
	PbBudget   *b = data;
	char	   *p;

	if (size > b->budget - b->used)
	{
		b->exceeded = true;
		return NULL;
	}
	p = hb_alloc(size + PB_HDR);
	if (p == NULL)
		return NULL;
	memcpy(p, &size, sizeof(size));
	b->used += size;
	return p + PB_HDR;
}

static void
pb_free(void *data, void *ptr)
{
	PbBudget   *b = data;
	size_t		size;

	if (ptr == NULL)
		return;
	memcpy(&size, (char *) ptr - PB_HDR, sizeof(size));
	b->used -= size;
	hb_free((char *) ptr - PB_HDR);
}

/*
 * A ModelProto written by any ONNX exporter starts with ir_version
 * (field 1, varint, a small number) followed by another ModelProto field:
 * producer_name, producer_version, domain, model_version, doc_string,
 * graph or opset_import.  No text format hbird reads starts like that.
 */
bool
hb_onnx_detect(const char *bytes, size_t len)
{
	const unsigned char *b = (const unsigned char *) bytes;

	if (len < 3 || b[0] != 0x08 || b[1] == 0 || b[1] > 0x7f)
		return false;
	return b[2] == 0x12 || b[2] == 0x1a || b[2] == 0x22 || b[2] == 0x28 ||
		b[2] == 0x32 || b[2] == 0x3a || b[2] == 0x42 || b[2] == 0x72;
}

/* ---------------------------------------------------------------------
 * Attributes and tensors
 * ---------------------------------------------------------------------
 */
typedef Hbonnx__NodeProto OnnxNode;
typedef Hbonnx__AttributeProto OnnxAttr;
typedef Hbonnx__TensorProto OnnxTensor;

static const char *
node_label(const OnnxNode *n)
{
	return n->name && n->name[0] ? n->name : "(unnamed)";
}

static const char *
op_of(const OnnxNode *n)
{
	return n->op_type ? n->op_type : "";
}

static const OnnxAttr *
attr(const OnnxNode *n, const char *name)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
			return n->attribute[i];
	return NULL;
}

static bool
bin_eq(ProtobufCBinaryData d, const char *s)
{
	size_t		l = strlen(s);

	return d.len == l && memcmp(d.data, s, l) == 0;
}

static int64_t
attr_int(const OnnxNode *n, const char *name, int64_t dflt)
{
	const OnnxAttr *a = attr(n, name);

	return a && a->has_i ? a->i : dflt;
}

/* A string attribute as a NUL-terminated copy in buf ("" when absent). */
static const char *
attr_str(const OnnxNode *n, const char *name, char *buf, size_t size)
{
	const OnnxAttr *a = attr(n, name);
	size_t		l;

	buf[0] = '\0';
	if (a == NULL || !a->has_s)
		return buf;
	l = a->s.len < size - 1 ? a->s.len : size - 1;
	memcpy(buf, a->s.data, l);
	buf[l] = '\0';
	for (size_t i = 0; i < l; i++)
		if ((unsigned char) buf[i] < 0x20 || (unsigned char) buf[i] > 0x7e)
			buf[i] = '?';
	return buf;
}

/* Element count of a tensor's dims, or -1 when unreasonable. */
static int64_t
tensor_count(const OnnxTensor *t)
{
	int64_t		n = 1;

	for (size_t i = 0; i < t->n_dims; i++)
	{
		if (t->dims[i] < 0 || (t->dims[i] > 0 && n > INT32_MAX / t->dims[i]))
			return -1;
		n *= t->dims[i];
	}
	return n;
}

/*
 * A numeric tensor's values as doubles (hb_alloc'd, *out NULL when empty).
 * Values may sit in the typed field or in raw_data (little-endian).
 */
static bool
tensor_doubles(const OnnxTensor *t, const char *what, double **out,
			   size_t *len, HbError *err)
{
	size_t		n = 0;
	size_t		esz = 0;
	double	   *v;

	*out = NULL;
	*len = 0;
	switch (t->data_type)
	{
		case ONNX_FLOAT:
			n = t->n_float_data;
			esz = 4;
			break;
		case ONNX_DOUBLE:
			n = t->n_double_data;
			esz = 8;
			break;
		case ONNX_INT64:
			n = t->n_int64_data;
			esz = 8;
			break;
		case ONNX_INT32:
		case ONNX_INT16:
		case ONNX_INT8:
		case ONNX_UINT16:
		case ONNX_UINT8:
		case ONNX_BOOL:
			n = t->n_int32_data;
			esz = t->data_type == ONNX_INT32 ? 4 :
				(t->data_type == ONNX_INT16 || t->data_type == ONNX_UINT16) ? 2 : 1;
			break;
		default:
			return hb_fail(err, HB_ERR_UNSUPPORTED,
						   "ONNX tensor %s has element type %d, which hbird does not read",
						   what, (int) t->data_type);
	}
	if (t->has_raw_data && t->raw_data.len > 0)
	{
		if (t->raw_data.len % esz != 0)
			return hb_fail(err, HB_ERR_PARSE,
						   "ONNX tensor %s has %zu raw bytes, not a multiple of %zu",
						   what, t->raw_data.len, esz);
		n = t->raw_data.len / esz;
	}
	if (n == 0)
		return true;
	v = hb_alloc(sizeof(double) * n);
	if (v == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
	{
		if (t->has_raw_data && t->raw_data.len > 0)
		{
			const uint8_t *p = t->raw_data.data + i * esz;
			uint64_t	u = 0;

			for (size_t k = 0; k < esz; k++)
				u |= (uint64_t) p[k] << (8 * k);
			switch (t->data_type)
			{
				case ONNX_FLOAT:
					{
						uint32_t	u32 = (uint32_t) u;
						float		f;

						memcpy(&f, &u32, 4);
						v[i] = f;
						break;
					}
				case ONNX_DOUBLE:
					memcpy(&v[i], &u, 8);
					break;
				case ONNX_INT64:
					v[i] = (double) (int64_t) u;
					break;
				case ONNX_INT32:
					v[i] = (double) (int32_t) (uint32_t) u;
					break;
				case ONNX_INT16:
					v[i] = (double) (int16_t) (uint16_t) u;
					break;
				case ONNX_INT8:
					v[i] = (double) (int8_t) (uint8_t) u;
					break;
				default:
					v[i] = (double) u;
					break;
			}
		}
		else if (t->data_type == ONNX_FLOAT)
			v[i] = t->float_data[i];
		else if (t->data_type == ONNX_DOUBLE)
			v[i] = t->double_data[i];
		else if (t->data_type == ONNX_INT64)
			v[i] = (double) t->int64_data[i];
		else
			v[i] = (double) t->int32_data[i];
	}
	*out = v;
	*len = n;
	return true;
}

/*
 * A list of numbers from an attribute: floats, ints, or a tensor (the
 * *_as_tensor attributes of newer converters).  Absent: *len 0.
 */
static bool
attr_doubles(const OnnxNode *n, const char *name, double **out, size_t *len,
			 HbError *err)
{
	const OnnxAttr *a = attr(n, name);
	char		tname[96];

	*out = NULL;
	*len = 0;
	if (a == NULL)
	{
		snprintf(tname, sizeof(tname), "%s_as_tensor", name);
		a = attr(n, tname);
		if (a == NULL)
			return true;
	}
	if (a->t)
		return tensor_doubles(a->t, name, out, len, err);
	if (a->n_floats > 0 || a->n_ints > 0)
	{
		size_t		cnt = a->n_floats > 0 ? a->n_floats : a->n_ints;
		double	   *v = hb_alloc(sizeof(double) * cnt);

		if (v == NULL)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		for (size_t i = 0; i < cnt; i++)
			v[i] = a->n_floats > 0 ? (double) a->floats[i] : (double) a->ints[i];
		*out = v;
		*len = cnt;
	}
	else if (a->has_f)
	{
		double	   *v = hb_alloc(sizeof(double));

		if (v == NULL)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		v[0] = a->f;
		*out = v;
		*len = 1;
	}
	return true;
}

/* An int list attribute (no copy); NULL and 0 when absent. */
static const int64_t *
attr_ints(const OnnxNode *n, const char *name, size_t *len)
{
	const OnnxAttr *a = attr(n, name);

	*len = a ? a->n_ints : 0;
	return a ? a->ints : NULL;
}

/* ---------------------------------------------------------------------
 * Reader state
 * ---------------------------------------------------------------------
 */
typedef enum ValKind
{
	VAL_INPUT,					/* the feature vector (maybe cast) */
	VAL_TEXT,					/* string columns: slots are text input indexes */
	VAL_CONST,					/* an initializer */
	VAL_SCORES,					/* the estimator's scores / probabilities */
	VAL_LABEL					/* the estimator's predicted label */
} ValKind;

typedef struct OnnxVal
{
	const char *name;
	ValKind		kind;
	const OnnxTensor *tensor;	/* VAL_CONST */
	int			elem;			/* VAL_INPUT: element type reaching here */
	int32_t		width;			/* VAL_INPUT: columns, -1 when unknown */
	int32_t    *slots;			/* VAL_INPUT: their featurizer slots (owned) */
} OnnxVal;

typedef struct Reader
{
	HbError    *err;
	const Hbonnx__GraphProto *g;
	OnnxVal    *vals;
	size_t		n_vals;
	size_t		cap_vals;

	/* what feeds the estimator being read */
	const char *input_name;
	int			input_elem;
	int64_t		input_width;	/* columns, or -1 when unknown */

	HbModel    *m;				/* set by the estimator */
	bool		two_col_binary; /* binary model from two opposite columns */

	/* featurizers: the pipeline under construction (featurize.h) */
	HbInput    *inputs;
	size_t		cap_inputs;
	int32_t		n_inputs;
	int32_t		n_num_inputs;
	int32_t		n_text_inputs;
	int			flat_dims;		/* > 0: an input of this many dimensions was
								 * flattened to [rows, columns] */
	HbStep	   *steps;
	size_t		cap_steps;
	int32_t		n_steps;
	int32_t		next_slot;

	/* trees under construction */
	int64_t		total_nodes;
} Reader;

static OnnxVal *
val_find(Reader *r, const char *name)
{
	if (name == NULL || name[0] == '\0')
		return NULL;
	for (size_t i = r->n_vals; i-- > 0;)
		if (strcmp(r->vals[i].name, name) == 0)
			return &r->vals[i];
	return NULL;
}

static OnnxVal *
val_new(Reader *r, const char *name, ValKind kind)
{
	OnnxVal    *v;

	if (r->n_vals == r->cap_vals)
	{
		OnnxVal    *nv = hb_grow(r->vals, &r->cap_vals, r->n_vals + 1,
								 sizeof(OnnxVal));

		if (nv == NULL)
		{
			hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
			return NULL;
		}
		r->vals = nv;
	}
	v = &r->vals[r->n_vals++];
	memset(v, 0, sizeof(*v));
	v->name = name;
	v->kind = kind;
	v->width = -1;
	return v;
}

static bool
val_add(Reader *r, const char *name, ValKind kind, const OnnxTensor *t,
		int elem)
{
	OnnxVal    *v;

	if (name == NULL || name[0] == '\0')
		return true;			/* an unused optional output */
	v = val_new(r, name, kind);
	if (v == NULL)
		return false;
	v->tensor = t;
	v->elem = elem;
	return true;
}

/* A feature vector: width columns in the given slots (copied). */
static bool
val_add_slots(Reader *r, const char *name, int elem, const int32_t *slots,
			  int32_t width)
{
	OnnxVal    *v;
	int32_t    *copy = NULL;

	if (name == NULL || name[0] == '\0')
		return true;
	if (width > 0)
	{
		copy = hb_alloc(sizeof(int32_t) * width);
		if (copy == NULL)
			return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		memcpy(copy, slots, sizeof(int32_t) * width);
	}
	v = val_new(r, name, VAL_INPUT);
	if (v == NULL)
	{
		hb_free(copy);
		return false;
	}
	v->elem = elem;
	v->width = width;
	v->slots = copy;
	return true;
}

static bool
refuse(Reader *r, const OnnxNode *n, const char *why)
{
	return hb_fail(r->err, HB_ERR_UNSUPPORTED,
				   "ONNX node \"%s\" (op %s): %s",
				   node_label(n), op_of(n), why);
}

/* ---------------------------------------------------------------------
 * A new model with n_features features and n_outputs outputs
 * ---------------------------------------------------------------------
 */
static bool
new_model(Reader *r, const OnnxNode *n, int64_t n_features, int n_outputs)
{
	HbModel    *m;

	if (r->m != NULL)
		return refuse(r, n, "the graph has a second estimator; hbird scores one per model");
	if (r->input_width > 0 && n_features != r->input_width)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "ONNX node \"%s\" (op %s) reads %lld features, but the graph input \"%s\" has %lld",
					   node_label(n), op_of(n), (long long) n_features,
					   r->input_name, (long long) r->input_width);
	if (n_features <= 0 || n_features > HB_MAX_FEATURES)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "ONNX node \"%s\" (op %s) reads %lld features (1 to %d allowed)",
					   node_label(n), op_of(n), (long long) n_features,
					   HB_MAX_FEATURES);
	if (n_outputs <= 0 || n_outputs > 100000)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "ONNX node \"%s\" (op %s) has %d outputs",
					   node_label(n), op_of(n), n_outputs);
	m = hb_alloc0(sizeof(HbModel));
	if (m == NULL)
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	r->m = m;
	m->n_features = (int32_t) n_features;
	m->n_outputs = n_outputs;
	m->features = hb_alloc0(sizeof(HbFeature) * n_features);
	m->base_margin = hb_alloc0(sizeof(double) * n_outputs);
	m->objective = hb_strdup(op_of(n));
	if (!m->features || !m->base_margin || !m->objective)
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	for (int64_t i = 0; i < n_features; i++)
	{
		m->features[i].name = hb_feature_default_name(i);
		if (m->features[i].name == NULL)
			return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		m->features[i].type = (r->input_elem == ONNX_INT64 ||
							   r->input_elem == ONNX_INT32) ?
			HB_FEATURE_INTEGER : HB_FEATURE_NUMERIC;
	}
	return true;
}

/* post_transform, as a string (legacy ops) or an int (opset 5) */
typedef enum PostTransform
{
	PT_NONE, PT_LOGISTIC, PT_SOFTMAX, PT_SOFTMAX_ZERO, PT_PROBIT
} PostTransform;

static bool
post_transform(Reader *r, const OnnxNode *n, PostTransform *pt)
{
	const OnnxAttr *a = attr(n, "post_transform");
	static const char *const names[] = {"NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"};

	*pt = PT_NONE;
	if (a == NULL)
		return true;
	if (a->has_s)
	{
		for (int i = 0; i < 5; i++)
			if (bin_eq(a->s, names[i]))
			{
				*pt = (PostTransform) i;
				return true;
			}
	}
	else if (a->has_i && a->i >= 0 && a->i <= 4)
	{
		*pt = (PostTransform) a->i;
		return true;
	}
	return refuse(r, n, "unknown post_transform");
}

/*
 * Task and link of a classifier with n_labels labels and n_cols score
 * columns.  Binary models keep one margin, the positive class's.
 */
static bool
classifier_task(Reader *r, const OnnxNode *n, int n_labels, int n_cols,
				PostTransform pt, bool binary)
{
	HbModel    *m = r->m;

	if (binary)
	{
		m->task = HB_TASK_BINARY;
		m->n_classes = 2;
		switch (pt)
		{
			case PT_NONE:
				/* trees: the column is a probability; linear: a score */
				m->link = m->estimator == HB_EST_TREES ?
					HB_LINK_PROBABILITY : HB_LINK_IDENTITY;
				break;
			case PT_LOGISTIC:
				m->link = HB_LINK_LOGISTIC;
				break;
			case PT_PROBIT:
				m->link = HB_LINK_PROBIT;
				break;
			case PT_SOFTMAX:

				/*
				 * Two opposite score rows (what scikit-learn's converter
				 * writes for every binary linear model): onnxruntime's
				 * softmax over the two columns [-s, s].  One score column
				 * gets no softmax from onnxruntime (its LinearClassifier
				 * returns [1 - s, s] whatever the post_transform), so there
				 * is no probability to give for it.
				 */
				if (m->estimator == HB_EST_LINEAR && r->two_col_binary)
				{
					m->link = HB_LINK_SOFTMAX_PAIR;
					break;
				}
				return refuse(r, n, m->estimator == HB_EST_LINEAR ?
							  "a softmax over a single score column is not supported (over two opposite score rows it is)" :
							  "a softmax over a single score column is not supported");
			default:
				return refuse(r, n, "a SOFTMAX_ZERO post_transform on a binary model is not supported");
		}
		return true;
	}
	if (n_cols != n_labels)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "ONNX node \"%s\" (op %s) has %d class labels but %d score columns",
					   node_label(n), op_of(n), n_labels, n_cols);
	m->task = HB_TASK_MULTICLASS;
	m->n_classes = n_labels;
	m->predict_class = true;
	m->link = pt == PT_NONE ? HB_LINK_IDENTITY :
		pt == PT_LOGISTIC ? HB_LINK_LOGISTIC :
		pt == PT_SOFTMAX ? HB_LINK_SOFTMAX :
		pt == PT_SOFTMAX_ZERO ? HB_LINK_SOFTMAX_ZERO : HB_LINK_PROBIT;
	return true;
}

static int
class_label_count(const OnnxNode *n)
{
	const OnnxAttr *s = attr(n, "classlabels_strings");
	const OnnxAttr *i = attr(n, "classlabels_int64s");

	if (i == NULL)
		i = attr(n, "classlabels_ints");
	if (s && s->n_strings > 0)
		return (int) s->n_strings;
	if (i && i->n_ints > 0)
		return (int) i->n_ints;
	return 0;
}

/* ---------------------------------------------------------------------
 * Tree ensembles (TreeEnsembleClassifier / TreeEnsembleRegressor)
 * ---------------------------------------------------------------------
 */
typedef enum NodeMode
{
	MODE_LEQ, MODE_LT, MODE_GTE, MODE_GT, MODE_EQ, MODE_NEQ, MODE_LEAF,
	MODE_MEMBER
} NodeMode;

typedef struct OnnxTreeNode
{
	int64_t		tree;
	int64_t		id;
	int32_t		feature;
	uint8_t		mode;
	uint8_t		mtt;			/* missing value tracks true */
	double		value;			/* threshold */
	int64_t		t_id;			/* true / false children (node ids) */
	int64_t		f_id;
	int32_t		t_idx;			/* resolved to indexes into the sorted array */
	int32_t		f_idx;
	int32_t		w_first;		/* leaf weights: [w_first, w_first + w_n) */
	int32_t		w_n;
	int32_t		set_first;		/* BRANCH_MEMBER: sorted values in */
	int32_t		set_n;			/* TreeBuild.set_vals */
} OnnxTreeNode;

typedef struct LeafWeight
{
	int32_t		node;			/* index into the sorted nodes */
	int32_t		cls;
	double		w;
} LeafWeight;

typedef struct TreeBuild
{
	Reader	   *r;
	const OnnxNode *n;
	OnnxTreeNode *nodes;
	LeafWeight *weights;
	bool		f32;			/* HB_CMP_LT_F32, else HB_CMP_LE_F64 */
	double		scale;			/* AVERAGE: 1 / trees */
	int			cls;			/* class of the copy being emitted */
	const double *set_vals;		/* BRANCH_MEMBER sets */
	bool		hit;			/* a leaf of class cls was emitted */
	HbNode	   *out;
	int32_t		n_out;
	size_t		cap_out;
} TreeBuild;

static int
cmp_tree_node(const void *a, const void *b)
{
	const OnnxTreeNode *x = a,
			   *y = b;

	if (x->tree != y->tree)
		return x->tree < y->tree ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return 0;
}

static int
cmp_weight(const void *a, const void *b)
{
	const LeafWeight *x = a,
			   *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	return 0;
}

static int32_t
find_node(const OnnxTreeNode *nodes, size_t count, int64_t tree, int64_t id)
{
	size_t		lo = 0,
				hi = count;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (nodes[mid].tree < tree || (nodes[mid].tree == tree && nodes[mid].id < id))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < count && nodes[lo].tree == tree && nodes[lo].id == id)
		return (int32_t) lo;
	return -1;
}

static int32_t
tb_new(TreeBuild *b)
{
	HbNode	   *nn;

	if (b->n_out >= ONNX_MAX_TREE_NODES ||
		b->r->total_nodes >= ONNX_MAX_ALL_NODES)
	{
		hb_fail(b->r->err, HB_ERR_LIMIT,
				"ONNX node \"%s\" (op %s): the trees need more than %d nodes once lowered",
				node_label(b->n), op_of(b->n),
				b->n_out >= ONNX_MAX_TREE_NODES ? ONNX_MAX_TREE_NODES : ONNX_MAX_ALL_NODES);
		return -1;
	}
	nn = hb_grow(b->out, &b->cap_out, (size_t) b->n_out + 1, sizeof(HbNode));
	if (nn == NULL)
	{
		hb_fail(b->r->err, HB_ERR_NOMEM, "out of memory");
		return -1;
	}
	b->out = nn;
	memset(&b->out[b->n_out], 0, sizeof(HbNode));
	b->out[b->n_out].left = HB_LEAF;
	b->out[b->n_out].right = HB_LEAF;
	b->r->total_nodes++;
	return b->n_out++;
}

/* "x below t" and "x at most t" as the model's comparison's threshold */
static double
thr_below(const TreeBuild *b, double t)
{
	return b->f32 ? (double) (float) t : nextafter(t, -INFINITY);
}

static double
thr_at_most(const TreeBuild *b, double t)
{
	return b->f32 ? (double) nextafterf((float) t, INFINITY) : t;
}

static int32_t emit(TreeBuild *b, int32_t idx, int depth);
static int32_t emit_member(TreeBuild *b, const OnnxTreeNode *on, int32_t k,
						   int depth);

/* One IR split node: "x < thr" (or "x <= thr") goes left. */
static int32_t
emit_split(TreeBuild *b, const OnnxTreeNode *on, double thr, int32_t left_src,
		   int32_t right_src, bool default_left, int depth)
{
	int32_t		id = tb_new(b);
	int32_t		l,
				rr;

	if (id < 0)
		return -1;
	l = emit(b, left_src, depth + 1);
	if (l < 0)
		return -1;
	rr = emit(b, right_src, depth + 1);
	if (rr < 0)
		return -1;
	b->out[id].feature = on->feature;
	b->out[id].threshold = thr;
	b->out[id].left = l;
	b->out[id].right = rr;
	b->out[id].default_left = default_left;
	b->out[id].missing = HB_MISSING_NAN;
	return id;
}

/*
 * Emit the subtree of sorted node idx for class b->cls; returns its IR
 * index or -1 (error set).  Depth is bounded before recursing, so a cyclic
 * or very deep ONNX tree is refused without exhausting the stack.
 */
static int32_t
emit(TreeBuild *b, int32_t idx, int depth)
{
	const OnnxTreeNode *on = &b->nodes[idx];
	int32_t		id;

	if (depth > HB_MAX_DEPTH)
	{
		hb_fail(b->r->err, HB_ERR_LIMIT,
				"ONNX node \"%s\" (op %s): tree %lld is deeper than %d levels (or has a cycle)",
				node_label(b->n), op_of(b->n), (long long) on->tree, HB_MAX_DEPTH);
		return -1;
	}
	if ((b->n_out & 4095) == 0)
		hb_check_interrupts();

	switch ((NodeMode) on->mode)
	{
		case MODE_LEAF:
			{
				double		v = 0.0;

				id = tb_new(b);
				if (id < 0)
					return -1;
				for (int32_t i = on->w_first; i < on->w_first + on->w_n; i++)
					if (b->weights[i].cls == b->cls)
					{
						v += b->weights[i].w;
						b->hit = true;
					}
				b->out[id].value = v * b->scale;
				return id;
			}
		case MODE_LEQ:
			return emit_split(b, on, thr_at_most(b, on->value), on->t_idx,
							  on->f_idx, on->mtt, depth);
		case MODE_LT:
			return emit_split(b, on, thr_below(b, on->value), on->t_idx,
							  on->f_idx, on->mtt, depth);
		case MODE_GTE:
			return emit_split(b, on, thr_below(b, on->value), on->f_idx,
							  on->t_idx, !on->mtt, depth);
		case MODE_GT:
			return emit_split(b, on, thr_at_most(b, on->value), on->f_idx,
							  on->t_idx, !on->mtt, depth);
		case MODE_EQ:
		case MODE_NEQ:
			{
				/*
				 * x == t: below t -> "different"; else at most t -> "equal",
				 * else "different".  The "different" subtree appears twice.
				 */
				bool		eq = on->mode == MODE_EQ;
				int32_t		same = eq ? on->t_idx : on->f_idx;
				int32_t		diff = eq ? on->f_idx : on->t_idx;
				/* NaN != t holds, so NEQ sends NaN true whatever mtt says */
				bool		nan_to_true = eq ? on->mtt : true;
				bool		nan_to_same = eq ? nan_to_true : !nan_to_true;
				int32_t		a = tb_new(b),
							l,
							second,
							sl,
							sr;

				if (a < 0)
					return -1;
				l = emit(b, diff, depth + 1);
				if (l < 0)
					return -1;
				second = tb_new(b);
				if (second < 0)
					return -1;
				sl = emit(b, same, depth + 2);
				if (sl < 0)
					return -1;
				sr = emit(b, diff, depth + 2);
				if (sr < 0)
					return -1;
				b->out[a].feature = on->feature;
				b->out[a].threshold = thr_below(b, on->value);
				b->out[a].left = l;
				b->out[a].right = second;
				b->out[a].default_left = !nan_to_same;
				b->out[a].missing = HB_MISSING_NAN;
				b->out[second].feature = on->feature;
				b->out[second].threshold = thr_at_most(b, on->value);
				b->out[second].left = sl;
				b->out[second].right = sr;
				b->out[second].default_left = true;
				b->out[second].missing = HB_MISSING_NAN;
				return a;
			}
		case MODE_MEMBER:
			return emit_member(b, on, 0, depth);
		default:
			hb_fail(b->r->err, HB_ERR_UNSUPPORTED,
					"ONNX node \"%s\" (op %s): unknown node mode",
					node_label(b->n), op_of(b->n));
			return -1;
	}
}

/*
 * x in {v_0 < v_1 < ...}, from value k on (x is known to be above v_k-1):
 * below v_k is not in the set; at most v_k is v_k; else the next values.
 * Both subtrees are copied once per value, so sets are kept small by the
 * depth limit.
 */
static int32_t
emit_member(TreeBuild *b, const OnnxTreeNode *on, int32_t k, int depth)
{
	int32_t		a,
				second,
				l,
				sl,
				sr;
	double		v;

	if (k == on->set_n)
		return emit(b, on->f_idx, depth);
	if (depth + 1 > HB_MAX_DEPTH)
	{
		hb_fail(b->r->err, HB_ERR_LIMIT,
				"ONNX node \"%s\" (op %s): a set of %d values makes tree %lld deeper than %d levels",
				node_label(b->n), op_of(b->n), on->set_n, (long long) on->tree,
				HB_MAX_DEPTH);
		return -1;
	}
	v = b->set_vals[on->set_first + k];
	a = tb_new(b);
	if (a < 0)
		return -1;
	l = emit(b, on->f_idx, depth + 1);
	if (l < 0)
		return -1;
	second = tb_new(b);
	if (second < 0)
		return -1;
	sl = emit(b, on->t_idx, depth + 2);
	if (sl < 0)
		return -1;
	sr = emit_member(b, on, k + 1, depth + 2);
	if (sr < 0)
		return -1;
	b->out[a].feature = on->feature;
	b->out[a].threshold = thr_below(b, v);
	b->out[a].left = l;
	b->out[a].right = second;
	/* NaN is in no set: the false side, or the true side when it tracks true */
	b->out[a].default_left = k == 0 ? !on->mtt : false;
	b->out[a].missing = HB_MISSING_NAN;
	b->out[second].feature = on->feature;
	b->out[second].threshold = thr_at_most(b, v);
	b->out[second].left = sl;
	b->out[second].right = sr;
	b->out[second].default_left = true;
	b->out[second].missing = HB_MISSING_NAN;
	return a;
}

static bool
parse_modes(Reader *r, const OnnxNode *n, OnnxTreeNode *nodes, size_t count)
{
	static const char *const names[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE",
	"BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "LEAF", "BRANCH_MEMBER"};
	const OnnxAttr *a = attr(n, "nodes_modes");

	if (a == NULL || a->n_strings != count)
		return refuse(r, n, "nodes_modes does not have one entry per node");
	for (size_t i = 0; i < count; i++)
	{
		int			mode = -1;

		for (int k = 0; k < 8; k++)
			if (bin_eq(a->strings[i], names[k]))
				mode = k;
		if (mode < 0)
			return refuse(r, n, "a node has an unknown mode");
		if (mode == MODE_MEMBER)
			return refuse(r, n, "node mode BRANCH_MEMBER is not supported");
		nodes[i].mode = (uint8_t) mode;
	}
	return true;
}

static bool
read_tree_ensemble(Reader *r, const OnnxNode *n, bool classifier)
{
	HbError    *err = r->err;
	size_t		count,
				c1,
				c2,
				c3,
				c4,
				cm,
				nw = 0,
				c_wt,
				c_wn,
				c_wc;
	const int64_t *treeids = attr_ints(n, "nodes_treeids", &count);
	const int64_t *nodeids = attr_ints(n, "nodes_nodeids", &c1);
	const int64_t *featureids = attr_ints(n, "nodes_featureids", &c2);
	const int64_t *trueids = attr_ints(n, "nodes_truenodeids", &c3);
	const int64_t *falseids = attr_ints(n, "nodes_falsenodeids", &c4);
	const int64_t *mtt = attr_ints(n, "nodes_missing_value_tracks_true", &cm);
	const char *prefix = classifier ? "class" : "target";
	char		aname[64];
	const int64_t *w_tree,
			   *w_node,
			   *w_cls;
	double	   *values = NULL,
			   *wvals = NULL,
			   *base = NULL;
	size_t		n_values,
				n_base;
	OnnxTreeNode *nodes = NULL;
	LeafWeight *weights = NULL;
	PostTransform pt;
	char		agg[32];
	int			n_cols = 0;
	int			n_labels = 0;
	int64_t		n_trees = 0;
	int64_t		max_feature = -1;
	bool		ok = false;
	bool		binary = false;
	HbModel    *m;
	size_t		cap_trees = 0;

	if (count == 0)
		return refuse(r, n, "the ensemble has no nodes");
	if (count > INT32_MAX / 4 || c1 != count || c2 != count || c3 != count ||
		c4 != count || (cm != 0 && cm != count))
		return refuse(r, n, "the nodes_* attributes do not all have one entry per node");
	if (!post_transform(r, n, &pt))
		return false;
	attr_str(n, "aggregate_function", agg, sizeof(agg));

	snprintf(aname, sizeof(aname), "%s_treeids", prefix);
	w_tree = attr_ints(n, aname, &c_wt);
	snprintf(aname, sizeof(aname), "%s_nodeids", prefix);
	w_node = attr_ints(n, aname, &c_wn);
	snprintf(aname, sizeof(aname), "%s_ids", prefix);
	w_cls = attr_ints(n, aname, &c_wc);
	snprintf(aname, sizeof(aname), "%s_weights", prefix);
	if (!attr_doubles(n, aname, &wvals, &nw, err))
		goto done;
	if (c_wt != c_wn || c_wt != c_wc || c_wt != nw)
	{
		refuse(r, n, "the leaf weight attributes do not have the same length");
		goto done;
	}
	if (!attr_doubles(n, "nodes_values", &values, &n_values, err))
		goto done;
	if (n_values != count)
	{
		refuse(r, n, "nodes_values does not have one entry per node");
		goto done;
	}
	if (!attr_doubles(n, "base_values", &base, &n_base, err))
		goto done;

	nodes = hb_alloc0(sizeof(OnnxTreeNode) * count);
	weights = hb_alloc0(sizeof(LeafWeight) * (nw + 1));
	if (!nodes || !weights)
	{
		hb_fail(err, HB_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < count; i++)
	{
		nodes[i].tree = treeids[i];
		nodes[i].id = nodeids[i];
		if (featureids[i] < 0 || featureids[i] >= HB_MAX_FEATURES)
		{
			refuse(r, n, "a node splits on a feature index out of range");
			goto done;
		}
		nodes[i].feature = (int32_t) featureids[i];
		nodes[i].mtt = cm ? mtt[i] != 0 : 0;
		nodes[i].value = values[i];
		nodes[i].t_id = trueids[i];
		nodes[i].f_id = falseids[i];
	}
	if (!parse_modes(r, n, nodes, count))
		goto done;
	/* modes were parsed in the original order; sort keeps each with its node */
	qsort(nodes, count, sizeof(OnnxTreeNode), cmp_tree_node);
	for (size_t i = 0; i < count; i++)
	{
		if (i > 0 && cmp_tree_node(&nodes[i - 1], &nodes[i]) == 0)
		{
			hb_fail(err, HB_ERR_INVALID,
					"ONNX node \"%s\" (op %s): tree %lld has node %lld twice",
					node_label(n), op_of(n), (long long) nodes[i].tree,
					(long long) nodes[i].id);
			goto done;
		}
		if (i == 0 || nodes[i].tree != nodes[i - 1].tree)
			n_trees++;
		nodes[i].w_first = 0;
		nodes[i].w_n = 0;
		if (nodes[i].mode == MODE_LEAF)
			continue;
		if (isnan(nodes[i].value))
		{
			hb_fail(err, HB_ERR_INVALID,
					"ONNX node \"%s\" (op %s): tree %lld node %lld has a NaN threshold",
					node_label(n), op_of(n), (long long) nodes[i].tree,
					(long long) nodes[i].id);
			goto done;
		}
		if (nodes[i].feature > max_feature)
			max_feature = nodes[i].feature;
	}
	/* children by id, after sorting (find_node needs the order) */
	for (size_t i = 0; i < count; i++)
	{
		if (nodes[i].mode == MODE_LEAF)
			continue;
		nodes[i].t_idx = find_node(nodes, count, nodes[i].tree, nodes[i].t_id);
		nodes[i].f_idx = find_node(nodes, count, nodes[i].tree, nodes[i].f_id);
		if (nodes[i].t_idx < 0 || nodes[i].f_idx < 0)
		{
			hb_fail(err, HB_ERR_INVALID,
					"ONNX node \"%s\" (op %s): tree %lld node %lld has a child that does not exist",
					node_label(n), op_of(n), (long long) nodes[i].tree,
					(long long) nodes[i].id);
			goto done;
		}
	}
	for (size_t i = 0; i < nw; i++)
	{
		int32_t		at = find_node(nodes, count, w_tree[i], w_node[i]);

		if (at < 0 || nodes[at].mode != MODE_LEAF)
		{
			hb_fail(err, HB_ERR_INVALID,
					"ONNX node \"%s\" (op %s): a weight refers to tree %lld node %lld, which is not a leaf",
					node_label(n), op_of(n), (long long) w_tree[i],
					(long long) w_node[i]);
			goto done;
		}
		if (w_cls[i] < 0 || w_cls[i] >= 100000)
		{
			refuse(r, n, "a leaf weight's class or target index is out of range");
			goto done;
		}
		if (!isfinite(wvals[i]))
		{
			hb_fail(err, HB_ERR_INVALID,
					"ONNX node \"%s\" (op %s): a leaf weight is not finite",
					node_label(n), op_of(n));
			goto done;
		}
		weights[i].node = at;
		weights[i].cls = (int32_t) w_cls[i];
		weights[i].w = wvals[i];
		if (weights[i].cls + 1 > n_cols)
			n_cols = weights[i].cls + 1;
	}
	qsort(weights, nw, sizeof(LeafWeight), cmp_weight);
	for (size_t i = 0; i < nw; i++)
	{
		if (nodes[weights[i].node].w_n == 0)
			nodes[weights[i].node].w_first = (int32_t) i;
		nodes[weights[i].node].w_n++;
	}

	/* shape of the output */
	if (classifier)
	{
		n_labels = class_label_count(n);
		if (n_labels <= 0)
		{
			refuse(r, n, "the classifier has no class labels");
			goto done;
		}
		if (n_cols > n_labels)
		{
			hb_fail(err, HB_ERR_INVALID,
					"ONNX node \"%s\" (op %s): a leaf feeds class %d, but there are %d class labels",
					node_label(n), op_of(n), n_cols - 1, n_labels);
			goto done;
		}
		binary = n_labels == 2 && n_cols <= 1;
		if (!binary)
			n_cols = n_labels;
	}
	else
	{
		int64_t		targets = attr_int(n, "n_targets", 1);

		if (targets < 1 || targets > 100000 || n_cols > targets)
		{
			refuse(r, n, "n_targets does not match the leaf weights");
			goto done;
		}
		n_cols = (int) targets;
	}
	if (n_cols < 1)
		n_cols = 1;

	if (!new_model(r, n, r->input_width > 0 ? r->input_width : max_feature + 1,
				   n_cols))
		goto done;
	m = r->m;
	m->estimator = HB_EST_TREES;
	/* float inputs compare in float32 (onnxruntime's thresholds are float) */
	m->cmp = r->input_elem == ONNX_DOUBLE ? HB_CMP_LE_F64 : HB_CMP_LT_F32;
	m->sum_f32 = m->cmp == HB_CMP_LT_F32;
	if (max_feature >= m->n_features)
	{
		hb_fail(err, HB_ERR_INVALID,
				"ONNX node \"%s\" (op %s) splits on feature %lld, but the input has %d",
				node_label(n), op_of(n), (long long) max_feature, m->n_features);
		goto done;
	}
	if (classifier)
	{
		if (!classifier_task(r, n, n_labels, n_cols, pt, binary))
			goto done;
	}
	else
	{
		m->task = HB_TASK_REGRESSION;
		if (pt == PT_LOGISTIC)
			m->link = HB_LINK_LOGISTIC;
		else if (pt == PT_PROBIT)
			m->link = HB_LINK_PROBIT;
		else if (pt != PT_NONE)
		{
			refuse(r, n, "a softmax post_transform on a regressor is not supported");
			goto done;
		}
	}
	if (n_base != 0 && n_base != (size_t) n_cols)
	{
		refuse(r, n, "base_values does not have one value per output");
		goto done;
	}

	{
		TreeBuild	b = {0};
		int32_t		t0 = 0;

		b.r = r;
		b.n = n;
		b.nodes = nodes;
		b.weights = weights;
		b.f32 = m->cmp == HB_CMP_LT_F32;
		b.scale = 1.0;
		if (strcmp(agg, "AVERAGE") == 0)
			b.scale = 1.0 / (double) n_trees;
		else if (strcmp(agg, "MIN") == 0 || strcmp(agg, "MAX") == 0)
		{
			if (n_trees > 1)
			{
				hb_fail(err, HB_ERR_UNSUPPORTED,
						"ONNX node \"%s\" (op %s): aggregate_function %s over %lld trees is not supported (hbird sums trees)",
						node_label(n), op_of(n), agg, (long long) n_trees);
				goto done;
			}
		}
		else if (agg[0] != '\0' && strcmp(agg, "SUM") != 0)
		{
			refuse(r, n, "unknown aggregate_function");
			goto done;
		}

		/* each ONNX tree, once per class its leaves feed */
		for (size_t i = 0; i < count; i = (size_t) t0)
		{
			size_t		end = i;
			int32_t		root = (int32_t) i;

			while (end < count && nodes[end].tree == nodes[i].tree)
				end++;
			t0 = (int32_t) end;
			for (int c = 0; c < n_cols; c++)
			{
				bool		feeds = false;
				HbTree	   *tree;

				for (size_t k = i; k < end && !feeds; k++)
					for (int32_t w = nodes[k].w_first; w < nodes[k].w_first + nodes[k].w_n; w++)
						if (weights[w].cls == c)
							feeds = true;
				if (!feeds)
					continue;
				b.cls = c;
				b.out = NULL;
				b.n_out = 0;
				b.cap_out = 0;
				if (emit(&b, root, 0) < 0)
				{
					hb_free(b.out);
					goto done;
				}
				tree = hb_grow(m->trees, &cap_trees, (size_t) m->n_trees + 1,
							   sizeof(HbTree));
				if (tree == NULL || m->n_trees >= INT32_MAX - 1)
				{
					hb_free(b.out);
					hb_fail(err, HB_ERR_NOMEM, "out of memory");
					goto done;
				}
				m->trees = tree;
				tree = &m->trees[m->n_trees++];
				memset(tree, 0, sizeof(*tree));
				tree->nodes = b.out;
				tree->n_nodes = b.n_out;
				tree->group = c;
			}
		}

		/*
		 * onnxruntime adds base_values after summing the trees, and float32
		 * addition is not associative, so the base becomes a last one-leaf
		 * tree per output rather than the IR's base margin (added first).
		 */
		for (size_t g = 0; g < n_base; g++)
		{
			HbTree	   *tree;
			HbNode	   *leafnode;

			if (base[g] == 0.0)
				continue;
			tree = hb_grow(m->trees, &cap_trees, (size_t) m->n_trees + 1,
						   sizeof(HbTree));
			leafnode = hb_alloc0(sizeof(HbNode));
			if (tree == NULL || leafnode == NULL)
			{
				hb_free(leafnode);
				hb_fail(err, HB_ERR_NOMEM, "out of memory");
				goto done;
			}
			m->trees = tree;
			leafnode->left = HB_LEAF;
			leafnode->right = HB_LEAF;
			leafnode->value = m->sum_f32 ? (double) (float) base[g] : base[g];
			tree = &m->trees[m->n_trees++];
			memset(tree, 0, sizeof(*tree));
			tree->nodes = leafnode;
			tree->n_nodes = 1;
			tree->group = (int32_t) g;
		}
	}
	ok = true;

done:
	hb_free(values);
	hb_free(wvals);
	hb_free(base);
	hb_free(nodes);
	hb_free(weights);
	return ok;
}

/* Append the IR tree b->out (class b->cls) to the model. */
static bool
add_tree(Reader *r, TreeBuild *b, size_t *cap_trees)
{
	HbModel    *m = r->m;
	HbTree	   *tree = hb_grow(m->trees, cap_trees, (size_t) m->n_trees + 1,
							   sizeof(HbTree));

	if (tree == NULL || m->n_trees >= INT32_MAX - 1)
	{
		hb_free(b->out);
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	}
	m->trees = tree;
	tree = &m->trees[m->n_trees++];
	memset(tree, 0, sizeof(*tree));
	tree->nodes = b->out;
	tree->n_nodes = b->n_out;
	tree->group = b->cls;
	b->out = NULL;
	return true;
}

/*
 * ai.onnx.ml opset 5 TreeEnsemble: nodes and leaves in separate arrays,
 * each child flagged as a node or a leaf, one target per leaf, the modes
 * and thresholds as tensors, and BRANCH_MEMBER sets in membership_values
 * (one NaN-terminated run per BRANCH_MEMBER node, in node order).  Read into
 * the legacy layout (leaves after the nodes) and emitted the same way.
 */
static bool
read_tree_ensemble5(Reader *r, const OnnxNode *n)
{
	HbError    *err = r->err;
	size_t		nn,
				c1,
				c2,
				c3,
				c4,
				cm,
				n_roots,
				n_lt,
				n_splits = 0,
				n_modes = 0,
				n_lw = 0,
				n_members = 0;
	const int64_t *feat = attr_ints(n, "nodes_featureids", &nn);
	const int64_t *tid = attr_ints(n, "nodes_truenodeids", &c1);
	const int64_t *tleaf = attr_ints(n, "nodes_trueleafs", &c2);
	const int64_t *fid = attr_ints(n, "nodes_falsenodeids", &c3);
	const int64_t *fleaf = attr_ints(n, "nodes_falseleafs", &c4);
	const int64_t *mtt = attr_ints(n, "nodes_missing_value_tracks_true", &cm);
	const int64_t *roots = attr_ints(n, "tree_roots", &n_roots);
	const int64_t *ltarget = attr_ints(n, "leaf_targetids", &n_lt);
	int64_t		targets = attr_int(n, "n_targets", 1);
	int64_t		agg = attr_int(n, "aggregate_function", 1);
	double	   *splits = NULL,
			   *modes = NULL,
			   *lw = NULL,
			   *members = NULL,
			   *sets = NULL;
	OnnxTreeNode *nodes = NULL;
	LeafWeight *weights = NULL;
	PostTransform pt;
	TreeBuild	b = {0};
	size_t		cap_trees = 0;
	size_t		n_set = 0;
	size_t		mpos = 0;
	int64_t		max_feature = -1;
	bool		ok = false;

	if (!post_transform(r, n, &pt))
		return false;
	if (!attr_doubles(n, "nodes_splits", &splits, &n_splits, err) ||
		!attr_doubles(n, "nodes_modes", &modes, &n_modes, err) ||
		!attr_doubles(n, "leaf_weights", &lw, &n_lw, err) ||
		!attr_doubles(n, "membership_values", &members, &n_members, err))
		goto done;
	if (nn == 0 || nn > INT32_MAX / 4 || n_lt > INT32_MAX / 4 ||
		c1 != nn || c2 != nn || c3 != nn || c4 != nn ||
		(cm != 0 && cm != nn) || n_splits != nn || n_modes != nn ||
		n_lt != n_lw || n_lt == 0 || n_roots == 0)
	{
		refuse(r, n, "the nodes_*, leaf_* and tree_roots attributes do not agree");
		goto done;
	}
	if (targets < 1 || targets > 100000)
	{
		refuse(r, n, "n_targets is out of range");
		goto done;
	}
	nodes = hb_alloc0(sizeof(OnnxTreeNode) * (nn + n_lt));
	weights = hb_alloc0(sizeof(LeafWeight) * n_lt);
	sets = hb_alloc(sizeof(double) * (n_members + 1));
	if (!nodes || !weights || !sets)
	{
		hb_fail(err, HB_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < nn; i++)
	{
		OnnxTreeNode *o = &nodes[i];
		int			mode = (int) modes[i];

		/* a BRANCH_MEMBER node's split is unused (NaN in practice) */
		if (!(modes[i] >= 0 && modes[i] <= 6) || feat[i] < 0 ||
			feat[i] >= HB_MAX_FEATURES || (mode != 6 && isnan(splits[i])))
		{
			refuse(r, n, "a node has a mode, feature or threshold out of range");
			goto done;
		}
		/* opset 5 numbers the modes LEQ, LT, GTE, GT, EQ, NEQ, MEMBER */
		o->mode = mode == 6 ? MODE_MEMBER : (uint8_t) mode;
		o->feature = (int32_t) feat[i];
		o->value = splits[i];
		o->mtt = cm ? mtt[i] != 0 : 0;
		o->id = (int64_t) i;
		if (tid[i] < 0 || fid[i] < 0 ||
			(tleaf[i] ? tid[i] >= (int64_t) n_lt : tid[i] >= (int64_t) nn) ||
			(fleaf[i] ? fid[i] >= (int64_t) n_lt : fid[i] >= (int64_t) nn))
		{
			refuse(r, n, "a node has a child out of range");
			goto done;
		}
		o->t_idx = (int32_t) (tleaf[i] ? (int64_t) nn + tid[i] : tid[i]);
		o->f_idx = (int32_t) (fleaf[i] ? (int64_t) nn + fid[i] : fid[i]);
		if (o->feature > max_feature)
			max_feature = o->feature;
		if (o->mode == MODE_MEMBER)
		{
			/* the next NaN-terminated run of membership_values, sorted */
			o->set_first = (int32_t) n_set;
			while (mpos < n_members && !isnan(members[mpos]))
				sets[n_set++] = members[mpos++];
			mpos++;
			o->set_n = (int32_t) n_set - o->set_first;
			for (int32_t a = o->set_first + 1; a < (int32_t) n_set; a++)
				for (int32_t k = a; k > o->set_first && sets[k - 1] > sets[k]; k--)
				{
					double		t = sets[k];

					sets[k] = sets[k - 1];
					sets[k - 1] = t;
				}
		}
	}
	for (size_t j = 0; j < n_lt; j++)
	{
		OnnxTreeNode *o = &nodes[nn + j];

		if (ltarget[j] < 0 || ltarget[j] >= targets || !isfinite(lw[j]))
		{
			refuse(r, n, "a leaf has a target out of range or a non-finite weight");
			goto done;
		}
		o->mode = MODE_LEAF;
		o->id = (int64_t) (nn + j);
		o->w_first = (int32_t) j;
		o->w_n = 1;
		weights[j].node = (int32_t) (nn + j);
		weights[j].cls = (int32_t) ltarget[j];
		weights[j].w = lw[j];
	}
	for (size_t t = 0; t < n_roots; t++)
		if (roots[t] < 0 || roots[t] >= (int64_t) nn)
		{
			refuse(r, n, "a tree root is out of range");
			goto done;
		}

	if (!new_model(r, n, r->input_width > 0 ? r->input_width : max_feature + 1,
				   (int) targets))
		goto done;
	r->m->estimator = HB_EST_TREES;
	r->m->task = HB_TASK_REGRESSION;
	r->m->cmp = r->input_elem == ONNX_DOUBLE ? HB_CMP_LE_F64 : HB_CMP_LT_F32;
	r->m->sum_f32 = r->m->cmp == HB_CMP_LT_F32;
	if (pt == PT_LOGISTIC)
		r->m->link = HB_LINK_LOGISTIC;
	else if (pt == PT_PROBIT)
		r->m->link = HB_LINK_PROBIT;
	else if (pt != PT_NONE)
	{
		refuse(r, n, "a softmax post_transform is not supported on a TreeEnsemble");
		goto done;
	}
	if (max_feature >= r->m->n_features)
	{
		hb_fail(err, HB_ERR_INVALID,
				"ONNX node \"%s\" (op %s) splits on feature %lld, but the input has %d",
				node_label(n), op_of(n), (long long) max_feature, r->m->n_features);
		goto done;
	}
	b.r = r;
	b.n = n;
	b.nodes = nodes;
	b.weights = weights;
	b.set_vals = sets;
	b.f32 = r->m->cmp == HB_CMP_LT_F32;
	b.scale = agg == 0 ? 1.0 / (double) n_roots : 1.0;
	if ((agg == 2 || agg == 3) && n_roots > 1)
	{
		hb_fail(err, HB_ERR_UNSUPPORTED,
				"ONNX node \"%s\" (op %s): aggregate_function %s over %zu trees is not supported (hbird sums trees)",
				node_label(n), op_of(n), agg == 2 ? "MIN" : "MAX", n_roots);
		goto done;
	}
	if (agg < 0 || agg > 3)
	{
		refuse(r, n, "unknown aggregate_function");
		goto done;
	}
	for (size_t t = 0; t < n_roots; t++)
		for (int c = 0; c < (int) targets; c++)
		{
			b.cls = c;
			b.hit = false;
			b.out = NULL;
			b.n_out = 0;
			b.cap_out = 0;
			if (emit(&b, (int32_t) roots[t], 0) < 0)
			{
				hb_free(b.out);
				goto done;
			}
			if (!b.hit)
			{
				/* no leaf of this tree feeds target c */
				r->total_nodes -= b.n_out;
				hb_free(b.out);
				continue;
			}
			if (!add_tree(r, &b, &cap_trees))
				goto done;
		}
	ok = true;

done:
	hb_free(splits);
	hb_free(modes);
	hb_free(lw);
	hb_free(members);
	hb_free(sets);
	hb_free(nodes);
	hb_free(weights);
	return ok;
}

/* ---------------------------------------------------------------------
 * Linear models
 * ---------------------------------------------------------------------
 */

/* weights[f * k + g] = coef[g * nf + f]; bias[g] = intercepts[g] */
static bool
set_linear(Reader *r, const double *coef, const double *icpt, int k, int64_t nf)
{
	HbModel    *m = r->m;

	m->estimator = HB_EST_LINEAR;
	m->weights = hb_alloc0(sizeof(double) * (size_t) nf * k);
	m->bias = hb_alloc0(sizeof(double) * k);
	if (!m->weights || !m->bias)
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	for (int g = 0; g < k; g++)
	{
		for (int64_t f = 0; f < nf; f++)
			m->weights[(size_t) f * k + g] = coef[(size_t) g * nf + f];
		m->bias[g] = icpt ? icpt[g] : 0.0;
	}
	return true;
}

static bool
read_linear(Reader *r, const OnnxNode *n, bool classifier)
{
	double	   *coef = NULL,
			   *icpt = NULL;
	size_t		n_coef,
				n_icpt;
	int64_t		rows,
				nf;
	PostTransform pt;
	bool		ok = false;

	if (!post_transform(r, n, &pt))
		return false;
	if (!attr_doubles(n, "coefficients", &coef, &n_coef, r->err) ||
		!attr_doubles(n, "intercepts", &icpt, &n_icpt, r->err))
		goto done;
	if (n_coef == 0)
	{
		refuse(r, n, "the model has no coefficients");
		goto done;
	}
	if (classifier)
		rows = n_icpt > 0 ? (int64_t) n_icpt :
			r->input_width > 0 ? (int64_t) n_coef / r->input_width : 1;
	else
		rows = attr_int(n, "targets", 1);
	if (rows <= 0 || rows > 100000 || n_coef % rows != 0 ||
		(n_icpt != 0 && n_icpt != (size_t) rows))
	{
		refuse(r, n, "coefficients, intercepts and the number of outputs do not agree");
		goto done;
	}
	for (size_t i = 0; i < n_coef; i++)
		if (!isfinite(coef[i]))
		{
			hb_fail(r->err, HB_ERR_INVALID,
					"ONNX node \"%s\" (op %s) has a non-finite coefficient",
					node_label(n), op_of(n));
			goto done;
		}
	nf = (int64_t) n_coef / rows;

	if (!classifier)
	{
		if (!new_model(r, n, nf, (int) rows))
			goto done;
		r->m->task = HB_TASK_REGRESSION;
		if (pt == PT_LOGISTIC)
			r->m->link = HB_LINK_LOGISTIC;
		else if (pt == PT_PROBIT)
			r->m->link = HB_LINK_PROBIT;
		else if (pt != PT_NONE)
		{
			refuse(r, n, "a softmax post_transform on a regressor is not supported");
			goto done;
		}
		r->m->sum_f32 = true;
		ok = set_linear(r, coef, icpt, (int) rows, nf);
		goto done;
	}
	else
	{
		int			labels = class_label_count(n);
		bool		opposite = rows == 2 && labels == 2;

		/* scikit-learn writes binary models as two opposite rows */
		for (int64_t f = 0; f < nf && opposite; f++)
			if (coef[f] != -coef[nf + f])
				opposite = false;
		if (opposite && n_icpt == 2 && icpt[0] != -icpt[1])
			opposite = false;

		if (labels <= 0)
		{
			refuse(r, n, "the classifier has no class labels");
			goto done;
		}
		if (labels == 2 && (rows == 1 || opposite))
		{
			/* the positive class's score */
			if (!new_model(r, n, nf, 1))
				goto done;
			r->m->estimator = HB_EST_LINEAR;
			r->two_col_binary = rows == 2;
			if (!classifier_task(r, n, 2, 1, pt, true))
				goto done;
			r->m->sum_f32 = true;
			ok = set_linear(r, rows == 2 ? coef + nf : coef,
							icpt ? (rows == 2 ? icpt + 1 : icpt) : NULL, 1, nf);
			goto done;
		}
		if (!new_model(r, n, nf, (int) rows))
			goto done;
		r->m->estimator = HB_EST_LINEAR;
		if (!classifier_task(r, n, labels, (int) rows, pt, false))
			goto done;
		r->m->sum_f32 = true;
		ok = set_linear(r, coef, icpt, (int) rows, nf);
	}

done:
	hb_free(coef);
	hb_free(icpt);
	return ok;
}

/*
 * SVMs with a linear kernel: the decision function sum_j c_j <sv_j, x> + rho
 * is the linear model w = sum_j c_j sv_j, bias rho.  libsvm's binary
 * decision is positive for the first class; scikit-learn's (and the
 * margin here) for the second, hence the sign.
 */
static bool
read_svm(Reader *r, const OnnxNode *n, bool classifier)
{
	char		kernel[32];
	double	   *coef = NULL,
			   *sv = NULL,
			   *rho = NULL,
			   *w = NULL,
			   *prob_a = NULL;
	size_t		n_coef,
				n_sv,
				n_rho,
				n_pa;
	int64_t		n_vec,
				nf;
	PostTransform pt;
	bool		ok = false;

	attr_str(n, "kernel_type", kernel, sizeof(kernel));
	if (kernel[0] != '\0' && strcmp(kernel, "LINEAR") != 0)
	{
		char		why[96];

		snprintf(why, sizeof(why), "kernel %s is not supported (only LINEAR)", kernel);
		return refuse(r, n, why);
	}
	if (!post_transform(r, n, &pt))
		return false;
	if (pt != PT_NONE)
		return refuse(r, n, "a post_transform on an SVM is not supported");
	if (!attr_doubles(n, "coefficients", &coef, &n_coef, r->err) ||
		!attr_doubles(n, "support_vectors", &sv, &n_sv, r->err) ||
		!attr_doubles(n, "rho", &rho, &n_rho, r->err) ||
		!attr_doubles(n, "prob_a", &prob_a, &n_pa, r->err))
		goto done;
	if (classifier)
	{
		size_t		n_vpc;
		const int64_t *vpc = attr_ints(n, "vectors_per_class", &n_vpc);

		if (class_label_count(n) != 2 || n_vpc != 2)
		{
			refuse(r, n, "only two-class SVMs are supported (more classes vote one-vs-one)");
			goto done;
		}
		if (n_pa > 0)
		{
			refuse(r, n, "probability estimates (prob_a, prob_b: libsvm's pairwise coupling) are not supported");
			goto done;
		}
		if (vpc[0] < 0 || vpc[1] < 0 || vpc[0] > INT32_MAX - vpc[1])
		{
			refuse(r, n, "vectors_per_class is out of range");
			goto done;
		}
		n_vec = vpc[0] + vpc[1];
	}
	else
		n_vec = attr_int(n, "n_supports", 0);
	if (n_vec <= 0 || n_coef != (size_t) n_vec || n_rho != 1 ||
		n_sv % (size_t) n_vec != 0 || n_sv == 0)
	{
		refuse(r, n, "coefficients, support vectors and rho do not agree");
		goto done;
	}
	nf = (int64_t) (n_sv / (size_t) n_vec);
	w = hb_alloc0(sizeof(double) * nf);
	if (w == NULL)
	{
		hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (int64_t j = 0; j < n_vec; j++)
		for (int64_t f = 0; f < nf; f++)
			w[f] += coef[j] * sv[(size_t) j * nf + f];
	if (!new_model(r, n, nf, 1))
		goto done;
	if (classifier)
	{
		double		b = -rho[0];

		for (int64_t f = 0; f < nf; f++)
			w[f] = -w[f];
		r->m->estimator = HB_EST_LINEAR;
		if (!classifier_task(r, n, 2, 1, PT_NONE, true))
			goto done;
		ok = set_linear(r, w, &b, 1, nf);
	}
	else
	{
		r->m->task = HB_TASK_REGRESSION;
		ok = set_linear(r, w, rho, 1, nf);
	}

done:
	hb_free(coef);
	hb_free(sv);
	hb_free(rho);
	hb_free(w);
	hb_free(prob_a);
	return ok;
}

/* MatMul(features, constant F x K): a linear map with K outputs */
static bool
read_matmul(Reader *r, const OnnxNode *n, const OnnxTensor *t)
{
	double	   *v = NULL;
	size_t		len;
	double	   *coef;
	int64_t		nf,
				k;
	bool		ok;

	if (t->n_dims != 2 || t->dims[0] <= 0 || t->dims[1] <= 0 ||
		t->dims[1] > 100000 || tensor_count(t) < 0)
		return refuse(r, n, "only a product with a constant matrix is supported");
	nf = t->dims[0];
	k = t->dims[1];
	if (!tensor_doubles(t, "B", &v, &len, r->err))
		return false;
	if (len != (size_t) (nf * k))
	{
		hb_free(v);
		return refuse(r, n, "the constant matrix does not have as many values as its dims say");
	}
	for (size_t i = 0; i < len; i++)
		if (!isfinite(v[i]))
		{
			hb_free(v);
			return hb_fail(r->err, HB_ERR_INVALID,
						   "ONNX node \"%s\" (op %s) has a non-finite coefficient",
						   node_label(n), op_of(n));
		}
	coef = hb_alloc(sizeof(double) * len);
	if (coef == NULL)
	{
		hb_free(v);
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	}
	/* B is F x K row-major; set_linear wants K x F */
	for (int64_t f = 0; f < nf; f++)
		for (int64_t g = 0; g < k; g++)
			coef[g * nf + f] = v[f * k + g];
	hb_free(v);
	ok = new_model(r, n, nf, (int) k);
	if (ok)
	{
		r->m->task = HB_TASK_REGRESSION;
		r->m->sum_f32 = true;
		ok = set_linear(r, coef, NULL, (int) k, nf);
	}
	hb_free(coef);
	return ok;
}

/* ---------------------------------------------------------------------
 * Featurizers: steps of the model's pipeline (featurize.h)
 * ---------------------------------------------------------------------
 */

/* A new step reading n_in slots and writing n_out fresh ones. */
static HbStep *
add_step(Reader *r, const OnnxNode *n, HbStepKind kind, const int32_t *in,
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
	s->name = hb_strdup(node_label(n));
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
step_slots(Reader *r, const HbStep *s)
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

static bool
add_step_value(Reader *r, const OnnxNode *n, const HbStep *s, int elem)
{
	int32_t    *slots = step_slots(r, s);
	bool		ok;

	if (slots == NULL)
		return false;
	ok = n->n_output < 1 || val_add_slots(r, n->output[0], elem, slots, s->n_out);
	hb_free(slots);
	return ok;
}

/*
 * Per-column parameters: a list of 1 (broadcast) or width values, as
 * doubles (hb_alloc'd, width long).
 */
static bool
per_column(Reader *r, const OnnxNode *n, const char *name, int32_t width,
		   double dflt, bool required, double **out)
{
	double	   *v = NULL;
	size_t		len;
	double	   *res;

	*out = NULL;
	if (!attr_doubles(n, name, &v, &len, r->err))
		return false;
	if (len == 0 && required)
	{
		char		why[128];

		snprintf(why, sizeof(why), "attribute %s is missing", name);
		return refuse(r, n, why);
	}
	if (len > 1 && r->flat_dims > 0)
	{
		char		why[200];

		hb_free(v);
		snprintf(why, sizeof(why),
				 "attribute %s has one value per column, but the input of %d dimensions is read as [rows, columns]",
				 name, r->flat_dims);
		return refuse(r, n, why);
	}
	if (len != 0 && len != 1 && len != (size_t) width)
	{
		char		why[160];

		hb_free(v);
		snprintf(why, sizeof(why), "attribute %s has %zu values for %d columns",
				 name, len, width);
		return refuse(r, n, why);
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

static bool
slots_known(Reader *r, const OnnxNode *n, const OnnxVal *v)
{
	if (v->width <= 0)
		return refuse(r, n, "the width of its input is not known (declare the graph input's last dimension)");
	return true;
}

/* Scaler, Normalizer, Imputer, Binarizer: one step over the columns. */
static bool
featurize_elementwise(Reader *r, const OnnxNode *n, const OnnxVal *in)
{
	const char *op = op_of(n);
	HbStep	   *s;

	if (!slots_known(r, n, in))
		return false;
	if (strcmp(op, "Normalizer") == 0)
	{
		char		norm[16];
		HbNorm		nm;

		attr_str(n, "norm", norm, sizeof(norm));
		nm = strcmp(norm, "L1") == 0 ? HB_NORM_L1 :
			strcmp(norm, "L2") == 0 ? HB_NORM_L2 :
			strcmp(norm, "MAX") == 0 ? HB_NORM_MAX : HB_NORM_NONE;
		if (nm == HB_NORM_NONE)
			return refuse(r, n, "unknown norm");
		s = add_step(r, n, HB_STEP_NORMALIZE, in->slots, in->width, in->width);
		if (s == NULL)
			return false;
		s->norm = nm;
		return add_step_value(r, n, s, ONNX_FLOAT);
	}
	if (strcmp(op, "Binarizer") == 0)
	{
		const OnnxAttr *a = attr(n, "threshold");

		s = add_step(r, n, HB_STEP_BINARIZE, in->slots, in->width, in->width);
		if (s == NULL)
			return false;
		/* onnxruntime compares in the input's type (float) */
		s->threshold = a && a->has_f ? (double) a->f : 0.0;
		return add_step_value(r, n, s, in->elem);
	}
	if (strcmp(op, "Scaler") == 0)
	{
		double	   *offset,
				   *scale;

		if (!per_column(r, n, "offset", in->width, 0.0, false, &offset))
			return false;
		if (!per_column(r, n, "scale", in->width, 1.0, false, &scale))
		{
			hb_free(offset);
			return false;
		}
		s = add_step(r, n, HB_STEP_AFFINE, in->slots, in->width, in->width);
		if (s == NULL)
		{
			hb_free(offset);
			hb_free(scale);
			return false;
		}
		/* onnxruntime: (x - offset) * scale, in float */
		s->order = HB_AFFINE_SUB_MUL_ADD;
		s->sub = offset;
		s->mul = scale;
		s->f32 = true;
		return add_step_value(r, n, s, ONNX_FLOAT);
	}
	/* Imputer */
	{
		double	   *value;
		const OnnxAttr *rv = attr(n, "replaced_value_float");
		double		replaced = rv && rv->has_f ? (double) rv->f : 0.0;

		if (attr(n, "imputed_value_floats") == NULL &&
			attr(n, "imputed_value_int64s") == NULL)
			return refuse(r, n, "no imputed values");
		if (!per_column(r, n, attr(n, "imputed_value_floats") ?
						"imputed_value_floats" : "imputed_value_int64s",
						in->width, 0.0, true, &value))
			return false;
		if (attr(n, "replaced_value_int64"))
			replaced = (double) attr_int(n, "replaced_value_int64", 0);
		s = add_step(r, n, HB_STEP_IMPUTE, in->slots, in->width, in->width);
		if (s == NULL)
		{
			hb_free(value);
			return false;
		}
		s->value = value;
		if (!isnan(replaced))
		{
			s->has_missing_value = true;
			s->missing_value = replaced;
		}
		return add_step_value(r, n, s, in->elem);
	}
}

/* Add / Sub / Mul / Div between the features and a constant */
static bool
featurize_arith(Reader *r, const OnnxNode *n, const OnnxVal *a, const OnnxVal *b)
{
	const char *op = op_of(n);
	const OnnxVal *x = a->kind == VAL_INPUT ? a : b;
	const OnnxVal *c = a->kind == VAL_INPUT ? b : a;
	bool		const_first = x == b;
	double	   *v = NULL,
			   *cv;
	size_t		len;
	HbStep	   *s;
	HbArithOp	aop;

	if (!slots_known(r, n, x))
		return false;
	if (c->kind != VAL_CONST)
		return refuse(r, n, "only arithmetic between the features and a constant is supported");
	if (!tensor_doubles(c->tensor, "B", &v, &len, r->err))
		return false;
	if (len != 1 && (len != (size_t) x->width || r->flat_dims > 0))
	{
		hb_free(v);
		return refuse(r, n, "the constant does not broadcast over the features");
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
	s = add_step(r, n, HB_STEP_ARITH, x->slots, x->width, x->width);
	if (s == NULL)
	{
		hb_free(cv);
		return false;
	}
	s->arith = aop;
	s->constant = cv;
	s->f32 = x->elem != ONNX_DOUBLE;
	return add_step_value(r, n, s, x->elem);
}

/*
 * Copies of cnt protobuf strings, NUL-terminated (hb_alloc'd, NULL with the
 * error set).  A string holding a NUL byte is refused: categories compare
 * as C strings.
 */
static char **
copy_strings(Reader *r, const OnnxNode *n, const ProtobufCBinaryData *src,
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
		if (memchr(src[i].data, '\0', src[i].len) != NULL)
		{
			refuse(r, n, "a category string holds a NUL byte");
			goto fail;
		}
		v[i] = hb_alloc(src[i].len + 1);
		if (v[i] == NULL)
		{
			hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
			goto fail;
		}
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
add_category_step(Reader *r, const OnnxNode *n, const OnnxVal *in, int32_t c,
				  HbStepKind kind, int32_t n_out, const ProtobufCBinaryData *strs,
				  const double *nums, size_t n_cats)
{
	bool		text = in->kind == VAL_TEXT;
	HbStep	   *s = add_step(r, n, kind, text ? NULL : &in->slots[c], text ? 0 : 1,
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
static bool
featurize_onehot(Reader *r, const OnnxNode *n, const OnnxVal *in)
{
	const OnnxAttr *cs = attr(n, "cats_strings");
	bool		text = in->kind == VAL_TEXT;
	size_t		n_cats;
	const int64_t *cats = attr_ints(n, "cats_int64s", &n_cats);
	bool		zeros = attr_int(n, "zeros", 1) != 0;
	double	   *nums = NULL;
	int32_t    *all;
	int32_t		width = 0;
	bool		ok;

	if (!slots_known(r, n, in))
		return false;
	if (text && (cs == NULL || cs->n_strings == 0))
		return refuse(r, n, "its input is text but its categories are not strings (cats_strings)");
	if (!text && cs && cs->n_strings > 0)
		return refuse(r, n, "its categories are strings (cats_strings) but its input is numeric");
	if (text)
		n_cats = cs->n_strings;
	if (n_cats == 0 || n_cats > 100000 || (size_t) in->width * n_cats > ONNX_MAX_NODES)
		return refuse(r, n, text ? "cats_strings is too long" : "cats_int64s is empty or too long");
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
			return false;
		}
		s->onehot = true;
		for (size_t k = 0; k < n_cats; k++)
			all[width++] = s->out + (int32_t) k;
		s->unknown = zeros ? HB_UNKNOWN_IGNORE : HB_UNKNOWN_ERROR;
	}
	hb_free(nums);
	ok = n->n_output < 1 || val_add_slots(r, n->output[0], ONNX_FLOAT, all, width);
	hb_free(all);
	return ok;
}

/* A numeric list attribute or tensor attribute; *found says whether present. */
static bool
label_numbers(Reader *r, const OnnxNode *n, const char *name, double **out,
			  size_t *len, bool *found)
{
	*found = attr(n, name) != NULL;
	return attr_doubles(n, name, out, len, r->err);
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
static bool
featurize_label(Reader *r, const OnnxNode *n, const OnnxVal *in)
{
	bool		text = in->kind == VAL_TEXT;
	const OnnxAttr *classes = attr(n, "classes_strings");
	const OnnxAttr *kt = attr(n, "keys_tensor");
	const OnnxAttr *vt = attr(n, "values_tensor");
	const OnnxAttr *dt = attr(n, "default_tensor");
	const ProtobufCBinaryData *key_strs = NULL;
	size_t		n_keys = 0;
	double	   *key_nums = NULL;
	double	   *vals = NULL;
	size_t		n_vals = 0;
	double		dflt;
	bool		float_out = false;
	bool		found;
	int32_t    *all = NULL;
	bool		ok = false;

	if (!slots_known(r, n, in))
		return false;
	if (classes)
	{
		/* opset 1: string -> position, or position -> string */
		if (!text)
			return refuse(r, n, "it maps numbers to strings (classes_strings with a numeric input): its output is text, which hbird's features cannot hold");
		key_strs = classes->strings;
		n_keys = classes->n_strings;
		if (n_keys > 0)
		{
			vals = hb_alloc(sizeof(double) * n_keys);
			if (vals == NULL)
				return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		}
		for (size_t i = 0; i < n_keys; i++)
			vals[i] = (double) i;
		n_vals = n_keys;
		dflt = (double) attr_int(n, "default_int64", -1);
	}
	else
	{
		const OnnxAttr *ks = attr(n, "keys_strings");

		if ((attr(n, "values_strings") && attr(n, "values_strings")->n_strings > 0) ||
			(vt && vt->t && vt->t->data_type == ONNX_STRING))
			return refuse(r, n, "it maps to strings (string values): its output is text, which hbird's features cannot hold");
		/* the keys */
		if (ks && ks->n_strings > 0)
		{
			key_strs = ks->strings;
			n_keys = ks->n_strings;
		}
		else if (kt && kt->t && kt->t->data_type == ONNX_STRING)
		{
			key_strs = kt->t->string_data;
			n_keys = kt->t->n_string_data;
		}
		else if (kt && kt->t)
		{
			if (!tensor_doubles(kt->t, "keys_tensor", &key_nums, &n_keys, r->err))
				return false;
		}
		else
		{
			if (!label_numbers(r, n, "keys_int64s", &key_nums, &n_keys, &found))
				return false;
			if (n_keys == 0 &&
				!label_numbers(r, n, "keys_floats", &key_nums, &n_keys, &found))
				return false;
		}
		/* the values */
		if (vt && vt->t)
		{
			float_out = vt->t->data_type == ONNX_FLOAT || vt->t->data_type == ONNX_DOUBLE;
			ok = tensor_doubles(vt->t, "values_tensor", &vals, &n_vals, r->err);
		}
		else
		{
			ok = label_numbers(r, n, "values_int64s", &vals, &n_vals, &found);
			if (ok && !found)
			{
				float_out = true;
				ok = label_numbers(r, n, "values_floats", &vals, &n_vals, &found);
			}
		}
		if (!ok)
			goto done;
		ok = false;
		/* the value of an unknown key */
		if (dt && dt->t)
		{
			double	   *d = NULL;
			size_t		dl;

			if (!tensor_doubles(dt->t, "default_tensor", &d, &dl, r->err))
				goto done;
			dflt = dl == 1 ? d[0] : NAN;
			hb_free(d);
			if (dl != 1)
			{
				refuse(r, n, "default_tensor does not hold one value");
				goto done;
			}
		}
		else if (float_out)
		{
			const OnnxAttr *df = attr(n, "default_float");

			dflt = df && df->has_f ? (double) df->f : -0.0;
		}
		else
			dflt = (double) attr_int(n, "default_int64", -1);
	}
	if (n_keys == 0 || n_keys > (1 << 20) ||
		(size_t) in->width * n_keys > (size_t) ONNX_MAX_NODES * 64)
	{
		refuse(r, n, "it has no keys, or too many");
		goto done;
	}
	if (n_vals != n_keys)
	{
		refuse(r, n, "its keys and values do not have the same length");
		goto done;
	}
	if (text != (key_strs != NULL))
	{
		refuse(r, n, text ? "its input is text but its keys are numbers" :
			   "its keys are strings but its input is numeric");
		goto done;
	}
	all = hb_alloc(sizeof(int32_t) * in->width);
	if (all == NULL)
	{
		hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (int32_t c = 0; c < in->width; c++)
	{
		HbStep	   *s = add_category_step(r, n, in, c,
										  text ? HB_STEP_LABEL_TEXT : HB_STEP_LABEL_NUM,
										  1, key_strs, key_nums, n_keys);

		if (s == NULL)
			goto done;
		s->label_values = hb_alloc(sizeof(double) * n_keys);
		if (s->label_values == NULL)
		{
			hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
			goto done;
		}
		memcpy(s->label_values, vals, sizeof(double) * n_keys);
		s->onehot = false;
		s->unknown = HB_UNKNOWN_VALUE;
		s->unknown_value = dflt;
		all[c] = s->out;
	}
	ok = n->n_output < 1 ||
		val_add_slots(r, n->output[0], float_out ? ONNX_FLOAT : ONNX_INT64, all, in->width);
done:
	hb_free(all);
	hb_free(key_nums);
	hb_free(vals);
	return ok;
}

/* Concat, FeatureVectorizer: the columns of several inputs side by side */
static bool
featurize_concat(Reader *r, const OnnxNode *n)
{
	size_t		n_dims;
	const int64_t *dims = attr_ints(n, "inputdimensions", &n_dims);
	int32_t    *all = NULL;
	int32_t		width = 0;
	int			elem = ONNX_FLOAT;
	bool		ok;

	if (strcmp(op_of(n), "Concat") == 0)
	{
		int64_t		axis = attr_int(n, "axis", 1);

		if (axis != 1 && axis != -1)
			return refuse(r, n, "only a concatenation of columns (axis 1) is supported");
	}
	else if (n_dims != 0 && n_dims != n->n_input)
		return refuse(r, n, "inputdimensions does not have one entry per input");
	for (size_t i = 0; i < n->n_input; i++)
	{
		OnnxVal    *v = val_find(r, n->input[i]);
		int32_t    *grown;

		if (v == NULL || v->kind != VAL_INPUT)
		{
			hb_free(all);
			return refuse(r, n, "only feature columns can be concatenated");
		}
		if (!slots_known(r, n, v))
		{
			hb_free(all);
			return false;
		}
		if (n_dims && dims[i] != v->width)
		{
			hb_free(all);
			return refuse(r, n, "an input's width differs from inputdimensions");
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
	ok = n->n_output < 1 || val_add_slots(r, n->output[0], elem, all, width);
	hb_free(all);
	return ok;
}

/* ArrayFeatureExtractor with constant indexes: a column selection (of
 * numbers or of strings) */
static bool
featurize_select(Reader *r, const OnnxNode *n, const OnnxVal *in, const OnnxVal *idx)
{
	double	   *v = NULL;
	size_t		len;
	int32_t    *sel;
	bool		ok;

	if (!slots_known(r, n, in))
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
		return refuse(r, n, why);
	}
	if (idx == NULL || idx->kind != VAL_CONST)
		return refuse(r, n, "only constant indexes are supported");
	if (!tensor_doubles(idx->tensor, "indices", &v, &len, r->err))
		return false;
	if (len == 0 || len > (size_t) ONNX_MAX_NODES)
	{
		hb_free(v);
		return refuse(r, n, "no indexes");
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
						   node_label(n), op_of(n), bad, in->width);
		}
		sel[i] = in->slots[(int32_t) v[i]];
	}
	hb_free(v);
	ok = n->n_output < 1 || val_add_slots(r, n->output[0], in->elem, sel, (int32_t) len);
	hb_free(sel);
	if (ok && n->n_output >= 1 && in->kind == VAL_TEXT)
	{
		/* string columns stay text inputs */
		OnnxVal    *out = val_find(r, n->output[0]);

		if (out)
			out->kind = VAL_TEXT;
	}
	return ok;
}

/*
 * Give the model read from value v its pipeline, unless v is the graph's
 * only input, untouched.
 */
static bool
attach_pipeline(Reader *r, const OnnxVal *v)
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
	return strcmp(op_of(n), op) == 0 && (ml ? is_ml_domain(n) : is_std_domain(n));
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
find_inputs(Reader *r)
{
	const Hbonnx__GraphProto *g = r->g;
	int			n_graph_inputs = 0;

	for (size_t i = 0; i < g->n_initializer; i++)
		if (!val_add(r, g->initializer[i]->name, VAL_CONST, g->initializer[i], 0))
			return false;
	for (size_t i = 0; i < g->n_input; i++)
		if (g->input[i]->name && !val_find(r, g->input[i]->name))
			n_graph_inputs++;
	if (n_graph_inputs == 0)
		return hb_fail(r->err, HB_ERR_INVALID, "ONNX graph has no input");
	for (size_t i = 0; i < g->n_input; i++)
	{
		const Hbonnx__ValueInfoProto *vi = g->input[i];
		const Hbonnx__TypeProto__Tensor *tt;
		int			elem;
		int64_t		width = -1;
		int32_t    *slots;
		bool		text;
		bool		ok;

		if (vi->name == NULL || val_find(r, vi->name))
			continue;
		tt = vi->type ? vi->type->tensor_type : NULL;
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
		if (tt->shape && tt->shape->n_dim > 2)
		{
			/* [rows, d1, d2, ...]: the columns are d1 x d2 x ... */
			width = 1;
			for (size_t d = 1; d < tt->shape->n_dim; d++)
			{
				const Hbonnx__TensorShapeProto__Dimension *dd = tt->shape->dim[d];

				if (!dd->has_dim_value || dd->dim_value <= 0)
					return hb_fail(r->err, HB_ERR_UNSUPPORTED,
								   "ONNX graph input \"%s\" has %zu dimensions, not all declared; hbird reads [rows, features]",
								   vi->name, tt->shape->n_dim);
				if (dd->dim_value > HB_MAX_FEATURES || width > HB_MAX_FEATURES / dd->dim_value)
					return hb_fail(r->err, HB_ERR_LIMIT,
								   "ONNX graph input \"%s\" has too many columns", vi->name);
				width *= dd->dim_value;
			}
			r->flat_dims = (int) tt->shape->n_dim;
		}
		else if (tt->shape && tt->shape->n_dim > 0)
		{
			const Hbonnx__TensorShapeProto__Dimension *d =
				tt->shape->dim[tt->shape->n_dim - 1];

			if (d->has_dim_value && d->dim_value > 0)
				width = d->dim_value;
			else if (text && tt->shape->n_dim == 1)
				width = 1;
		}
		if (width > HB_MAX_FEATURES || r->n_inputs > HB_MAX_FEATURES - width)
			return hb_fail(r->err, HB_ERR_LIMIT,
						   "ONNX graph input \"%s\" has too many columns", vi->name);
		if (width < 0)
		{
			if (n_graph_inputs > 1 || text)
				return hb_fail(r->err, HB_ERR_UNSUPPORTED,
							   "ONNX graph input \"%s\" does not declare its number of columns",
							   vi->name);
			/* one input of unknown width: the estimator will say */
			if (!val_add_slots(r, vi->name, elem, NULL, -1))
				return false;
			continue;
		}
		slots = hb_alloc(sizeof(int32_t) * width);
		if (slots == NULL)
			return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		for (int64_t c = 0; c < width; c++)
		{
			HbInput    *in;
			char		name[300];

			in = hb_grow(r->inputs, &r->cap_inputs, (size_t) r->n_inputs + 1,
						 sizeof(HbInput));
			if (in == NULL)
			{
				hb_free(slots);
				return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
			}
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
			{
				hb_free(slots);
				return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
			}
			r->n_inputs++;
			/* numeric inputs are slots 0 .. n_num_inputs - 1 */
			in->type = text ? HB_INPUT_TEXT : HB_INPUT_NUMERIC;
			in->index = text ? r->n_text_inputs++ : r->n_num_inputs++;
			slots[c] = in->index;
		}
		ok = val_add_slots(r, vi->name, elem, slots, (int32_t) width);
		if (ok && text && r->n_vals > 0 && r->vals[r->n_vals - 1].name == vi->name)
			r->vals[r->n_vals - 1].kind = VAL_TEXT;
		hb_free(slots);
		if (!ok)
			return false;
	}
	r->next_slot = r->n_num_inputs;
	return true;
}

/* Integer value of a constant holding one index. */
static bool
const_index(Reader *r, const OnnxVal *v, int64_t *out)
{
	double	   *d = NULL;
	size_t		len;
	bool		ok;

	if (v == NULL || v->kind != VAL_CONST)
		return false;
	if (!tensor_doubles(v->tensor, "index", &d, &len, r->err))
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
read_node(Reader *r, const OnnxNode *n)
{
	OnnxVal    *in0 = n->n_input > 0 ? val_find(r, n->input[0]) : NULL;
	OnnxVal    *in1 = n->n_input > 1 ? val_find(r, n->input[1]) : NULL;
	const char *op = op_of(n);

	if (r->flat_dims > 0 && !op_elementwise(n))
	{
		char		why[200];

		snprintf(why, sizeof(why),
				 "the graph's input has %d dimensions, read as [rows, columns], so only element-wise operators can follow it",
				 r->flat_dims);
		return refuse(r, n, why);
	}

	/* the estimators */
	if (op_is(n, "TreeEnsembleClassifier", true) ||
		op_is(n, "TreeEnsembleRegressor", true) ||
		op_is(n, "TreeEnsemble", true) ||
		op_is(n, "LinearClassifier", true) ||
		op_is(n, "LinearRegressor", true) ||
		op_is(n, "SVMClassifier", true) ||
		op_is(n, "SVMRegressor", true) ||
		(op_is(n, "MatMul", false) && in0 && in0->kind == VAL_INPUT))
	{
		bool		classifier = strstr(op, "Classifier") != NULL;
		bool		ok;

		if (in0 && in0->kind == VAL_TEXT)
			return refuse(r, n, "its input is text (a string tensor); an encoder (LabelEncoder, OneHotEncoder) must turn it into numbers first");
		if (in0 == NULL || in0->kind != VAL_INPUT)
			return refuse(r, n, "its input is not a feature vector");
		r->input_name = in0->name;
		r->input_elem = in0->elem;
		r->input_width = in0->width;
		if (strcmp(op, "TreeEnsemble") == 0)
			ok = read_tree_ensemble5(r, n);
		else if (strncmp(op, "Tree", 4) == 0)
			ok = read_tree_ensemble(r, n, classifier);
		else if (strncmp(op, "Linear", 6) == 0)
			ok = read_linear(r, n, classifier);
		else if (strncmp(op, "SVM", 3) == 0)
			ok = read_svm(r, n, classifier);
		else if (n->n_input != 2 || in1 == NULL || in1->kind != VAL_CONST)
			return refuse(r, n, "only a product with a constant matrix is supported");
		else
			ok = read_matmul(r, n, in1->tensor);
		if (!ok || !attach_pipeline(r, in0))
			return false;
		if (classifier)
			return (n->n_output < 1 || val_add(r, n->output[0], VAL_LABEL, NULL, 0)) &&
				(n->n_output < 2 || val_add(r, n->output[1], VAL_SCORES, NULL, 0));
		return n->n_output < 1 || val_add(r, n->output[0], VAL_SCORES, NULL, 0);
	}

	/* pass-through */
	if ((op_is(n, "Identity", false) || op_is(n, "Cast", false)) && in0 &&
		n->n_input == 1 && n->n_output >= 1)
	{
		if (in0->kind == VAL_TEXT)
		{
			OnnxVal    *v;

			if (op_is(n, "Cast", false))
				return refuse(r, n, "a cast of text (a string tensor) is not supported");
			if (!val_add_slots(r, n->output[0], ONNX_STRING, in0->slots, in0->width))
				return false;
			v = val_find(r, n->output[0]);
			if (v)
				v->kind = VAL_TEXT;
			return true;
		}
		if (in0->kind == VAL_INPUT)
		{
			int			elem = in0->elem;

			if (op_is(n, "Cast", false))
			{
				int64_t		to = attr_int(n, "to", 0);

				if (to != ONNX_FLOAT && to != ONNX_DOUBLE)
					return refuse(r, n, "a cast of the features to a non-floating type is not supported");
				if (to == ONNX_FLOAT && in0->elem == ONNX_DOUBLE && in0->width > 0)
				{
					HbStep	   *s = add_step(r, n, HB_STEP_CAST_F32, in0->slots,
											 in0->width, in0->width);

					return s != NULL && add_step_value(r, n, s, ONNX_FLOAT);
				}
				/* float stays float when widened: the values are floats */
				elem = to == ONNX_DOUBLE && in0->elem == ONNX_FLOAT ? ONNX_FLOAT : (int) to;
			}
			return val_add_slots(r, n->output[0], elem, in0->slots, in0->width);
		}
		return val_add(r, n->output[0], in0->kind, in0->tensor, in0->elem);
	}
	if (op_is(n, "ZipMap", true) && in0 && in0->kind == VAL_SCORES)
		return n->n_output < 1 || val_add(r, n->output[0], VAL_SCORES, NULL, 0);

	/* L1 normalisation of per-class sigmoids (LogisticRegression ovr) */
	if (op_is(n, "Normalizer", true) && in0 && in0->kind == VAL_SCORES && r->m)
	{
		char		norm[16];

		attr_str(n, "norm", norm, sizeof(norm));
		if (strcmp(norm, "L1") != 0)
			return refuse(r, n, "only an L1 normalisation of the probabilities is supported");
		if (r->m->link == HB_LINK_LOGISTIC && r->m->task == HB_TASK_MULTICLASS)
			r->m->link = HB_LINK_SIGMOID_L1;
		else if (!(r->m->link == HB_LINK_LOGISTIC && r->m->task == HB_TASK_BINARY) &&
				 r->m->link != HB_LINK_SOFTMAX && r->m->link != HB_LINK_SOFTMAX_PAIR)
			return refuse(r, n, "an L1 normalisation is supported only after LOGISTIC or SOFTMAX");
		return n->n_output < 1 || val_add(r, n->output[0], VAL_SCORES, NULL, 0);
	}

	/* the positive class's column of two opposite score columns */
	if (op_is(n, "ArrayFeatureExtractor", true) && in0 && in0->kind == VAL_SCORES &&
		n->n_input == 2 && r->m)
	{
		int64_t		idx;

		if (r->two_col_binary && const_index(r, in1, &idx) && idx == 1)
			return n->n_output < 1 || val_add(r, n->output[0], VAL_SCORES, NULL, 0);
		if (r->err->code != HB_OK)
			return false;
		return refuse(r, n, "only the positive-class column of a binary model's scores can be selected");
	}

	/* featurizers, before the estimator */
	if (in0 && (in0->kind == VAL_INPUT || in0->kind == VAL_TEXT) && r->m == NULL)
	{
		if (op_is(n, "LabelEncoder", true))
			return featurize_label(r, n, in0);
		if (op_is(n, "OneHotEncoder", true))
			return featurize_onehot(r, n, in0);
		if (op_is(n, "ArrayFeatureExtractor", true) && n->n_input == 2)
			return featurize_select(r, n, in0, in1);
		if (in0->kind == VAL_TEXT)
			return refuse(r, n, "its input is text (a string tensor); only LabelEncoder, OneHotEncoder and ArrayFeatureExtractor read strings");
		if (op_is(n, "Scaler", true) || op_is(n, "Normalizer", true) ||
			op_is(n, "Imputer", true) || op_is(n, "Binarizer", true))
			return featurize_elementwise(r, n, in0);
		if (op_is(n, "FeatureVectorizer", true) || op_is(n, "Concat", false))
			return featurize_concat(r, n);
	}
	if ((op_is(n, "Add", false) || op_is(n, "Sub", false) ||
		 op_is(n, "Mul", false) || op_is(n, "Div", false)) && n->n_input == 2 &&
		in0 && in1 && r->m == NULL && in0->kind != VAL_TEXT && in1->kind != VAL_TEXT &&
		(in0->kind == VAL_INPUT || in1->kind == VAL_INPUT))
		return featurize_arith(r, n, in0, in1);

	return refuse(r, n, "operator not supported");
}

/*
 * A graph of featurizers alone: a model whose outputs are the features
 * (an identity linear map), so hb_predict_margin returns them.
 */
static bool
transform_only(Reader *r)
{
	const Hbonnx__GraphProto *g = r->g;
	OnnxVal    *out = g->n_output > 0 ? val_find(r, g->output[0]->name) : NULL;
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
	if (!new_model(r, &fake, out->width, out->width))
		return false;
	m = r->m;
	m->task = HB_TASK_REGRESSION;
	eye = hb_alloc0(sizeof(double) * out->width * out->width);
	if (eye == NULL)
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	for (int32_t i = 0; i < out->width; i++)
		eye[(size_t) i * out->width + i] = 1.0;
	ok = set_linear(r, eye, NULL, out->width, out->width);
	hb_free(eye);
	return ok && attach_pipeline(r, out);
}

static bool
read_graph(Reader *r, const Hbonnx__ModelProto *mp)
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
				return refuse(r, g->node[i], "operator not supported");
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

static void
reader_free(Reader *r)
{
	for (size_t i = 0; i < r->n_vals; i++)
		hb_free(r->vals[i].slots);
	hb_free(r->vals);
	if (r->inputs)
	{
		for (int32_t i = 0; i < r->n_inputs; i++)
			hb_free(r->inputs[i].name);
		hb_free(r->inputs);
	}
	if (r->steps)
	{
		/* steps not handed to a model: free them through a pipeline */
		HbPipeline *p = hb_alloc0(sizeof(HbPipeline));

		if (p)
		{
			p->steps = r->steps;
			p->n_steps = r->n_steps;
			hb_pipeline_free(p);
		}
	}
}

bool
hb_read_onnx(const char *bytes, size_t len, HbModel **out, HbError *err)
{
	PbBudget	budget = {0};
	ProtobufCAllocator alloc;
	Hbonnx__ModelProto *mp;
	Reader		r = {0};
	bool		ok;

	*out = NULL;
	/* a decoded message takes a few times its encoded size */
	budget.budget = len > (SIZE_MAX - (64 << 20)) / 16 ? SIZE_MAX / 2 :
		16 * len + (64 << 20);
	alloc.alloc = pb_alloc;
	alloc.free = pb_free;
	alloc.allocator_data = &budget;
	mp = hbonnx__model_proto__unpack(&alloc, len, (const uint8_t *) bytes);
	if (mp == NULL)
	{
		if (budget.exceeded)
			return hb_fail(err, HB_ERR_LIMIT,
						   "ONNX model needs more than %zu bytes of memory to decode",
						   budget.budget);
		return hb_fail(err, HB_ERR_PARSE,
					   "not a valid ONNX model (the protobuf does not decode as a ModelProto)");
	}
	r.err = err;
	ok = read_graph(&r, mp);
	reader_free(&r);
	hbonnx__model_proto__free_unpacked(mp, &alloc);
	if (!ok)
	{
		hb_model_free(r.m);
		return false;
	}
	*out = r.m;
	return true;
}
