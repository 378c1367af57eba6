/*
 * read_lightgbm.c
 *	  Reader for LightGBM's text model format (Booster.save_model("m.txt"),
 *	  the CLI's output_model), as written by LightGBM 2.x through 4.x.
 *
 * The layout, as far as the reader cares:
 *
 *	tree
 *	version=v4
 *	num_class=1
 *	num_tree_per_iteration=1
 *	label_index=0
 *	max_feature_idx=9
 *	objective=binary sigmoid:1
 *	average_output								(random forests only)
 *	feature_names=Column_0 Column_1 ...
 *	feature_infos=[-2.5:3.1] 1:0:3 none ...		(numeric, categorical, unused)
 *	tree_sizes=358 365 ...						(bytes of each Tree= block)
 *
 *	Tree=0
 *	num_leaves=3
 *	num_cat=1
 *	split_feature=1 0
 *	threshold=0 340.50000000000006
 *	decision_type=9 2
 *	left_child=-1 -2						(negative: ~leaf index)
 *	right_child=1 -3
 *	leaf_value=0.56 0.35 0.41
 *	cat_boundaries=0 4
 *	cat_threshold=0 0 0 16
 *	is_linear=0
 *	shrinkage=1
 *	(blank line)
 *	Tree=1 ...
 *	end of trees
 *
 *	feature_importances:, parameters:, pandas_categorical: ...	(ignored)
 *
 * A file may also hold bare Tree= blocks without the header (unit-test
 * fixtures of other projects); it is read as a regression model over as many
 * features as its splits use.
 *
 * LightGBM computes in double.  A numeric split sends x <= threshold left.
 * decision_type holds bit 0 categorical, bit 1 default_left and in bits 2-3
 * the missing type: 0 None (NaN is 0, compared like any value), 1 Zero (NaN
 * is 0, and 0 takes the default child), 2 NaN (NaN takes the default child).
 * A categorical split's threshold is the index c of its category set, the
 * words cat_threshold[cat_boundaries[c] .. cat_boundaries[c + 1]); category
 * int(x) in the set goes left, and NaN, negative values and categories past
 * the set go right whatever the missing type and default_left say, so the IR
 * gets NaN-style missing with a right default for every categorical node.
 * Inputs within 1e-35 of zero are zero (HbModel.zero_snap).
 *
 * Leaf values already carry the tree's shrinkage (the shrinkage= line only
 * records it), and the initial score is folded into the first trees' leaves,
 * so the base margin is 0.  Trees are interleaved by class: tree i adds to
 * output i % num_tree_per_iteration.
 *
 * Two objectives scale the margin before their link, and the IR has no field
 * for that, so the scale becomes a tree weight applied to the leaves:
 *	- binary sigmoid:s predicts 1 / (1 + exp(-s * raw)), and multiclassova
 *	  sigmoid:s the same per class: leaves are multiplied by s (hbird's
 *	  margin is then s times LightGBM's raw score);
 *	- average_output (boosting=rf) predicts link(raw / iterations), raw being
 *	  the sum over trees: leaves are divided by the number of iterations.
 *
 * Internal node i of a tree is IR node i and leaf j is IR node
 * (num_leaves - 1) + j, so a leaf index means the same as LightGBM's
 * pred_leaf.
 */
#include "model_builder.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LGB_MAX_LEAVES		(INT32_MAX / 2)
#define LGB_MAX_CLASSES		100000
/* the executors know categories 0 to 2^24 - 1 */
#define LGB_MAX_SET_WORDS	((1 << 24) / 32)
#define LGB_TOKEN_MAX		128

#define LGB_DT_CATEGORICAL	0x01
#define LGB_DT_DEFAULT_LEFT 0x02
#define LGB_DT_MISSING_SHIFT 2

typedef struct Span
{
	const char *p;
	size_t		n;
} Span;

typedef struct Objective
{
	const char *name;			/* as LightGBM writes it */
	HbTask		task;
	HbLink		link;
	const char *refuse;			/* why hbird can't score it, or NULL */
} Objective;

static const Objective objectives[] = {
	{"regression", HB_TASK_REGRESSION, HB_LINK_IDENTITY, NULL},
	{"regression_l1", HB_TASK_REGRESSION, HB_LINK_IDENTITY, NULL},
	{"huber", HB_TASK_REGRESSION, HB_LINK_IDENTITY, NULL},
	{"fair", HB_TASK_REGRESSION, HB_LINK_IDENTITY, NULL},
	{"quantile", HB_TASK_REGRESSION, HB_LINK_IDENTITY, NULL},
	{"mape", HB_TASK_REGRESSION, HB_LINK_IDENTITY, NULL},
	{"poisson", HB_TASK_REGRESSION, HB_LINK_EXP, NULL},
	{"gamma", HB_TASK_REGRESSION, HB_LINK_EXP, NULL},
	{"tweedie", HB_TASK_REGRESSION, HB_LINK_EXP, NULL},
	{"binary", HB_TASK_BINARY, HB_LINK_SIGMOID, NULL},
	{"multiclass", HB_TASK_MULTICLASS, HB_LINK_SOFTMAX, NULL},
	/* one binary model per class: a sigmoid per class, not normalised */
	{"multiclassova", HB_TASK_MULTICLASS, HB_LINK_SIGMOID, NULL},
	/* labels are probabilities; the prediction is sigmoid(raw) */
	{"cross_entropy", HB_TASK_REGRESSION, HB_LINK_SIGMOID, NULL},
	/* predicts lambda = log(1 + exp(raw)), not a probability */
	{"cross_entropy_lambda", HB_TASK_REGRESSION, HB_LINK_SOFTPLUS, NULL},
	{"lambdarank", HB_TASK_RANKING, HB_LINK_IDENTITY, NULL},
	{"rank_xendcg", HB_TASK_RANKING, HB_LINK_IDENTITY, NULL},
	/* a model trained with a custom objective predicts its raw score */
	{"custom", HB_TASK_REGRESSION, HB_LINK_IDENTITY, NULL},
};

/* Other spellings LightGBM accepts for the objectives above. */
static const struct
{
	const char *alias;
	const char *name;
}			objective_aliases[] =
{
	{"regression_l2", "regression"},
	{"l2", "regression"},
	{"mean_squared_error", "regression"},
	{"mse", "regression"},
	{"l2_root", "regression"},
	{"root_mean_squared_error", "regression"},
	{"rmse", "regression"},
	{"l1", "regression_l1"},
	{"mean_absolute_error", "regression_l1"},
	{"mae", "regression_l1"},
	{"mean_absolute_percentage_error", "mape"},
	{"softmax", "multiclass"},
	{"multiclass_ova", "multiclassova"},
	{"ova", "multiclassova"},
	{"ovr", "multiclassova"},
	{"xentropy", "cross_entropy"},
	{"xentlambda", "cross_entropy_lambda"},
	{"xendcg", "rank_xendcg"},
	{"xe_ndcg", "rank_xendcg"},
	{"xe_ndcg_mart", "rank_xendcg"},
	{"xendcg_mart", "rank_xendcg"},
	{"none", "custom"},
	{"null", "custom"},
	{"na", "custom"},
};

/* The fields of a Tree= block that the reader looks at. */
typedef enum TreeKey
{
	K_NUM_LEAVES,
	K_NUM_CAT,
	K_SPLIT_FEATURE,
	K_SPLIT_GAIN,
	K_THRESHOLD,
	K_DECISION_TYPE,
	K_LEFT_CHILD,
	K_RIGHT_CHILD,
	K_LEAF_VALUE,
	K_LEAF_WEIGHT,
	K_LEAF_COUNT,
	K_INTERNAL_VALUE,
	K_INTERNAL_WEIGHT,
	K_INTERNAL_COUNT,
	K_CAT_BOUNDARIES,
	K_CAT_THRESHOLD,
	K_IS_LINEAR,
	K_COUNT
} TreeKey;

static const char *const tree_keys[K_COUNT] = {
	"num_leaves", "num_cat", "split_feature", "split_gain", "threshold",
	"decision_type", "left_child", "right_child", "leaf_value", "leaf_weight",
	"leaf_count", "internal_value", "internal_weight", "internal_count",
	"cat_boundaries", "cat_threshold", "is_linear"
};

typedef struct TreeText
{
	Span		v[K_COUNT];
	bool		have[K_COUNT];
	int64_t		line[K_COUNT];
	int64_t		first_line;		/* of the Tree= line */
} TreeText;

/* The header's fields. */
typedef enum HeadKey
{
	H_NUM_CLASS,
	H_NUM_TREE_PER_ITERATION,
	H_MAX_FEATURE_IDX,
	H_OBJECTIVE,
	H_FEATURE_NAMES,
	H_FEATURE_INFOS,
	H_TREE_SIZES,
	H_COUNT
} HeadKey;

static const char *const head_keys[H_COUNT] = {
	"num_class", "num_tree_per_iteration", "max_feature_idx", "objective",
	"feature_names", "feature_infos", "tree_sizes"
};

typedef struct Reader
{
	HbError    *err;
	HbModel    *m;
	const char *s;
	size_t		len;
	size_t		pos;			/* start of the next line */
	int64_t		line;			/* number of the line last read, from 1 */

	bool		header;			/* the file has the model header */
	Span		head[H_COUNT];
	bool		have_head[H_COUNT];
	int64_t		head_line[H_COUNT];
	bool		average;		/* average_output */
	const Objective *obj;
	double		sigmoid;
	int64_t		per_iter;		/* num_tree_per_iteration */
	int64_t		max_feature;	/* largest feature index a split may use */
	int64_t		used_feature;	/* largest one a split does use */

	HbModelBuilder b;			/* the trees */
} Reader;


/* ---------- small helpers ---------- */

static bool
nomem(Reader *r)
{
	return hb_fail(r->err, HB_ERR_NOMEM,
				   "out of memory while reading the lightgbm model");
}

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool
span_eq(Span s, const char *word)
{
	size_t		n = strlen(word);

	return s.n == n && memcmp(s.p, word, n) == 0;
}

static bool
span_starts(Span s, const char *word)
{
	size_t		n = strlen(word);

	return s.n >= n && memcmp(s.p, word, n) == 0;
}

static bool
span_blank(Span s)
{
	for (size_t i = 0; i < s.n; i++)
		if (!is_space(s.p[i]))
			return false;
	return true;
}

/*
 * A printable copy of the start of s for error messages: the bytes may be
 * anything, and a backend's message must be valid text.
 */
static const char *
show(Span s, char *buf, size_t cap)
{
	size_t		n = s.n < cap - 4 ? s.n : cap - 4;
	size_t		i;

	for (i = 0; i < n; i++)
	{
		unsigned char c = (unsigned char) s.p[i];

		buf[i] = (c >= 0x20 && c < 0x7f) ? (char) c : '?';
	}
	if (n < s.n)
	{
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

/* The next line, without its end of line; false at the end of the input. */
static bool
next_line(Reader *r, Span *line)
{
	const char *nl;

	if (r->pos >= r->len)
		return false;
	line->p = r->s + r->pos;
	nl = memchr(line->p, '\n', r->len - r->pos);
	line->n = nl ? (size_t) (nl - line->p) : r->len - r->pos;
	r->pos += line->n + (nl ? 1 : 0);
	if (line->n > 0 && line->p[line->n - 1] == '\r')
		line->n--;
	r->line++;
	return true;
}

/* The next line, left unread. */
static bool
peek_line(Reader *r, Span *line)
{
	size_t		pos = r->pos;
	int64_t		no = r->line;
	bool		got = next_line(r, line);

	r->pos = pos;
	r->line = no;
	return got;
}

/* key=value; false when the line has no '='. */
static bool
split_kv(Span line, Span *key, Span *val)
{
	const char *eq = memchr(line.p, '=', line.n);

	if (eq == NULL)
		return false;
	key->p = line.p;
	key->n = (size_t) (eq - line.p);
	val->p = eq + 1;
	val->n = line.n - key->n - 1;
	return true;
}

/* The next blank-separated token of *rest; false when none is left. */
static bool
next_token(Span *rest, Span *tok)
{
	size_t		i = 0,
				j;

	while (i < rest->n && is_space(rest->p[i]))
		i++;
	if (i == rest->n)
	{
		/* an empty span may have no pointer at all: no arithmetic on NULL */
		if (i > 0)
			rest->p += i;
		rest->n = 0;
		return false;
	}
	j = i;
	while (j < rest->n && !is_space(rest->p[j]))
		j++;
	tok->p = rest->p + i;
	tok->n = j - i;
	rest->p += j;
	rest->n -= j;
	return true;
}

static int64_t
count_tokens(Span v)
{
	Span		tok;
	int64_t		n = 0;

	while (next_token(&v, &tok))
		n++;
	return n;
}

/* A whole token as a double (strtod's syntax, "inf" and "nan" included). */
static bool
tok_double(Span tok, double *out)
{
	char		buf[LGB_TOKEN_MAX];
	char	   *end;

	if (tok.n == 0 || tok.n >= sizeof(buf))
		return false;
	memcpy(buf, tok.p, tok.n);
	buf[tok.n] = '\0';
	*out = strtod(buf, &end);
	return end == buf + tok.n;
}

static bool
tok_int(Span tok, int64_t *out)
{
	char		buf[LGB_TOKEN_MAX];
	char	   *end;
	long long	v;

	if (tok.n == 0 || tok.n >= sizeof(buf))
		return false;
	memcpy(buf, tok.p, tok.n);
	buf[tok.n] = '\0';
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (end != buf + tok.n || errno == ERANGE)
		return false;
	*out = (int64_t) v;
	return true;
}

/* A header value that must be one integer. */
static bool
head_int(Reader *r, HeadKey k, int64_t *out)
{
	Span		v = r->head[k],
				tok,
				extra;
	char		buf[48];

	if (!next_token(&v, &tok) || !tok_int(tok, out) || next_token(&v, &extra))
		return hb_fail(r->err, HB_ERR_INVALID,
					   "lightgbm model: line %lld: %s \"%s\" is not an integer",
					   (long long) r->head_line[k], head_keys[k],
					   show(r->head[k], buf, sizeof(buf)));
	return true;
}

/* ---------- tree fields ---------- */

static bool
need_field(Reader *r, const TreeText *tt, int t, TreeKey k)
{
	if (!tt->have[k])
		return hb_fail(r->err, HB_ERR_INVALID,
					   "lightgbm model: tree %d (line %lld) has no %s",
					   t, (long long) tt->first_line, tree_keys[k]);
	return true;
}

/* Field k must hold n entries. */
static bool
field_len(Reader *r, const TreeText *tt, int t, TreeKey k, int64_t n)
{
	int64_t		got = count_tokens(tt->v[k]);

	if (got != n)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "lightgbm model: tree %d: %s has %lld entries, expected %lld (line %lld)",
					   t, tree_keys[k], (long long) got, (long long) n,
					   (long long) tt->line[k]);
	return true;
}

static bool
bad_number(Reader *r, const TreeText *tt, int t, TreeKey k, int64_t i,
		   Span tok, const char *what)
{
	char		buf[48];

	return hb_fail(r->err, HB_ERR_INVALID,
				   "lightgbm model: tree %d: %s[%lld] \"%s\" is not %s (line %lld)",
				   t, tree_keys[k], (long long) i, show(tok, buf, sizeof(buf)),
				   what, (long long) tt->line[k]);
}

/* The n numbers of field k. */
static bool
field_doubles(Reader *r, const TreeText *tt, int t, TreeKey k, int64_t n,
			  double *out)
{
	Span		rest = tt->v[k],
				tok;

	if (!field_len(r, tt, t, k, n))
		return false;
	for (int64_t i = 0; next_token(&rest, &tok); i++)
		if (!tok_double(tok, &out[i]))
			return bad_number(r, tt, t, k, i, tok, "a number");
	return true;
}

/* The n integers of field k, each in [lo, hi]. */
static bool
field_ints(Reader *r, const TreeText *tt, int t, TreeKey k, int64_t n,
		   int64_t lo, int64_t hi, int64_t *out)
{
	Span		rest = tt->v[k],
				tok;

	if (!field_len(r, tt, t, k, n))
		return false;
	for (int64_t i = 0; next_token(&rest, &tok); i++)
	{
		if (!tok_int(tok, &out[i]))
			return bad_number(r, tt, t, k, i, tok, "an integer");
		if (out[i] < lo || out[i] > hi)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "lightgbm model: tree %d: %s[%lld] = %lld is out of range (%lld to %lld; line %lld)",
						   t, tree_keys[k], (long long) i, (long long) out[i],
						   (long long) lo, (long long) hi,
						   (long long) tt->line[k]);
	}
	return true;
}

static bool
field_int1(Reader *r, const TreeText *tt, int t, TreeKey k, int64_t *out)
{
	return field_ints(r, tt, t, k, 1, INT64_MIN, INT64_MAX, out);
}


/* ---------- trees ---------- */

/* The IR index of a LightGBM child reference. */
static int32_t
child_index(int64_t c, int32_t n_internal)
{
	return c >= 0 ? (int32_t) c : n_internal + (int32_t) ~c;
}

/*
 * The category sets of a tree: cat_threshold goes to the model's bitsets as
 * it is, and *base gets the index of its first word.
 */
static bool
read_tree_cats(Reader *r, const TreeText *tt, int t, int64_t ncat,
			   int64_t *bounds, int32_t *base)
{
	int64_t		nwords;
	Span		rest,
				tok;
	uint32_t   *words;

	if (!need_field(r, tt, t, K_CAT_BOUNDARIES) ||
		!need_field(r, tt, t, K_CAT_THRESHOLD) ||
		!field_ints(r, tt, t, K_CAT_BOUNDARIES, ncat + 1, 0, INT32_MAX, bounds))
		return false;
	for (int64_t c = 0; c < ncat; c++)
		if (bounds[c + 1] < bounds[c])
			return hb_fail(r->err, HB_ERR_INVALID,
						   "lightgbm model: tree %d: cat_boundaries decrease at entry %lld (line %lld)",
						   t, (long long) c + 1,
						   (long long) tt->line[K_CAT_BOUNDARIES]);
	nwords = count_tokens(tt->v[K_CAT_THRESHOLD]);
	if (bounds[ncat] != nwords)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "lightgbm model: tree %d: cat_boundaries ends at %lld but cat_threshold has %lld words (line %lld)",
					   t, (long long) bounds[ncat], (long long) nwords,
					   (long long) tt->line[K_CAT_BOUNDARIES]);
	if (!(words = hb_mb_cat_words(&r->b, (size_t) nwords, base)))
		return false;
	rest = tt->v[K_CAT_THRESHOLD];
	for (int64_t i = 0; next_token(&rest, &tok); i++)
	{
		int64_t		w;

		if (!tok_int(tok, &w))
			return bad_number(r, tt, t, K_CAT_THRESHOLD, i, tok, "an integer");
		if (w < 0 || w > (int64_t) UINT32_MAX)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "lightgbm model: tree %d: cat_threshold[%lld] = %lld is not a 32-bit word (line %lld)",
						   t, (long long) i, (long long) w,
						   (long long) tt->line[K_CAT_THRESHOLD]);
		words[i] = (uint32_t) w;
	}
	return true;
}

/* The split fields of a tree of n_internal split nodes, one entry each. */
typedef struct Splits
{
	int32_t		n_internal;
	int64_t    *lc;
	int64_t    *rc;
	int64_t    *feat;
	int64_t    *dt;
	double	   *thr;
	int64_t		ncat;
	int64_t    *bounds;			/* ncat + 1 cat_boundaries */
	int32_t		base;			/* the tree's first bitset word */
} Splits;

/* Split node i: its decision type, threshold and children. */
static bool
build_split(Reader *r, const TreeText *tt, int t, const Splits *s, int32_t i)
{
	int32_t		left = child_index(s->lc[i], s->n_internal),
				right = child_index(s->rc[i], s->n_internal);
	int32_t		feat = (int32_t) s->feat[i];
	int64_t		dt = s->dt[i];
	double		thr = s->thr[i];

	if (dt & LGB_DT_CATEGORICAL)
	{
		int64_t		c,
					nw;

		if (s->ncat == 0)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "lightgbm model: tree %d: node %d is categorical (decision_type %lld) but the tree has no category sets (line %lld)",
						   t, i, (long long) dt, (long long) tt->line[K_DECISION_TYPE]);
		if (!(thr >= 0.0 && thr < (double) s->ncat && thr == floor(thr)))
			return hb_fail(r->err, HB_ERR_INVALID,
						   "lightgbm model: tree %d: categorical node %d refers to category set %g, but the tree has %lld (line %lld)",
						   t, i, thr, (long long) s->ncat,
						   (long long) tt->line[K_THRESHOLD]);
		c = (int64_t) thr;
		nw = s->bounds[c + 1] - s->bounds[c];
		if (nw > LGB_MAX_SET_WORDS)
			return hb_fail(r->err, HB_ERR_LIMIT,
						   "lightgbm model: tree %d: categorical node %d has a set of %lld words; categories above %d are not supported",
						   t, i, (long long) nw, LGB_MAX_SET_WORDS * 32 - 1);
		/* in the set goes left; NaN right whatever missing type and default say */
		hb_mb_categorical_words(&r->b, i, feat, s->base + (int32_t) s->bounds[c],
								(int32_t) nw, true, false, HB_MISSING_NAN,
								left, right);
	}
	else
	{
		int64_t		mt = (dt >> LGB_DT_MISSING_SHIFT) & 3;

		if (mt == 3)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "lightgbm model: tree %d: node %d has decision_type %lld, whose missing type 3 is unknown (line %lld)",
						   t, i, (long long) dt, (long long) tt->line[K_DECISION_TYPE]);
		if (isnan(thr))
			return hb_fail(r->err, HB_ERR_INVALID,
						   "lightgbm model: tree %d: node %d has a NaN threshold (line %lld)",
						   t, i, (long long) tt->line[K_THRESHOLD]);
		hb_mb_numeric(&r->b, i, feat, HB_SPLIT_LE, thr,
					  (dt & LGB_DT_DEFAULT_LEFT) != 0,
					  mt == 0 ? HB_MISSING_NONE : mt == 1 ? HB_MISSING_ZERO : HB_MISSING_NAN,
					  left, right);
	}
	if (feat > r->used_feature)
		r->used_feature = feat;
	return true;
}

/*
 * The counts of tree t: *nl leaves, *ncat category sets, and the lengths of
 * the fields that have one entry per node.  Every count is checked against
 * the text before anything of that size is allocated, so a huge num_leaves
 * costs nothing.
 */
static bool
tree_counts(Reader *r, const TreeText *tt, int t, int64_t *nl, int64_t *ncat)
{
	int64_t		lin = 0,
				nint;
	static const TreeKey internal_extras[] = {
		K_SPLIT_GAIN, K_INTERNAL_VALUE, K_INTERNAL_WEIGHT, K_INTERNAL_COUNT
	};
	static const TreeKey leaf_extras[] = {K_LEAF_WEIGHT, K_LEAF_COUNT};

	*ncat = 0;
	if (!need_field(r, tt, t, K_NUM_LEAVES) ||
		!field_int1(r, tt, t, K_NUM_LEAVES, nl))
		return false;
	if (*nl < 1)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "lightgbm model: tree %d: num_leaves is %lld (line %lld)",
					   t, (long long) *nl, (long long) tt->line[K_NUM_LEAVES]);
	if (*nl > LGB_MAX_LEAVES)
		return hb_fail(r->err, HB_ERR_LIMIT,
					   "lightgbm model: tree %d has %lld leaves, more than %d",
					   t, (long long) *nl, LGB_MAX_LEAVES);
	if (tt->have[K_IS_LINEAR] && !field_int1(r, tt, t, K_IS_LINEAR, &lin))
		return false;
	if (lin != 0)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "lightgbm model: tree %d is a linear tree (is_linear=1, from linear_tree=true); linear trees are not supported",
					   t);
	if (!need_field(r, tt, t, K_LEAF_VALUE) ||
		!field_len(r, tt, t, K_LEAF_VALUE, *nl))
		return false;
	nint = *nl - 1;
	if (nint == 0)
		return true;
	if (!need_field(r, tt, t, K_LEFT_CHILD) ||
		!need_field(r, tt, t, K_RIGHT_CHILD) ||
		!need_field(r, tt, t, K_SPLIT_FEATURE) ||
		!need_field(r, tt, t, K_THRESHOLD))
		return false;
	if (tt->have[K_NUM_CAT] && !field_int1(r, tt, t, K_NUM_CAT, ncat))
		return false;
	if (*ncat < 0 || *ncat > nint)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "lightgbm model: tree %d: num_cat is %lld with %lld split nodes (line %lld)",
					   t, (long long) *ncat, (long long) nint,
					   (long long) tt->line[K_NUM_CAT]);
	/* LightGBM checks the lengths of the statistics too */
	for (size_t k = 0; k < sizeof(internal_extras) / sizeof(internal_extras[0]); k++)
		if (tt->have[internal_extras[k]] &&
			!field_len(r, tt, t, internal_extras[k], nint))
			return false;
	for (size_t k = 0; k < sizeof(leaf_extras) / sizeof(leaf_extras[0]); k++)
		if (tt->have[leaf_extras[k]] &&
			!field_len(r, tt, t, leaf_extras[k], *nl))
			return false;
	return field_len(r, tt, t, K_LEFT_CHILD, nint) &&
		field_len(r, tt, t, K_RIGHT_CHILD, nint) &&
		field_len(r, tt, t, K_SPLIT_FEATURE, nint) &&
		field_len(r, tt, t, K_THRESHOLD, nint) &&
		(!tt->have[K_DECISION_TYPE] ||
		 field_len(r, tt, t, K_DECISION_TYPE, nint));
}

/* The nl leaves of tree t: IR nodes n_internal .. n_internal + nl - 1. */
static bool
read_leaves(Reader *r, const TreeText *tt, int t, int64_t nl, int32_t n_internal)
{
	double	   *leaf = hb_alloc(sizeof(double) * (size_t) nl);
	bool		ok;

	if (leaf == NULL)
		return nomem(r);
	ok = field_doubles(r, tt, t, K_LEAF_VALUE, nl, leaf);
	for (int64_t j = 0; ok && j < nl; j++)
	{
		if (!isfinite(leaf[j]))
			ok = hb_fail(r->err, HB_ERR_INVALID,
						 "lightgbm model: tree %d: leaf %lld has a non-finite value (line %lld)",
						 t, (long long) j, (long long) tt->line[K_LEAF_VALUE]);
		else
			hb_mb_leaf(&r->b, n_internal + (int32_t) j, leaf[j]);
	}
	hb_free(leaf);
	return ok;
}

/* The split nodes of tree t, of nl leaves and ncat category sets. */
static bool
read_splits(Reader *r, const TreeText *tt, int t, int64_t nl, int64_t ncat)
{
	int64_t		nint = nl - 1;
	Splits		s;
	bool		ok = false;

	memset(&s, 0, sizeof(s));
	s.n_internal = (int32_t) nint;
	s.ncat = ncat;
	s.lc = hb_alloc(sizeof(int64_t) * (size_t) nint);
	s.rc = hb_alloc(sizeof(int64_t) * (size_t) nint);
	s.feat = hb_alloc(sizeof(int64_t) * (size_t) nint);
	s.dt = hb_alloc0(sizeof(int64_t) * (size_t) nint);
	s.thr = hb_alloc(sizeof(double) * (size_t) nint);
	s.bounds = hb_alloc(sizeof(int64_t) * (size_t) (ncat + 1));
	if (!s.lc || !s.rc || !s.feat || !s.dt || !s.thr || !s.bounds)
	{
		nomem(r);
		goto done;
	}
	if (!field_ints(r, tt, t, K_LEFT_CHILD, nint, -nl, nint - 1, s.lc) ||
		!field_ints(r, tt, t, K_RIGHT_CHILD, nint, -nl, nint - 1, s.rc) ||
		!field_ints(r, tt, t, K_SPLIT_FEATURE, nint, 0, r->max_feature, s.feat) ||
		!field_doubles(r, tt, t, K_THRESHOLD, nint, s.thr) ||
		/* absent: numeric, missing type None, default right */
		(tt->have[K_DECISION_TYPE] &&
		 !field_ints(r, tt, t, K_DECISION_TYPE, nint, 0, 15, s.dt)))
		goto done;
	if (ncat > 0 && !read_tree_cats(r, tt, t, ncat, s.bounds, &s.base))
		goto done;
	for (int32_t i = 0; i < (int32_t) nint; i++)
		if (!build_split(r, tt, t, &s, i))
			goto done;
	ok = true;

done:
	hb_free(s.lc);
	hb_free(s.rc);
	hb_free(s.feat);
	hb_free(s.dt);
	hb_free(s.thr);
	hb_free(s.bounds);
	return ok;
}

/*
 * Build tree t from its fields: the split nodes, then the leaves (IR node
 * (num_leaves - 1) + j is leaf j).  The builder's walk checks that the root
 * reaches every node and leaf exactly once (one never reached is a loop
 * beside the tree) and the depth.
 */
static bool
read_tree(Reader *r, const TreeText *tt, int t)
{
	int64_t		nl,
				ncat;
	int32_t		nint;

	if (!tree_counts(r, tt, t, &nl, &ncat))
		return false;
	nint = (int32_t) (nl - 1);
	if (!hb_mb_start_tree(&r->b, t, (int32_t) (t % r->per_iter),
						  (int32_t) (nl + nint), 1))
		return false;
	r->b.leaf_first = nint;
	/* a single leaf: LightGBM ignores every other field */
	if (!read_leaves(r, tt, t, nl, nint) ||
		(nint > 0 && !read_splits(r, tt, t, nl, ncat)))
		return false;
	return hb_mb_end_tree(&r->b);
}

/*
 * The fields of the Tree= block whose header line was just read.  The block
 * ends at a blank line, at the next Tree= or "end of trees" line, or at the
 * end of the input, which only a bare block may end at: a model file always
 * follows its last tree with a blank line, so ending inside one means the
 * file was cut short.
 */
static bool
read_tree_text(Reader *r, int t, TreeText *tt)
{
	Span		line,
				key,
				val;
	char		buf[48];

	memset(tt, 0, sizeof(*tt));
	tt->first_line = r->line;
	for (;;)
	{
		if (!peek_line(r, &line))
		{
			if (r->header)
				return hb_fail(r->err, HB_ERR_PARSE,
							   "lightgbm model: the file ends inside tree %d (line %lld); it looks truncated",
							   t, (long long) r->line);
			return true;
		}
		if (span_blank(line) || span_starts(line, "Tree=") ||
			span_eq(line, "end of trees"))
			return true;
		(void) next_line(r, &line);
		if (!split_kv(line, &key, &val))
			return hb_fail(r->err, HB_ERR_PARSE,
						   "lightgbm model: line %lld: expected key=value in tree %d, found \"%s\"",
						   (long long) r->line, t, show(line, buf, sizeof(buf)));
		for (int k = 0; k < K_COUNT; k++)
			if (span_eq(key, tree_keys[k]))
			{
				tt->v[k] = val;
				tt->have[k] = true;
				tt->line[k] = r->line;
				break;
			}
		/* other fields (shrinkage, leaf_const, ...) don't change predictions */
	}
}

static bool
read_trees(Reader *r)
{
	Span		line;

	while (peek_line(r, &line))
	{
		TreeText	tt;
		int			t = r->m->n_trees;

		if (span_blank(line))
		{
			(void) next_line(r, &line);
			continue;
		}
		/* anything else ends the trees, as in LightGBM */
		if (!span_starts(line, "Tree="))
			break;
		(void) next_line(r, &line);
		if (t >= INT32_MAX - 1)
			return hb_fail(r->err, HB_ERR_LIMIT,
						   "lightgbm model has more than %d trees", INT32_MAX - 1);
		if (!read_tree_text(r, t, &tt) || !read_tree(r, &tt, t))
			return false;
		hb_check_interrupts();
	}
	return true;
}


/* ---------- header ---------- */

static bool
read_header(Reader *r)
{
	Span		line,
				key,
				val;

	while (peek_line(r, &line))
	{
		if (span_starts(line, "Tree=") || span_eq(line, "end of trees"))
			break;
		(void) next_line(r, &line);
		if (!split_kv(line, &key, &val))
		{
			/* bare words: "tree", "average_output" */
			if (span_eq(line, "average_output"))
				r->average = true;
			continue;
		}
		for (int k = 0; k < H_COUNT; k++)
			if (span_eq(key, head_keys[k]))
			{
				r->head[k] = val;
				r->have_head[k] = true;
				r->head_line[k] = r->line;
				break;
			}
	}
	for (int k = 0; k <= H_MAX_FEATURE_IDX; k++)
		if (!r->have_head[k])
			return hb_fail(r->err, HB_ERR_INVALID,
						   "lightgbm model: the header has no %s", head_keys[k]);
	return true;
}

static const Objective *
find_objective(Span name)
{
	for (size_t i = 0; i < sizeof(objective_aliases) / sizeof(objective_aliases[0]); i++)
		if (span_eq(name, objective_aliases[i].alias))
		{
			name.p = objective_aliases[i].name;
			name.n = strlen(name.p);
			break;
		}
	for (size_t i = 0; i < sizeof(objectives) / sizeof(objectives[0]); i++)
		if (span_eq(name, objectives[i].name))
			return &objectives[i];
	return NULL;
}

/*
 * "binary sigmoid:1", "multiclass num_class:3", "regression", ...: the name,
 * then the parameters that ConvertOutput uses.  *nclass gets num_class:K
 * (or -1).
 */
static bool
read_objective(Reader *r, int64_t *nclass)
{
	Span		v = r->head[H_OBJECTIVE],
				name,
				tok;
	char		buf[64];
	int64_t		line = r->head_line[H_OBJECTIVE];

	*nclass = -1;
	r->sigmoid = 1.0;
	if (!r->have_head[H_OBJECTIVE] || !next_token(&v, &name))
		name = (Span) {"custom", 6};
	r->obj = find_objective(name);
	if (r->obj == NULL)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "lightgbm objective \"%s\" is not supported",
					   show(name, buf, sizeof(buf)));
	if (r->obj->refuse)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "lightgbm objective \"%s\" is not supported: %s",
					   r->obj->name, r->obj->refuse);
	while (next_token(&v, &tok))
	{
		Span		pv;

		if (span_eq(tok, "sqrt"))
			return hb_fail(r->err, HB_ERR_UNSUPPORTED,
						   "lightgbm objective \"%s sqrt\" (reg_sqrt=true) is not supported: it predicts sign(raw) * raw^2, which hbird has no link for",
						   r->obj->name);
		if (span_starts(tok, "sigmoid:"))
		{
			pv.p = tok.p + 8;
			pv.n = tok.n - 8;
			if (!tok_double(pv, &r->sigmoid) || !isfinite(r->sigmoid) ||
				r->sigmoid <= 0.0)
				return hb_fail(r->err, HB_ERR_INVALID,
							   "lightgbm model: line %lld: objective parameter \"%s\" is not a positive number",
							   (long long) line, show(tok, buf, sizeof(buf)));
		}
		else if (span_starts(tok, "num_class:"))
		{
			pv.p = tok.p + 10;
			pv.n = tok.n - 10;
			if (!tok_int(pv, nclass) || *nclass < 1)
				return hb_fail(r->err, HB_ERR_INVALID,
							   "lightgbm model: line %lld: objective parameter \"%s\" is not a positive integer",
							   (long long) line, show(tok, buf, sizeof(buf)));
		}
		/* other parameters only matter for training */
	}
	r->m->objective = hb_strdup(r->obj->name);
	if (r->m->objective == NULL)
		return nomem(r);
	return true;
}

/*
 * Feature names become column bindings and catalog text: printable UTF-8
 * only.
 */
static bool
valid_name(Span s)
{
	const unsigned char *p = (const unsigned char *) s.p;
	size_t		i = 0;

	while (i < s.n)
	{
		unsigned char c = p[i];
		int			extra;
		uint32_t	cp;

		if (c < 0x20 || c == 0x7f)
			return false;
		if (c < 0x80)
		{
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			extra = 1, cp = c & 0x1F;
		else if (c >= 0xE0 && c <= 0xEF)
			extra = 2, cp = c & 0x0F;
		else if (c >= 0xF0 && c <= 0xF4)
			extra = 3, cp = c & 0x07;
		else
			return false;
		if (s.n - i <= (size_t) extra)
			return false;
		for (int k = 1; k <= extra; k++)
		{
			if ((p[i + k] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i + k] & 0x3F);
		}
		/* overlong forms, surrogates, beyond U+10FFFF */
		if ((extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000) ||
			(cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
			return false;
		i += extra + 1;
	}
	return true;
}

/* Names from feature_names (else f0, f1, ...), types from feature_infos. */
static bool
read_features(Reader *r, int64_t nf)
{
	HbModel    *m = r->m;
	Span		names = r->head[H_FEATURE_NAMES],
				infos = r->head[H_FEATURE_INFOS],
				tok;
	int64_t		n;

	if (r->have_head[H_FEATURE_NAMES] &&
		(n = count_tokens(names)) != nf)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "lightgbm model: line %lld: feature_names has %lld names for %lld features (max_feature_idx + 1)",
					   (long long) r->head_line[H_FEATURE_NAMES], (long long) n,
					   (long long) nf);
	if (r->have_head[H_FEATURE_INFOS] &&
		(n = count_tokens(infos)) != nf)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "lightgbm model: line %lld: feature_infos has %lld entries for %lld features (max_feature_idx + 1)",
					   (long long) r->head_line[H_FEATURE_INFOS], (long long) n,
					   (long long) nf);

	m->features = hb_alloc0(sizeof(HbFeature) * (size_t) nf);
	if (m->features == NULL)
		return nomem(r);
	m->n_features = (int32_t) nf;
	m->has_feature_names = r->have_head[H_FEATURE_NAMES];
	for (int64_t i = 0; i < nf; i++)
	{
		HbFeature  *f = &m->features[i];

		if (m->has_feature_names)
		{
			(void) next_token(&names, &tok);
			if (!valid_name(tok))
				return hb_fail(r->err, HB_ERR_INVALID,
							   "lightgbm model: line %lld: feature name %lld is not printable UTF-8",
							   (long long) r->head_line[H_FEATURE_NAMES], (long long) i);
			f->name = hb_strndup(tok.p, tok.n);
		}
		else
			f->name = hb_feature_default_name(i);
		if (f->name == NULL)
			return nomem(r);

		/* "[min:max]" numeric, "none" unused, "a:b:c" the categories seen */
		f->type = HB_FEATURE_NUMERIC;
		if (r->have_head[H_FEATURE_INFOS])
		{
			(void) next_token(&infos, &tok);
			if (tok.p[0] != '[' && !span_eq(tok, "none"))
				f->type = HB_FEATURE_CATEGORICAL;
		}
	}
	return true;
}

/* Task, outputs and features from the header. */
static bool
setup_model(Reader *r)
{
	HbModel    *m = r->m;
	int64_t		nclass,
				per_iter,
				maxf,
				obj_nclass;

	if (!head_int(r, H_NUM_CLASS, &nclass) ||
		!head_int(r, H_NUM_TREE_PER_ITERATION, &per_iter) ||
		!head_int(r, H_MAX_FEATURE_IDX, &maxf))
		return false;
	if (nclass < 1 || nclass > LGB_MAX_CLASSES)
		return hb_fail(r->err, nclass < 1 ? HB_ERR_INVALID : HB_ERR_LIMIT,
					   "lightgbm model: num_class is %lld (1 to %d supported)",
					   (long long) nclass, LGB_MAX_CLASSES);
	if (per_iter < 1 || per_iter > LGB_MAX_CLASSES)
		return hb_fail(r->err, per_iter < 1 ? HB_ERR_INVALID : HB_ERR_LIMIT,
					   "lightgbm model: num_tree_per_iteration is %lld (1 to %d supported)",
					   (long long) per_iter, LGB_MAX_CLASSES);
	if (maxf < 0)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "lightgbm model: max_feature_idx is %lld", (long long) maxf);
	if (maxf >= HB_MAX_FEATURES)
		return hb_fail(r->err, HB_ERR_LIMIT,
					   "lightgbm model: max_feature_idx is %lld, more than the %d features hbird supports",
					   (long long) maxf, HB_MAX_FEATURES);
	if (!read_objective(r, &obj_nclass))
		return false;

	m->task = r->obj->task;
	m->link = r->obj->link;
	if (m->task == HB_TASK_MULTICLASS)
	{
		if (obj_nclass >= 0 && obj_nclass != nclass)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "lightgbm model: num_class is %lld but the objective says num_class:%lld",
						   (long long) nclass, (long long) obj_nclass);
		if (per_iter != nclass)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "lightgbm model: %lld classes but %lld trees per iteration",
						   (long long) nclass, (long long) per_iter);
		m->n_outputs = (int32_t) nclass;
		m->n_classes = (int32_t) nclass;
	}
	else
	{
		if (nclass != 1 || per_iter != 1)
			return hb_fail(r->err, HB_ERR_UNSUPPORTED,
						   "lightgbm model: num_class %lld with %lld trees per iteration is not supported for objective %s",
						   (long long) nclass, (long long) per_iter, r->obj->name);
		m->n_outputs = 1;
		m->n_classes = m->task == HB_TASK_BINARY ? 2 : 0;
	}
	r->per_iter = per_iter;
	r->max_feature = maxf;
	return read_features(r, maxf + 1);
}

/* A file of bare Tree= blocks: a regression over the features it uses. */
static bool
setup_bare(Reader *r)
{
	r->obj = find_objective((Span) {"custom", 6});
	r->per_iter = 1;
	r->sigmoid = 1.0;
	r->max_feature = HB_MAX_FEATURES - 1;
	r->m->task = HB_TASK_REGRESSION;
	r->m->link = HB_LINK_IDENTITY;
	r->m->n_outputs = 1;
	r->m->n_classes = 0;
	r->m->objective = hb_strdup("custom");
	if (r->m->objective == NULL)
		return nomem(r);
	return true;
}


/* ---------- model ---------- */

/* A file of bare Tree= blocks reads the features its splits use. */
static bool
bare_features(Reader *r)
{
	HbModel    *m = r->m;

	m->features = hb_alloc0(sizeof(HbFeature) * (size_t) (r->used_feature + 1));
	if (m->features == NULL)
		return nomem(r);
	m->n_features = (int32_t) (r->used_feature + 1);
	for (int i = 0; i < m->n_features; i++)
	{
		m->features[i].name = hb_feature_default_name(i);
		m->features[i].type = HB_FEATURE_NUMERIC;
		if (m->features[i].name == NULL)
			return nomem(r);
	}
	return true;
}

/*
 * average_output and sigmoid:s scale the margin before the link: the leaves
 * carry the scale (see the top of the file).
 */
static bool
scale_leaves(Reader *r, int64_t iterations)
{
	HbModel    *m = r->m;

	for (int32_t t = 0; t < m->n_trees; t++)
	{
		HbTree	   *tree = &m->trees[t];

		for (int32_t i = 0; i < tree->n_nodes; i++)
		{
			HbNode	   *node = &tree->nodes[i];

			if (node->left != HB_LEAF)
				continue;
			if (r->average)
				node->value /= (double) iterations;
			if (r->sigmoid != 1.0 && m->link == HB_LINK_SIGMOID &&
				m->task != HB_TASK_REGRESSION)
				node->value *= r->sigmoid;
			if (!isfinite(node->value))
				return hb_fail(r->err, HB_ERR_INVALID,
							   "lightgbm model: tree %d: a leaf times sigmoid %g is not finite",
							   t, r->sigmoid);
		}
	}
	return true;
}

static bool
read_model(Reader *r)
{
	HbModel    *m = r->m;
	Span		line;
	char		buf[48];
	size_t		n_trees;

	/* a byte order mark and blank lines may come first */
	if (r->len >= 3 && memcmp(r->s, "\xEF\xBB\xBF", 3) == 0)
		r->pos = 3;
	while (peek_line(r, &line) && span_blank(line))
		(void) next_line(r, &line);
	if (!peek_line(r, &line))
		return hb_fail(r->err, HB_ERR_PARSE, "lightgbm model is empty");
	if (span_eq(line, "tree"))
	{
		r->header = true;
		(void) next_line(r, &line);
		if (!read_header(r) || !setup_model(r))
			return false;
	}
	else if (span_starts(line, "Tree="))
	{
		if (!setup_bare(r))
			return false;
	}
	else
	{
		hb_fail(r->err, HB_ERR_PARSE,
				"not a lightgbm text model: it starts with \"%s\", expected \"tree\" or \"Tree=\"",
				show(line, buf, sizeof(buf)));
		if (line.n > 0 && (line.p[0] == '{' || line.p[0] == '['))
			hb_fail_detail(r->err, "LightGBM's JSON dump (dump_model) is not a model file. Save the model with Booster.save_model(\"model.txt\").");
		return false;
	}

	/* the trees are the model's from here on, even on failure */
	hb_mb_start_model(&r->b, m, "lightgbm model: ", r->err);
	r->b.all_reached = true;
	if (!read_trees(r))
		return false;
	n_trees = (size_t) m->n_trees;
	if (n_trees == 0)
		return hb_fail(r->err, HB_ERR_INVALID, "lightgbm model has no trees");
	if (r->have_head[H_TREE_SIZES])
	{
		int64_t		listed = count_tokens(r->head[H_TREE_SIZES]);

		if (listed != (int64_t) n_trees)
			return hb_fail(r->err, HB_ERR_PARSE,
						   "lightgbm model: tree_sizes lists %lld trees but the file holds %zu; it looks truncated",
						   (long long) listed, n_trees);
	}
	if (n_trees % (size_t) r->per_iter != 0)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "lightgbm model: %zu trees is not a whole number of iterations of %lld trees",
					   n_trees, (long long) r->per_iter);
	if (!r->header && !bare_features(r))
		return false;
	/* margin scales become tree weights (see the top of the file) */
	if ((r->average || r->sigmoid != 1.0) &&
		!scale_leaves(r, (int64_t) n_trees / r->per_iter))
		return false;

	m->base_margin = hb_alloc0(sizeof(double) * m->n_outputs);
	if (m->base_margin == NULL)
		return nomem(r);
	return true;
}

bool
hb_read_lightgbm_text(const char *bytes, size_t len, HbModel **out,
					  HbError *err)
{
	Reader		r;
	bool		ok;

	*out = NULL;
	memset(&r, 0, sizeof(r));
	r.err = err;
	r.s = bytes;
	r.len = len;
	r.used_feature = 0;
	r.m = hb_alloc0(sizeof(HbModel));
	if (r.m == NULL)
		return hb_fail(err, HB_ERR_NOMEM,
					   "out of memory while reading the lightgbm model");
	r.m->format = HB_FORMAT_LIGHTGBM_TEXT;
	r.m->estimator = HB_EST_TREES;
	r.m->cmp = HB_CMP_LE_F64;
	r.m->sum_f32 = false;
	r.m->zero_snap = true;

	ok = read_model(&r);
	hb_mb_free(&r.b);
	if (!ok)
	{
		hb_model_free(r.m);
		return false;
	}
	*out = r.m;
	return true;
}
