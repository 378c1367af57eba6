/*
 * featurize.h
 *	  The featurizer IR: the steps from raw input columns to a model's
 *	  feature vector, compiled into the same plan as the model.
 *
 * Every format that can carry featurizers (hbird pipeline JSON, ONNX-ML
 * graphs) lowers them to this one representation, so the executor, the
 * compiled image, the binding of SQL columns and the cost model for the
 * statistical shortcuts exist once.
 *
 * Model of execution: a row is a vector of numeric "slots" (double; NaN is
 * missing) plus the row's text inputs.  Slots 0 .. n_num_inputs-1 hold the
 * numeric inputs as bound; each step reads slots (or a text input) and
 * writes fresh slots after the existing ones (single assignment: a step
 * never overwrites a slot, so steps can be checked and reordered safely).
 * The model's feature j is slot feature_slot[j].  Concatenation, column
 * selection (ONNX ArrayFeatureExtractor, FeatureVectorizer, Concat) and
 * identity casts cost nothing: they only renumber slots.
 *
 * Text steps (hashing, tf-idf) produce sparse vectors that can be very wide
 * (2^20 columns); only the columns the model actually reads get a slot
 * (used_cols), while normalisation still sees every column.
 */
#ifndef HB_FEATURIZE_H
#define HB_FEATURIZE_H

#include "hb_core.h"

typedef enum HbInputType
{
	HB_INPUT_NUMERIC,			/* SQL numeric types, boolean; NULL is NaN */
	HB_INPUT_TEXT				/* SQL text / varchar; NULL is missing */
} HbInputType;

/* How expensive an input's featurization is, for the cheap-feature model. */
typedef enum HbCostClass
{
	HB_COST_UNKNOWN = 0,		/* measured when needed */
	HB_COST_CHEAP,
	HB_COST_MEDIUM,
	HB_COST_EXPENSIVE
} HbCostClass;

typedef struct HbInput
{
	char	   *name;			/* SQL column it binds to, by name */
	HbInputType type;
	HbCostClass cost;
	int32_t		index;			/* numeric: its slot; text: its text index */
} HbInput;

typedef enum HbStepKind
{
	/* element-wise over n_in slots, one output per input */
	HB_STEP_AFFINE,				/* out = (x - sub) * mul + add, see HbAffineOrder */
	HB_STEP_IMPUTE,				/* out = missing(x) ? value : x */
	HB_STEP_MISSING_IND,		/* out = missing(x) ? 1 : 0 */
	HB_STEP_BINARIZE,			/* out = x > threshold ? 1 : 0 (NaN stays NaN) */
	HB_STEP_CAST_F32,			/* out = (double) (float) x */
	HB_STEP_ARITH,				/* out = x op c (ONNX Add/Sub/Mul/Div/Pow...) */
	HB_STEP_CLIP,				/* out = min(max(x, lo), hi) */

	/* over a group of slots */
	HB_STEP_NORMALIZE,			/* l1 / l2 / max over the n_in slots */
	HB_STEP_POLY,				/* monomials of the n_in slots */

	/* one input to several outputs */
	HB_STEP_KBINS,				/* bin index (ordinal) or one-hot over edges */
	HB_STEP_ONEHOT_NUM,			/* numeric category -> one-hot / ordinal */
	HB_STEP_ONEHOT_TEXT,		/* text category -> one-hot / ordinal */
	HB_STEP_LABEL_TEXT,			/* text -> number by a table (LabelEncoder) */

	/* text to sparse, kept columns only */
	HB_STEP_HASHING,			/* HashingVectorizer */
	HB_STEP_TFIDF,				/* CountVectorizer / TfidfVectorizer */

	HB_STEP_LABEL_NUM,			/* number -> number by a table (LabelEncoder) */

	/* element-wise again (added later: stored images keep the numbers) */
	HB_STEP_MISSING_BELOW		/* out = x < threshold ? NaN : x */
} HbStepKind;

#define HB_STEP_KIND_MAX HB_STEP_MISSING_BELOW

typedef enum HbAffineOrder
{
	HB_AFFINE_SUB_MUL_ADD,		/* ((x - sub) * mul) + add */
	HB_AFFINE_SUB_DIV,			/* (x - sub) / mul  (sklearn StandardScaler) */
	HB_AFFINE_MUL_ADD			/* x * mul + add    (sklearn MinMaxScaler) */
} HbAffineOrder;

typedef enum HbArithOp
{
	HB_ARITH_ADD, HB_ARITH_SUB, HB_ARITH_MUL, HB_ARITH_DIV,
	HB_ARITH_RSUB,				/* c - x */
	HB_ARITH_RDIV,				/* c / x */
	HB_ARITH_POW, HB_ARITH_ABS, HB_ARITH_NEG, HB_ARITH_SQRT,
	HB_ARITH_EXP, HB_ARITH_LOG,
	HB_ARITH_TRUNC				/* toward zero (onnxruntime's cast to int64) */
} HbArithOp;

typedef enum HbNorm
{
	HB_NORM_NONE = 0, HB_NORM_L1, HB_NORM_L2, HB_NORM_MAX
} HbNorm;

typedef enum HbUnknown
{
	HB_UNKNOWN_ERROR,			/* an unseen category is an error */
	HB_UNKNOWN_IGNORE,			/* all-zero one-hot / ordinal NaN */
	HB_UNKNOWN_VALUE			/* ordinal: unknown_value */
} HbUnknown;

/* scikit-learn's strip_accents */
typedef enum HbStripAccents
{
	HB_STRIP_NONE = 0,
	HB_STRIP_UNICODE,			/* NFKD, then combining characters dropped */
	HB_STRIP_ASCII				/* NFKD, then non-ASCII characters dropped */
} HbStripAccents;

/* Tokenisation as scikit-learn's vectorizers do it. */
typedef struct HbTokenizer
{
	bool		lowercase;
	bool		char_ngrams;	/* analyzer 'char' or 'char_wb' (else 'word') */
	int32_t		ngram_min;
	int32_t		ngram_max;
	/* word analyzer: tokens are runs of >= min_token_len word characters
	 * (sklearn's default token_pattern \b\w\w+\b is min_token_len 2) */
	int32_t		min_token_len;
	int32_t		n_stop_words;
	char	  **stop_words;
	bool		char_wb;		/* 'char_wb': n-grams inside each white-space
								 * separated word padded with a space */
	uint8_t		strip_accents;	/* HbStripAccents, after lowercasing */
} HbTokenizer;

typedef struct HbStep
{
	HbStepKind	kind;
	char	   *name;			/* for messages (source column), or NULL */
	int32_t		n_in;
	int32_t    *in;				/* input slots (text steps: text_input) */
	int32_t		text_input;		/* text steps: index among text inputs */
	int32_t		out;			/* first output slot */
	int32_t		n_out;
	bool		f32;			/* arithmetic in float32 (ONNX) */

	/* AFFINE: per input (n_in each) */
	HbAffineOrder order;
	double	   *sub;
	double	   *mul;
	double	   *add;

	/* IMPUTE: per input; missing means NaN, or x == missing_value when
	 * has_missing_value (ONNX Imputer replaced_value_float); with nan_kept
	 * only x == missing_value (onnxruntime leaves NaN alone there) */
	double	   *value;
	bool		has_missing_value;
	bool		nan_kept;
	double		missing_value;

	/* BINARIZE threshold, CLIP lo/hi, ARITH constant (per input) */
	double		threshold;
	double		lo;
	double		hi;
	HbArithOp	arith;
	double	   *constant;

	/* NORMALIZE */
	HbNorm		norm;

	/* POLY: n_out monomials, each n_in exponents (row-major n_out x n_in) */
	int32_t    *powers;

	/*
	 * KBINS (one input): the n_edges inner edges, ascending (scikit-learn's
	 * bin_edges_[1:-1]); the bin is the number of edges <= x, so n_edges + 1
	 * bins; one-hot or ordinal.  NaN gives NaN outputs.
	 */
	int32_t		n_edges;
	double	   *edges;
	bool		onehot;			/* KBINS, ONEHOT_*: one-hot (else ordinal) */

	/*
	 * ONEHOT_NUM / ONEHOT_TEXT / LABEL_TEXT / LABEL_NUM (one input).  A NaN
	 * in categories_num or a NULL in categories_text is the missing category
	 * (NULL / NaN input); missing without it is an unknown category.
	 * category_pos: NULL means the position as given; -1 is a dropped
	 * category (all-zero one-hot).  drop_first is turned into that by
	 * hb_pipeline_validate.  Ordinal output (onehot false) is
	 * label_values[i] when given, else category_pos[i].  LABEL_*: the value
	 * is label_values[i], an unknown one unknown_value (HB_UNKNOWN_VALUE),
	 * NaN (IGNORE) or an error.
	 */
	int32_t		n_categories;
	double	   *categories_num;
	char	  **categories_text;	/* UTF-8, sorted for bsearch by the reader
									 * or by hb_pipeline_validate */
	int32_t    *category_pos;	/* output position of sorted category i */
	double	   *label_values;	/* LABEL_TEXT: value of category i */
	HbUnknown	unknown;
	double		unknown_value;
	bool		drop_first;		/* one-hot without the first category */

	/* HASHING / TFIDF (one text input) */
	HbTokenizer tok;
	int64_t		n_cols;			/* width of the full sparse vector */
	bool		alternate_sign; /* HASHING */
	bool		binary;			/* counts become 1 */
	bool		sublinear_tf;	/* TFIDF: 1 + log(tf) */
	int32_t		n_vocab;		/* TFIDF: vocabulary term -> column */
	char	  **vocab_terms;	/* sorted */
	int32_t    *vocab_cols;
	struct HbNameIndex *vocab_index;	/* hash of vocab_terms, built by
										 * hb_pipeline_validate; not stored */
	double	   *idf;			/* TFIDF: per column (n_cols), NULL = no idf */
	int32_t		n_used;			/* columns that get a slot: out + i */
	int64_t    *used_cols;		/* ascending */
} HbStep;

/* Does the step read a text input (text_input) rather than slots (in)? */
static inline bool
hb_step_reads_text(const HbStep *s)
{
	return s->kind == HB_STEP_ONEHOT_TEXT || s->kind == HB_STEP_LABEL_TEXT ||
		s->kind == HB_STEP_HASHING || s->kind == HB_STEP_TFIDF;
}

typedef struct HbPipeline
{
	int32_t		n_inputs;
	HbInput    *inputs;			/* in binding order */
	int32_t		n_num_inputs;
	int32_t		n_text_inputs;

	int32_t		n_steps;
	HbStep	   *steps;

	int32_t		n_slots;		/* numeric inputs + every step's outputs */
	int32_t		n_features;		/* = the model's n_features */
	int32_t    *feature_slot;	/* n_features */
	/*
	 * The model was fitted on a scipy sparse matrix (XGBoost): an entry the
	 * matrix leaves out, a zero, is missing there, any other value is
	 * present, however small.  A feature that comes out exactly 0 is NaN.
	 */
	bool		zero_is_missing;
} HbPipeline;

/* One text value: NULL ptr is SQL NULL.  Not NUL-terminated. */
typedef struct HbText
{
	const char *ptr;
	int32_t		len;
} HbText;

/*
 * Raw inputs of n rows, row-major: num is n x n_num_inputs (NaN = NULL),
 * text is n x n_text_inputs.
 */
typedef struct HbRawRows
{
	size_t		n;
	const double *num;
	const HbText *text;
} HbRawRows;

/*
 * Structural checks (slot numbering, sorted tables, finite parameters);
 * every reader's result passes through it.
 */
extern bool hb_pipeline_validate(HbPipeline *p, int32_t model_n_features,
								 HbError *err);

/*
 * Featurize n rows into x (n x n_features, row-major, NaN = missing), ready
 * for hb_plan_margins.  Fails only on an unknown category configured as an
 * error (HB_ERR_ARGUMENT, message naming the input and the value).
 */
extern bool hb_pipeline_run(const HbPipeline *p, const HbRawRows *rows,
							double *x, HbError *err);

/* Scratch doubles hb_pipeline_run needs per row (slots). */
extern size_t hb_pipeline_row_slots(const HbPipeline *p);

/*
 * hb_pipeline_run on the caller's scratch of hb_pipeline_row_slots(p)
 * doubles, for callers that featurize one row at a time: wide pipelines
 * (tens of thousands of slots) then allocate nothing large per row.
 */
extern bool hb_pipeline_run_with(const HbPipeline *p, const HbRawRows *rows,
								 double *x, double *slots, HbError *err);

/*
 * hb_pipeline_run_with for part of the features: only the steps with
 * step_on[k] run, and only the n_feats features listed in feats are
 * written; the others are left as they are, so a wide row costs what its
 * cheap features cost (NULL step_on: every step; NULL feats: every
 * feature).  With the steps hb_pipeline_steps_for gives for those
 * features, they get the bits a full run gives (featurize_deps.c).  An
 * element-wise step that runs reads all its inputs, some of them written by
 * steps that do not: slots must have been initialized once (zeroed, or by
 * any earlier run).
 */
extern bool hb_pipeline_run_steps(const HbPipeline *p, const HbRawRows *rows,
								  double *x, double *slots,
								  const bool *step_on, const int32_t *feats,
								  int32_t n_feats, HbError *err);

/* The features with feat_on[j], as a list for hb_pipeline_run_steps. */
extern int32_t hb_feature_list(const bool *feat_on, int32_t n_features,
							   int32_t *feats);

/*
 * featurize_deps.c: feature groups.  A group is one raw input (inputs past
 * the 63rd share the last group); a feature belongs to every group it is
 * derived from, through the steps that produce its slot.
 */
#define HB_MAX_FEATURE_GROUPS 64

typedef struct HbPipelineDeps
{
	int32_t		n_groups;
	uint64_t   *feat_groups;	/* per feature: bit g set if it derives from
								 * group g */
} HbPipelineDeps;

extern int32_t hb_pipeline_input_group(const HbPipeline *p, int32_t input);
extern bool hb_pipeline_deps(const HbPipeline *p, HbPipelineDeps *d,
							 HbError *err);
extern void hb_pipeline_deps_free(HbPipelineDeps *d);

/* The steps that features with feat_on[j] need (step_on: n_steps). */
extern void hb_pipeline_steps_for(const HbPipeline *p, const bool *feat_on,
								  bool *step_on);

/*
 * Featurization cost per row of each group (group_ns: n_groups) and of the
 * whole pipeline (*all_ns), timed on the given rows: the best of three runs
 * of the steps the group's features need.
 */
extern bool hb_pipeline_group_costs(const HbPipeline *p,
									const HbPipelineDeps *d,
									const HbRawRows *rows, double *group_ns,
									double *all_ns, HbError *err);

extern void hb_pipeline_free(HbPipeline *p);

#endif							/* HB_FEATURIZE_H */
