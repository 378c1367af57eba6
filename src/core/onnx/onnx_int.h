/*
 * onnx_int.h
 *	  What the files of the ONNX-ML reader share (src/core/onnx/); the
 *	  entry points are hb_read_onnx and hb_onnx_detect in model.h.
 *
 * The protobuf is decoded by protobuf-c from the project's own description
 * of the messages it needs (onnx_ml.proto, ONNX's field numbers), with an
 * allocator that charges every byte to a budget proportional to the input,
 * so that a hostile file cannot make the decoder exhaust memory.  The
 * schema has no recursive message, so the decoder's recursion is bounded
 * too.
 *
 * An ONNX graph is a program; hbird accepts the programs converters write
 * for one estimator and lowers them to the IR:
 *
 *	input -> [Identity, Cast, featurizers] -> estimator -> [ZipMap,
 *	Normalizer, Cast, Identity, ArrayFeatureExtractor] -> outputs
 *
 * Estimators: TreeEnsembleClassifier / TreeEnsembleRegressor (legacy
 * attributes), TreeEnsemble (opset 5, BRANCH_MEMBER sets included),
 * LinearClassifier / LinearRegressor, SVMClassifier (two classes) /
 * SVMRegressor with a LINEAR kernel (the support vectors are folded into
 * one weight vector), and MatMul by a constant matrix.  Any other node is
 * refused with its op type and name.
 *
 * Featurizers in front of the estimator become steps of the model's
 * pipeline (featurize.h).  String graph inputs are text inputs of the
 * pipeline: LabelEncoder and OneHotEncoder turn them into numbers; a graph
 * that outputs strings has nothing hbird can return and is refused.
 *
 * The files, in the order a model goes through them:
 *	onnx_read.c		   hb_read_onnx: decoding, the reader's state, freeing
 *	onnx_graph.c	   the graph: its inputs, node by node, featurizers alone
 *	onnx_attr.c		   attributes, tensors and the graph's named values
 *	onnx_featurize.c   Scaler, Normalizer, Imputer, Binarizer, arithmetic,
 *					   Concat, ArrayFeatureExtractor: pipeline steps
 *	onnx_encoders.c	   OneHotEncoder, LabelEncoder (numbers and strings)
 *	onnx_model.c	   what every estimator shares: the model, task, link
 *	onnx_trees.c	   tree ensembles, lowered through the model builder
 *	onnx_linear.c	   linear models, linear SVMs, MatMul
 */
#ifndef HB_ONNX_INT_H
#define HB_ONNX_INT_H

#include "model.h"
#include "onnx_ml.pb-c.h"

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

typedef Hbonnx__NodeProto OnnxNode;
typedef Hbonnx__AttributeProto OnnxAttr;
typedef Hbonnx__TensorProto OnnxTensor;

/* What a named value of the graph holds. */
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

typedef struct OnnxReader
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

	/* IR nodes of the trees lowered so far */
	int64_t		total_nodes;
} OnnxReader;

/* post_transform, as a string (legacy ops) or an int (opset 5) */
typedef enum PostTransform
{
	PT_NONE, PT_LOGISTIC, PT_SOFTMAX, PT_SOFTMAX_ZERO, PT_PROBIT
} PostTransform;

/* A protobuf string equal to s (inline: trees compare one per node). */
static inline bool
onnx_bin_eq(ProtobufCBinaryData d, const char *s)
{
	size_t		l = strlen(s);

	return d.len == l && memcmp(d.data, s, l) == 0;
}

/* onnx_attr.c: attributes, tensors, named values */
extern const char *onnx_node_label(const OnnxNode *n);
extern const char *onnx_op(const OnnxNode *n);
extern const OnnxAttr *onnx_attr(const OnnxNode *n, const char *name);
extern int64_t onnx_attr_int(const OnnxNode *n, const char *name, int64_t dflt);
extern const char *onnx_attr_str(const OnnxNode *n, const char *name,
								 char *buf, size_t size);
extern const int64_t *onnx_attr_ints(const OnnxNode *n, const char *name,
									 size_t *len);
extern bool onnx_attr_doubles(const OnnxNode *n, const char *name,
							  double **out, size_t *len, HbError *err);
extern int64_t onnx_tensor_count(const OnnxTensor *t);
extern bool onnx_tensor_doubles(const OnnxTensor *t, const char *what,
								double **out, size_t *len, HbError *err);
extern OnnxVal *onnx_val_find(OnnxReader *r, const char *name);
extern bool onnx_val_add(OnnxReader *r, const char *name, ValKind kind,
						 const OnnxTensor *t, int elem);
extern bool onnx_val_add_slots(OnnxReader *r, const char *name, int elem,
							   const int32_t *slots, int32_t width);
extern bool onnx_refuse(OnnxReader *r, const OnnxNode *n, const char *why);

/* onnx_model.c: what every estimator shares */
extern bool onnx_new_model(OnnxReader *r, const OnnxNode *n,
						   int64_t n_features, int n_outputs);
extern bool onnx_post_transform(OnnxReader *r, const OnnxNode *n,
								PostTransform *pt);
extern bool onnx_regression_link(OnnxReader *r, const OnnxNode *n,
								 PostTransform pt, const char *why);
extern bool onnx_classifier_task(OnnxReader *r, const OnnxNode *n,
								 int n_labels, int n_cols, PostTransform pt,
								 bool binary);
extern int	onnx_class_label_count(const OnnxNode *n);

/* onnx_trees.c, onnx_linear.c: the estimators */
extern bool onnx_read_tree_ensemble(OnnxReader *r, const OnnxNode *n,
									bool classifier);
extern bool onnx_read_tree_ensemble5(OnnxReader *r, const OnnxNode *n);
extern bool onnx_set_linear(OnnxReader *r, const double *coef,
							const double *icpt, int k, int64_t nf);
extern bool onnx_read_linear(OnnxReader *r, const OnnxNode *n, bool classifier);
extern bool onnx_read_svm(OnnxReader *r, const OnnxNode *n, bool classifier);
extern bool onnx_read_matmul(OnnxReader *r, const OnnxNode *n,
							 const OnnxTensor *t);

/* onnx_featurize.c, onnx_encoders.c: featurizers before the estimator */
extern HbStep *onnx_add_step(OnnxReader *r, const OnnxNode *n,
							 HbStepKind kind, const int32_t *in,
							 int32_t n_in, int32_t n_out);
extern bool onnx_add_step_value(OnnxReader *r, const OnnxNode *n,
								const HbStep *s, int elem);
extern bool onnx_slots_known(OnnxReader *r, const OnnxNode *n,
							 const OnnxVal *v);
extern bool onnx_featurize_elementwise(OnnxReader *r, const OnnxNode *n,
									   const OnnxVal *in);
extern bool onnx_featurize_arith(OnnxReader *r, const OnnxNode *n,
								 const OnnxVal *a, const OnnxVal *b);
extern bool onnx_featurize_concat(OnnxReader *r, const OnnxNode *n);
extern bool onnx_featurize_select(OnnxReader *r, const OnnxNode *n,
								  const OnnxVal *in, const OnnxVal *idx);
extern bool onnx_featurize_onehot(OnnxReader *r, const OnnxNode *n,
								  const OnnxVal *in);
extern bool onnx_featurize_label(OnnxReader *r, const OnnxNode *n,
								 const OnnxVal *in);
extern bool onnx_attach_pipeline(OnnxReader *r, const OnnxVal *v);

/* onnx_graph.c */
extern bool onnx_read_graph(OnnxReader *r, const Hbonnx__ModelProto *mp);

#endif							/* HB_ONNX_INT_H */
