/*
 * onnx_linear.c
 *	  Linear estimators of the ONNX reader (onnx_int.h): LinearClassifier,
 *	  LinearRegressor, SVMClassifier / SVMRegressor with a linear kernel,
 *	  and MatMul by a constant matrix, all HB_EST_LINEAR models summed in
 *	  float32 as onnxruntime sums them.
 */
#include "onnx_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* weights[f * k + g] = coef[g * nf + f]; bias[g] = intercepts[g] */
bool
onnx_set_linear(OnnxReader *r, const double *coef, const double *icpt, int k, int64_t nf)
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

/* LinearRegressor: one coefficient row per target. */
static bool
linear_regressor(OnnxReader *r, const OnnxNode *n, PostTransform pt,
				 const double *coef, const double *icpt, int64_t rows, int64_t nf)
{
	if (!onnx_new_model(r, n, nf, (int) rows))
		return false;
	r->m->task = HB_TASK_REGRESSION;
	if (!onnx_regression_link(r, n, pt,
							  "a softmax post_transform on a regressor is not supported"))
		return false;
	r->m->sum_f32 = true;
	return onnx_set_linear(r, coef, icpt, (int) rows, nf);
}

/*
 * LinearClassifier: one row per class, or for two classes one row (the
 * positive class's score) or two opposite rows, which is what
 * scikit-learn's converter writes for binary models.
 */
static bool
linear_classifier(OnnxReader *r, const OnnxNode *n, PostTransform pt,
				  const double *coef, const double *icpt, size_t n_icpt,
				  int64_t rows, int64_t nf)
{
	int			labels = onnx_class_label_count(n);
	bool		opposite = rows == 2 && labels == 2;

	for (int64_t f = 0; f < nf && opposite; f++)
		if (coef[f] != -coef[nf + f])
			opposite = false;
	if (opposite && n_icpt == 2 && icpt[0] != -icpt[1])
		opposite = false;

	if (labels <= 0)
		return onnx_refuse(r, n, "the classifier has no class labels");
	if (labels == 2 && (rows == 1 || opposite))
	{
		/* the positive class's score */
		if (!onnx_new_model(r, n, nf, 1))
			return false;
		r->m->estimator = HB_EST_LINEAR;
		r->two_col_binary = rows == 2;
		if (!onnx_classifier_task(r, n, 2, 1, pt, true))
			return false;
		r->m->sum_f32 = true;
		return onnx_set_linear(r, rows == 2 ? coef + nf : coef,
							   icpt ? (rows == 2 ? icpt + 1 : icpt) : NULL, 1, nf);
	}
	if (!onnx_new_model(r, n, nf, (int) rows))
		return false;
	r->m->estimator = HB_EST_LINEAR;
	if (!onnx_classifier_task(r, n, labels, (int) rows, pt, false))
		return false;
	r->m->sum_f32 = true;
	return onnx_set_linear(r, coef, icpt, (int) rows, nf);
}

/* LinearClassifier / LinearRegressor */
bool
onnx_read_linear(OnnxReader *r, const OnnxNode *n, bool classifier)
{
	double	   *coef = NULL,
			   *icpt = NULL;
	size_t		n_coef,
				n_icpt;
	int64_t		rows,
				nf;
	PostTransform pt;
	bool		ok = false;

	if (!onnx_post_transform(r, n, &pt))
		return false;
	if (!onnx_attr_doubles(n, "coefficients", &coef, &n_coef, r->err) ||
		!onnx_attr_doubles(n, "intercepts", &icpt, &n_icpt, r->err))
		goto done;
	if (n_coef == 0)
	{
		onnx_refuse(r, n, "the model has no coefficients");
		goto done;
	}
	if (classifier)
		rows = n_icpt > 0 ? (int64_t) n_icpt :
			r->input_width > 0 ? (int64_t) n_coef / r->input_width : 1;
	else
		rows = onnx_attr_int(n, "targets", 1);
	if (rows <= 0 || rows > 100000 || n_coef % rows != 0 ||
		(n_icpt != 0 && n_icpt != (size_t) rows))
	{
		onnx_refuse(r, n, "coefficients, intercepts and the number of outputs do not agree");
		goto done;
	}
	for (size_t i = 0; i < n_coef; i++)
		if (!isfinite(coef[i]))
		{
			hb_fail(r->err, HB_ERR_INVALID,
					"ONNX node \"%s\" (op %s) has a non-finite coefficient",
					onnx_node_label(n), onnx_op(n));
			goto done;
		}
	nf = (int64_t) n_coef / rows;
	ok = classifier ?
		linear_classifier(r, n, pt, coef, icpt, n_icpt, rows, nf) :
		linear_regressor(r, n, pt, coef, icpt, rows, nf);

done:
	hb_free(coef);
	hb_free(icpt);
	return ok;
}

/*
 * How many support vectors: a classifier's vectors_per_class (two classes:
 * more vote one-vs-one), a regressor's n_supports.
 */
static bool
svm_vectors(OnnxReader *r, const OnnxNode *n, bool classifier, size_t n_pa,
			int64_t *n_vec)
{
	size_t		n_vpc;
	const int64_t *vpc;

	if (!classifier)
	{
		*n_vec = onnx_attr_int(n, "n_supports", 0);
		return true;
	}
	vpc = onnx_attr_ints(n, "vectors_per_class", &n_vpc);
	if (onnx_class_label_count(n) != 2 || n_vpc != 2)
		return onnx_refuse(r, n, "only two-class SVMs are supported (more classes vote one-vs-one)");
	if (n_pa > 0)
		return onnx_refuse(r, n, "probability estimates (prob_a, prob_b: libsvm's pairwise coupling) are not supported");
	if (vpc[0] < 0 || vpc[1] < 0 || vpc[0] > INT32_MAX - vpc[1])
		return onnx_refuse(r, n, "vectors_per_class is out of range");
	*n_vec = vpc[0] + vpc[1];
	return true;
}

/*
 * SVMs with a linear kernel: the decision function sum_j c_j <sv_j, x> + rho
 * is the linear model w = sum_j c_j sv_j, bias rho.  libsvm's binary
 * decision is positive for the first class; scikit-learn's (and the
 * margin here) for the second, hence the sign.
 */
bool
onnx_read_svm(OnnxReader *r, const OnnxNode *n, bool classifier)
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
	int64_t		n_vec = 0,
				nf;
	PostTransform pt;
	bool		ok = false;

	onnx_attr_str(n, "kernel_type", kernel, sizeof(kernel));
	if (kernel[0] != '\0' && strcmp(kernel, "LINEAR") != 0)
	{
		char		why[96];

		snprintf(why, sizeof(why), "kernel %s is not supported (only LINEAR)", kernel);
		return onnx_refuse(r, n, why);
	}
	if (!onnx_post_transform(r, n, &pt))
		return false;
	if (pt != PT_NONE)
		return onnx_refuse(r, n, "a post_transform on an SVM is not supported");
	if (!onnx_attr_doubles(n, "coefficients", &coef, &n_coef, r->err) ||
		!onnx_attr_doubles(n, "support_vectors", &sv, &n_sv, r->err) ||
		!onnx_attr_doubles(n, "rho", &rho, &n_rho, r->err) ||
		!onnx_attr_doubles(n, "prob_a", &prob_a, &n_pa, r->err))
		goto done;
	if (!svm_vectors(r, n, classifier, n_pa, &n_vec))
		goto done;
	if (n_vec <= 0 || n_coef != (size_t) n_vec || n_rho != 1 ||
		n_sv % (size_t) n_vec != 0 || n_sv == 0)
	{
		onnx_refuse(r, n, "coefficients, support vectors and rho do not agree");
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
	if (!onnx_new_model(r, n, nf, 1))
		goto done;
	if (classifier)
	{
		double		b = -rho[0];

		for (int64_t f = 0; f < nf; f++)
			w[f] = -w[f];
		r->m->estimator = HB_EST_LINEAR;
		if (!onnx_classifier_task(r, n, 2, 1, PT_NONE, true))
			goto done;
		ok = onnx_set_linear(r, w, &b, 1, nf);
	}
	else
	{
		r->m->task = HB_TASK_REGRESSION;
		ok = onnx_set_linear(r, w, rho, 1, nf);
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
bool
onnx_read_matmul(OnnxReader *r, const OnnxNode *n, const OnnxTensor *t)
{
	double	   *v = NULL;
	size_t		len;
	double	   *coef;
	int64_t		nf,
				k;
	bool		ok;

	if (t->n_dims != 2 || t->dims[0] <= 0 || t->dims[1] <= 0 ||
		t->dims[1] > 100000 || onnx_tensor_count(t) < 0)
		return onnx_refuse(r, n, "only a product with a constant matrix is supported");
	nf = t->dims[0];
	k = t->dims[1];
	if (!onnx_tensor_doubles(t, "B", &v, &len, r->err))
		return false;
	if (len != (size_t) (nf * k))
	{
		hb_free(v);
		return onnx_refuse(r, n, "the constant matrix does not have as many values as its dims say");
	}
	for (size_t i = 0; i < len; i++)
		if (!isfinite(v[i]))
		{
			hb_free(v);
			return hb_fail(r->err, HB_ERR_INVALID,
						   "ONNX node \"%s\" (op %s) has a non-finite coefficient",
						   onnx_node_label(n), onnx_op(n));
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
	ok = onnx_new_model(r, n, nf, (int) k);
	if (ok)
	{
		r->m->task = HB_TASK_REGRESSION;
		r->m->sum_f32 = true;
		ok = onnx_set_linear(r, coef, NULL, (int) k, nf);
	}
	hb_free(coef);
	return ok;
}
