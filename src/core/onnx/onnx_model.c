/*
 * onnx_model.c
 *	  What every estimator of the ONNX reader shares (onnx_int.h): the
 *	  model with its features and outputs, the post_transform, and a
 *	  classifier's or a regressor's task and link.
 *
 * Classifiers: two class labels with a single score column are binary
 * (the column is the positive class's score); two columns are binary too
 * when they are exact opposites (scikit-learn's linear models), else the
 * model is multiclass with one margin per class.  A SOFTMAX over two
 * opposite columns (scikit-learn's multinomial logistic regression on two
 * classes) is onnxruntime's float32 softmax over [-s, s]
 * (HB_LINK_SOFTMAX_PAIR); over a single column it is refused, as
 * onnxruntime's LinearClassifier then ignores the post-transform and
 * returns [1 - s, s].  Class labels (strings or integers) are not kept:
 * predictions are class indexes, in label order.
 */
#include "onnx_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------
 * A new model with n_features features and n_outputs outputs
 * ---------------------------------------------------------------------
 */
bool
onnx_new_model(OnnxReader *r, const OnnxNode *n, int64_t n_features, int n_outputs)
{
	HbModel    *m;

	if (r->m != NULL)
		return onnx_refuse(r, n, "the graph has a second estimator; hbird scores one per model");
	if (r->input_width > 0 && n_features != r->input_width)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "ONNX node \"%s\" (op %s) reads %lld features, but the graph input \"%s\" has %lld",
					   onnx_node_label(n), onnx_op(n), (long long) n_features,
					   r->input_name, (long long) r->input_width);
	if (n_features <= 0 || n_features > HB_MAX_FEATURES)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "ONNX node \"%s\" (op %s) reads %lld features (1 to %d allowed)",
					   onnx_node_label(n), onnx_op(n), (long long) n_features,
					   HB_MAX_FEATURES);
	if (n_outputs <= 0 || n_outputs > 100000)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "ONNX node \"%s\" (op %s) has %d outputs",
					   onnx_node_label(n), onnx_op(n), n_outputs);
	m = hb_alloc0(sizeof(HbModel));
	if (m == NULL)
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	r->m = m;
	m->n_features = (int32_t) n_features;
	m->n_outputs = n_outputs;
	m->features = hb_alloc0(sizeof(HbFeature) * n_features);
	m->base_margin = hb_alloc0(sizeof(double) * n_outputs);
	m->objective = hb_strdup(onnx_op(n));
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

bool
onnx_post_transform(OnnxReader *r, const OnnxNode *n, PostTransform *pt)
{
	const OnnxAttr *a = onnx_attr(n, "post_transform");
	static const char *const names[] = {"NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"};

	*pt = PT_NONE;
	if (a == NULL)
		return true;
	if (a->has_s)
	{
		for (int i = 0; i < 5; i++)
			if (onnx_bin_eq(a->s, names[i]))
			{
				*pt = (PostTransform) i;
				return true;
			}
	}
	else if (a->has_i && (a->i == 0 || a->i == 3 || a->i == 4))
	{
		/* NONE, SOFTMAX_ZERO, PROBIT: the same to the specification and onnxruntime */
		*pt = (PostTransform) a->i;
		return true;
	}
	else if (a->has_i && (a->i == 1 || a->i == 2))
	{
		/*
		 * TreeEnsemble (ai.onnx.ml 5) numbers its post_transform 0 NONE,
		 * 1 SOFTMAX, 2 LOGISTIC, 3 SOFTMAX_ZERO, 4 PROBIT; onnxruntime reads
		 * 1 as LOGISTIC and 2 as SOFTMAX: either reading would disagree with
		 * one of them
		 */
		return onnx_refuse(r, n, a->i == 1 ?
						   "post_transform 1 is SOFTMAX to the ONNX specification and LOGISTIC to onnxruntime" :
						   "post_transform 2 is LOGISTIC to the ONNX specification and SOFTMAX to onnxruntime");
	}
	return onnx_refuse(r, n, "unknown post_transform");
}

/*
 * Task and link of a classifier with n_labels labels and n_cols score
 * columns.  Binary models keep one margin, the positive class's.
 */
bool
onnx_classifier_task(OnnxReader *r, const OnnxNode *n, int n_labels, int n_cols,
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
				return onnx_refuse(r, n, m->estimator == HB_EST_LINEAR ?
								   "a softmax over a single score column is not supported (over two opposite score rows it is)" :
								   "a softmax over a single score column is not supported");
			default:
				return onnx_refuse(r, n, "a SOFTMAX_ZERO post_transform on a binary model is not supported");
		}
		return true;
	}
	if (n_cols != n_labels)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "ONNX node \"%s\" (op %s) has %d class labels but %d score columns",
					   onnx_node_label(n), onnx_op(n), n_labels, n_cols);
	m->task = HB_TASK_MULTICLASS;
	m->n_classes = n_labels;
	m->predict_class = true;
	m->link = pt == PT_NONE ? HB_LINK_IDENTITY :
		pt == PT_LOGISTIC ? HB_LINK_LOGISTIC :
		pt == PT_SOFTMAX ? HB_LINK_SOFTMAX :
		pt == PT_SOFTMAX_ZERO ? HB_LINK_SOFTMAX_ZERO : HB_LINK_PROBIT;
	return true;
}

int
onnx_class_label_count(const OnnxNode *n)
{
	const OnnxAttr *s = onnx_attr(n, "classlabels_strings");
	const OnnxAttr *i = onnx_attr(n, "classlabels_int64s");

	if (i == NULL)
		i = onnx_attr(n, "classlabels_ints");
	if (s && s->n_strings > 0)
		return (int) s->n_strings;
	if (i && i->n_ints > 0)
		return (int) i->n_ints;
	return 0;
}

/*
 * A regressor's link: LOGISTIC and PROBIT as onnxruntime computes them;
 * the softmaxes are refused (why says it in the operator's terms).
 */
bool
onnx_regression_link(OnnxReader *r, const OnnxNode *n, PostTransform pt,
					 const char *why)
{
	if (pt == PT_LOGISTIC)
		r->m->link = HB_LINK_LOGISTIC;
	else if (pt == PT_PROBIT)
		r->m->link = HB_LINK_PROBIT;
	else if (pt != PT_NONE)
		return onnx_refuse(r, n, why);
	return true;
}
