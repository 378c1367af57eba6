/*
 * onnx_trees.c
 *	  Tree ensembles of the ONNX reader (onnx_int.h): TreeEnsembleClassifier
 *	  and TreeEnsembleRegressor (legacy attributes) and the opset 5
 *	  TreeEnsemble, lowered to IR trees through the model builder
 *	  (model_builder.h).
 *
 * onnxruntime compares float32 inputs with float32 thresholds in six ways
 * (BRANCH_LEQ, _LT, _GTE, _GT, _EQ, _NEQ).  The IR has one comparison per
 * model, so every mode is written as "x < t" or "x <= t" going left, which
 * the builder puts in the model's comparison:
 *	float32 (HB_CMP_LT_F32):  x <= t  <=>  x < nextafterf(t, +inf)
 *	double  (HB_CMP_LE_F64):  x < t   <=>  x <= nextafter(t, -inf)
 * GTE / GT are the negations of LT / LEQ (children swapped); EQ and NEQ
 * become two nodes (x below t, then x above t), the subtree on the
 * "different" side copied; BRANCH_MEMBER (x in a set of values) becomes
 * such a pair per value.  A missing value follows the true branch when
 * nodes_missing_value_tracks_true is set, else the false branch (a NaN
 * comparison is false).  A leaf may feed several classes (class_ids /
 * target_ids): the tree is emitted once per class it feeds, each copy
 * adding to that class's margin.  AVERAGE divides the leaves by the number
 * of trees; base_values are added last, as a one-leaf tree per output
 * (onnxruntime adds them after the sum, in float32).
 *
 * Both layouts are read into one (OnnxEnsemble: nodes with their children
 * resolved to indexes, leaf weights sorted by node and class) and emitted
 * the same way.  Emitting recurses with a depth bound, so a cyclic or very
 * deep ONNX tree is refused before it can exhaust the stack.
 */
#include "onnx_int.h"
#include "model_builder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	int32_t		t_idx;			/* resolved to indexes into the nodes */
	int32_t		f_idx;
	int32_t		w_first;		/* leaf weights: [w_first, w_first + w_n) */
	int32_t		w_n;
	int32_t		set_first;		/* BRANCH_MEMBER: sorted values in */
	int32_t		set_n;			/* OnnxEnsemble.sets */
} OnnxTreeNode;

typedef struct LeafWeight
{
	int32_t		node;			/* index into the nodes */
	int32_t		cls;
	double		w;
} LeafWeight;

/* An ensemble in one layout, whichever operator it came from. */
typedef struct OnnxEnsemble
{
	OnnxTreeNode *nodes;
	size_t		n_nodes;
	LeafWeight *weights;		/* by node, then class */
	size_t		n_weights;
	double	   *sets;			/* BRANCH_MEMBER values */
	int64_t		n_trees;
	int64_t		max_feature;	/* largest feature a split reads, or -1 */
	int			n_cols;			/* outputs the leaves feed */
	double		scale;			/* AVERAGE: 1 / trees */
} OnnxEnsemble;

/* One IR tree being emitted: the copy of an ONNX tree for class cls. */
typedef struct TreeEmit
{
	OnnxReader *r;
	const OnnxNode *n;
	const OnnxEnsemble *e;
	HbModelBuilder b;
	int			cls;
	bool		hit;			/* a leaf of class cls was emitted */
	int32_t		n_out;			/* IR nodes of the tree so far */
} TreeEmit;

static void
ensemble_free(OnnxEnsemble *e)
{
	hb_free(e->nodes);
	hb_free(e->weights);
	hb_free(e->sets);
}


/* ---------- emitting IR trees ---------- */

/* A new IR node of the tree being emitted, within the limits. */
static int32_t
tb_new(TreeEmit *te)
{
	int32_t		id;

	if (te->n_out >= ONNX_MAX_TREE_NODES ||
		te->r->total_nodes >= ONNX_MAX_ALL_NODES)
	{
		hb_fail(te->r->err, HB_ERR_LIMIT,
				"ONNX node \"%s\" (op %s): the trees need more than %d nodes once lowered",
				onnx_node_label(te->n), onnx_op(te->n),
				te->n_out >= ONNX_MAX_TREE_NODES ? ONNX_MAX_TREE_NODES : ONNX_MAX_ALL_NODES);
		return -1;
	}
	id = hb_mb_add_node(&te->b);
	if (id < 0)
		return -1;
	te->r->total_nodes++;
	te->n_out++;
	return id;
}

static int32_t emit(TreeEmit *te, int32_t idx, int depth);
static int32_t emit_member(TreeEmit *te, const OnnxTreeNode *on, int32_t k,
						   int depth);

/* One IR split node: "x op thr" goes left. */
static int32_t
emit_split(TreeEmit *te, const OnnxTreeNode *on, HbSplitOp op, double thr,
		   int32_t left_src, int32_t right_src, bool default_left, int depth)
{
	int32_t		id = tb_new(te);
	int32_t		l,
				rr;

	if (id < 0)
		return -1;
	l = emit(te, left_src, depth + 1);
	if (l < 0)
		return -1;
	rr = emit(te, right_src, depth + 1);
	if (rr < 0)
		return -1;
	hb_mb_numeric(&te->b, id, on->feature, op, thr, default_left,
				  HB_MISSING_NAN, l, rr);
	return id;
}

/*
 * x = v as two splits and their subtrees, in this order: x < v goes to
 * below_src; else x <= v to equal_src; else above, which is node above_src
 * or, from above_k >= 0 on, the rest of a BRANCH_MEMBER set.  A missing
 * value goes below when nan_below, else on to the second split and equal.
 */
static int32_t
emit_equal(TreeEmit *te, const OnnxTreeNode *on, double v, int32_t below_src,
		   int32_t equal_src, int32_t above_src, int32_t above_k,
		   bool nan_below, int depth)
{
	int32_t		a = tb_new(te),
				l,
				second,
				sl,
				sr;

	if (a < 0)
		return -1;
	l = emit(te, below_src, depth + 1);
	if (l < 0)
		return -1;
	second = tb_new(te);
	if (second < 0)
		return -1;
	sl = emit(te, equal_src, depth + 2);
	if (sl < 0)
		return -1;
	sr = above_k >= 0 ? emit_member(te, on, above_k, depth + 2) :
		emit(te, above_src, depth + 2);
	if (sr < 0)
		return -1;
	hb_mb_numeric(&te->b, a, on->feature, HB_SPLIT_LT, v, nan_below,
				  HB_MISSING_NAN, l, second);
	hb_mb_numeric(&te->b, second, on->feature, HB_SPLIT_LE, v, true,
				  HB_MISSING_NAN, sl, sr);
	return a;
}

/* x == t (or x != t): the "different" subtree appears twice. */
static int32_t
emit_eq(TreeEmit *te, const OnnxTreeNode *on, int depth)
{
	bool		eq = on->mode == MODE_EQ;
	int32_t		same = eq ? on->t_idx : on->f_idx;
	int32_t		diff = eq ? on->f_idx : on->t_idx;

	/* NaN != t holds, so NEQ sends NaN true whatever mtt says */
	bool		nan_to_true = eq ? on->mtt : true;
	bool		nan_to_same = eq ? nan_to_true : !nan_to_true;

	return emit_equal(te, on, on->value, diff, same, diff, -1, !nan_to_same, depth);
}

/* A leaf: the sum of its weights for class te->cls, times the scale. */
static int32_t
emit_leaf(TreeEmit *te, const OnnxTreeNode *on)
{
	const LeafWeight *w = te->e->weights;
	double		v = 0.0;
	int32_t		id = tb_new(te);

	if (id < 0)
		return -1;
	for (int32_t i = on->w_first; i < on->w_first + on->w_n; i++)
		if (w[i].cls == te->cls)
		{
			v += w[i].w;
			te->hit = true;
		}
	hb_mb_leaf(&te->b, id, v * te->e->scale);
	return id;
}

/*
 * Emit the subtree of node idx for class te->cls; returns its IR index or
 * -1 (error set).  Depth is bounded before recursing.
 */
static int32_t
emit(TreeEmit *te, int32_t idx, int depth)
{
	const OnnxTreeNode *on = &te->e->nodes[idx];

	if (depth > HB_MAX_DEPTH)
	{
		hb_fail(te->r->err, HB_ERR_LIMIT,
				"ONNX node \"%s\" (op %s): tree %lld is deeper than %d levels (or has a cycle)",
				onnx_node_label(te->n), onnx_op(te->n), (long long) on->tree,
				HB_MAX_DEPTH);
		return -1;
	}
	if ((te->n_out & 4095) == 0)
		hb_check_interrupts();

	switch ((NodeMode) on->mode)
	{
		case MODE_LEAF:
			return emit_leaf(te, on);
		case MODE_LEQ:
			return emit_split(te, on, HB_SPLIT_LE, on->value, on->t_idx,
							  on->f_idx, on->mtt, depth);
		case MODE_LT:
			return emit_split(te, on, HB_SPLIT_LT, on->value, on->t_idx,
							  on->f_idx, on->mtt, depth);
		case MODE_GTE:
			return emit_split(te, on, HB_SPLIT_LT, on->value, on->f_idx,
							  on->t_idx, !on->mtt, depth);
		case MODE_GT:
			return emit_split(te, on, HB_SPLIT_LE, on->value, on->f_idx,
							  on->t_idx, !on->mtt, depth);
		case MODE_EQ:
		case MODE_NEQ:
			return emit_eq(te, on, depth);
		case MODE_MEMBER:
			return emit_member(te, on, 0, depth);
	}
	hb_fail(te->r->err, HB_ERR_UNSUPPORTED,
			"ONNX node \"%s\" (op %s): unknown node mode",
			onnx_node_label(te->n), onnx_op(te->n));
	return -1;
}

/*
 * x in {v_0 < v_1 < ...}, from value k on (x is known to be above v_k-1):
 * below v_k is not in the set; at most v_k is v_k; else the next values.
 * Both subtrees are copied once per value, so sets are kept small by the
 * depth limit.
 */
static int32_t
emit_member(TreeEmit *te, const OnnxTreeNode *on, int32_t k, int depth)
{
	/*
	 * An empty set emits no split: its false side takes its place, one
	 * level deeper all the same, so that a cycle of empty sets meets the
	 * depth limit (it recursed without end)
	 */
	if (on->set_n == 0)
		return emit(te, on->f_idx, depth + 1);
	if (k == on->set_n)
		return emit(te, on->f_idx, depth);
	if (depth + 1 > HB_MAX_DEPTH)
	{
		hb_fail(te->r->err, HB_ERR_LIMIT,
				"ONNX node \"%s\" (op %s): a set of %d values makes tree %lld deeper than %d levels",
				onnx_node_label(te->n), onnx_op(te->n), on->set_n,
				(long long) on->tree, HB_MAX_DEPTH);
		return -1;
	}
	/* NaN is in no set: the false side, or the true side when it tracks true */
	return emit_equal(te, on, te->e->sets[on->set_first + k], on->f_idx,
					  on->t_idx, -1, k + 1, k == 0 ? !on->mtt : false, depth);
}

/*
 * Emitting the trees of ensemble e of node n into the model: messages of
 * the builder's check name IR trees, as hb_model_validate's do.  Lowered
 * trees have no node the root does not reach.
 */
static void
emit_start(TreeEmit *te, OnnxReader *r, const OnnxNode *n, const OnnxEnsemble *e)
{
	te->r = r;
	te->n = n;
	te->e = e;
	hb_mb_start_model(&te->b, r->m, "", r->err);
	te->b.all_reached = true;
}

/*
 * The copy of the ONNX tree rooted at node root for class cls, as the
 * model's next IR tree.  With keep_empty false, a copy none of whose
 * emitted leaves feeds cls is dropped again.
 */
static bool
emit_tree(TreeEmit *te, int32_t root, int cls, bool keep_empty)
{
	HbModel    *m = te->r->m;

	te->cls = cls;
	te->hit = false;
	te->n_out = 0;
	if (!hb_mb_start_tree(&te->b, m->n_trees, cls, 0, 1) ||
		emit(te, root, 0) < 0)
		return false;
	if (!te->hit && !keep_empty)
	{
		te->r->total_nodes -= te->n_out;
		hb_mb_drop_tree(&te->b);
		return true;
	}
	return hb_mb_end_tree(&te->b);
}

/*
 * onnxruntime adds base_values after summing the trees, and float32
 * addition is not associative, so the base becomes a last one-leaf tree per
 * output rather than the IR's base margin (added first).
 */
static bool
base_trees(TreeEmit *te, const double *base, size_t n_base)
{
	HbModel    *m = te->r->m;

	for (size_t g = 0; g < n_base; g++)
	{
		if (base[g] == 0.0)
			continue;
		if (!hb_mb_start_tree(&te->b, m->n_trees, (int32_t) g, 1, 1))
			return false;
		hb_mb_leaf(&te->b, 0, m->sum_f32 ? (double) (float) base[g] : base[g]);
		if (!hb_mb_end_tree(&te->b))
			return false;
	}
	return true;
}


/* ---------- what both layouts share ---------- */

/* (a1, a2) against (b1, b2), the first key first. */
static int
cmp_pair(int64_t a1, int64_t a2, int64_t b1, int64_t b2)
{
	if (a1 != b1)
		return a1 < b1 ? -1 : 1;
	if (a2 != b2)
		return a2 < b2 ? -1 : 1;
	return 0;
}

/* nodes by tree, then id */
static int
cmp_tree_node(const void *a, const void *b)
{
	const OnnxTreeNode *x = a,
			   *y = b;

	return cmp_pair(x->tree, x->id, y->tree, y->id);
}

/* leaf weights by node, then class */
static int
cmp_weight(const void *a, const void *b)
{
	const LeafWeight *x = a,
			   *y = b;

	return cmp_pair(x->node, x->cls, y->node, y->cls);
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

/*
 * The model of an ensemble with n_cols outputs: float inputs compare in
 * float32 (onnxruntime's thresholds are float).
 */
static bool
ensemble_model(OnnxReader *r, const OnnxNode *n, const OnnxEnsemble *e,
			   int n_cols)
{
	HbModel    *m;

	if (!onnx_new_model(r, n, r->input_width > 0 ? r->input_width : e->max_feature + 1,
						n_cols))
		return false;
	m = r->m;
	m->estimator = HB_EST_TREES;
	m->cmp = r->input_elem == ONNX_DOUBLE ? HB_CMP_LE_F64 : HB_CMP_LT_F32;
	m->sum_f32 = m->cmp == HB_CMP_LT_F32;
	return true;
}

static bool
check_max_feature(OnnxReader *r, const OnnxNode *n, const OnnxEnsemble *e)
{
	if (e->max_feature >= r->m->n_features)
		return hb_fail(r->err, HB_ERR_INVALID,
					   "ONNX node \"%s\" (op %s) splits on feature %lld, but the input has %d",
					   onnx_node_label(n), onnx_op(n), (long long) e->max_feature,
					   r->m->n_features);
	return true;
}

/*
 * The aggregate function, as opset 5 numbers them (0 AVERAGE, 1 SUM, 2 MIN,
 * 3 MAX, else unknown): hbird sums trees, so MIN and MAX are refused unless
 * there is one tree.
 */
static bool
aggregate_scale(OnnxReader *r, const OnnxNode *n, int64_t agg, OnnxEnsemble *e)
{
	e->scale = agg == 0 ? 1.0 / (double) e->n_trees : 1.0;
	if ((agg == 2 || agg == 3) && e->n_trees > 1)
		return hb_fail(r->err, HB_ERR_UNSUPPORTED,
					   "ONNX node \"%s\" (op %s): aggregate_function %s over %lld trees is not supported (hbird sums trees)",
					   onnx_node_label(n), onnx_op(n), agg == 2 ? "MIN" : "MAX",
					   (long long) e->n_trees);
	if (agg < 0 || agg > 3)
		return onnx_refuse(r, n, "unknown aggregate_function");
	return true;
}


/* ---------- TreeEnsembleClassifier / TreeEnsembleRegressor ---------- */

static bool
parse_modes(OnnxReader *r, const OnnxNode *n, OnnxTreeNode *nodes, size_t count)
{
	static const char *const names[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE",
	"BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "LEAF", "BRANCH_MEMBER"};
	const OnnxAttr *a = onnx_attr(n, "nodes_modes");

	if (a == NULL || a->n_strings != count)
		return onnx_refuse(r, n, "nodes_modes does not have one entry per node");
	for (size_t i = 0; i < count; i++)
	{
		int			mode = -1;

		for (int k = 0; k < 8; k++)
			if (onnx_bin_eq(a->strings[i], names[k]))
				mode = k;
		if (mode < 0)
			return onnx_refuse(r, n, "a node has an unknown mode");
		if (mode == MODE_MEMBER)
			return onnx_refuse(r, n, "node mode BRANCH_MEMBER is not supported");
		nodes[i].mode = (uint8_t) mode;
	}
	return true;
}

/*
 * The nodes_* attributes: count nodes, each a (tree, id), sorted by both,
 * with their thresholds (nodes_values).
 */
static bool
legacy_nodes(OnnxReader *r, const OnnxNode *n, const double *values,
			 OnnxEnsemble *e)
{
	size_t		count,
				c,
				cm;
	const int64_t *treeids = onnx_attr_ints(n, "nodes_treeids", &count);
	const int64_t *nodeids = onnx_attr_ints(n, "nodes_nodeids", &c);
	const int64_t *featureids = onnx_attr_ints(n, "nodes_featureids", &c);
	const int64_t *trueids = onnx_attr_ints(n, "nodes_truenodeids", &c);
	const int64_t *falseids = onnx_attr_ints(n, "nodes_falsenodeids", &c);
	const int64_t *mtt = onnx_attr_ints(n, "nodes_missing_value_tracks_true", &cm);
	OnnxTreeNode *nodes;

	nodes = e->nodes = hb_alloc0(sizeof(OnnxTreeNode) * count);
	if (nodes == NULL)
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	e->n_nodes = count;
	for (size_t i = 0; i < count; i++)
	{
		nodes[i].tree = treeids[i];
		nodes[i].id = nodeids[i];
		if (featureids[i] < 0 || featureids[i] >= HB_MAX_FEATURES)
			return onnx_refuse(r, n, "a node splits on a feature index out of range");
		nodes[i].feature = (int32_t) featureids[i];
		nodes[i].mtt = cm ? mtt[i] != 0 : 0;
		nodes[i].value = values[i];
		nodes[i].t_id = trueids[i];
		nodes[i].f_id = falseids[i];
	}
	if (!parse_modes(r, n, nodes, count))
		return false;
	/* modes were parsed in the original order; sort keeps each with its node */
	qsort(nodes, count, sizeof(OnnxTreeNode), cmp_tree_node);
	for (size_t i = 0; i < count; i++)
	{
		if (i > 0 && cmp_tree_node(&nodes[i - 1], &nodes[i]) == 0)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "ONNX node \"%s\" (op %s): tree %lld has node %lld twice",
						   onnx_node_label(n), onnx_op(n), (long long) nodes[i].tree,
						   (long long) nodes[i].id);
		if (i == 0 || nodes[i].tree != nodes[i - 1].tree)
			e->n_trees++;
		if (nodes[i].mode == MODE_LEAF)
			continue;
		if (isnan(nodes[i].value))
			return hb_fail(r->err, HB_ERR_INVALID,
						   "ONNX node \"%s\" (op %s): tree %lld node %lld has a NaN threshold",
						   onnx_node_label(n), onnx_op(n), (long long) nodes[i].tree,
						   (long long) nodes[i].id);
		if (nodes[i].feature > e->max_feature)
			e->max_feature = nodes[i].feature;
	}
	/* children by id, after sorting (find_node needs the order) */
	for (size_t i = 0; i < count; i++)
	{
		if (nodes[i].mode == MODE_LEAF)
			continue;
		nodes[i].t_idx = find_node(nodes, count, nodes[i].tree, nodes[i].t_id);
		nodes[i].f_idx = find_node(nodes, count, nodes[i].tree, nodes[i].f_id);
		if (nodes[i].t_idx < 0 || nodes[i].f_idx < 0)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "ONNX node \"%s\" (op %s): tree %lld node %lld has a child that does not exist",
						   onnx_node_label(n), onnx_op(n), (long long) nodes[i].tree,
						   (long long) nodes[i].id);
	}
	return true;
}

/*
 * The leaf weights (prefix_treeids, _nodeids, _ids, wvals: nw of each),
 * sorted by node and class; e->n_cols gets the largest class fed + 1.
 */
static bool
legacy_weights(OnnxReader *r, const OnnxNode *n, const char *prefix,
			   const double *wvals, size_t nw, OnnxEnsemble *e)
{
	char		aname[64];
	size_t		c;
	const int64_t *w_tree,
			   *w_node,
			   *w_cls;
	LeafWeight *weights;

	snprintf(aname, sizeof(aname), "%s_treeids", prefix);
	w_tree = onnx_attr_ints(n, aname, &c);
	snprintf(aname, sizeof(aname), "%s_nodeids", prefix);
	w_node = onnx_attr_ints(n, aname, &c);
	snprintf(aname, sizeof(aname), "%s_ids", prefix);
	w_cls = onnx_attr_ints(n, aname, &c);
	weights = e->weights = hb_alloc0(sizeof(LeafWeight) * (nw + 1));
	if (weights == NULL)
		return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
	e->n_weights = nw;
	for (size_t i = 0; i < nw; i++)
	{
		int32_t		at = find_node(e->nodes, e->n_nodes, w_tree[i], w_node[i]);

		if (at < 0 || e->nodes[at].mode != MODE_LEAF)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "ONNX node \"%s\" (op %s): a weight refers to tree %lld node %lld, which is not a leaf",
						   onnx_node_label(n), onnx_op(n), (long long) w_tree[i],
						   (long long) w_node[i]);
		if (w_cls[i] < 0 || w_cls[i] >= 100000)
			return onnx_refuse(r, n, "a leaf weight's class or target index is out of range");
		if (!isfinite(wvals[i]))
			return hb_fail(r->err, HB_ERR_INVALID,
						   "ONNX node \"%s\" (op %s): a leaf weight is not finite",
						   onnx_node_label(n), onnx_op(n));
		weights[i].node = at;
		weights[i].cls = (int32_t) w_cls[i];
		weights[i].w = wvals[i];
		if (weights[i].cls + 1 > e->n_cols)
			e->n_cols = weights[i].cls + 1;
	}
	qsort(weights, nw, sizeof(LeafWeight), cmp_weight);
	for (size_t i = 0; i < nw; i++)
	{
		if (e->nodes[weights[i].node].w_n == 0)
			e->nodes[weights[i].node].w_first = (int32_t) i;
		e->nodes[weights[i].node].w_n++;
	}
	return true;
}

/*
 * The outputs: a classifier's class labels (*n_labels; *binary for two
 * labels fed through one column), a regressor's n_targets.
 */
static bool
legacy_outputs(OnnxReader *r, const OnnxNode *n, bool classifier,
			   OnnxEnsemble *e, int *n_labels, bool *binary)
{
	*n_labels = 0;
	*binary = false;
	if (classifier)
	{
		*n_labels = onnx_class_label_count(n);
		if (*n_labels <= 0)
			return onnx_refuse(r, n, "the classifier has no class labels");
		if (e->n_cols > *n_labels)
			return hb_fail(r->err, HB_ERR_INVALID,
						   "ONNX node \"%s\" (op %s): a leaf feeds class %d, but there are %d class labels",
						   onnx_node_label(n), onnx_op(n), e->n_cols - 1, *n_labels);
		*binary = *n_labels == 2 && e->n_cols <= 1;
		if (!*binary)
			e->n_cols = *n_labels;
	}
	else
	{
		int64_t		targets = onnx_attr_int(n, "n_targets", 1);

		if (targets < 1 || targets > 100000 || e->n_cols > targets)
			return onnx_refuse(r, n, "n_targets does not match the leaf weights");
		e->n_cols = (int) targets;
	}
	if (e->n_cols < 1)
		e->n_cols = 1;
	return true;
}

/* The legacy aggregate_function string as opset 5 numbers it. */
static int64_t
legacy_aggregate(const OnnxNode *n)
{
	char		agg[32];

	onnx_attr_str(n, "aggregate_function", agg, sizeof(agg));
	if (agg[0] == '\0' || strcmp(agg, "SUM") == 0)
		return 1;
	if (strcmp(agg, "AVERAGE") == 0)
		return 0;
	if (strcmp(agg, "MIN") == 0)
		return 2;
	if (strcmp(agg, "MAX") == 0)
		return 3;
	return -1;
}

/* Each ONNX tree (a run of the sorted nodes), once per class it feeds. */
static bool
legacy_emit(TreeEmit *te)
{
	const OnnxEnsemble *e = te->e;
	size_t		end;

	for (size_t i = 0; i < e->n_nodes; i = end)
	{
		end = i;
		while (end < e->n_nodes && e->nodes[end].tree == e->nodes[i].tree)
			end++;
		for (int c = 0; c < e->n_cols; c++)
		{
			bool		feeds = false;

			for (size_t k = i; k < end && !feeds; k++)
				for (int32_t w = e->nodes[k].w_first;
					 w < e->nodes[k].w_first + e->nodes[k].w_n; w++)
					if (e->weights[w].cls == c)
						feeds = true;
			if (feeds && !emit_tree(te, (int32_t) i, c, true))
				return false;
		}
	}
	return true;
}

/*
 * The attributes' lengths agree; the post_transform, and the numbers:
 * thresholds, leaf weights, base values.
 */
static bool
legacy_attrs(OnnxReader *r, const OnnxNode *n, const char *prefix,
			 PostTransform *pt, double **values, double **wvals, size_t *nw,
			 double **base, size_t *n_base)
{
	size_t		count,
				c1,
				c2,
				c3,
				c4,
				cm,
				c_wt,
				c_wn,
				c_wc,
				n_values;
	char		aname[64];

	(void) onnx_attr_ints(n, "nodes_treeids", &count);
	(void) onnx_attr_ints(n, "nodes_nodeids", &c1);
	(void) onnx_attr_ints(n, "nodes_featureids", &c2);
	(void) onnx_attr_ints(n, "nodes_truenodeids", &c3);
	(void) onnx_attr_ints(n, "nodes_falsenodeids", &c4);
	(void) onnx_attr_ints(n, "nodes_missing_value_tracks_true", &cm);
	if (count == 0)
		return onnx_refuse(r, n, "the ensemble has no nodes");
	if (count > INT32_MAX / 4 || c1 != count || c2 != count || c3 != count ||
		c4 != count || (cm != 0 && cm != count))
		return onnx_refuse(r, n, "the nodes_* attributes do not all have one entry per node");
	if (!onnx_post_transform(r, n, pt))
		return false;
	snprintf(aname, sizeof(aname), "%s_treeids", prefix);
	(void) onnx_attr_ints(n, aname, &c_wt);
	snprintf(aname, sizeof(aname), "%s_nodeids", prefix);
	(void) onnx_attr_ints(n, aname, &c_wn);
	snprintf(aname, sizeof(aname), "%s_ids", prefix);
	(void) onnx_attr_ints(n, aname, &c_wc);
	snprintf(aname, sizeof(aname), "%s_weights", prefix);
	if (!onnx_attr_doubles(n, aname, wvals, nw, r->err))
		return false;
	if (c_wt != c_wn || c_wt != c_wc || c_wt != *nw)
		return onnx_refuse(r, n, "the leaf weight attributes do not have the same length");
	if (!onnx_attr_doubles(n, "nodes_values", values, &n_values, r->err))
		return false;
	if (n_values != count)
		return onnx_refuse(r, n, "nodes_values does not have one entry per node");
	return onnx_attr_doubles(n, "base_values", base, n_base, r->err);
}

/* A legacy ensemble's task and link. */
static bool
legacy_task(OnnxReader *r, const OnnxNode *n, bool classifier, int n_labels,
			int n_cols, PostTransform pt, bool binary)
{
	if (classifier)
		return onnx_classifier_task(r, n, n_labels, n_cols, pt, binary);
	r->m->task = HB_TASK_REGRESSION;
	return onnx_regression_link(r, n, pt,
								"a softmax post_transform on a regressor is not supported");
}

/* TreeEnsembleClassifier / TreeEnsembleRegressor */
bool
onnx_read_tree_ensemble(OnnxReader *r, const OnnxNode *n, bool classifier)
{
	const char *prefix = classifier ? "class" : "target";
	double	   *values = NULL,
			   *wvals = NULL,
			   *base = NULL;
	size_t		nw = 0,
				n_base = 0;
	OnnxEnsemble e;
	TreeEmit	te;
	PostTransform pt;
	int			n_labels;
	bool		binary;
	bool		ok = false;

	memset(&e, 0, sizeof(e));
	memset(&te, 0, sizeof(te));
	e.max_feature = -1;
	if (!legacy_attrs(r, n, prefix, &pt, &values, &wvals, &nw, &base, &n_base) ||
		!legacy_nodes(r, n, values, &e) ||
		!legacy_weights(r, n, prefix, wvals, nw, &e) ||
		!legacy_outputs(r, n, classifier, &e, &n_labels, &binary) ||
		!ensemble_model(r, n, &e, e.n_cols) ||
		!check_max_feature(r, n, &e) ||
		!legacy_task(r, n, classifier, n_labels, e.n_cols, pt, binary))
		goto done;
	if (n_base != 0 && n_base != (size_t) e.n_cols)
	{
		onnx_refuse(r, n, "base_values does not have one value per output");
		goto done;
	}
	if (!aggregate_scale(r, n, legacy_aggregate(n), &e))
		goto done;
	emit_start(&te, r, n, &e);
	ok = legacy_emit(&te) && base_trees(&te, base, n_base);

done:
	hb_mb_free(&te.b);
	hb_free(values);
	hb_free(wvals);
	hb_free(base);
	ensemble_free(&e);
	return ok;
}


/* ---------- opset 5 TreeEnsemble ---------- */

/*
 * The next NaN-terminated run of membership_values (from *mpos) for
 * BRANCH_MEMBER node o, sorted, appended to e->sets.
 */
static void
member_set(OnnxEnsemble *e, OnnxTreeNode *o, const double *members,
		   size_t n_members, size_t *mpos, size_t *n_set)
{
	double	   *sets = e->sets;

	o->set_first = (int32_t) *n_set;
	while (*mpos < n_members && !isnan(members[*mpos]))
		sets[(*n_set)++] = members[(*mpos)++];
	(*mpos)++;
	o->set_n = (int32_t) *n_set - o->set_first;
	for (int32_t a = o->set_first + 1; a < (int32_t) *n_set; a++)
		for (int32_t k = a; k > o->set_first && sets[k - 1] > sets[k]; k--)
		{
			double		t = sets[k];

			sets[k] = sets[k - 1];
			sets[k - 1] = t;
		}
}

/* The opset 5 attributes that describe the trees, with their lengths. */
typedef struct Opset5
{
	size_t		nn;				/* split nodes */
	size_t		n_lt;			/* leaves */
	size_t		n_roots;
	size_t		n_members;
	const int64_t *feat,
			   *tid,
			   *tleaf,
			   *fid,
			   *fleaf,
			   *mtt,
			   *roots,
			   *ltarget;
	size_t		cm;				/* entries of mtt (0: absent) */
	double	   *splits,
			   *modes,
			   *lw,
			   *members;
	int64_t		targets;
} Opset5;

static bool
opset5_attrs(OnnxReader *r, const OnnxNode *n, Opset5 *a)
{
	size_t		c1,
				c2,
				c3,
				c4,
				n_splits = 0,
				n_modes = 0,
				n_lw = 0;

	a->feat = onnx_attr_ints(n, "nodes_featureids", &a->nn);
	a->tid = onnx_attr_ints(n, "nodes_truenodeids", &c1);
	a->tleaf = onnx_attr_ints(n, "nodes_trueleafs", &c2);
	a->fid = onnx_attr_ints(n, "nodes_falsenodeids", &c3);
	a->fleaf = onnx_attr_ints(n, "nodes_falseleafs", &c4);
	a->mtt = onnx_attr_ints(n, "nodes_missing_value_tracks_true", &a->cm);
	a->roots = onnx_attr_ints(n, "tree_roots", &a->n_roots);
	a->ltarget = onnx_attr_ints(n, "leaf_targetids", &a->n_lt);
	a->targets = onnx_attr_int(n, "n_targets", 1);
	if (!onnx_attr_doubles(n, "nodes_splits", &a->splits, &n_splits, r->err) ||
		!onnx_attr_doubles(n, "nodes_modes", &a->modes, &n_modes, r->err) ||
		!onnx_attr_doubles(n, "leaf_weights", &a->lw, &n_lw, r->err) ||
		!onnx_attr_doubles(n, "membership_values", &a->members, &a->n_members, r->err))
		return false;
	if (a->nn == 0 || a->nn > INT32_MAX / 4 || a->n_lt > INT32_MAX / 4 ||
		c1 != a->nn || c2 != a->nn || c3 != a->nn || c4 != a->nn ||
		(a->cm != 0 && a->cm != a->nn) || n_splits != a->nn || n_modes != a->nn ||
		a->n_lt != n_lw || a->n_lt == 0 || a->n_roots == 0)
		return onnx_refuse(r, n, "the nodes_*, leaf_* and tree_roots attributes do not agree");
	if (a->targets < 1 || a->targets > 100000)
		return onnx_refuse(r, n, "n_targets is out of range");
	return true;
}

/* Split nodes 0 .. nn - 1; a leaf child j is node nn + j. */
static bool
opset5_nodes(OnnxReader *r, const OnnxNode *n, const Opset5 *a, OnnxEnsemble *e)
{
	size_t		nn = a->nn,
				n_set = 0,
				mpos = 0;

	for (size_t i = 0; i < nn; i++)
	{
		OnnxTreeNode *o = &e->nodes[i];
		int			mode = (int) a->modes[i];

		/* a BRANCH_MEMBER node's split is unused (NaN in practice) */
		if (!(a->modes[i] >= 0 && a->modes[i] <= 6) || a->feat[i] < 0 ||
			a->feat[i] >= HB_MAX_FEATURES || (mode != 6 && isnan(a->splits[i])))
			return onnx_refuse(r, n, "a node has a mode, feature or threshold out of range");
		/* opset 5 numbers the modes LEQ, LT, GTE, GT, EQ, NEQ, MEMBER */
		o->mode = mode == 6 ? MODE_MEMBER : (uint8_t) mode;
		o->feature = (int32_t) a->feat[i];
		o->value = a->splits[i];
		o->mtt = a->cm ? a->mtt[i] != 0 : 0;
		o->id = (int64_t) i;
		if (a->tid[i] < 0 || a->fid[i] < 0 ||
			(a->tleaf[i] ? a->tid[i] >= (int64_t) a->n_lt : a->tid[i] >= (int64_t) nn) ||
			(a->fleaf[i] ? a->fid[i] >= (int64_t) a->n_lt : a->fid[i] >= (int64_t) nn))
			return onnx_refuse(r, n, "a node has a child out of range");
		o->t_idx = (int32_t) (a->tleaf[i] ? (int64_t) nn + a->tid[i] : a->tid[i]);
		o->f_idx = (int32_t) (a->fleaf[i] ? (int64_t) nn + a->fid[i] : a->fid[i]);
		if (o->feature > e->max_feature)
			e->max_feature = o->feature;
		if (o->mode == MODE_MEMBER)
			member_set(e, o, a->members, a->n_members, &mpos, &n_set);
	}
	return true;
}

/* Leaves nn .. nn + n_lt - 1, one weight each. */
static bool
opset5_leaves(OnnxReader *r, const OnnxNode *n, const Opset5 *a, OnnxEnsemble *e)
{
	for (size_t j = 0; j < a->n_lt; j++)
	{
		OnnxTreeNode *o = &e->nodes[a->nn + j];

		if (a->ltarget[j] < 0 || a->ltarget[j] >= a->targets || !isfinite(a->lw[j]))
			return onnx_refuse(r, n, "a leaf has a target out of range or a non-finite weight");
		o->mode = MODE_LEAF;
		o->id = (int64_t) (a->nn + j);
		o->w_first = (int32_t) j;
		o->w_n = 1;
		e->weights[j].node = (int32_t) (a->nn + j);
		e->weights[j].cls = (int32_t) a->ltarget[j];
		e->weights[j].w = a->lw[j];
	}
	for (size_t t = 0; t < a->n_roots; t++)
		if (a->roots[t] < 0 || a->roots[t] >= (int64_t) a->nn)
			return onnx_refuse(r, n, "a tree root is out of range");
	return true;
}

/*
 * ai.onnx.ml opset 5 TreeEnsemble: nodes and leaves in separate arrays,
 * each child flagged as a node or a leaf, one target per leaf, the modes
 * and thresholds as tensors, and BRANCH_MEMBER sets in membership_values
 * (one NaN-terminated run per BRANCH_MEMBER node, in node order).  Read into
 * the legacy layout (leaves after the nodes) and emitted the same way, a
 * copy per target dropped when none of its leaves feeds the target.
 */
bool
onnx_read_tree_ensemble5(OnnxReader *r, const OnnxNode *n)
{
	Opset5		a;
	OnnxEnsemble e;
	TreeEmit	te;
	PostTransform pt;
	bool		ok = false;

	memset(&a, 0, sizeof(a));
	memset(&e, 0, sizeof(e));
	memset(&te, 0, sizeof(te));
	e.max_feature = -1;
	if (!onnx_post_transform(r, n, &pt))
		return false;
	if (!opset5_attrs(r, n, &a))
		goto done;
	e.n_nodes = a.nn + a.n_lt;
	e.n_weights = a.n_lt;
	e.n_trees = (int64_t) a.n_roots;
	e.nodes = hb_alloc0(sizeof(OnnxTreeNode) * e.n_nodes);
	e.weights = hb_alloc0(sizeof(LeafWeight) * a.n_lt);
	e.sets = hb_alloc(sizeof(double) * (a.n_members + 1));
	if (!e.nodes || !e.weights || !e.sets)
	{
		hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		goto done;
	}
	if (!opset5_nodes(r, n, &a, &e) || !opset5_leaves(r, n, &a, &e) ||
		!ensemble_model(r, n, &e, (int) a.targets))
		goto done;
	r->m->task = HB_TASK_REGRESSION;
	if (!onnx_regression_link(r, n, pt,
							  "a softmax post_transform is not supported on a TreeEnsemble") ||
		!check_max_feature(r, n, &e) ||
		!aggregate_scale(r, n, onnx_attr_int(n, "aggregate_function", 1), &e))
		goto done;
	emit_start(&te, r, n, &e);
	ok = true;
	for (size_t t = 0; t < a.n_roots && ok; t++)
		for (int c = 0; c < (int) a.targets && ok; c++)
			ok = emit_tree(&te, (int32_t) a.roots[t], c, false);

done:
	hb_mb_free(&te.b);
	hb_free(a.splits);
	hb_free(a.modes);
	hb_free(a.lw);
	hb_free(a.members);
	ensemble_free(&e);
	return ok;
}
