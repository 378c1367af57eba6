/*
 * model.h
 *	  The model IR: what every format reader produces and every compiler
 *	  consumes.
 *
 * The IR keeps the source library's semantics explicit (comparison operator
 * and precision, missing-value handling per node, category direction) so that
 * compiled plans can reproduce the original predictions bit for bit.
 */
#ifndef HB_MODEL_H
#define HB_MODEL_H

#include "hb_core.h"
#include "featurize.h"

typedef enum HbFormat
{
	HB_FORMAT_AUTO = 0,
	HB_FORMAT_XGBOOST_JSON,
	HB_FORMAT_LIGHTGBM_TEXT,
	HB_FORMAT_XGBOOST_UBJSON,	/* XGBoost's .ubj: the JSON model in UBJSON */
	HB_FORMAT_HBIRD_PIPELINE,	/* hbird pipeline JSON (read_pipeline.c) */
	HB_FORMAT_ONNX				/* ONNX-ML protobuf (skl2onnx, onnxmltools) */
} HbFormat;

typedef enum HbTask
{
	HB_TASK_REGRESSION,
	HB_TASK_BINARY,
	HB_TASK_MULTICLASS,
	HB_TASK_RANKING
} HbTask;

/*
 * Link from the summed margin to the prediction.  Binary models have one
 * margin, the positive class's; multiclass models apply the link to their
 * margins as a whole (softmax) or one by one (the others).
 */
typedef enum HbLink
{
	HB_LINK_IDENTITY,			/* binary: the margin is a logit (proba is
								 * its sigmoid); multiclass: the margins are
								 * the probabilities */
	HB_LINK_SIGMOID,
	HB_LINK_SOFTMAX,
	HB_LINK_EXP,
	/* ONNX-ML post_transform values */
	HB_LINK_PROBABILITY,		/* binary: the margin is the probability */
	HB_LINK_SOFTMAX_ZERO,		/* softmax over the non-zero margins; zeros
								 * stay 0 */
	HB_LINK_PROBIT,				/* onnxruntime's PROBIT: sqrt(2) *
								 * erfinv(2x - 1), in float32 */
	HB_LINK_SIGMOID_L1,			/* LOGISTIC per class, then divided by their
								 * sum (one-vs-rest logistic regression) */
	HB_LINK_LOGISTIC,			/* onnxruntime's LOGISTIC: the float32
								 * sigmoid of |x|, mirrored for x < 0 */
	HB_LINK_SIGMOID_SUM,		/* sigmoid per class in double, then divided
								 * by their sum (scikit-learn's one-vs-rest) */
	HB_LINK_SOFTPLUS,			/* log(1 + exp(x)): LightGBM's
								 * cross_entropy_lambda */
	HB_LINK_SOFTMAX_PAIR,		/* binary: onnxruntime's float32 SOFTMAX
								 * over the two opposite scores -x and x */
	HB_LINK_MEAN,				/* regression and multiclass: the margin
								 * divided by the trees of its output once
								 * they are summed, as scikit-learn's
								 * forests average */
	HB_LINK_L1					/* multiclass: each margin divided by the
								 * row's sum of them (1 where that is 0), the
								 * class the largest margin's: a decision
								 * tree's weighted counts, as scikit-learn's
								 * predict_proba and predict */
} HbLink;
#define HB_LINK_LAST HB_LINK_L1

/* How a numeric split compares the input with the threshold. */
typedef enum HbCmp
{
	HB_CMP_LT_F32,				/* XGBoost: (float) x < (float) t goes left */
	HB_CMP_LE_F64				/* LightGBM, scikit-learn: x <= t in double */
} HbCmp;

/* What a node does with a missing input (NaN). */
typedef enum HbMissing
{
	HB_MISSING_NAN,				/* NaN takes the default direction */
	HB_MISSING_ZERO,			/* NaN is 0, and 0 takes the default direction */
	HB_MISSING_NONE				/* NaN is 0, compared like any value */
} HbMissing;

typedef enum HbFeatureType
{
	HB_FEATURE_NUMERIC,
	HB_FEATURE_INTEGER,
	HB_FEATURE_CATEGORICAL
} HbFeatureType;

typedef enum HbEstimator
{
	HB_EST_TREES,
	HB_EST_LINEAR
} HbEstimator;

#define HB_LEAF (-1)

typedef struct HbNode
{
	int32_t		left;			/* child index in the tree, HB_LEAF for a leaf */
	int32_t		right;
	int32_t		feature;		/* split feature index */
	uint8_t		default_left;	/* missing goes left */
	uint8_t		missing;		/* HbMissing */
	uint8_t		is_cat;			/* categorical split */
	uint8_t		cat_in_left;	/* categories in the set go left (else right) */
	int32_t		cat_off;		/* first word of the set in HbModel.cat_words */
	int32_t		cat_nwords;		/* words in the set */

	/*
	 * A set is a bitset whose first word is word cat_base of the categories
	 * (it holds categories 32 * cat_base to 32 * (cat_base + cat_nwords) - 1),
	 * or, with cat_list, its categories ascending, one per word.  A set
	 * costs the span of its own categories or their count, never the size
	 * of the largest category id (model_builder.c, hb_mb_categorical).
	 */
	int32_t		cat_base;
	uint8_t		cat_list;
	uint8_t		cat_pad[3];		/* zero: images are the bytes of nodes */
	double		threshold;		/* numeric split threshold */
	double		value;			/* leaf value, tree weight already applied */
} HbNode;

typedef struct HbTree
{
	int32_t		n_nodes;
	int32_t		group;			/* output (class) this tree adds to */
	int32_t		depth;			/* edges on the longest root-to-leaf path */
	int32_t		n_leaves;
	HbNode	   *nodes;			/* nodes[0] is the root */
} HbTree;

typedef struct HbFeature
{
	char	   *name;
	HbFeatureType type;
} HbFeature;

typedef struct HbModel
{
	HbFormat	format;
	HbTask		task;
	HbEstimator estimator;
	char	   *objective;		/* the source library's name for it */

	int32_t		n_features;
	HbFeature  *features;
	bool		has_feature_names;	/* names came from the model file */

	int32_t		n_outputs;		/* margins per row: classes, or 1 */
	int32_t		n_classes;		/* 2 for binary, K for multiclass, else 0 */
	double	   *base_margin;	/* n_outputs: added to every row's margin */
	HbLink		link;
	bool		predict_class;	/* hb_predict gives the argmax class */
	bool		sum_f32;		/* margins accumulate in float32 */
	bool		zero_snap;		/* inputs with |x| <= HB_ZERO_THRESHOLD become
								 * 0 first (LightGBM) */

	/* HB_EST_TREES */
	HbCmp		cmp;
	int32_t		n_trees;
	HbTree	   *trees;
	int32_t		n_cat_words;
	uint32_t   *cat_words;
	int32_t		max_depth;

	/* HB_EST_LINEAR: margin[g] = bias[g] + sum_f weight[f * n_outputs + g] * x[f] */
	double	   *weights;
	double	   *bias;

	/*
	 * Featurizers in front of the model (featurize.h), or NULL: then the
	 * inputs are the features themselves.
	 */
	HbPipeline *pipeline;
} HbModel;

/* Format names as users write them ("xgboost-json"); NULL if unknown. */
extern const char *hb_format_name(HbFormat f);
extern bool hb_format_parse(const char *name, HbFormat *out);
extern const char *hb_task_name(HbTask t);

/*
 * Read a model.  format may be HB_FORMAT_AUTO (detected from the bytes).
 * On success *out is a freshly allocated model the caller frees with
 * hb_model_free.
 */
extern bool hb_model_read(const char *bytes, size_t len, HbFormat format,
						  HbModel **out, HbError *err);
extern void hb_model_free(HbModel *m);

/* The name of feature i when the model file names none: "f0", "f1", ...
 * (XGBoost's convention), freshly allocated; NULL when out of memory. */
extern char *hb_feature_default_name(int64_t i);

/* Replace the feature names (from the upload's features argument). */
extern bool hb_model_set_feature_names(HbModel *m, char **names, int n,
									   HbError *err);

/*
 * Several regression outputs (targets) and no classes: n_outputs > 1 and
 * not a classifier.  hb_plan_targets scores every target; one-value entry
 * points (hb_predict) refuse these models.
 */
extern bool hb_model_is_multi_target(const HbModel *m);

/*
 * Structural checks every model must pass before an executor sees it
 * (depth, indices, cycles, finite numbers): hb_model_read makes them on
 * what it reads (trees as the readers build them, model_builder.h), and
 * models from elsewhere (stored images) go through this.
 */
extern bool hb_model_validate(HbModel *m, HbError *err);

/*
 * Compact binary image of a model (model_image.c): written at upload, read
 * by backends instead of the original bytes.  hb_model_image_read returns
 * false with err->code == HB_OK when the image is of another version or
 * build; the caller then reads the original bytes.
 */
extern bool hb_model_image_write(const HbModel *m, char **out, size_t *len,
								 HbError *err);
extern bool hb_model_image_read(const char *bytes, size_t len, HbModel **out,
								HbError *err);
extern bool hb_model_image_read_split(const char *bytes, size_t len,
									  HbModel **out, size_t *pipeline_at,
									  HbError *err);
extern bool hb_model_image_read_pipeline(const char *bytes, size_t len,
										 size_t pipeline_at, int32_t n_features,
										 HbPipeline **out, HbError *err);
extern bool hb_pipeline_copy(const HbPipeline *p, HbPipeline **out,
							 HbError *err);

/* Readers. */
extern bool hb_read_xgboost_json(const char *bytes, size_t len,
								 HbModel **out, HbError *err);
extern bool hb_read_xgboost_ubjson(const char *bytes, size_t len,
								   HbModel **out, HbError *err);
extern bool hb_read_lightgbm_text(const char *bytes, size_t len,
								  HbModel **out, HbError *err);
extern bool hb_read_hbird_pipeline(const char *bytes, size_t len,
								   HbModel **out, HbError *err);
extern bool hb_is_hbird_pipeline(const char *bytes, size_t len);
extern bool hb_read_onnx(const char *bytes, size_t len,
						 HbModel **out, HbError *err);
/* ONNX's protobuf framing at the start of bytes (a ModelProto) */
extern bool hb_onnx_detect(const char *bytes, size_t len);

/* LightGBM's kZeroThreshold: the float 1e-35f, not the double 1e-35 */
#define HB_ZERO_THRESHOLD ((double) 1e-35f)

#define HB_MAX_DEPTH 64			/* deeper trees are refused */
#define HB_MAX_FEATURES 1000000

#endif							/* HB_MODEL_H */
