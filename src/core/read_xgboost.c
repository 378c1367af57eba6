/*
 * read_xgboost.c
 *	  Reader for XGBoost's JSON model format (Booster.save_model("m.json")),
 *	  as written by XGBoost 1.0 through 3.x, and for the same document in
 *	  UBJSON (Booster.save_model("m.ubj"), the default of XGBoost 2.x).
 *
 * Both parsers build the same document (json.h), so everything below reads
 * either; in UBJSON the numbers are binary (float32 'd' for XGBoost's
 * floats, integers of some width for its integers) and hb_json_float
 * returns a float32 bit for bit.
 *
 * The layout, as far as the reader cares:
 *
 *	{"learner": {
 *		"objective": {"name": "binary:logistic", ...},
 *		"learner_model_param": {"base_score": "5E-1", "num_class": "0",
 *								"num_feature": "8", "num_target": "1"},
 *		"feature_names": [...], "feature_types": [...],		(1.4+; may be empty)
 *		"gradient_booster": one of
 *			{"name": "gbtree", "model": MODEL}
 *			{"name": "dart", "gbtree": {"name": "gbtree", "model": MODEL},
 *			 "weight_drop": [w0, w1, ...]}
 *			{"name": "gblinear", "model": {"weights": [...]}}
 *	 },
 *	 "version": [major, minor, patch]}
 *
 *	MODEL = {"gbtree_model_param": {"num_trees": "N", ...},
 *			 "tree_info": [group of tree i, ...], "trees": [TREE, ...],
 *			 "cats": {"enc": [...], ...}}							(3.x)
 *	TREE = {"id": i, "tree_param": {"num_nodes": "n", "size_leaf_vector": ..},
 *			"left_children", "right_children", "split_indices",
 *			"split_conditions", "default_left", "split_type",
 *			"categories", "categories_nodes", "categories_segments",
 *			"categories_sizes", ...}
 *
 * Many integers are strings ("500"), base_score may be "0.5", "5E-1" or, in
 * 3.x, a bracketed vector string "[3.3333334E-1,...]" with one value per
 * output.  default_left is booleans in old files and 0/1 in new ones.
 *
 * Several targets (learner_model_param.num_target > 1, 1.6+) are several
 * outputs, each through the objective's link: with one output per tree,
 * tree_info files each tree under its target; with multi_strategy =
 * "multi_output_tree" (2.0+) every tree has vector leaves
 * (tree_param.size_leaf_vector = the number of outputs, tree_info 0), whose
 * values are base_weights[leaf * width ..] (2.0 - 3.1) or, from 3.2,
 * leaf_weights[row * width ..] with the row in the leaf's right_children
 * entry.  A vector-leaf tree becomes one IR tree per output, of the same
 * structure, so each output still sums its leaves in float32 in tree order
 * (multi:softprob models with vector leaves get one tree per class).
 *
 * XGBoost computes in float32: inputs and thresholds are floats, a numeric
 * split sends x < threshold left, missing values take the node's default
 * child, and leaves are summed into a float accumulator that starts at the
 * base margin.  A leaf's value is split_conditions[leaf] (leaf value and
 * split condition share storage in XGBoost's node).  Every number that XGBoost
 * keeps as a float is read with strtof, so the IR holds exactly XGBoost's
 * float32 values (as doubles).
 *
 * Node ids are kept as XGBoost numbers them, so a leaf index means the same
 * thing as XGBoost's pred_leaf.  Nodes that the root cannot reach (pruned
 * nodes XGBoost marks deleted) become zero leaves.
 */
#include "json.h"
#include "model_builder.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* XGBoost refuses categories a float32 cannot hold exactly. */
#define XGB_MAX_CATEGORY	(1 << 24)
#define XGB_MAX_CLASSES		100000

/* How a base_score, given in prediction space, becomes a margin. */
typedef enum BaseTransform
{
	BASE_IDENTITY,
	BASE_LOGIT,					/* sigmoid link: margin = logit(p) */
	BASE_LOG					/* exp link: margin = log(p) */
} BaseTransform;

typedef struct Objective
{
	const char *name;
	HbTask		task;
	HbLink		link;
	BaseTransform base;
	bool		predict_class;
} Objective;

static const Objective objectives[] = {
	{"reg:squarederror", HB_TASK_REGRESSION, HB_LINK_IDENTITY, BASE_IDENTITY, false},
	{"reg:linear", HB_TASK_REGRESSION, HB_LINK_IDENTITY, BASE_IDENTITY, false},
	{"reg:squaredlogerror", HB_TASK_REGRESSION, HB_LINK_IDENTITY, BASE_IDENTITY, false},
	{"reg:pseudohubererror", HB_TASK_REGRESSION, HB_LINK_IDENTITY, BASE_IDENTITY, false},
	{"reg:absoluteerror", HB_TASK_REGRESSION, HB_LINK_IDENTITY, BASE_IDENTITY, false},
	{"reg:quantileerror", HB_TASK_REGRESSION, HB_LINK_IDENTITY, BASE_IDENTITY, false},
	{"reg:logistic", HB_TASK_REGRESSION, HB_LINK_SIGMOID, BASE_LOGIT, false},
	{"binary:logistic", HB_TASK_BINARY, HB_LINK_SIGMOID, BASE_LOGIT, false},

	/*
	 * The margin is the prediction.  XGBoost 1.7 and later add base_score to
	 * the margin as it is (LogisticRaw::ProbToMargin is the identity);
	 * XGBoost 1.0 took its logit.  We follow the current behaviour, which is
	 * also what a 1.0 file gives when loaded into a current XGBoost.
	 */
	{"binary:logitraw", HB_TASK_BINARY, HB_LINK_IDENTITY, BASE_IDENTITY, false},
	{"multi:softprob", HB_TASK_MULTICLASS, HB_LINK_SOFTMAX, BASE_IDENTITY, false},
	{"multi:softmax", HB_TASK_MULTICLASS, HB_LINK_SOFTMAX, BASE_IDENTITY, true},
	{"rank:pairwise", HB_TASK_RANKING, HB_LINK_IDENTITY, BASE_IDENTITY, false},
	{"rank:ndcg", HB_TASK_RANKING, HB_LINK_IDENTITY, BASE_IDENTITY, false},
	{"rank:map", HB_TASK_RANKING, HB_LINK_IDENTITY, BASE_IDENTITY, false},
	{"count:poisson", HB_TASK_REGRESSION, HB_LINK_EXP, BASE_LOG, false},
	{"reg:gamma", HB_TASK_REGRESSION, HB_LINK_EXP, BASE_LOG, false},
	{"reg:tweedie", HB_TASK_REGRESSION, HB_LINK_EXP, BASE_LOG, false},
};

typedef struct Reader
{
	HbError    *err;
	HbModel    *m;
	const Objective *obj;
	bool		types_given;	/* learner.feature_types was non-empty */
	HbModelBuilder b;			/* the trees */
} Reader;


/* ---------- small helpers ---------- */

static bool
nomem(Reader *r)
{
	return hb_fail(r->err, HB_ERR_NOMEM, "out of memory while reading the xgboost model");
}

/* obj.key, which must be of the given type; "where" names obj in messages. */
static const HbJson *
need(Reader *r, const HbJson *obj, const char *where, const char *key,
	 HbJsonType type)
{
	const HbJson *v = hb_json_get(obj, key);
	static const char *const names[] = {
		"null", "boolean", "number", "string", "array", "object"
	};

	if (v == NULL)
	{
		hb_fail(r->err, HB_ERR_INVALID, "xgboost model: %s has no \"%s\"",
				where, key);
		return NULL;
	}
	if (hb_json_type(v) != type)
	{
		hb_fail(r->err, HB_ERR_INVALID,
				"xgboost model: %s.%s is a %s, expected a%s %s",
				where, key, hb_json_type_name(v),
				(type == HB_JSON_ARRAY || type == HB_JSON_OBJECT) ? "n" : "",
				names[type]);
		return NULL;
	}
	return v;
}

/*
 * Integer parameter obj.key (a number or a numeric string); dflt when absent
 * and dflt_ok.
 */
static bool
int_param(Reader *r, const HbJson *obj, const char *where, const char *key,
		  bool dflt_ok, int64_t dflt, int64_t *out)
{
	const HbJson *v = hb_json_get(obj, key);

	if (v == NULL)
	{
		if (dflt_ok)
		{
			*out = dflt;
			return true;
		}
		return hb_fail(r->err, HB_ERR_INVALID, "xgboost model: %s has no \"%s\"",
					   where, key);
	}
	if (!hb_json_int(v, out))
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: %s.%s is not an integer", where, key);
	return true;
}

/* Integer element i of one of a tree's arrays. */
static bool
tree_int(Reader *r, const HbJson *arr, const char *name, int t, size_t i,
		 int64_t *out)
{
	if (!hb_json_int(hb_json_at(arr, i), out))
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: tree %d: %s[%zu] is not an integer",
					   t, name, i);
	return true;
}

static bool
tree_float(Reader *r, const HbJson *arr, const char *name, int t, size_t i,
		   float *out)
{
	if (!hb_json_float(hb_json_at(arr, i), out))
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: tree %d: %s[%zu] is not a number",
					   t, name, i);
	return true;
}

/* A tree's array member, which must have n entries (n < 0: any length). */
static const HbJson *
tree_array(Reader *r, const HbJson *jt, int t, const char *key, int64_t n)
{
	const HbJson *v = hb_json_get(jt, key);

	if (!hb_json_is_array(v))
	{
		hb_fail(r->err, HB_ERR_INVALID, "xgboost model: tree %d: \"%s\" is %s",
				t, key, v ? "not an array" : "missing");
		return NULL;
	}
	if (n >= 0 && (int64_t) hb_json_len(v) != n)
	{
		hb_fail(r->err, HB_ERR_INVALID,
				"xgboost model: tree %d: %s has %zu entries, expected %lld",
				t, key, hb_json_len(v), (long long) n);
		return NULL;
	}
	return v;
}

/* ---------- trees ---------- */

/*
 * Categorical split data of one tree: categories_nodes lists the categorical
 * nodes in increasing order, and entry k's categories are
 * categories[segments[k] .. segments[k] + sizes[k]).  XGBoost walks the
 * nodes and this list in step, so we insist on the order too.
 */
typedef struct TreeCats
{
	const HbJson *cats;
	const HbJson *segments;
	const HbJson *sizes;
	int32_t    *index;			/* per node: k, or -1 */
} TreeCats;

static bool
read_tree_cats(Reader *r, const HbJson *jt, int t, int64_t n, TreeCats *tc)
{
	const HbJson *nodes;
	size_t		k_count;
	int64_t		prev = -1;

	if (!(nodes = tree_array(r, jt, t, "categories_nodes", -1)))
		return false;
	k_count = hb_json_len(nodes);
	if (!(tc->cats = tree_array(r, jt, t, "categories", -1)) ||
		!(tc->segments = tree_array(r, jt, t, "categories_segments", k_count)) ||
		!(tc->sizes = tree_array(r, jt, t, "categories_sizes", k_count)))
		return false;
	tc->index = hb_alloc(sizeof(int32_t) * n);
	if (tc->index == NULL)
		return nomem(r);
	for (int64_t i = 0; i < n; i++)
		tc->index[i] = -1;
	for (size_t k = 0; k < k_count; k++)
	{
		int64_t		node;

		if (!tree_int(r, nodes, "categories_nodes", t, k, &node))
			return false;
		if (node <= prev || node >= n)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "xgboost model: tree %d: categories_nodes[%zu] = %lld is out of order or out of range (%lld nodes)",
						   t, k, (long long) node, (long long) n);
		tc->index[node] = (int32_t) k;
		prev = node;
	}
	return true;
}

/*
 * The categories of categorical node id: a fresh array of *n (hb_alloc'd),
 * or NULL with the error set.
 */
static uint32_t *
read_node_cats(Reader *r, const TreeCats *tc, int t, int32_t id, size_t *n)
{
	int32_t		k = tc->index ? tc->index[id] : -1;
	int64_t		beg,
				size,
				c;
	size_t		ncats = hb_json_len(tc->cats);
	uint32_t   *cats;

	if (k < 0)
	{
		hb_fail(r->err, HB_ERR_INVALID,
				"xgboost model: tree %d: categorical node %d has no categories",
				t, id);
		return NULL;
	}
	if (!tree_int(r, tc->segments, "categories_segments", t, k, &beg) ||
		!tree_int(r, tc->sizes, "categories_sizes", t, k, &size))
		return NULL;
	if (beg < 0 || size <= 0 || (uint64_t) beg > ncats ||
		(uint64_t) size > ncats - (uint64_t) beg)
	{
		hb_fail(r->err, HB_ERR_INVALID,
				"xgboost model: tree %d: node %d has categories [%lld, +%lld) outside the %zu categories",
				t, id, (long long) beg, (long long) size, ncats);
		return NULL;
	}
	cats = hb_alloc(sizeof(uint32_t) * (size_t) size);
	if (cats == NULL)
	{
		nomem(r);
		return NULL;
	}
	for (int64_t j = 0; j < size; j++)
	{
		if (!tree_int(r, tc->cats, "categories", t, (size_t) (beg + j), &c))
			goto fail;
		if (c < 0 || c >= XGB_MAX_CATEGORY)
		{
			hb_fail(r->err, HB_ERR_INVALID,
					"xgboost model: tree %d: node %d has category %lld (categories are 0 to %d)",
					t, id, (long long) c, XGB_MAX_CATEGORY - 1);
			goto fail;
		}
		cats[j] = (uint32_t) c;
	}
	*n = (size_t) size;
	return cats;

fail:
	hb_free(cats);
	return NULL;
}

/*
 * Where a tree's leaf values are.  A scalar tree keeps its leaf's value in
 * split_conditions[leaf].  A vector-leaf tree (multi_strategy =
 * "multi_output_tree", tree_param.size_leaf_vector = width > 1) keeps width
 * values per leaf: in base_weights[leaf * width ..] up to XGBoost 3.1, and
 * from 3.2 in leaf_weights[row * width ..], where a leaf's right_children
 * entry is its row (left_children is -1 for leaves in both).
 */
typedef struct LeafSource
{
	const HbJson *vals;
	const char *name;			/* of vals, for messages */
	int32_t		width;			/* values per leaf */
	bool		by_row;			/* 3.2+: the row is right_children[leaf] */
} LeafSource;

/* One tree being read: its arrays, where its leaves are, its weight. */
typedef struct TreeRead
{
	Reader	   *r;
	int			t;
	int64_t		n;
	float		weight;			/* dart's, else 1 */
	const HbJson *lc,
			   *rc,
			   *si,
			   *sc,
			   *dl,
			   *st;
	TreeCats	tc;
	LeafSource	ls;
	double	   *leaf;			/* the values of one leaf */
} TreeRead;

/* Leaf id, whose row of values (leaf_weights layout: its right child) is row. */
static bool
read_leaf(TreeRead *tr, int32_t id, int64_t row)
{
	const LeafSource *ls = &tr->ls;

	if (!ls->by_row)
		row = id;
	for (int32_t k = 0; k < ls->width; k++)
	{
		float		f;

		if (!tree_float(tr->r, ls->vals, ls->name, tr->t,
						(size_t) row * ls->width + k, &f))
			return false;
		/* dart scales each tree's output by its weight, in float */
		tr->leaf[k] = (double) (float) (f * tr->weight);
	}
	if (ls->width > 1)
		hb_mb_leaf_vector(&tr->r->b, id, tr->leaf);
	else
		hb_mb_leaf(&tr->r->b, id, tr->leaf[0]);
	return true;
}

/* Split node id, whose children are checked. */
static bool
read_split(TreeRead *tr, int32_t id, int64_t left, int64_t right)
{
	Reader	   *r = tr->r;
	HbModel    *m = r->m;
	int			t = tr->t;
	int64_t		feat,
				kind = 0,
				v;
	bool		dflt;
	float		f;
	const HbJson *jdl;

	if (!tree_int(r, tr->si, "split_indices", t, id, &feat))
		return false;
	if (feat < 0 || feat >= m->n_features)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: tree %d: node %d splits on feature %lld, but the model has %d features",
					   t, id, (long long) feat, m->n_features);
	jdl = hb_json_at(tr->dl, id);
	if (hb_json_bool(jdl, &dflt))
		;
	/* one compare: which of 0 and 1 it is varies from node to node */
	else if (hb_json_int(jdl, &v) && (uint64_t) v <= 1)
		dflt = v != 0;
	else
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: tree %d: default_left[%d] is neither a boolean nor 0/1",
					   t, id);

	if (tr->st != NULL && !tree_int(r, tr->st, "split_type", t, id, &kind))
		return false;
	if (kind == 1)
	{
		/* split_conditions of categorical nodes is meaningless (1.4 wrote NaN) */
		size_t		n = 0;
		uint32_t   *cats = read_node_cats(r, &tr->tc, t, id, &n);
		bool		ok;

		if (cats == NULL)
			return false;
		/* XGBoost: a category in the set goes right */
		ok = hb_mb_categorical(&r->b, id, (int32_t) feat, cats, n, false, dflt,
							   HB_MISSING_NAN, (int32_t) left, (int32_t) right);
		hb_free(cats);
		if (ok && !r->types_given)
			m->features[feat].type = HB_FEATURE_CATEGORICAL;
		return ok;
	}
	if (kind != 0)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: tree %d: split_type[%d] is %lld (0 numeric, 1 categorical)",
					   t, id, (long long) kind);
	if (!tree_float(r, tr->sc, "split_conditions", t, id, &f))
		return false;
	if (!isfinite(f))
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: tree %d: node %d splits on a non-finite threshold",
					   t, id);
	hb_mb_numeric(&r->b, id, (int32_t) feat, HB_SPLIT_LT, (double) f, dflt,
				  HB_MISSING_NAN, (int32_t) left, (int32_t) right);
	return true;
}

static bool
one_child(Reader *r, int t, int32_t id, int64_t left, int64_t right)
{
	return hb_fail(r->err, HB_ERR_INVALID,
				   "xgboost model: tree %d: node %d has one child (left %lld, right %lld)",
				   t, id, (long long) left, (long long) right);
}

/*
 * Node id of the tree, as the builder's walk reaches it (HbNodeReader): the
 * walk checks depth and nodes reached twice; the children are checked here
 * in XGBoost's terms before it sees them.
 */
static bool
read_node(void *ctx, int32_t id)
{
	TreeRead   *tr = ctx;
	Reader	   *r = tr->r;
	int			t = tr->t;
	int64_t		n = tr->n,
				left,
				right;

	if (!tree_int(r, tr->lc, "left_children", t, id, &left) ||
		!tree_int(r, tr->rc, "right_children", t, id, &right))
		return false;
	if (left == -1)
	{
		if (tr->ls.by_row)
		{
			/* 3.2+ vector leaves: right_children holds the leaf's row */
			size_t		rows = hb_json_len(tr->ls.vals) / tr->ls.width;

			if (right < 0 || (uint64_t) right >= rows)
				return hb_fail(r->err, HB_ERR_INVALID,
							   "xgboost model: tree %d: leaf %d has row %lld of leaf_weights, which has %zu rows",
							   t, id, (long long) right, rows);
		}
		else if (right != -1)
			return one_child(r, t, id, left, right);
		return read_leaf(tr, id, right);
	}
	if (right == -1)
		return one_child(r, t, id, left, right);
	/* the root is no node's child */
	if (left < 1 || left >= n || right < 1 || right >= n || left == right)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: tree %d: node %d has children %lld and %lld (the tree has %lld nodes)",
					   t, id, (long long) left, (long long) right, (long long) n);
	return read_split(tr, id, left, right);
}

/* The arrays of tree t, its number of nodes and where its leaf values are. */
static bool
tree_arrays(Reader *r, const HbJson *jt, int t, int32_t width, TreeRead *tr)
{
	const HbJson *param = hb_json_get(jt, "tree_param");
	char		where[48];
	int64_t		n,
				v;

	if (!hb_json_is_object(jt))
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: tree %d is a %s, expected an object",
					   t, hb_json_type_name(jt));
	if (param != NULL && !hb_json_is_object(param))
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: tree %d: tree_param is not an object", t);
	snprintf(where, sizeof(where), "tree %d tree_param", t);
	if (!(tr->lc = tree_array(r, jt, t, "left_children", -1)))
		return false;
	n = (int64_t) hb_json_len(tr->lc);
	if (!int_param(r, param, where, "num_nodes", true, n, &v))
		return false;
	if (v != n)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: tree %d: num_nodes is %lld but left_children has %lld entries",
					   t, (long long) v, (long long) n);
	if (n == 0)
		return hb_fail(r->err, HB_ERR_INVALID, "xgboost model: tree %d has no nodes", t);
	if (n > INT32_MAX / 2)
		return hb_fail(r->err, HB_ERR_LIMIT, "xgboost model: tree %d has too many nodes (%lld)",
					   t, (long long) n);
	tr->n = n;
	if (!(tr->rc = tree_array(r, jt, t, "right_children", n)) ||
		!(tr->si = tree_array(r, jt, t, "split_indices", n)) ||
		!(tr->sc = tree_array(r, jt, t, "split_conditions", n)) ||
		!(tr->dl = tree_array(r, jt, t, "default_left", n)))
		return false;
	tr->ls.vals = tr->sc;
	tr->ls.name = "split_conditions";
	tr->ls.width = 1;
	if (width > 1)
	{
		/* a vector-leaf tree: values from base_weights or leaf_weights */
		LeafSource *ls = &tr->ls;

		ls->width = width;
		ls->by_row = hb_json_get(jt, "leaf_weights") != NULL;
		ls->name = ls->by_row ? "leaf_weights" : "base_weights";
		if (!(ls->vals = tree_array(r, jt, t, ls->name, ls->by_row ? -1 : n * width)))
			return false;
		if (hb_json_len(ls->vals) % width != 0)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "xgboost model: tree %d: leaf_weights has %zu values, not a multiple of the %d targets",
						   t, hb_json_len(ls->vals), width);
	}
	tr->st = hb_json_get(jt, "split_type");
	if (tr->st != NULL && !(tr->st = tree_array(r, jt, t, "split_type", n)))
		return false;
	return true;
}

/*
 * Read tree t: one IR tree for a scalar tree, width for a vector-leaf one
 * (see LeafSource).  The builder walks it from the root and this reads the
 * nodes the walk reaches, each once, checking every index before using it;
 * nodes it never reaches (pruned nodes XGBoost marks deleted) stay zero
 * leaves, with their ids.
 */
static bool
read_tree(Reader *r, const HbJson *jt, int t, float weight, int32_t group,
		  int32_t width)
{
	TreeRead	tr;
	bool		ok = false;

	memset(&tr, 0, sizeof(tr));
	tr.r = r;
	tr.t = t;
	tr.weight = weight;
	if (!tree_arrays(r, jt, t, width, &tr))
		return false;
	tr.leaf = hb_alloc(sizeof(double) * tr.ls.width);
	if (tr.leaf == NULL)
		return nomem(r);
	if (hb_mb_start_tree(&r->b, t, group, (int32_t) tr.n, width) &&
		(tr.st == NULL || hb_json_get(jt, "categories_nodes") == NULL ||
		 read_tree_cats(r, jt, t, tr.n, &tr.tc)))
		ok = hb_mb_walk_tree(&r->b, read_node, &tr);
	hb_free(tr.leaf);
	hb_free(tr.tc.index);
	return ok;
}

static bool
check_cats_block(Reader *r, const HbJson *model)
{
	const HbJson *cats = hb_json_get(model, "cats");

	/*
	 * XGBoost 3.x stores the training categories here when it recodes them
	 * (string categories of a DataFrame); predictions then depend on that
	 * recoding, which hbird does not do.  An empty "enc" means the model
	 * takes category codes directly.
	 */
	if (cats != NULL && hb_json_len(hb_json_get(cats, "enc")) > 0)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "xgboost model recodes categories (non-empty \"cats\" block); models trained on category codes are supported, models trained on string categories are not");
	return true;
}

/*
 * The leaf width of a model's trees: 1 for scalar leaves, else the
 * size_leaf_vector of every tree (XGBoost's multi_strategy holds for the
 * whole model), which must be the number of outputs.  Each vector-leaf tree
 * becomes that many IR trees, one per output, of the same structure: the
 * executors then add each output's leaves in tree order in float32, as
 * XGBoost adds each component of the leaf vectors.
 */
static bool
leaf_width(Reader *r, const HbJson *trees, int32_t *width)
{
	int64_t		first = 0;

	*width = 1;
	for (size_t i = 0; i < hb_json_len(trees); i++)
	{
		const HbJson *param = hb_json_get(hb_json_at(trees, i), "tree_param");
		int64_t		v;
		char		where[48];

		snprintf(where, sizeof(where), "tree %zu tree_param", i);
		if (!int_param(r, param, where, "size_leaf_vector", true, 0, &v))
			return false;
		/* XGBoost writes 0 or 1 for scalar leaves */
		if (v <= 1)
			v = 1;
		if (i == 0)
			first = v;
		else if (v != first)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "xgboost model: its trees differ in leaf size (tree 0: %lld values per leaf, tree %zu: %lld)",
						   (long long) first, i, (long long) v);
	}
	if (first > 1 && first != r->m->n_outputs)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: its trees have leaf vectors of %lld values, but it has %d output%s",
					   (long long) first, r->m->n_outputs, r->m->n_outputs == 1 ? "" : "s");
	*width = (int32_t) first;
	return true;
}

/*
 * Where each tree goes: XGBoost puts each tree where its "id" says (trees
 * may be listed in any order), so order[pos] gets the index in "trees" of
 * the tree at pos.
 */
static bool
tree_order(Reader *r, const HbJson *trees, size_t n, size_t *order)
{
	for (size_t i = 0; i < n; i++)
		order[i] = SIZE_MAX;
	for (size_t i = 0; i < n; i++)
	{
		const HbJson *jid = hb_json_get(hb_json_at(trees, i), "id");
		size_t		pos = i;
		int64_t		v;

		if (jid != NULL)
		{
			if (!hb_json_int(jid, &v) || v < 0 || (uint64_t) v >= n ||
				order[v] != SIZE_MAX)
				return hb_fail(r->err, HB_ERR_INVALID,
							   "xgboost model: tree %zu has id %s, expected each of 0 to %zu once",
							   i, hb_json_is_number(jid) ? "out of range or repeated" : "that is not an integer",
							   n - 1);
			pos = (size_t) v;
		}
		else if (order[pos] != SIZE_MAX)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "xgboost model: tree %zu has no id, and tree %zu has id %zu",
						   i, order[pos], pos);
		order[pos] = i;
	}
	return true;
}

/* gbtree or dart; weights is dart's weight_drop, NULL for gbtree. */
static bool
read_trees(Reader *r, const HbJson *model, const char *where,
		   const HbJson *weights)
{
	HbModel    *m = r->m;
	const HbJson *trees,
			   *info,
			   *param;
	size_t		n;
	int64_t		v;
	int32_t		width;
	size_t	   *order;
	bool		ok = true;

	if (!check_cats_block(r, model))
		return false;
	if (!(trees = need(r, model, where, "trees", HB_JSON_ARRAY)) ||
		!(info = need(r, model, where, "tree_info", HB_JSON_ARRAY)))
		return false;
	n = hb_json_len(trees);
	if (n > INT32_MAX)
		return hb_fail(r->err, HB_ERR_LIMIT, "xgboost model has too many trees (%zu)", n);
	param = hb_json_get(model, "gbtree_model_param");
	if (!int_param(r, param, "gbtree_model_param", "num_trees", true, (int64_t) n, &v))
		return false;
	if (v != (int64_t) n)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: num_trees is %lld but there are %zu trees",
					   (long long) v, n);
	if (hb_json_len(info) != n)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: tree_info has %zu entries for %zu trees",
					   hb_json_len(info), n);
	if (weights != NULL && hb_json_len(weights) != n)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: weight_drop has %zu entries for %zu trees",
					   hb_json_len(weights), n);

	if (!leaf_width(r, trees, &width))
		return false;

	/*
	 * Each round adds num_parallel_tree trees per output group (one per
	 * round with vector leaves), and XGBoost predicts with whole rounds
	 * only: trees past the last whole round, which only a hand-made file
	 * has, would be summed here and ignored there
	 */
	if (!int_param(r, param, "gbtree_model_param", "num_parallel_tree", true, 1, &v))
		return false;
	if (v < 1 || v > INT32_MAX)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: num_parallel_tree is %lld", (long long) v);
	if (n % (size_t) (v * (width > 1 ? 1 : m->n_outputs)) != 0)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: %zu trees is not a whole number of rounds of %lld trees (%d output groups, num_parallel_tree %lld)",
					   n, (long long) (v * (width > 1 ? 1 : m->n_outputs)),
					   width > 1 ? 1 : m->n_outputs, (long long) v);
	if ((int64_t) n * width > INT32_MAX)
		return hb_fail(r->err, HB_ERR_LIMIT,
					   "xgboost model has too many trees (%zu of %d targets)", n, width);
	hb_mb_start_model(&r->b, m, "xgboost model: ", r->err);
	if (!hb_mb_reserve_trees(&r->b, (int64_t) n * width))
		return false;
	order = hb_alloc(sizeof(size_t) * (n ? n : 1));
	if (order == NULL)
		return nomem(r);
	ok = tree_order(r, trees, n, order);

	for (size_t pos = 0; pos < n && ok; pos++)
	{
		int64_t		group;
		float		w = 1.0f;

		if (!hb_json_int(hb_json_at(info, pos), &group) ||
			group < 0 || group >= m->n_outputs)
		{
			ok = hb_fail(r->err, HB_ERR_INVALID,
						 "xgboost model: tree_info[%zu] is not an output group (the model has %d outputs)",
						 pos, m->n_outputs);
			break;
		}
		/* a vector-leaf tree adds to every output; XGBoost files it in group 0 */
		if (width > 1 && group != 0)
		{
			ok = hb_fail(r->err, HB_ERR_INVALID,
						 "xgboost model: tree_info[%zu] is %lld, but a vector-leaf tree belongs to group 0",
						 pos, (long long) group);
			break;
		}
		if (weights != NULL &&
			(!hb_json_float(hb_json_at(weights, pos), &w) || !isfinite(w)))
		{
			ok = hb_fail(r->err, HB_ERR_INVALID,
						 "xgboost model: weight_drop[%zu] is not a finite number", pos);
			break;
		}
		ok = read_tree(r, hb_json_at(trees, order[pos]), (int) pos, w,
					   (int32_t) group, width);
		hb_check_interrupts();
	}
	hb_free(order);
	return ok;
}

/*
 * gblinear: "weights" is (num_feature + 1) x n_outputs, row-major, the last
 * row being the bias.
 *
 * XGBoost's linear booster sums only the entries present in its sparse row,
 * and a NaN input is absent: a missing feature contributes 0 (it is not
 * "missing goes some way" as in trees).  It computes in float32:
 *	  margin[g] = (float) (bias[g] + base_margin[g]), then
 *	  margin[g] += (float) x[f] * (float) weight[f, g] for present f in order.
 * The IR keeps the weights and the bias apart; executors must reproduce that.
 */
static bool
read_linear(Reader *r, const HbJson *model)
{
	HbModel    *m = r->m;
	const HbJson *w;
	int64_t		nf = m->n_features,
				ng = m->n_outputs;
	float		f;

	if (!(w = need(r, model, "gradient_booster.model", "weights", HB_JSON_ARRAY)))
		return false;
	if ((int64_t) hb_json_len(w) != (nf + 1) * ng)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: gblinear has %zu weights, expected (%lld features + 1) x %lld outputs",
					   hb_json_len(w), (long long) nf, (long long) ng);
	m->weights = hb_alloc(sizeof(double) * nf * ng);
	m->bias = hb_alloc(sizeof(double) * ng);
	if (m->weights == NULL || m->bias == NULL)
		return nomem(r);
	for (int64_t i = 0; i < (nf + 1) * ng; i++)
	{
		if (!hb_json_float(hb_json_at(w, i), &f) || !isfinite(f))
			return hb_fail(r->err, HB_ERR_INVALID,
						   "xgboost model: gblinear weight %lld is not a finite number",
						   (long long) i);
		if (i < nf * ng)
			m->weights[i] = (double) f;
		else
			m->bias[i - nf * ng] = (double) f;
	}
	m->n_trees = 0;
	m->max_depth = 0;
	return true;
}


/* ---------- learner ---------- */

static bool
read_features(Reader *r, const HbJson *learner, int64_t nf)
{
	HbModel    *m = r->m;
	const HbJson *names = hb_json_get(learner, "feature_names");
	const HbJson *types = hb_json_get(learner, "feature_types");

	if (names != NULL && !hb_json_is_array(names))
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: learner.feature_names is not an array");
	if (types != NULL && !hb_json_is_array(types))
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: learner.feature_types is not an array");
	if (hb_json_len(names) > 0 && (int64_t) hb_json_len(names) != nf)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: %zu feature names for %lld features",
					   hb_json_len(names), (long long) nf);
	if (hb_json_len(types) > 0 && (int64_t) hb_json_len(types) != nf)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: %zu feature types for %lld features",
					   hb_json_len(types), (long long) nf);

	m->features = hb_alloc0(sizeof(HbFeature) * nf);
	if (m->features == NULL)
		return nomem(r);
	m->n_features = (int32_t) nf;
	m->has_feature_names = hb_json_len(names) > 0;
	r->types_given = hb_json_len(types) > 0;

	for (int64_t i = 0; i < nf; i++)
	{
		HbFeature  *f = &m->features[i];

		if (m->has_feature_names)
		{
			const char *s = hb_json_string(hb_json_at(names, i));

			if (s == NULL)
				return hb_fail(r->err, HB_ERR_INVALID,
							   "xgboost model: feature_names[%lld] is not a string",
							   (long long) i);
			f->name = hb_strdup(s);
		}
		else
		{
			/* XGBoost's own default names */
			f->name = hb_feature_default_name(i);
		}
		if (f->name == NULL)
			return nomem(r);

		f->type = HB_FEATURE_NUMERIC;
		if (r->types_given)
		{
			const char *s = hb_json_string(hb_json_at(types, i));

			if (s == NULL)
				return hb_fail(r->err, HB_ERR_INVALID,
							   "xgboost model: feature_types[%lld] is not a string",
							   (long long) i);
			/* "i" is an indicator (0/1) feature: numeric as far as splits go */
			if (strcmp(s, "q") == 0 || strcmp(s, "float") == 0 ||
				strcmp(s, "i") == 0)
				f->type = HB_FEATURE_NUMERIC;
			else if (strcmp(s, "int") == 0)
				f->type = HB_FEATURE_INTEGER;
			else if (strcmp(s, "c") == 0)
				f->type = HB_FEATURE_CATEGORICAL;
			else
				return hb_fail(r->err, HB_ERR_UNSUPPORTED,
							   "xgboost model: feature %lld has unknown type \"%.64s\"",
							   (long long) i, s);
		}
	}
	return true;
}

/*
 * base_score, one float per output, in prediction space: "0.5", "5E-1", a
 * number, or 3.x's bracketed "[a,b,...]" (one value, or one per output).
 * Absent means XGBoost's default of 0.5.
 */
static bool
read_base_score(Reader *r, const HbJson *lmp, float *vals)
{
	const HbJson *bs = hb_json_get(lmp, "base_score");
	int			n_out = r->m->n_outputs;
	const char *s = hb_json_string(bs);
	float		f;

	if (bs == NULL)
	{
		for (int g = 0; g < n_out; g++)
			vals[g] = 0.5f;
		return true;
	}
	if (s != NULL && s[strspn(s, " \t\r\n")] == '[')
	{
		/* the vector is itself JSON; parse it with its own error report */
		HbJsonDoc  *doc = NULL;
		HbError		local;
		const HbJson *arr;
		size_t		k;
		bool		ok = true;

		memset(&local, 0, sizeof(local));
		if (!hb_json_parse(s, strlen(s), &doc, &local))
		{
			if (local.code == HB_ERR_NOMEM)
				return nomem(r);
			return hb_fail(r->err, HB_ERR_INVALID,
						   "xgboost model: base_score \"%.64s\" is not a list of numbers", s);
		}
		arr = hb_json_root(doc);
		k = hb_json_len(arr);
		if (!hb_json_is_array(arr) || (k != 1 && k != (size_t) n_out))
			ok = hb_fail(r->err, HB_ERR_INVALID,
						 "xgboost model: base_score \"%.64s\" has %zu values for %d outputs",
						 s, k, n_out);
		for (int g = 0; ok && g < n_out; g++)
			if (!hb_json_float(hb_json_at(arr, k == 1 ? 0 : g), &vals[g]))
				ok = hb_fail(r->err, HB_ERR_INVALID,
							 "xgboost model: base_score \"%.64s\" is not a list of numbers", s);
		hb_json_free(doc);
		return ok;
	}
	if (!hb_json_float(bs, &f))
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: base_score %s%.64s%s is not a number",
					   s ? "\"" : "", s ? s : "", s ? "\"" : "");
	for (int g = 0; g < n_out; g++)
		vals[g] = f;
	return true;
}

/*
 * Turn base scores into margins the way the objective's ProbToMargin does,
 * in float32.
 */
static bool
base_margins(Reader *r, const float *vals)
{
	HbModel    *m = r->m;

	m->base_margin = hb_alloc(sizeof(double) * m->n_outputs);
	if (m->base_margin == NULL)
		return nomem(r);
	for (int g = 0; g < m->n_outputs; g++)
	{
		float		p = vals[g];
		float		margin;

		switch (r->obj->base)
		{
			case BASE_LOGIT:
				if (!(p >= 0.0f && p <= 1.0f))
					return hb_fail(r->err, HB_ERR_INVALID,
								   "xgboost model: base_score %g must lie between 0 and 1 for %s",
								   (double) p, r->obj->name);

				/*
				 * XGBoost up to 3.1 refuses 0 and 1; later versions accept
				 * them for constant labels and clamp to [1e-6, 1 - 1e-6].
				 */
				if (p == 0.0f)
					p = 1e-6f;
				else if (p == 1.0f)
					p = 1.0f - 1e-6f;
				margin = -logf(1.0f / p - 1.0f);
				break;
			case BASE_LOG:
				if (!(p > 0.0f) || isinf(p))
					return hb_fail(r->err, HB_ERR_INVALID,
								   "xgboost model: base_score %g must be positive for %s",
								   (double) p, r->obj->name);
				margin = logf(p);
				break;
			default:
				margin = p;
				break;
		}
		if (!isfinite(margin))
			return hb_fail(r->err, HB_ERR_INVALID,
						   "xgboost model: base_score %g is not finite", (double) p);
		m->base_margin[g] = (double) margin;
	}
	return true;
}

static bool
read_objective(Reader *r, const HbJson *learner)
{
	const HbJson *obj;
	const HbJson *jname;
	const char *name;

	if (!(obj = need(r, learner, "learner", "objective", HB_JSON_OBJECT)) ||
		!(jname = need(r, obj, "learner.objective", "name", HB_JSON_STRING)))
		return false;
	name = hb_json_string(jname);
	for (size_t i = 0; i < sizeof(objectives) / sizeof(objectives[0]); i++)
		if (strcmp(objectives[i].name, name) == 0)
		{
			r->obj = &objectives[i];
			r->m->objective = hb_strdup(name);
			if (r->m->objective == NULL)
				return nomem(r);
			return true;
		}
	if (strncmp(name, "survival:", 9) == 0)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "xgboost objective \"%.64s\" is not supported (survival models are not)",
					   name);
	if (strcmp(name, "binary:hinge") == 0)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "xgboost objective \"binary:hinge\" is not supported (it predicts a 0/1 class from the margin's sign)");
	return hb_fail(r->err, HB_ERR_UNSUPPORTED,
				   "xgboost objective \"%.64s\" is not supported", name);
}

/*
 * num_target > 1: one output per target (XGBoost 1.6+), each through the
 * objective's link on its own, with the trees of one_output_per_tree filed
 * by tree_info under their target.  Regression objectives, and
 * binary:logistic on several labels (multi-label: each target is one
 * label's probability), which is a multi-target model of probabilities, not
 * a binary classifier.
 */
static bool
multi_target(Reader *r, int64_t nclass, int64_t ntarget)
{
	HbModel    *m = r->m;

	if (nclass > 1)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "xgboost model has %lld classes and %lld targets; hbird reads one or the other",
					   (long long) nclass, (long long) ntarget);
	if (m->task != HB_TASK_REGRESSION && m->task != HB_TASK_BINARY)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "xgboost model has %lld targets with objective %s; multi-target models are read for regression and binary:logistic objectives",
					   (long long) ntarget, r->obj->name);
	if (m->task == HB_TASK_BINARY && m->link != HB_LINK_SIGMOID)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "xgboost model has %lld targets with objective %s; multi-label models are read for binary:logistic",
					   (long long) ntarget, r->obj->name);
	m->task = HB_TASK_REGRESSION;
	m->predict_class = false;
	m->n_outputs = (int32_t) ntarget;
	m->n_classes = 0;
	return true;
}

static bool
read_learner(Reader *r, const HbJson *root)
{
	HbModel    *m = r->m;
	const HbJson *learner,
			   *lmp,
			   *gb,
			   *jname,
			   *model,
			   *inner;
	const char *booster;
	int64_t		nf,
				nclass,
				ntarget;
	float	   *vals;
	bool		ok;

	if (!hb_json_is_object(root))
		return hb_fail(r->err, HB_ERR_INVALID,
					   "not an xgboost model: the document is a json %s, not an object",
					   hb_json_type_name(root));
	learner = hb_json_get(root, "learner");
	if (!hb_json_is_object(learner))
		return hb_fail(r->err, HB_ERR_INVALID,
					   "not an xgboost model: no \"learner\" object at the top level");
	if (!read_objective(r, learner))
		return false;

	if (!(lmp = need(r, learner, "learner", "learner_model_param", HB_JSON_OBJECT)))
		return false;
	if (!int_param(r, lmp, "learner_model_param", "num_feature", false, 0, &nf) ||
		!int_param(r, lmp, "learner_model_param", "num_class", true, 0, &nclass) ||
		!int_param(r, lmp, "learner_model_param", "num_target", true, 1, &ntarget))
		return false;
	if (nf <= 0)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: num_feature is %lld", (long long) nf);
	if (nf > HB_MAX_FEATURES)
		return hb_fail(r->err, HB_ERR_LIMIT,
					   "xgboost model has %lld features, more than the %d hbird supports",
					   (long long) nf, HB_MAX_FEATURES);
	if (nclass < 0 || ntarget < 1)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "xgboost model: num_class %lld, num_target %lld",
					   (long long) nclass, (long long) ntarget);
	if (ntarget > XGB_MAX_CLASSES)
		return hb_fail(r->err, HB_ERR_LIMIT,
					   "xgboost model has %lld targets, more than %d",
					   (long long) ntarget, XGB_MAX_CLASSES);

	m->task = r->obj->task;
	m->link = r->obj->link;
	m->predict_class = r->obj->predict_class;
	if (ntarget > 1)
	{
		if (!multi_target(r, nclass, ntarget))
			return false;
	}
	else if (m->task == HB_TASK_MULTICLASS)
	{
		if (nclass < 1)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "xgboost model: objective %s needs num_class, found %lld",
						   r->obj->name, (long long) nclass);
		if (nclass > XGB_MAX_CLASSES)
			return hb_fail(r->err, HB_ERR_LIMIT,
						   "xgboost model has %lld classes, more than %d",
						   (long long) nclass, XGB_MAX_CLASSES);
		m->n_outputs = (int32_t) nclass;
		m->n_classes = (int32_t) nclass;
	}
	else
	{
		/* num_class > 1 would give one output group per class */
		if (nclass > 1)
			return hb_fail(r->err, HB_ERR_UNSUPPORTED,
						   "xgboost model: num_class %lld with objective %s is not supported",
						   (long long) nclass, r->obj->name);
		m->n_outputs = 1;
		m->n_classes = m->task == HB_TASK_BINARY ? 2 : 0;
	}

	if (!read_features(r, learner, nf))
		return false;

	if (!(gb = need(r, learner, "learner", "gradient_booster", HB_JSON_OBJECT)) ||
		!(jname = need(r, gb, "learner.gradient_booster", "name", HB_JSON_STRING)))
		return false;
	booster = hb_json_string(jname);
	if (strcmp(booster, "gbtree") == 0)
	{
		m->estimator = HB_EST_TREES;
		if (!(model = need(r, gb, "learner.gradient_booster", "model", HB_JSON_OBJECT)) ||
			!read_trees(r, model, "learner.gradient_booster.model", NULL))
			return false;
	}
	else if (strcmp(booster, "dart") == 0)
	{
		const HbJson *wd;

		m->estimator = HB_EST_TREES;
		if (!(inner = need(r, gb, "learner.gradient_booster", "gbtree", HB_JSON_OBJECT)) ||
			!(model = need(r, inner, "learner.gradient_booster.gbtree", "model",
						   HB_JSON_OBJECT)) ||
			!(wd = need(r, gb, "learner.gradient_booster", "weight_drop", HB_JSON_ARRAY)) ||
			!read_trees(r, model, "learner.gradient_booster.gbtree.model", wd))
			return false;
	}
	else if (strcmp(booster, "gblinear") == 0)
	{
		m->estimator = HB_EST_LINEAR;
		if (!(model = need(r, gb, "learner.gradient_booster", "model", HB_JSON_OBJECT)) ||
			!read_linear(r, model))
			return false;
	}
	else
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "xgboost booster \"%.64s\" is not supported (gbtree, dart and gblinear are)",
					   booster);

	vals = hb_alloc(sizeof(float) * m->n_outputs);
	if (vals == NULL)
		return nomem(r);
	ok = read_base_score(r, lmp, vals) && base_margins(r, vals);
	hb_free(vals);
	return ok;
}

/* Say what the bytes probably are when they are not JSON at all. */
static void
hint_format(const char *bytes, size_t len, HbError *err)
{
	const unsigned char *s = (const unsigned char *) bytes;

	if (len >= 2 && s[0] == '{' && strchr("iUIlLdDSTFZ$#", s[1]) != NULL && s[1] != '\0')
		hb_fail_detail(err, "The bytes look like UBJSON (XGBoost's .ubj format). Upload them with format 'xgboost-ubj'.");
	else if (len >= 4 && memcmp(s, "binf", 4) == 0)
		hb_fail_detail(err, "The bytes look like XGBoost's legacy binary format. Load the model in XGBoost and save it with a file name ending in .json or .ubj.");
}

/* The same for bytes that are not UBJSON. */
static void
hint_format_ubj(const char *bytes, size_t len, HbError *err)
{
	size_t		i = 0;

	while (i < len && (bytes[i] == ' ' || bytes[i] == '\t' ||
					   bytes[i] == '\n' || bytes[i] == '\r'))
		i++;
	if (i + 1 < len && bytes[i] == '{' &&
		(bytes[i + 1] == '"' || bytes[i + 1] == ' ' || bytes[i + 1] == '\n' ||
		 bytes[i + 1] == '\r' || bytes[i + 1] == '\t'))
		hb_fail_detail(err, "The bytes look like text JSON. Upload them with format 'xgboost-json'.");
	else if (len >= 4 && memcmp(bytes, "binf", 4) == 0)
		hb_fail_detail(err, "The bytes look like XGBoost's legacy binary format. Load the model in XGBoost and save it with a file name ending in .json or .ubj.");
}

/*
 * Read a model from a parsed document (text JSON or UBJSON: both give the
 * same tree, so one reader serves both).  Frees doc.
 */
static bool
read_document(HbJsonDoc *doc, HbFormat format, HbModel **out, HbError *err)
{
	Reader		r;
	bool		ok;

	memset(&r, 0, sizeof(r));
	r.err = err;
	r.m = hb_alloc0(sizeof(HbModel));
	if (r.m == NULL)
	{
		hb_json_free(doc);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory while reading the xgboost model");
	}
	r.m->format = format;
	r.m->cmp = HB_CMP_LT_F32;
	r.m->sum_f32 = true;

	ok = read_learner(&r, hb_json_root(doc));
	hb_json_free(doc);
	/* the trees and category sets are the model's, even on failure */
	hb_mb_free(&r.b);
	if (!ok)
	{
		hb_model_free(r.m);
		return false;
	}
	*out = r.m;
	return true;
}

bool
hb_read_xgboost_json(const char *bytes, size_t len, HbModel **out, HbError *err)
{
	HbJsonDoc  *doc = NULL;

	*out = NULL;
	if (!hb_json_parse(bytes, len, &doc, err))
	{
		if (err && err->code == HB_ERR_PARSE)
			hint_format(bytes, len, err);
		return false;
	}
	return read_document(doc, HB_FORMAT_XGBOOST_JSON, out, err);
}

bool
hb_read_xgboost_ubjson(const char *bytes, size_t len, HbModel **out,
					   HbError *err)
{
	HbJsonDoc  *doc = NULL;

	*out = NULL;
	if (!hb_ubjson_parse(bytes, len, &doc, err))
	{
		if (err && err->code == HB_ERR_PARSE)
			hint_format_ubj(bytes, len, err);
		return false;
	}
	return read_document(doc, HB_FORMAT_XGBOOST_UBJSON, out, err);
}
