/*
 * strategy_ptt.c
 *	  PerfectTreeTraversal: every tree embedded in a perfect binary tree of
 *	  its own depth, walked level by level over a block of rows without a
 *	  data-dependent branch.
 *
 * Layout.  Each tree t is padded to a perfect tree of its own depth D_t, not
 * to the depth of the deepest tree (that would cost 2^(max - D_t) times the
 * memory for shallow trees), and trees are not regrouped by depth (that
 * would break the per-row tree order that float32 sums need).  A tree's
 * 2^D_t - 1 internal nodes are stored in level order, node j's children at
 * 2j+1 and 2j+2, in two parallel arrays: fsel = 2 * column + (NaN goes
 * right), and tk, the threshold as an order-preserving integer key (below).
 * Columns number the features that some split uses, so that a block's keys
 * cover those alone (a wide model's trees often use a few of its inputs).
 * Its 2^D_t leaf values follow in a leaf array.  A leaf above the bottom
 * level is replicated into all the bottom slots beneath it; the padding
 * nodes above those slots split on feature 0 at key 0, which is harmless
 * because both of their subtrees carry the same value.
 *
 * The layout is built from the plan's flat nodes rather than from the IR
 * directly, so thresholds and leaf values are the very floats and doubles
 * TT compares with and adds: bit-identical margins follow by construction.
 *
 * The step.  Instead of comparing floats and then fixing up NaN with bit
 * operations (go_right = !(x < t) & (x == x | nan_right): 24 instructions
 * a step in gcc -O2 output), a block's inputs are turned once into integer
 * keys that sort like the numbers, in two versions: NaN below everything
 * and NaN above everything.  The node's NaN direction picks the version
 * through the low bit of fsel, and the step is one unsigned compare:
 *
 *		idx = 2 * idx + 1 + (keys[row][fsel[idx]] >= tk[idx])
 *
 * (15 instructions, about 1.4 times the speed of the float version).
 * float32 models (XGBoost: x < t goes left) key the float of the input and
 * tk = key(t); double models (x <= t goes left) key the double and
 * tk = key(t) + 1.
 *
 * Node kinds.  HB_MISSING_NONE nodes fit the same step: their NaN became 0
 * and 0's direction at a fixed threshold is known at build time, so it is
 * stored as the node's NaN direction.  Categorical nodes and
 * HB_MISSING_ZERO nodes (whose "|x| <= zero threshold takes the default" rule needs
 * the input in double) are supported, not refused: a tree holding any of
 * them takes a slower walk that calls hb_step_general on the plan node they
 * came from, i.e. exactly what TT does, and key compares elsewhere.  Trees
 * without them (every XGBoost numeric tree) never pay for the check.
 *
 * Execution.  Rows go in blocks of HB_PTT_ROWS, whose keys (32 kB at most,
 * on the stack) stay in L1; trees in blocks of about HB_PTT_TREE_BYTES of
 * layout so that a tree block stays in L2 while every row block walks it.
 * For one tree, all rows of a block take level 0, then level 1, ...: the
 * iterations of the row loop are independent, so the loads of different
 * rows overlap instead of waiting for each other as a pointer walk does.
 * (The loop has no dependence across rows, so it could use gathers, but
 * gcc 12 leaves it scalar even at -O3 -march=native, and on the AMD EPYC
 * this was measured on, -O3 builds were no faster than PGXS's -O2; an
 * out-of-order core overlaps the rows' loads anyway.)  Per row, leaves are
 * added in model tree order, which is what makes float32 sums agree with
 * TT to the bit: tree blocks run in order and trees within a block in
 * order.  Between tree blocks the float32 running sum lives in the double
 * margins array, which holds any float exactly.
 */
#include "plan_int.h"

#include <stdio.h>
#include <string.h>

#define HB_PTT_ROWS			128		/* rows per block: inputs stay in L1 */
#define HB_PTT_KEY_BYTES	32768	/* a block's keys, on the stack */
#define HB_PTT_MIN_ROWS		16		/* fewer rows per block is not worth it */
#define HB_PTT_TREE_BYTES	(256 * 1024)	/* layout per tree block: L2 */
#define HB_PTT_DEPTH_LIMIT	30		/* node indexes are int32 */

typedef struct HbPttTree
{
	int64_t		node_off;		/* first internal node in the node arrays */
	int64_t		leaf_off;		/* first leaf in the leaf array */
	int32_t		depth;			/* D_t: 2^D_t - 1 nodes, 2^D_t leaves */
	int32_t		group;			/* output the tree adds to */
	bool		general;		/* holds nodes that need hb_step_general */
} HbPttTree;

struct HbPtt
{
	int32_t		n_trees;
	int32_t		max_depth;
	HbPttTree  *trees;
	int64_t		n_nodes;		/* internal nodes, padding included */
	int64_t		n_leaves;		/* bottom slots, replicas included */
	int32_t		n_used;			/* features some split uses */
	int32_t    *used;			/* column -> feature */
	int32_t    *fsel;			/* 2 * column + (NaN goes right) */
	uint32_t   *tk32;			/* HB_CMP_LT_F32: right iff key >= tk */
	uint64_t   *tk64;			/* HB_CMP_LE_F64: likewise */
	int32_t    *src;			/* plan node of a general node, else -1;
								 * NULL when no tree is general */
	float	   *leaf_f;			/* sum_f32 models */
	double	   *leaf_d;			/* double-sum models */
	size_t		bytes;
};

/*
 * Order-preserving keys.  Non-NaN floats map onto unsigned integers in
 * their numeric order (-0 and +0 onto the same one), from key(-Inf) =
 * 0x007FFFFF to key(+Inf) = 0xFF800000, so that neither 0 nor the maximum
 * is taken: those are where NaN goes.  Each input gets two keys: side 0
 * with NaN = 0 (below every threshold: left) and side 1 with NaN = max and
 * every other key minus one (NaN above every threshold: right, the others
 * in the same order).  A node reads the side of its NaN direction, which
 * is folded into its feature index, and its threshold key is shifted to
 * match, so the whole step is "right = key >= tk".
 */
static inline uint32_t
key_f32(float v)
{
	uint32_t	u;

	v += 0.0f;					/* -0 + 0 = +0 */
	memcpy(&u, &v, sizeof(u));
	return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static inline uint64_t
key_f64(double v)
{
	uint64_t	u;

	v += 0.0;
	memcpy(&u, &v, sizeof(u));
	return (u >> 63) ? ~u : (u | ((uint64_t) 1 << 63));
}

/* The key of input v on side nan_right. */
static inline uint32_t
side_key_f32(float v, int nan_right)
{
	if (v != v)
		return nan_right ? UINT32_MAX : 0;
	return key_f32(v) - nan_right;
}

static inline uint64_t
side_key_f64(double v, int nan_right)
{
	if (v != v)
		return nan_right ? UINT64_MAX : 0;
	return key_f64(v) - nan_right;
}

/* Bytes of one tree of depth d in this layout (double: 2^64 must not wrap). */
static double
tree_bytes(int depth, bool f32, bool general)
{
	double		nodes = ldexp(1.0, depth) - 1.0;
	double		per_node = sizeof(int32_t) + (f32 ? sizeof(uint32_t) : sizeof(uint64_t)) +
		(general ? sizeof(int32_t) : 0);

	return nodes * per_node + ldexp(1.0, depth) * (f32 ? sizeof(float) : sizeof(double));
}

/* Does the plan node need hb_step_general rather than a key compare? */
static bool
node_is_general(const HbFlatNode *n)
{
	int			missing = (n->flags & HB_FN_MISSING_MASK) >> HB_FN_MISSING_SHIFT;

	return (n->flags & HB_FN_CAT) || missing == HB_MISSING_ZERO;
}

/*
 * Place plan node `idx` at level-order position j of level d of tree tr.
 * Padding was written beforehand (feature 0, key 0), so a leaf above the
 * bottom only needs its value copied into the slots beneath it.
 */
static void
place(HbPtt *t, const HbPlan *p, const HbPttTree *tr, const int32_t *column,
	  int64_t idx, int d, int64_t j)
{
	const HbFlatNode *n = &p->nodes[idx];

	if (n->feature < 0)
	{
		int64_t		span = (int64_t) 1 << (tr->depth - d);
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
		int			nan_right;

		/*
		 * NONE: the NaN became 0 and 0 compares like any value, so its
		 * direction is fixed by the threshold alone.
		 */
		if (missing == HB_MISSING_NONE)
			nan_right = p->cmp == HB_CMP_LT_F32 ? !(0.0f < n->thr) :
				!(0.0 <= p->thr_d[idx]);
		else
			nan_right = !(n->flags & HB_FN_DEFAULT_LEFT);
		t->fsel[pos] = 2 * column[n->feature] + nan_right;

		if (node_is_general(n))
			t->src[pos] = (int32_t) idx;	/* its threshold may be NaN */
		else if (t->tk32)
			t->tk32[pos] = key_f32(n->thr) - nan_right;	/* right iff x >= t */
		else
			t->tk64[pos] = key_f64(p->thr_d[idx]) + 1 - nan_right;	/* x > t */

		place(t, p, tr, column, n->left, d + 1, 2 * j);
		place(t, p, tr, column, n->left + 1, d + 1, 2 * j + 1);
	}
}

bool
hb_ptt_build(HbPlan *p, const HbModel *m, size_t max_bytes, HbError *err)
{
	bool		f32 = p->cmp == HB_CMP_LT_F32;
	bool		any_general = false;
	double		need;
	HbPtt	   *t;
	int32_t    *column = NULL;	/* feature -> column, -1 if unused */
	int32_t		n_used = 0;
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
	if (p->max_depth > HB_PTT_DEPTH_LIMIT)
		return hb_fail(err, HB_ERR_LIMIT,
					   "perfect-tree layout is limited to trees of %d levels, and the model has %d",
					   HB_PTT_DEPTH_LIMIT, p->max_depth);

	for (int64_t k = 0; k < p->n_nodes && !any_general; k++)
		if (p->nodes[k].feature >= 0 && node_is_general(&p->nodes[k]))
			any_general = true;

	need = sizeof(HbPtt) + (double) sizeof(HbPttTree) * p->n_trees +
		(double) sizeof(int32_t) * p->n_features;
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

	/* columns, in feature order */
	column = hb_alloc(sizeof(int32_t) * p->n_features);
	t->used = hb_alloc(sizeof(int32_t) * p->n_features);
	if (column == NULL || t->used == NULL)
		goto nomem;
	memset(column, 0xff, sizeof(int32_t) * p->n_features);	/* -1 */
	for (int64_t k = 0; k < p->n_nodes; k++)
		if (p->nodes[k].feature >= 0)
			column[p->nodes[k].feature] = 0;
	for (int32_t f = 0; f < p->n_features; f++)
		if (column[f] == 0)
		{
			column[f] = n_used;
			t->used[n_used++] = f;
		}
	t->n_used = n_used;

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
	t->fsel = hb_alloc0(sizeof(int32_t) * (nodes + 1));
	if (f32)
	{
		t->tk32 = hb_alloc0(sizeof(uint32_t) * (nodes + 1));
		t->leaf_f = hb_alloc0(sizeof(float) * leaves);
	}
	else
	{
		t->tk64 = hb_alloc0(sizeof(uint64_t) * (nodes + 1));
		t->leaf_d = hb_alloc0(sizeof(double) * leaves);
	}
	if (any_general)
	{
		t->src = hb_alloc(sizeof(int32_t) * (nodes + 1));
		if (t->src != NULL)
			memset(t->src, 0xff, sizeof(int32_t) * (nodes + 1));	/* -1 */
	}
	if (!t->fsel || (f32 ? !t->tk32 || !t->leaf_f : !t->tk64 || !t->leaf_d) ||
		(any_general && !t->src))
		goto nomem;

	for (int i = 0; i < p->n_trees; i++)
	{
		HbPttTree  *tr = &t->trees[i];

		if ((i & 63) == 0)
			hb_check_interrupts();
		place(t, p, tr, column, p->tree_root[i], 0, 0);
		if (any_general)
			for (int64_t k = 0; k < ((int64_t) 1 << tr->depth) - 1; k++)
				if (t->src[tr->node_off + k] >= 0)
					tr->general = true;
	}

	hb_free(column);
	t->bytes = (size_t) need;
	p->ptt = t;
	return true;

nomem:
	hb_free(column);
	hb_ptt_free(t);
	return hb_fail(err, HB_ERR_NOMEM, "out of memory");
}

void
hb_ptt_free(HbPtt *t)
{
	if (t == NULL)
		return;
	hb_free(t->trees);
	hb_free(t->used);
	hb_free(t->fsel);
	hb_free(t->tk32);
	hb_free(t->tk64);
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
 * Both side keys of every used input of a block of nb rows:
 * keys[(r * n_used + column) * 2 + side].
 */
static void
block_keys_f32(const HbPtt *t, const double *x, int nf, int nb,
			   uint32_t *keys)
{
	for (int r = 0; r < nb; r++)
		for (int c = 0; c < t->n_used; c++)
		{
			float		v = (float) x[(size_t) r * nf + t->used[c]];
			int			i = r * t->n_used + c;

			keys[2 * i] = side_key_f32(v, 0);
			keys[2 * i + 1] = side_key_f32(v, 1);
		}
}

static void
block_keys_f64(const HbPtt *t, const double *x, int nf, int nb,
			   uint64_t *keys)
{
	for (int r = 0; r < nb; r++)
		for (int c = 0; c < t->n_used; c++)
		{
			double		v = x[(size_t) r * nf + t->used[c]];
			int			i = r * t->n_used + c;

			keys[2 * i] = side_key_f64(v, 0);
			keys[2 * i + 1] = side_key_f64(v, 1);
		}
}

/*
 * Walk one tree for the nb rows of a block: on return idx[r] is the row's
 * leaf among the 2^D bottom slots.  No branch depends on the data.
 *
 * Eight rows go through all levels at a time, their indexes in registers:
 * eight independent chains of loads keep the core busy, without the loads
 * and stores of an index array between levels (about 1.25x the level-by-
 * level loop on the reference machine).  The same body serves 32-bit keys
 * (float32 models) and 64-bit keys (double models).
 */
#define PTT_WALK(NAME, KEY_T, TK_FIELD) \
static void \
NAME(const HbPtt *t, const HbPttTree *tr, const KEY_T *keys, int nb, \
	 int32_t *idx) \
{ \
	const int32_t *fsel = t->fsel + tr->node_off; \
	const KEY_T *tk = t->TK_FIELD + tr->node_off; \
	int			stride = 2 * t->n_used; \
	int			depth = tr->depth; \
	int			r = 0; \
\
	for (; r + 8 <= nb; r += 8) \
	{ \
		const KEY_T *k0 = keys + (size_t) r * stride; \
		const KEY_T *k1 = k0 + stride, \
				   *k2 = k1 + stride, \
				   *k3 = k2 + stride, \
				   *k4 = k3 + stride, \
				   *k5 = k4 + stride, \
				   *k6 = k5 + stride, \
				   *k7 = k6 + stride; \
		int32_t		i0 = 0, i1 = 0, i2 = 0, i3 = 0, \
					i4 = 0, i5 = 0, i6 = 0, i7 = 0; \
\
		for (int d = 0; d < depth; d++) \
		{ \
			i0 = 2 * i0 + 1 + (k0[fsel[i0]] >= tk[i0]); \
			i1 = 2 * i1 + 1 + (k1[fsel[i1]] >= tk[i1]); \
			i2 = 2 * i2 + 1 + (k2[fsel[i2]] >= tk[i2]); \
			i3 = 2 * i3 + 1 + (k3[fsel[i3]] >= tk[i3]); \
			i4 = 2 * i4 + 1 + (k4[fsel[i4]] >= tk[i4]); \
			i5 = 2 * i5 + 1 + (k5[fsel[i5]] >= tk[i5]); \
			i6 = 2 * i6 + 1 + (k6[fsel[i6]] >= tk[i6]); \
			i7 = 2 * i7 + 1 + (k7[fsel[i7]] >= tk[i7]); \
		} \
		idx[r] = i0; \
		idx[r + 1] = i1; \
		idx[r + 2] = i2; \
		idx[r + 3] = i3; \
		idx[r + 4] = i4; \
		idx[r + 5] = i5; \
		idx[r + 6] = i6; \
		idx[r + 7] = i7; \
	} \
	for (; r < nb; r++) \
	{ \
		const KEY_T *k = keys + (size_t) r * stride; \
		int32_t		i = 0; \
\
		for (int d = 0; d < depth; d++) \
			i = 2 * i + 1 + (k[fsel[i]] >= tk[i]); \
		idx[r] = i; \
	} \
	for (r = 0; r < nb; r++) \
		idx[r] -= (1 << depth) - 1; \
}

PTT_WALK(walk_f32, uint32_t, tk32)
PTT_WALK(walk_f64, uint64_t, tk64)

/*
 * The slower walk, from the doubles: trees with categorical or
 * HB_MISSING_ZERO nodes, which take TT's own general step on the plan node
 * they came from, and models too wide for a block of keys on the stack,
 * which compute each key when they need it.
 */
static void
walk_slow(const HbPlan *p, const HbPttTree *tr, const double *x, int nf,
		  int nb, int32_t *idx)
{
	const HbPtt *t = p->ptt;
	const int32_t *fsel = t->fsel + tr->node_off;
	const int32_t *src = t->src ? t->src + tr->node_off : NULL;

	for (int r = 0; r < nb; r++)
		idx[r] = 0;
	for (int d = 0; d < tr->depth; d++)
	{
		for (int r = 0; r < nb; r++)
		{
			int32_t		i = idx[r];
			int			side = fsel[i] & 1;
			double		v = x[(size_t) r * nf + t->used[fsel[i] >> 1]];
			int			right;

			if (src && src[i] >= 0)
			{
				const HbFlatNode *n = &p->nodes[src[i]];

				right = hb_step_general(p, n, src[i], v) != n->left;
			}
			else if (t->tk32)
				right = side_key_f32((float) v, side) >= t->tk32[tr->node_off + i];
			else
				right = side_key_f64(v, side) >= t->tk64[tr->node_off + i];
			idx[r] = 2 * i + 1 + right;
		}
	}
	for (int r = 0; r < nb; r++)
		idx[r] -= (1 << tr->depth) - 1;
}

void
hb_ptt_margins(const HbPlan *p, const double *x, size_t n, double *margins)
{
	int			k = p->n_outputs;

	if (p->ptt == NULL)
	{
		/* no layout (refused at build): TT gives the same bits */
		hb_tt_margins(p, x, n, margins);
		return;
	}
	for (size_t r = 0; r < n; r++)
		for (int g = 0; g < k; g++)
			margins[r * k + g] = p->sum_f32 ?
				(double) (float) p->base_margin[g] : p->base_margin[g];
	hb_ptt_accumulate(p, x, n, 0, p->ptt->n_trees, margins);
}

/*
 * Add the leaves of trees [t_begin, t_end) to margins, which hold running
 * sums (float32 values for float32 models).  Top-K scores tree ranges of the
 * rows still in the race with this.
 */
void
hb_ptt_accumulate(const HbPlan *p, const double *x, size_t n, int t_begin,
				  int t_end, double *margins)
{
	const HbPtt *t = p->ptt;
	int			k = p->n_outputs;
	int			nf = p->n_features;
	uint64_t	keybuf[HB_PTT_KEY_BYTES / sizeof(uint64_t)];
	int32_t		idx[HB_PTT_ROWS];
	size_t		key_size = p->cmp == HB_CMP_LT_F32 ? sizeof(uint32_t) : sizeof(uint64_t);
	int			rows;
	bool		use_keys;
	int			tb1;
	uint32_t	blocks = 0;

	/*
	 * A block's keys are computed once and read by every tree of a tree
	 * block; a model too wide for the buffer computes them per step.
	 */
	rows = (int) (HB_PTT_KEY_BYTES / (2 * key_size * (t->n_used + 1)));
	if (rows > HB_PTT_ROWS)
		rows = HB_PTT_ROWS;
	use_keys = rows >= HB_PTT_MIN_ROWS;
	if (!use_keys)
		rows = HB_PTT_ROWS;

	for (int tb0 = t_begin; tb0 < t_end; tb0 = tb1)
	{
		int64_t		block_bytes = 0;

		/* the trees of this block: at least one, about HB_PTT_TREE_BYTES */
		for (tb1 = tb0; tb1 < t_end &&
			 (tb1 == tb0 || block_bytes < HB_PTT_TREE_BYTES); tb1++)
			block_bytes += (int64_t) (2 * key_size + sizeof(int32_t)) << t->trees[tb1].depth;

		for (size_t r0 = 0; r0 < n; r0 += rows)
		{
			int			nb = n - r0 < (size_t) rows ? (int) (n - r0) : rows;
			const double *xb = x + r0 * nf;
			double	   *mb = margins + r0 * k;

			if (use_keys && p->cmp == HB_CMP_LT_F32)
				block_keys_f32(t, xb, nf, nb, (uint32_t *) keybuf);
			else if (use_keys)
				block_keys_f64(t, xb, nf, nb, keybuf);

			for (int ti = tb0; ti < tb1; ti++)
			{
				const HbPttTree *tr = &t->trees[ti];
				int			g = tr->group;

				if (tr->general || !use_keys)
					walk_slow(p, tr, xb, nf, nb, idx);
				else if (p->cmp == HB_CMP_LT_F32)
					walk_f32(t, tr, (const uint32_t *) keybuf, nb, idx);
				else
					walk_f64(t, tr, keybuf, nb, idx);

				/* per row, in model tree order: float32 sums need it */
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
	thr_size = p->cmp == HB_CMP_LT_F32 ? sizeof(uint32_t) : sizeof(uint64_t);
	/* the inputs as order-preserving keys, one per NaN direction */
	snprintf(in, sizeof(in), "%zux%d", batch, p->n_features);
	snprintf(out, sizeof(out), "%zux%dx2", batch, p->n_features);
	if (!hb_plan_add_op(ops, max_ops, &n, "cast", in, out, 0,
				4.0 * batch * p->n_features))
		return n;
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
		if (!hb_plan_add_op(ops, max_ops, &n, "gather", in, lv,
					level_nodes * (int64_t) sizeof(int32_t), 0) ||
			!hb_plan_add_op(ops, max_ops, &n, "compare", lv, lv,
					level_nodes * (int64_t) thr_size, (double) batch * trees) ||
			!hb_plan_add_op(ops, max_ops, &n, "index", lv, lv, 0,
					3.0 * batch * trees))
			return n;
	}
	snprintf(in, sizeof(in), "%zux%d", batch, t->n_trees);
	if (!hb_plan_add_op(ops, max_ops, &n, "gather", in, in,
				t->n_leaves * (int64_t) (p->sum_f32 ? sizeof(float) : sizeof(double)),
				0))
		return n;
	snprintf(out, sizeof(out), "%zux%d", batch, p->n_outputs);
	hb_plan_add_op(ops, max_ops, &n, "reduce", in, out, 0, (double) batch * t->n_trees);
	return n;
}

bool
hb_ptt_view(const HbPlan *p, HbPttView *v)
{
	const HbPtt *t = p->ptt;

	memset(v, 0, sizeof(*v));
	if (t == NULL)
		return false;
	v->n_used = t->n_used;
	v->used = t->used;
	v->n_nodes = t->n_nodes;
	v->n_leaves = t->n_leaves;
	v->fsel = t->fsel;
	v->tk32 = t->tk32;
	v->tk64 = t->tk64;
	v->leaf_f = t->leaf_f;
	v->leaf_d = t->leaf_d;
	for (int i = 0; i < t->n_trees && !v->general; i++)
		v->general = t->trees[i].general;
	return true;
}

void
hb_ptt_view_tree(const HbPlan *p, int i, int64_t *node_off, int64_t *leaf_off,
				 int32_t *depth, int32_t *group)
{
	const HbPttTree *tr = &p->ptt->trees[i];

	*node_off = tr->node_off;
	*leaf_off = tr->leaf_off;
	*depth = tr->depth;
	*group = tr->group;
}
