/*
 * strategy_ptt.c
 *	  PerfectTreeTraversal: every tree embedded in a perfect binary tree of
 *	  its own depth, walked level by level over a block of rows without a
 *	  data-dependent branch.
 *
 * Layout.  Each tree t is padded to a perfect tree of its own depth D_t (not
 * to the depth of the deepest tree: padding every tree to the model's
 * maximum would cost 2^(max - D_t) times the memory for the shallow ones,
 * and grouping trees by depth would break the per-row tree order that
 * float32 sums need).  Internal nodes are stored in level order, node j's
 * children at 2j+1 and 2j+2, in parallel arrays (feature, threshold,
 * flags) so that a step reads only what it uses; the tree's 2^D_t leaf
 * values follow in their own array.  A leaf that sits above the bottom
 * level is replicated into all the bottom slots beneath it; the padding
 * nodes above those slots split on feature 0 at threshold 0, which is
 * harmless because both of their subtrees carry the same value.
 *
 * The layout is built from the plan's flat nodes rather than from the IR
 * directly, so thresholds and leaf values are the very floats and doubles
 * TT compares with and adds: bit-identical margins follow by construction.
 *
 * Missing values and node kinds.  A NaN input takes the node's default
 * direction through bit operations: go_right = !(x < t) & (x == x | dr),
 * because a NaN fails every comparison.  HB_MISSING_NONE nodes fit the same
 * formula: NaN is replaced by 0 there, and 0's direction at a fixed
 * threshold is a constant known at build time, so it is stored as the
 * node's NaN direction.  Categorical nodes and HB_MISSING_ZERO nodes (whose
 * "|x| <= 1e-35 takes the default" rule needs the input in double) are
 * supported, not refused: they are marked HB_PTT_GENERAL and a tree holding
 * any of them takes a per-node path that calls hb_step_general on the
 * plan's own flat node, i.e. exactly what TT does.  Trees without them
 * (every XGBoost numeric tree) never pay for the check.
 *
 * Execution.  Rows go in blocks of HB_PTT_ROWS; trees in blocks of about
 * HB_PTT_TREE_BYTES of layout so that a tree block stays in L2 while every
 * row block of the batch walks it.  For one tree, all rows of a block take
 * level 0, then level 1, ...: the iterations of the inner row loop are
 * independent (no branch, no loop-carried dependence), so the loads of
 * different rows overlap instead of waiting for each other as a pointer
 * walk does.  Per row, leaves are added in model tree order, which is what
 * makes float32 sums agree with TT to the bit: tree blocks run in order and
 * trees within a block in order.  Between tree blocks the float32 running
 * sum lives in the double margins array, which holds any float exactly.
 */
#include "plan_int.h"

#include <stdio.h>
#include <string.h>

#define HB_PTT_ROWS			128		/* rows per block: inputs stay in L1 */
#define HB_PTT_XF_FLOATS	8192	/* float copy of a block: 32 kB of stack */
#define HB_PTT_MIN_ROWS		16		/* fewer rows per block is not worth it */
#define HB_PTT_TREE_BYTES	(256 * 1024)	/* layout per tree block: L2 */
#define HB_PTT_DEPTH_LIMIT	30		/* node indexes are int32 */

/* dright bits */
#define HB_PTT_NAN_RIGHT	0x01	/* a NaN input goes right */
#define HB_PTT_GENERAL		0x02	/* call hb_step_general (category, ZERO) */

typedef struct HbPttTree
{
	int64_t		node_off;		/* first internal node in the node arrays */
	int64_t		leaf_off;		/* first leaf in the leaf array */
	int32_t		depth;			/* D_t: 2^D_t - 1 nodes, 2^D_t leaves */
	int32_t		group;			/* output the tree adds to */
	bool		general;		/* holds HB_PTT_GENERAL nodes */
} HbPttTree;

struct HbPtt
{
	int32_t		n_trees;
	int32_t		max_depth;
	HbPttTree  *trees;
	int64_t		n_nodes;		/* internal nodes, padding included */
	int64_t		n_leaves;		/* bottom slots, replicas included */
	int32_t    *feature;
	float	   *thr_f;			/* HB_CMP_LT_F32 models */
	double	   *thr_d;			/* HB_CMP_LE_F64 models */
	uint8_t    *dright;			/* HB_PTT_* bits */
	int32_t    *src;			/* plan node of a general node, else -1;
								 * NULL when no tree is general */
	float	   *leaf_f;			/* sum_f32 models */
	double	   *leaf_d;			/* double-sum models */
	size_t		bytes;
};

/* Bytes of one tree of depth d in this layout (double: 2^64 must not wrap). */
static double
tree_bytes(int depth, bool f32, bool general)
{
	double		nodes = ldexp(1.0, depth) - 1.0;
	double		per_node = sizeof(int32_t) + (f32 ? sizeof(float) : sizeof(double)) +
		sizeof(uint8_t) + (general ? sizeof(int32_t) : 0);

	return nodes * per_node + ldexp(1.0, depth) * (f32 ? sizeof(float) : sizeof(double));
}

/* Does the plan node need hb_step_general rather than the bit formula? */
static bool
node_is_general(const HbFlatNode *n)
{
	int			missing = (n->flags & HB_FN_MISSING_MASK) >> HB_FN_MISSING_SHIFT;

	return (n->flags & HB_FN_CAT) || missing == HB_MISSING_ZERO;
}

/*
 * Place plan node `idx` (of a tree whose layout starts at tr) at level-order
 * position j of level d.  Padding was written beforehand, so a leaf above
 * the bottom only needs its value copied into the slots beneath it.
 */
static void
place(HbPtt *t, const HbPlan *p, const HbPttTree *tr, int64_t idx, int d,
	  int64_t j)
{
	const HbFlatNode *n = &p->nodes[idx];
	int			D = tr->depth;

	if (n->feature < 0)
	{
		int64_t		span = (int64_t) 1 << (D - d);
		int64_t		first = tr->leaf_off + j * span;

		for (int64_t s = 0; s < span; s++)
		{
			if (t->leaf_f)
				t->leaf_f[first + s] = n->thr;
			else
				t->leaf_d[first + s] = p->leaf_d[idx];
		}
	}
	else
	{
		int64_t		pos = tr->node_off + ((int64_t) 1 << d) - 1 + j;
		int			missing = (n->flags & HB_FN_MISSING_MASK) >> HB_FN_MISSING_SHIFT;
		bool		nan_right;

		t->feature[pos] = n->feature;
		if (t->thr_f)
			t->thr_f[pos] = n->thr;
		else
			t->thr_d[pos] = p->thr_d[idx];

		/*
		 * NONE: the NaN became 0 and 0 compares like any value, so its
		 * direction is fixed by the threshold alone.
		 */
		if (missing == HB_MISSING_NONE)
			nan_right = p->cmp == HB_CMP_LT_F32 ? !(0.0f < n->thr) :
				!(0.0 <= p->thr_d[idx]);
		else
			nan_right = !(n->flags & HB_FN_DEFAULT_LEFT);
		t->dright[pos] = nan_right ? HB_PTT_NAN_RIGHT : 0;
		if (node_is_general(n))
		{
			t->dright[pos] |= HB_PTT_GENERAL;
			t->src[pos] = (int32_t) idx;
		}
		place(t, p, tr, n->left, d + 1, 2 * j);
		place(t, p, tr, n->left + 1, d + 1, 2 * j + 1);
	}
}

bool
hb_ptt_build(HbPlan *p, const HbModel *m, size_t max_bytes, HbError *err)
{
	bool		f32 = p->cmp == HB_CMP_LT_F32;
	bool		any_general = false;
	double		need;
	HbPtt	   *t;
	int64_t		nodes = 0,
				leaves = 0;

	hb_ptt_free(p->ptt);
	p->ptt = NULL;
	if (p->estimator != HB_EST_TREES || m->estimator != HB_EST_TREES ||
		m->n_trees != p->n_trees)
		return hb_fail(err, HB_ERR_ARGUMENT,
					   "perfect tree traversal needs the tree model its plan was built from");
	/* the executors add float32 leaves to float32 sums, double to double */
	if (p->sum_f32 != f32)
		return hb_fail(err, HB_ERR_UNSUPPORTED,
					   "tree models must sum in the precision they compare in");

	for (int i = 0; i < p->n_trees; i++)
	{
		int64_t		end = i + 1 < p->n_trees ? p->tree_root[i + 1] : p->n_nodes;

		for (int64_t k = p->tree_root[i]; k < end && !any_general; k++)
			if (p->nodes[k].feature >= 0 && node_is_general(&p->nodes[k]))
				any_general = true;
	}

	if (p->max_depth > HB_PTT_DEPTH_LIMIT)
		return hb_fail(err, HB_ERR_LIMIT,
					   "perfect-tree layout is limited to trees of %d levels, and the model has %d",
					   HB_PTT_DEPTH_LIMIT, p->max_depth);
	need = sizeof(HbPtt) + (double) sizeof(HbPttTree) * p->n_trees;
	for (int i = 0; i < p->n_trees; i++)
		need += tree_bytes(m->trees[i].depth, f32, any_general);
	if (need > (double) max_bytes)
	{
		hb_fail(err, HB_ERR_LIMIT,
				"perfect-tree layout would take %.0f bytes, more than the limit of %zu",
				need, max_bytes);
		hb_fail_detail(err, "The deepest tree has %d levels; each level doubles the layout.",
					   p->max_depth);
		return false;
	}

	t = hb_alloc0(sizeof(HbPtt));
	if (t == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	t->n_trees = p->n_trees;
	t->trees = hb_alloc0(sizeof(HbPttTree) * (p->n_trees + 1));
	if (t->trees == NULL)
		goto nomem;
	for (int i = 0; i < p->n_trees; i++)
	{
		HbPttTree  *tr = &t->trees[i];

		tr->depth = m->trees[i].depth;
		tr->group = p->tree_group[i];
		tr->node_off = nodes;
		tr->leaf_off = leaves;
		nodes += ((int64_t) 1 << tr->depth) - 1;
		leaves += (int64_t) 1 << tr->depth;
		if (tr->depth > t->max_depth)
			t->max_depth = tr->depth;
	}
	t->n_nodes = nodes;
	t->n_leaves = leaves;

	/* +1: a model of single leaves has no node at all */
	t->feature = hb_alloc0(sizeof(int32_t) * (nodes + 1));
	t->dright = hb_alloc0(nodes + 1);
	if (f32)
	{
		t->thr_f = hb_alloc0(sizeof(float) * (nodes + 1));
		t->leaf_f = hb_alloc0(sizeof(float) * leaves);
	}
	else
	{
		t->thr_d = hb_alloc0(sizeof(double) * (nodes + 1));
		t->leaf_d = hb_alloc0(sizeof(double) * leaves);
	}
	if (any_general)
	{
		t->src = hb_alloc(sizeof(int32_t) * (nodes + 1));
		if (t->src != NULL)
			memset(t->src, 0xff, sizeof(int32_t) * (nodes + 1));	/* -1 */
	}
	if (!t->feature || !t->dright || (f32 ? !t->thr_f || !t->leaf_f :
									  !t->thr_d || !t->leaf_d) ||
		(any_general && !t->src))
		goto nomem;

	/* padding is feature 0, threshold 0, NaN left: hb_alloc0 wrote it */
	for (int i = 0; i < p->n_trees; i++)
	{
		HbPttTree  *tr = &t->trees[i];

		place(t, p, tr, p->tree_root[i], 0, 0);
		if (any_general)
			for (int64_t k = 0; k < ((int64_t) 1 << tr->depth) - 1; k++)
				if (t->dright[tr->node_off + k] & HB_PTT_GENERAL)
					tr->general = true;
	}

	t->bytes = (size_t) need;
	p->ptt = t;
	return true;

nomem:
	hb_ptt_free(t);
	return hb_fail(err, HB_ERR_NOMEM, "out of memory");
}

void
hb_ptt_free(HbPtt *t)
{
	if (t == NULL)
		return;
	hb_free(t->trees);
	hb_free(t->feature);
	hb_free(t->thr_f);
	hb_free(t->thr_d);
	hb_free(t->dright);
	hb_free(t->src);
	hb_free(t->leaf_f);
	hb_free(t->leaf_d);
	hb_free(t);
}

size_t
hb_ptt_bytes(const HbPtt *t)
{
	return t ? t->bytes : 0;
}

/*
 * Walk one tree for the nb rows of a block: on return idx[r] is the leaf's
 * position among the 2^D bottom slots.  float32 comparison; the inputs are
 * the block's rows converted to float once.
 */
static void
walk_f32(const HbPtt *t, const HbPttTree *tr, const float *xf, int nf,
		 int nb, int32_t *idx)
{
	const int32_t *feat = t->feature + tr->node_off;
	const float *thr = t->thr_f + tr->node_off;
	const uint8_t *dr = t->dright + tr->node_off;

	for (int r = 0; r < nb; r++)
		idx[r] = 0;
	for (int d = 0; d < tr->depth; d++)
	{
		for (int r = 0; r < nb; r++)
		{
			int32_t		i = idx[r];
			float		v = xf[r * nf + feat[i]];
			int			not_less = !(v < thr[i]);

			/* NaN fails "<", so it is "right" unless its direction says left */
			idx[r] = 2 * i + 1 + (not_less & ((v == v) | dr[i]));
		}
	}
	for (int r = 0; r < nb; r++)
		idx[r] -= (1 << tr->depth) - 1;
}

static void
walk_f64(const HbPtt *t, const HbPttTree *tr, const double *x, int nf,
		 int nb, int32_t *idx)
{
	const int32_t *feat = t->feature + tr->node_off;
	const double *thr = t->thr_d + tr->node_off;
	const uint8_t *dr = t->dright + tr->node_off;

	for (int r = 0; r < nb; r++)
		idx[r] = 0;
	for (int d = 0; d < tr->depth; d++)
	{
		for (int r = 0; r < nb; r++)
		{
			int32_t		i = idx[r];
			double		v = x[(size_t) r * nf + feat[i]];
			int			greater = !(v <= thr[i]);

			idx[r] = 2 * i + 1 + (greater & ((v == v) | dr[i]));
		}
	}
	for (int r = 0; r < nb; r++)
		idx[r] -= (1 << tr->depth) - 1;
}

/*
 * A tree with categorical or HB_MISSING_ZERO nodes: those nodes take TT's
 * own general step on the plan node they came from (on the input in double,
 * as TT reads it); the others the same bit formula as above.
 */
static void
walk_general(const HbPlan *p, const HbPttTree *tr, const double *x, int nf,
			 int nb, int32_t *idx)
{
	const HbPtt *t = p->ptt;
	const int32_t *feat = t->feature + tr->node_off;
	const uint8_t *dr = t->dright + tr->node_off;
	const int32_t *src = t->src ? t->src + tr->node_off : NULL;

	for (int r = 0; r < nb; r++)
		idx[r] = 0;
	for (int d = 0; d < tr->depth; d++)
	{
		for (int r = 0; r < nb; r++)
		{
			int32_t		i = idx[r];
			double		v = x[(size_t) r * nf + feat[i]];
			int			right;

			if (dr[i] & HB_PTT_GENERAL)
			{
				const HbFlatNode *n = &p->nodes[src[i]];

				right = hb_step_general(p, n, src[i], v) != n->left;
			}
			else if (t->thr_f)
			{
				float		fv = (float) v;
				int			not_less = !(fv < t->thr_f[tr->node_off + i]);

				right = not_less & ((fv == fv) | (dr[i] & HB_PTT_NAN_RIGHT));
			}
			else
			{
				int			greater = !(v <= t->thr_d[tr->node_off + i]);

				right = greater & ((v == v) | (dr[i] & HB_PTT_NAN_RIGHT));
			}
			idx[r] = 2 * i + 1 + right;
		}
	}
	for (int r = 0; r < nb; r++)
		idx[r] -= (1 << tr->depth) - 1;
}

void
hb_ptt_margins(const HbPlan *p, const double *x, size_t n, double *margins)
{
	const HbPtt *t = p->ptt;
	int			k = p->n_outputs;
	int			nf = p->n_features;
	float		xf[HB_PTT_XF_FLOATS];	/* a block's inputs as float */
	int32_t		idx[HB_PTT_ROWS];
	int			rows;
	bool		convert;
	int			tb1;
	uint32_t	blocks = 0;

	if (t == NULL)
	{
		/* no layout (refused at build): TT gives the same bits */
		hb_tt_margins(p, x, n, margins);
		return;
	}

	/*
	 * float32 models read a float copy of the block, converted once rather
	 * than once per tree, and half the size in L1.  A model too wide for the
	 * buffer reads the doubles and converts per step.
	 */
	rows = HB_PTT_XF_FLOATS / nf < HB_PTT_ROWS ? HB_PTT_XF_FLOATS / nf : HB_PTT_ROWS;
	convert = p->cmp == HB_CMP_LT_F32 && rows >= HB_PTT_MIN_ROWS;
	if (!convert)
		rows = HB_PTT_ROWS;

	for (size_t r = 0; r < n; r++)
		for (int g = 0; g < k; g++)
			margins[r * k + g] = p->sum_f32 ?
				(double) (float) p->base_margin[g] : p->base_margin[g];

	for (int tb0 = 0; tb0 < t->n_trees; tb0 = tb1)
	{
		double		block_bytes = 0;

		/* the trees of this block: at least one, about HB_PTT_TREE_BYTES */
		for (tb1 = tb0; tb1 < t->n_trees &&
			 (tb1 == tb0 || block_bytes < HB_PTT_TREE_BYTES); tb1++)
			block_bytes += tree_bytes(t->trees[tb1].depth, p->sum_f32, false);

		for (size_t r0 = 0; r0 < n; r0 += rows)
		{
			int			nb = n - r0 < (size_t) rows ? (int) (n - r0) : rows;
			const double *xb = x + r0 * nf;
			double	   *mb = margins + r0 * k;

			if (convert)
				for (int i = 0; i < nb * nf; i++)
					xf[i] = (float) xb[i];

			for (int ti = tb0; ti < tb1; ti++)
			{
				const HbPttTree *tr = &t->trees[ti];
				int			g = tr->group;

				if (tr->general)
					walk_general(p, tr, xb, nf, nb, idx);
				else if (convert)
					walk_f32(t, tr, xf, nf, nb, idx);
				else if (p->cmp == HB_CMP_LT_F32)
				{
					/* wide float32 model: a step converts its one input */
					walk_general(p, tr, xb, nf, nb, idx);
				}
				else
					walk_f64(t, tr, xb, nf, nb, idx);

				if (p->sum_f32)
				{
					const float *leaf = t->leaf_f + tr->leaf_off;

					for (int r = 0; r < nb; r++)
						mb[(size_t) r * k + g] =
							(double) ((float) mb[(size_t) r * k + g] + leaf[idx[r]]);
				}
				else
				{
					const double *leaf = t->leaf_d + tr->leaf_off;

					for (int r = 0; r < nb; r++)
						mb[(size_t) r * k + g] += leaf[idx[r]];
				}
			}
			if ((++blocks & 31) == 0)
				hb_check_interrupts();
		}
	}
}

/* Write one op row; false when the array is full. */
static bool
add_op(HbPlanOp *ops, int max_ops, int *n, const char *op, const char *in,
	   const char *out, int64_t param_bytes, double flops)
{
	HbPlanOp   *o;

	if (*n >= max_ops)
		return false;
	o = &ops[(*n)++];
	memset(o, 0, sizeof(*o));
	o->op = op;
	snprintf(o->in_shape, sizeof(o->in_shape), "%s", in);
	snprintf(o->out_shape, sizeof(o->out_shape), "%s", out);
	o->param_bytes = param_bytes;
	o->flops = flops;
	return true;
}

/*
 * The ops of a batch: per level, gather the split inputs, compare with the
 * thresholds, step the node index; then gather the leaves and reduce them
 * into the outputs.  "Trees" at level d counts the trees deeper than d.
 */
int
hb_ptt_ops(const HbPlan *p, size_t batch, HbPlanOp *ops, int max_ops)
{
	const HbPtt *t = p->ptt;
	int			n = 0;
	char		in[64],
				out[64];
	size_t		thr_size;

	if (t == NULL || ops == NULL)
		return 0;
	thr_size = p->cmp == HB_CMP_LT_F32 ? sizeof(float) : sizeof(double);
	if (p->cmp == HB_CMP_LT_F32)
	{
		snprintf(in, sizeof(in), "%zux%d", batch, p->n_features);
		if (!add_op(ops, max_ops, &n, "cast", in, in, 0,
					(double) batch * p->n_features))
			return n;
	}
	for (int d = 0; d < t->max_depth; d++)
	{
		int			trees = 0;
		int64_t		level_nodes = 0;
		char		lv[64];

		for (int i = 0; i < t->n_trees; i++)
			if (t->trees[i].depth > d)
			{
				trees++;
				level_nodes += (int64_t) 1 << d;
			}
		snprintf(in, sizeof(in), "%zux%d", batch, p->n_features);
		snprintf(lv, sizeof(lv), "%zux%d (level %d)", batch, trees, d);
		if (!add_op(ops, max_ops, &n, "gather", in, lv,
					level_nodes * (int64_t) sizeof(int32_t), 0) ||
			!add_op(ops, max_ops, &n, "compare", lv, lv,
					level_nodes * (int64_t) (thr_size + 1),
					3.0 * batch * trees) ||
			!add_op(ops, max_ops, &n, "index", lv, lv, 0,
					3.0 * batch * trees))
			return n;
	}
	snprintf(in, sizeof(in), "%zux%d", batch, t->n_trees);
	if (!add_op(ops, max_ops, &n, "gather", in, in,
				t->n_leaves * (int64_t) (p->sum_f32 ? sizeof(float) : sizeof(double)),
				0))
		return n;
	snprintf(out, sizeof(out), "%zux%d", batch, p->n_outputs);
	add_op(ops, max_ops, &n, "reduce", in, out, 0, (double) batch * t->n_trees);
	return n;
}
