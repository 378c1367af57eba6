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
 *
 * Kernels.  That is the eight-row walk (PTT_WALK).  The build also makes a
 * compact form of the layout (16-bit ranks instead of keys, 4 bytes a node
 * slot), and the compact kernel ("The compact kernel" below: eight rows per
 * group, the top three levels in SSE2 registers, four instructions a step)
 * scores it at about 2.3 times the walk's speed on 500 trees of depth 8.
 * hb_ptt_accumulate takes it whenever its ranks pay (compact_pays); both
 * give the same bits, and the device copy (hb_ptt_view) is the layout
 * above, unchanged.
 */
#include "plan_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HB_PTT_ROWS			128		/* rows per block: inputs stay in L1 */
#define HB_PTT_KEY_BYTES	32768	/* a block's keys, on the stack */
#define HB_PTT_MIN_ROWS		16		/* fewer rows per block is not worth it */
#define HB_PTT_TREE_BYTES	(256 * 1024)	/* layout per tree block: L2 */
#define HB_PTT_DEPTH_LIMIT	30		/* node indexes are int32 */

/* the compact kernel (below) */
#define HB_PTT_C_MAX_RANK	32767	/* ranks compare as int16 in SSE2 */
#define HB_PTT_C_MAX_COLUMNS 1024	/* at least 32 rows of keys per chunk */
#define HB_PTT_C_TOP		3		/* levels chosen in SSE2 registers */
#define HB_PTT_C_CHUNK_ROWS	1024	/* rows whose keys are made at once */
#define HB_PTT_C_CHUNK_KEY_BYTES (128 * 1024)	/* their keys: L2 */
#define HB_PTT_C_BLOCK_ROWS	128		/* rows per tree visit: keys in L1 */
#define HB_PTT_C_TREE_BYTES (256 * 1024)	/* layout per tree block: L2 */

/* keys on the stack: the SSE2 code stores them aligned */
#if defined(__GNUC__)
#define HB_PTT_ALIGN16 __attribute__((aligned(16)))
#else
#define HB_PTT_ALIGN16
#endif

typedef struct HbPttTree
{
	int64_t		node_off;		/* first internal node in the node arrays */
	int64_t		leaf_off;		/* first leaf in the leaf array */
	int32_t		depth;			/* D_t: 2^D_t - 1 nodes, 2^D_t leaves */
	int32_t		group;			/* output the tree adds to */
	bool		general;		/* holds nodes that need hb_step_general */
	int64_t		c_off;			/* the tree's slots in c_key / c_thr */
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

	/* the compact layout (NULL when not built; see "The compact kernel") */
	uint16_t   *c_key;			/* per slot: (2 * column + side) * 8 */
	uint16_t   *c_thr;			/* per slot: right iff rank > c_thr */
	int32_t    *r_off;			/* column c has r_off[c+1] - r_off[c] thresholds */
	uint32_t   *r32;			/* sorted distinct threshold keys, f32 (build) */
	uint64_t   *r64;			/* likewise, f64 (build only) */
	int32_t    *e_off;			/* column c's search tree: [e_off[c], e_off[c+1]) */
	int64_t		c_cost;			/* what the ranks cost (compact_pays) */
	int64_t		c_depth;		/* the depths of the trees it walks, summed */
	int32_t		c_walked;		/* and their count */
	uint32_t   *e32;			/* the thresholds as perfect search trees, f32 */
	uint64_t   *e64;			/* likewise, f64 */
	int32_t    *v_off;			/* column c's blocks in v32/v64, -1: none */
	float	   *v32;			/* the thresholds as values in blocks, f32 */
	double	   *v64;			/* likewise, f64 (see "Ranks by blocks") */
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

/*
 * The compact layout (see "The compact kernel" below): per column, the
 * distinct thresholds that plain nodes of non-general trees compare with,
 * sorted, as keys; per tree slot j (heap numbering from 1, the slot of PTT
 * node j - 1), the node's key offset and the index of its threshold.
 * Returns 1 when built, 0 when the model does not fit it (too many
 * thresholds on a column, too many columns), -1 out of memory.
 */
static int
compact_cmp32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a,
				y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

static int
compact_cmp64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* bytes of the compact layout of a tree of depth d */
static double
compact_tree_bytes(int depth)
{
	return ldexp(1.0, depth) * 2 * sizeof(uint16_t);
}

/* The threshold key of plain PTT node pos: right iff key(input) >= it. */
static inline uint64_t
node_base_key(const HbPtt *t, int64_t pos)
{
	int			side = t->fsel[pos] & 1;

	return t->tk32 ? (uint64_t) (uint32_t) (t->tk32[pos] + side) :
		t->tk64[pos] + side;
}

/* Is PTT node pos padding?  Real nodes never have key 0 (see key_f32). */
static inline bool
node_is_padding(const HbPtt *t, int64_t pos)
{
	return t->fsel[pos] == 0 && (t->tk32 ? t->tk32[pos] == 0 : t->tk64[pos] == 0);
}

/*
 * In-order over slot i of column c's search tree (size slots, slot 0
 * unused): the sorted thresholds from index next on, then padding.
 * Returns the next index.  Recursion depth is at most 16.
 */
static int32_t
eyt_fill(HbPtt *t, int c, int32_t i, int32_t size, int32_t next)
{
	int64_t		at = t->e_off[c] + i;

	if (i >= size)
		return next;
	next = eyt_fill(t, c, 2 * i, size, next);
	if (t->e32)
		t->e32[at] = next < t->r_off[c + 1] ? t->r32[next] : UINT32_MAX;
	else
		t->e64[at] = next < t->r_off[c + 1] ? t->r64[next] : UINT64_MAX;
	return eyt_fill(t, c, 2 * i + 1, size, next + 1);
}

/*
 * Ranks by blocks.  Where the CPU has AVX-512, a column of at most 64
 * thresholds (f64) or 256 (f32) is also kept as the thresholds' values in
 * blocks of 8 (16) lanes, padded with NaN, behind one vector of each
 * block's last value: an input's rank is 8p + q (16p + q), p the pivots
 * below it (the blocks it passes whole) and q the lanes of block p below
 * it, two compares instead of k dependent steps of the search tree: about
 * 2.7x as fast on 63 cuts (the column ranks of a small cheap model are
 * half its cost).  The same counts as the keys, exactly: an f64 entry is
 * key(t) + 1 (right iff x > t) and an f32 entry key(t) (right iff
 * (float) x >= t), so "entry <= key(x)" is "t < x" ("t <= (float) x"),
 * -0 and +0 alike on both sides; a NaN input compares with nothing, as
 * its key 0 ranks 0.  A column whose entries do not map back to a value
 * that way keeps the search tree.
 */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(HB_NO_SIMD)
#define HB_PTT_AVX512 1
#define HB_TARGET_AVX512 __attribute__((target("avx512f,popcnt")))
#endif
#define HB_PTT_V64_LANES 8
#define HB_PTT_V32_LANES 16
/* pivots, then lanes + 1 blocks (the last for inputs above every value) */
#define HB_PTT_V64_SIZE (HB_PTT_V64_LANES * (HB_PTT_V64_LANES + 2))
#define HB_PTT_V32_SIZE (HB_PTT_V32_LANES * (HB_PTT_V32_LANES + 2))

/* -1: not asked yet; 0: off, or the CPU lacks AVX-512; 1: on */
static int	block_ranks = -1;

static bool
ranks_by_blocks(void)
{
#ifdef HB_PTT_AVX512
	if (block_ranks < 0)
		block_ranks = __builtin_cpu_supports("avx512f") &&
			__builtin_cpu_supports("popcnt");
	return block_ranks > 0;
#else
	return false;
#endif
}

void
hb_ptt_set_block_ranks(bool on)
{
	block_ranks = on ? -1 : 0;
}

static double
value_f64(uint64_t key)
{
	uint64_t	u = (key >> 63) ? key & ~((uint64_t) 1 << 63) : ~key;
	double		v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

static float
value_f32(uint32_t key)
{
	uint32_t	u = (key >> 31) ? key & 0x7FFFFFFFu : ~key;
	float		v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

/*
 * The value that sorted entry i stands for (from r32/r64): right iff
 * (float) x >= it (f32), x > it (f64); NaN when no value maps back to it.
 */
static double
entry_value(const HbPtt *t, int32_t i)
{
	if (t->r32)
	{
		float		v = value_f32(t->r32[i]);

		return v == v && key_f32(v) == t->r32[i] ? v : NAN;
	}
	else
	{
		double		v = t->r64[i] > 0 ? value_f64(t->r64[i] - 1) : NAN;

		return v == v && key_f64(v) + 1 == t->r64[i] ? v : NAN;
	}
}

/* Slot `at` of column c's blocks: the value of its entry idx, NaN past the last. */
static void
block_set(HbPtt *t, int c, int at, int32_t idx)
{
	double		v = idx < t->r_off[c + 1] - t->r_off[c] ?
		entry_value(t, t->r_off[c] + idx) : NAN;

	if (t->v32)
		t->v32[t->v_off[c] + at] = (float) v;
	else
		t->v64[t->v_off[c] + at] = v;
}

/*
 * v_off and the blocks of every column that fits them.  Returns -1 out of
 * memory.
 */
static int
blocks_build(HbPtt *t)
{
	bool		f32 = t->r32 != NULL;
	int			lanes = f32 ? HB_PTT_V32_LANES : HB_PTT_V64_LANES;
	int			size = f32 ? HB_PTT_V32_SIZE : HB_PTT_V64_SIZE;
	int32_t		n_fit = 0;

	t->v_off = hb_alloc(sizeof(int32_t) * (t->n_used + 1));
	if (t->v_off == NULL)
		return -1;
	for (int c = 0; c < t->n_used; c++)
	{
		bool		fits = t->r_off[c + 1] - t->r_off[c] <= lanes * lanes;

		for (int32_t i = t->r_off[c]; fits && i < t->r_off[c + 1]; i++)
			fits = !isnan(entry_value(t, i));
		t->v_off[c] = fits ? n_fit++ * size : -1;
	}
	if (n_fit == 0)
		return 0;
	if (f32)
		t->v32 = hb_alloc(sizeof(float) * n_fit * size);
	else
		t->v64 = hb_alloc(sizeof(double) * n_fit * size);
	if (f32 ? t->v32 == NULL : t->v64 == NULL)
		return -1;
	for (int c = 0; c < t->n_used; c++)
	{
		if (t->v_off[c] < 0)
			continue;
		/* the blocks from slot lanes on; pivot b is block b's last value */
		for (int j = 0; j < size - lanes; j++)
			block_set(t, c, lanes + j, j);
		for (int b = 0; b < lanes; b++)
			block_set(t, c, b, lanes * b + lanes - 1);
	}
	return 0;
}

/*
 * The depths of the trees in [t_begin, t_end) that the compact kernels
 * walk (not general), summed, and their count (walked_depth).
 */
static int64_t
depth_sum(const HbPtt *t, int t_begin, int t_end, int *trees)
{
	int64_t		sum = 0;
	int			count = 0;

	for (int i = t_begin; i < t_end; i++)
		if (!t->trees[i].general)
		{
			sum += t->trees[i].depth;
			count++;
		}
	*trees = count;
	return sum;
}

static int
compact_build(HbPtt *t)
{
	bool		f32 = t->tk32 != NULL;
	int32_t    *count = NULL;
	int64_t		slots = 0,
				nthr = 0;

	if (t->n_used > HB_PTT_C_MAX_COLUMNS)
		return 0;

	/* thresholds per column, duplicates included */
	count = hb_alloc0(sizeof(int32_t) * (t->n_used + 1));
	t->r_off = hb_alloc0(sizeof(int32_t) * (t->n_used + 1));
	if (count == NULL || t->r_off == NULL)
		goto nomem;
	for (int i = 0; i < t->n_trees; i++)
	{
		const HbPttTree *tr = &t->trees[i];

		if ((i & 63) == 0)
			hb_check_interrupts();
		slots += (int64_t) 1 << tr->depth;
		if (tr->general)
			continue;
		for (int64_t k = 0; k < ((int64_t) 1 << tr->depth) - 1; k++)
			if (!node_is_padding(t, tr->node_off + k))
			{
				count[t->fsel[tr->node_off + k] >> 1]++;
				nthr++;
			}
	}
	for (int c = 0; c < t->n_used; c++)
		t->r_off[c + 1] = t->r_off[c] + count[c];
	if (f32)
		t->r32 = hb_alloc(sizeof(uint32_t) * (nthr + 1));
	else
		t->r64 = hb_alloc(sizeof(uint64_t) * (nthr + 1));
	t->c_key = hb_alloc0(sizeof(uint16_t) * (slots + 1));
	t->c_thr = hb_alloc0(sizeof(uint16_t) * (slots + 1));
	if ((f32 ? !t->r32 : !t->r64) || !t->c_key || !t->c_thr)
		goto nomem;

	/* fill, sort and deduplicate each column's thresholds */
	memset(count, 0, sizeof(int32_t) * (t->n_used + 1));
	for (int i = 0; i < t->n_trees; i++)
	{
		const HbPttTree *tr = &t->trees[i];

		if ((i & 63) == 0)
			hb_check_interrupts();
		if (tr->general)
			continue;
		for (int64_t k = 0; k < ((int64_t) 1 << tr->depth) - 1; k++)
		{
			int64_t		pos = tr->node_off + k;
			int			c = t->fsel[pos] >> 1;
			int64_t		at;

			if (node_is_padding(t, pos))
				continue;
			at = t->r_off[c] + count[c]++;
			if (f32)
				t->r32[at] = (uint32_t) node_base_key(t, pos);
			else
				t->r64[at] = node_base_key(t, pos);
		}
	}
	{
		int32_t		w = 0;

		for (int c = 0; c < t->n_used; c++)
		{
			int32_t		b = t->r_off[c],
						e = t->r_off[c + 1],
						first = w;

			hb_check_interrupts();
			if (f32)
				qsort(t->r32 + b, e - b, sizeof(uint32_t), compact_cmp32);
			else
				qsort(t->r64 + b, e - b, sizeof(uint64_t), compact_cmp64);
			for (int32_t i = b; i < e; i++)
			{
				if (f32 && (w == first || t->r32[w - 1] != t->r32[i]))
					t->r32[w++] = t->r32[i];
				else if (!f32 && (w == first || t->r64[w - 1] != t->r64[i]))
					t->r64[w++] = t->r64[i];
			}
			t->r_off[c] = first;
			if (w - first > HB_PTT_C_MAX_RANK)
			{
				hb_free(count);
				return 0;
			}
		}
		t->r_off[t->n_used] = w;
	}

	/* the slots: key offset and threshold index of every node */
	slots = 0;
	for (int i = 0; i < t->n_trees; i++)
	{
		HbPttTree  *tr = &t->trees[i];

		if ((i & 63) == 0)
			hb_check_interrupts();
		tr->c_off = slots;
		slots += (int64_t) 1 << tr->depth;
		if (tr->general)
			continue;
		for (int64_t k = 0; k < ((int64_t) 1 << tr->depth) - 1; k++)
		{
			int64_t		pos = tr->node_off + k;
			int			c = t->fsel[pos] >> 1;
			int32_t		lo = t->r_off[c],
						hi = t->r_off[c + 1];
			uint64_t	key;

			if (node_is_padding(t, pos))
				continue;		/* slot 0 0: both subtrees are alike */
			key = node_base_key(t, pos);
			/* the threshold's index in its column: lower bound */
			while (lo < hi)
			{
				int32_t		mid = lo + (hi - lo) / 2;

				if ((f32 ? (uint64_t) t->r32[mid] : t->r64[mid]) < key)
					lo = mid + 1;
				else
					hi = mid;
			}
			t->c_key[tr->c_off + k + 1] = (uint16_t) (t->fsel[pos] * 8);
			t->c_thr[tr->c_off + k + 1] = (uint16_t) (lo - t->r_off[c]);
		}
	}

	/*
	 * Each column's thresholds as a perfect binary search tree of 2^k - 1
	 * keys in level order (slot 1 the root), padded on the right with the
	 * largest key, which no input reaches: k steps of i = 2i + (E[i] <= u)
	 * end at slot 2^k + rank (see compact_keys).
	 */
	t->e_off = hb_alloc0(sizeof(int32_t) * (t->n_used + 1));
	if (t->e_off == NULL)
		goto nomem;
	for (int c = 0; c < t->n_used; c++)
	{
		int32_t		n = t->r_off[c + 1] - t->r_off[c],
					size = 1;

		while (size - 1 < n)
			size *= 2;
		t->e_off[c + 1] = t->e_off[c] + size;
	}
	if (f32)
		t->e32 = hb_alloc(sizeof(uint32_t) * (t->e_off[t->n_used] + 1));
	else
		t->e64 = hb_alloc(sizeof(uint64_t) * (t->e_off[t->n_used] + 1));
	if (f32 ? !t->e32 : !t->e64)
		goto nomem;
	if (blocks_build(t) < 0)
		goto nomem;
	t->c_cost = 0;
	for (int c = 0; c < t->n_used; c++)
	{
		int32_t		size = t->e_off[c + 1] - t->e_off[c];
		int			k = 0;

		eyt_fill(t, c, 1, size, t->r_off[c]);
		while ((1 << k) < size)
			k++;
		/*
		 * 1.2 x (1.5 k - 1) cycles, rounded up; by blocks 5, whatever k
		 * (compact_pays)
		 */
		if (t->v_off[c] >= 0 && ranks_by_blocks())
			t->c_cost += 5;
		else
			t->c_cost += (18 * k - 12 + 9) / 10;
	}
	t->c_depth = depth_sum(t, 0, t->n_trees, &t->c_walked);
	hb_free(t->r32);
	hb_free(t->r64);
	t->r32 = NULL;
	t->r64 = NULL;

	hb_free(count);
	return 1;

nomem:
	hb_free(count);
	return -1;
}

static void
compact_free(HbPtt *t)
{
	hb_free(t->c_key);
	hb_free(t->c_thr);
	hb_free(t->r_off);
	hb_free(t->r32);
	hb_free(t->r64);
	hb_free(t->e_off);
	hb_free(t->e32);
	hb_free(t->e64);
	hb_free(t->v_off);
	hb_free(t->v32);
	hb_free(t->v64);
	t->c_key = t->c_thr = NULL;
	t->r_off = t->e_off = t->v_off = NULL;
	t->r32 = t->e32 = NULL;
	t->r64 = t->e64 = NULL;
	t->v32 = NULL;
	t->v64 = NULL;
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

	/*
	 * The compact layout, kept when the budget has room for it too (it is
	 * about a third of the layout above: 4 bytes a slot, thresholds once).
	 */
	{
		int			r = compact_build(t);

		if (r < 0)
			goto nomem;
		if (r > 0)
		{
			double		cbytes = 0;
			size_t		key_size = f32 ? sizeof(uint32_t) : sizeof(uint64_t);

			for (int i = 0; i < p->n_trees; i++)
				cbytes += compact_tree_bytes(t->trees[i].depth);
			cbytes += 2 * sizeof(int32_t) * (double) (n_used + 1) +
				key_size * (double) t->e_off[n_used];
			/* ranks by blocks */
			cbytes += sizeof(int32_t) * (double) (n_used + 1);
			for (int c = 0; c < n_used; c++)
				if (t->v_off[c] >= 0)
					cbytes += f32 ? sizeof(float) * HB_PTT_V32_SIZE :
						sizeof(double) * HB_PTT_V64_SIZE;
			if (need + cbytes <= (double) max_bytes)
				need += cbytes;
			else
				r = 0;
		}
		if (r == 0)
			compact_free(t);
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

/*
 * Every pointer field of the layout with its size, as built above, for
 * plan_flat.c.  A field added to HbPtt must be added here: the assertion
 * on its size stops the build until it is.
 */
size_t
hb_ptt_struct_size(void)
{
	return sizeof(HbPtt);
}

bool
hb_ptt_arrays(HbPtt *t, const HbPlan *p, HbArrayFn fn, void *arg)
{
	int64_t		slots = 0;
	int64_t		n_fit = 0;
	int64_t		n_e;

	_Static_assert(sizeof(void *) != 8 || sizeof(HbPtt) == 216,
					 "a field was added to HbPtt: visit it in hb_ptt_arrays");

	/* r32 and r64 are freed at the end of the build */
	if (t->r32 != NULL || t->r64 != NULL || t->n_trees != p->n_trees ||
		t->n_used < 0 || t->n_used > p->n_features)
		return false;
	HB_VISIT_ARRAY(fn, arg, t->trees, (int64_t) t->n_trees + 1);
	HB_VISIT_ARRAY(fn, arg, t->used, p->n_features);
	HB_VISIT_ARRAY(fn, arg, t->fsel, t->n_nodes + 1);
	HB_VISIT_ARRAY(fn, arg, t->tk32, t->n_nodes + 1);
	HB_VISIT_ARRAY(fn, arg, t->tk64, t->n_nodes + 1);
	HB_VISIT_ARRAY(fn, arg, t->src, t->n_nodes + 1);
	HB_VISIT_ARRAY(fn, arg, t->leaf_f, t->n_leaves);
	HB_VISIT_ARRAY(fn, arg, t->leaf_d, t->n_leaves);
	for (int i = 0; t->trees != NULL && i < t->n_trees; i++)
	{
		if (t->trees[i].depth < 0 || t->trees[i].depth > HB_PTT_MAX_DEPTH)
			return false;
		slots += (int64_t) 1 << t->trees[i].depth;
	}
	HB_VISIT_ARRAY(fn, arg, t->c_key, slots + 1);
	HB_VISIT_ARRAY(fn, arg, t->c_thr, slots + 1);
	HB_VISIT_ARRAY(fn, arg, t->r_off, (int64_t) t->n_used + 1);
	HB_VISIT_ARRAY(fn, arg, t->e_off, (int64_t) t->n_used + 1);
	n_e = t->e_off != NULL ? (int64_t) t->e_off[t->n_used] + 1 : 0;
	if (n_e < 0)
		return false;
	HB_VISIT_ARRAY(fn, arg, t->e32, n_e);
	HB_VISIT_ARRAY(fn, arg, t->e64, n_e);
	HB_VISIT_ARRAY(fn, arg, t->v_off, (int64_t) t->n_used + 1);
	for (int c = 0; t->v_off != NULL && c < t->n_used; c++)
		n_fit += t->v_off[c] >= 0;
	HB_VISIT_ARRAY(fn, arg, t->v32, n_fit * HB_PTT_V32_SIZE);
	HB_VISIT_ARRAY(fn, arg, t->v64, n_fit * HB_PTT_V64_SIZE);
	return true;
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
	compact_free(t);
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
walk_slow_rows(const HbPlan *p, const HbPttTree *tr, const double *const *rows,
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
			double		v = rows[r][t->used[fsel[i] >> 1]];
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

/* nb (at most HB_PTT_ROWS) consecutive rows from x */
#if HB_PTT_C_BLOCK_ROWS > HB_PTT_ROWS
#error "walk_slow takes at most HB_PTT_ROWS rows"
#endif
static void
walk_slow(const HbPlan *p, const HbPttTree *tr, const double *x, int nf,
		  int nb, int32_t *idx)
{
	const double *rows[HB_PTT_ROWS];

	for (int r = 0; r < nb; r++)
		rows[r] = x + (size_t) r * nf;
	walk_slow_rows(p, tr, rows, nb, idx);
}

/*
 * The compact kernel.
 *
 * The eight-row walk above spends about nine instructions a step: the
 * node's two words, the key, a compare turned into 0 / 1, the index
 * arithmetic, and reloads of row pointers that do not fit in registers.
 * This kernel does the same walk in four, and the first levels of each
 * tree in SSE2 registers without any per-row load of a node:
 *
 * Ranks instead of keys.  Per column, the distinct threshold keys that
 * plain nodes compare with are sorted (r32 / r64).  An input's rank is the
 * number of them at or below its key, so "key >= threshold key i" becomes
 * "rank > i": a node holds the 16-bit index of its threshold (c_thr), and
 * an input's two sides are its rank (side 0: NaN ranks 0, below every
 * threshold; side 1: NaN ranks R, above every one).  The ranks of a chunk
 * of rows are computed once (a search per row and column) and read by
 * every tree; a column may hold at most HB_PTT_C_MAX_RANK distinct
 * thresholds (XGBoost's hist models have at most 256 per feature).
 *
 * Keys by groups of eight rows.  Keys are stored [group][2 * column +
 * side][row of the group], 16 bytes per column side, so that one register
 * holds a column of eight rows and a scalar step addresses the key of row
 * r as kg + c_key[j] + r: the row is a displacement, and one base register
 * serves the eight rows.
 *
 * The step, on heap-numbered slots (root 1, children 2j and 2j + 1):
 *
 *		j = 2 * j + (c_thr[j] < kg[c_key[j] + r])
 *
 * is two loads of the node, a compare with the key in memory, and an add
 * with carry (x86-64 GNU C: inline assembly, since gcc spends three
 * instructions on the carry; elsewhere plain C).  -DHB_NO_SIMD builds the
 * plain C kernel only, as other machines get it (test_strategies runs it:
 * scripts/sanitize.sh builds with it too).
 *
 * The top levels (HB_PTT_C_TOP, 7 nodes) are the same for every row: their
 * thresholds are broadcast once per tree, each node is compared with a
 * column of eight keys in one instruction (pcmpgtw: ranks stay below
 * 32768), and the path is selected with masks, which gives the slot at
 * level HB_PTT_C_TOP for eight rows without a gather.  The next group's
 * top levels are computed before this group's walk, in the shadow of its
 * loads.
 *
 * Leaves are added per row in model tree order into float32 (double)
 * accumulators, exactly as the other strategies do.
 */
#if defined(__SSE2__) && !defined(HB_NO_SIMD)
#include <emmintrin.h>
#define HB_PTT_SSE2 1
#endif
#if defined(__GNUC__) && defined(__x86_64__) && !defined(HB_NO_SIMD)
#define HB_PTT_ASM 1
#endif

static HbPttKernel ptt_kernel = HB_PTT_KERNEL_AUTO;

void
hb_ptt_set_kernel(HbPttKernel k)
{
	ptt_kernel = k;
}

bool
hb_ptt_has_compact(const HbPlan *p)
{
	return p->ptt != NULL && p->ptt->c_key != NULL;
}

int
hb_ptt_block_columns(const HbPlan *p)
{
	const HbPtt *t = p->ptt;
	int			n = 0;

	if (t == NULL || t->v_off == NULL || !ranks_by_blocks())
		return 0;
	for (int c = 0; c < t->n_used; c++)
		n += t->v_off[c] >= 0;
	return n;
}

/*
 * Ranks.  The rank of key u, how many of a column's thresholds are at or
 * below it, comes from the column's search tree E (size = 2^k slots, see
 * compact_build): k steps of i = 2i + (E[i] <= u) from slot 1 end at slot
 * size + rank.  Eight rows are searched side by side (their chains of
 * loads overlap) for the same k steps, so no branch depends on the data.
 * x86-64 GNU C: a load, a compare with u + 1 and an add with carry a step
 * (u + 1 does not wrap: keys of numbers stay far below the padding).
 */
#ifdef HB_PTT_ASM
/* CF = E[i] < u + 1, i.e. E[i] <= u; then i = 2i + CF */
#define RANK_STEP_ASM(MOV, CMP, I, U1) \
	do { \
		__typeof__(U1) e_; \
		__asm__(MOV " %[e], %[t]\n\t" CMP " %[u], %[t]\n\tadc %[i], %[i]" \
				: [i] "+r" (I), [t] "=&r" (e_) : [u] "m" (U1), [e] "m" (E[I]) : "cc"); \
	} while (0)
#endif
#define RANK_STEP_C(I, U) ((I) = 2 * (I) + (E[I] <= (U)))

#define RANK8_FN(NAME, KEY_T, MOV, CMP) \
static inline void \
NAME(const KEY_T *E, int k, const KEY_T *u, bool portable, uint32_t *rank) \
{ \
	size_t		i0 = 1, i1 = 1, i2 = 1, i3 = 1, i4 = 1, i5 = 1, i6 = 1, i7 = 1; \
\
	if (portable) \
	{ \
		for (int s = 0; s < k; s++) \
		{ \
			RANK_STEP_C(i0, u[0]); RANK_STEP_C(i1, u[1]); \
			RANK_STEP_C(i2, u[2]); RANK_STEP_C(i3, u[3]); \
			RANK_STEP_C(i4, u[4]); RANK_STEP_C(i5, u[5]); \
			RANK_STEP_C(i6, u[6]); RANK_STEP_C(i7, u[7]); \
		} \
	} \
	else \
	{ \
		RANK8_ASM(KEY_T, MOV, CMP); \
	} \
	rank[0] = (uint32_t) (i0 - ((size_t) 1 << k)); \
	rank[1] = (uint32_t) (i1 - ((size_t) 1 << k)); \
	rank[2] = (uint32_t) (i2 - ((size_t) 1 << k)); \
	rank[3] = (uint32_t) (i3 - ((size_t) 1 << k)); \
	rank[4] = (uint32_t) (i4 - ((size_t) 1 << k)); \
	rank[5] = (uint32_t) (i5 - ((size_t) 1 << k)); \
	rank[6] = (uint32_t) (i6 - ((size_t) 1 << k)); \
	rank[7] = (uint32_t) (i7 - ((size_t) 1 << k)); \
}

#ifdef HB_PTT_ASM
#define RANK8_ASM(KEY_T, MOV, CMP) \
	do { \
		KEY_T		a[8]; \
\
		for (int r = 0; r < 8; r++) \
			a[r] = u[r] + 1; \
		for (int s = 0; s < k; s++) \
		{ \
			RANK_STEP_ASM(MOV, CMP, i0, a[0]); RANK_STEP_ASM(MOV, CMP, i1, a[1]); \
			RANK_STEP_ASM(MOV, CMP, i2, a[2]); RANK_STEP_ASM(MOV, CMP, i3, a[3]); \
			RANK_STEP_ASM(MOV, CMP, i4, a[4]); RANK_STEP_ASM(MOV, CMP, i5, a[5]); \
			RANK_STEP_ASM(MOV, CMP, i6, a[6]); RANK_STEP_ASM(MOV, CMP, i7, a[7]); \
		} \
	} while (0)
#else
#define RANK8_ASM(KEY_T, MOV, CMP) \
	for (int s = 0; s < k; s++) \
	{ \
		RANK_STEP_C(i0, u[0]); RANK_STEP_C(i1, u[1]); \
		RANK_STEP_C(i2, u[2]); RANK_STEP_C(i3, u[3]); \
		RANK_STEP_C(i4, u[4]); RANK_STEP_C(i5, u[5]); \
		RANK_STEP_C(i6, u[6]); RANK_STEP_C(i7, u[7]); \
	}
#endif

RANK8_FN(rank8_32, uint32_t, "movl", "cmpl")
RANK8_FN(rank8_64, uint64_t, "movq", "cmpq")

#ifdef HB_PTT_SSE2
/*
 * One column of a full group in SSE2: the eight inputs as keys, NaN aside,
 * then ranks, then both sides packed to 16 bits.  The same bits as the
 * scalar code below (cvtpd2ps rounds as a cast does); about three times
 * as fast, which matters when a call has few trees.
 */
static inline void
column_keys_sse2(const HbPtt *t, const double *xc, int nf, int c, int k,
				 uint16_t *kc)
{
	const __m128i hi = _mm_set1_epi32((int) 0x80000000u);
	__m128i		nan0,
				nan1,
				r0,
				r1,
				nv = _mm_set1_epi32(t->r_off[c + 1] - t->r_off[c]);
	uint32_t	rank[8];
	__m128d		d[4];

	for (int i = 0; i < 4; i++)
		d[i] = _mm_loadh_pd(_mm_load_sd(xc + (size_t) 2 * i * nf),
							xc + (size_t) (2 * i + 1) * nf);
	if (t->e32)
	{
		__m128		f0 = _mm_movelh_ps(_mm_cvtpd_ps(d[0]), _mm_cvtpd_ps(d[1])),
					f1 = _mm_movelh_ps(_mm_cvtpd_ps(d[2]), _mm_cvtpd_ps(d[3]));
		__m128i		u0,
					u1;
		uint32_t	u[8];

		nan0 = _mm_castps_si128(_mm_cmpunord_ps(f0, f0));
		nan1 = _mm_castps_si128(_mm_cmpunord_ps(f1, f1));
		/* key_f32: -0 + 0 = +0; negatives flipped, positives above them */
		u0 = _mm_castps_si128(_mm_add_ps(f0, _mm_setzero_ps()));
		u1 = _mm_castps_si128(_mm_add_ps(f1, _mm_setzero_ps()));
		u0 = _mm_xor_si128(u0, _mm_or_si128(_mm_srai_epi32(u0, 31), hi));
		u1 = _mm_xor_si128(u1, _mm_or_si128(_mm_srai_epi32(u1, 31), hi));
		_mm_storeu_si128((__m128i *) u, _mm_andnot_si128(nan0, u0));
		_mm_storeu_si128((__m128i *) (u + 4), _mm_andnot_si128(nan1, u1));
		rank8_32(t->e32 + t->e_off[c], k, u, false, rank);
	}
	else
	{
		const __m128i hi64 = _mm_set_epi32((int) 0x80000000u, 0, (int) 0x80000000u, 0);
		uint64_t	u[8];
		__m128i		m[4];

		for (int i = 0; i < 4; i++)
		{
			__m128i		v = _mm_castpd_si128(_mm_add_pd(d[i], _mm_setzero_pd()));
			__m128i		sgn = _mm_shuffle_epi32(_mm_srai_epi32(v, 31), 0xF5);

			m[i] = _mm_castpd_si128(_mm_cmpunord_pd(d[i], d[i]));
			v = _mm_xor_si128(v, _mm_or_si128(sgn, hi64));
			_mm_storeu_si128((__m128i *) (u + 2 * i), _mm_andnot_si128(m[i], v));
		}
		/* the 64-bit NaN masks as 32-bit ones */
		nan0 = _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(m[0]), _mm_castsi128_ps(m[1]),
											   _MM_SHUFFLE(2, 0, 2, 0)));
		nan1 = _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(m[2]), _mm_castsi128_ps(m[3]),
											   _MM_SHUFFLE(2, 0, 2, 0)));
		rank8_64(t->e64 + t->e_off[c], k, u, false, rank);
	}
	/* side 0: NaN ranks 0, below every threshold; side 1: n, above */
	r0 = _mm_andnot_si128(nan0, _mm_loadu_si128((const __m128i *) rank));
	r1 = _mm_andnot_si128(nan1, _mm_loadu_si128((const __m128i *) (rank + 4)));
	_mm_store_si128((__m128i *) kc, _mm_packs_epi32(r0, r1));
	r0 = _mm_or_si128(r0, _mm_and_si128(nan0, nv));
	r1 = _mm_or_si128(r1, _mm_and_si128(nan1, nv));
	_mm_store_si128((__m128i *) (kc + 8), _mm_packs_epi32(r0, r1));
}
#endif

#ifdef HB_PTT_AVX512
#include <immintrin.h>

/*
 * Eight rows of column values xc (lanes of them real) by the blocks at V:
 * p pivots below the value, then q lanes of block p; packed into kc as
 * compact_keys packs them (side 0: NaN below every threshold; side 1:
 * above, at n).
 */
#define BLOCK_KEYS8(V, LANES, T, VEC, LOAD, SET1, CMP, PRED) \
	do { \
		const VEC	piv = LOAD(V); \
\
		for (int r = lanes; r < 8; r++) \
			kc[r] = kc[r + 8] = 0; \
		for (int r = 0; r < lanes; r++) \
		{ \
			T			v = (T) xc[(size_t) r * nf]; \
			VEC			x = SET1(v); \
			unsigned	p = (unsigned) __builtin_popcount(CMP(piv, x, PRED)); \
			unsigned	q = (unsigned) __builtin_popcount(CMP(LOAD((V) + (LANES) * (p + 1)), x, PRED)); \
			uint16_t	rank = (uint16_t) ((LANES) * p + q); \
\
			kc[r] = rank; \
			kc[r + 8] = v != v ? n : rank; \
		} \
	} while (0)

/* One column of a group of eight rows by blocks (see "Ranks by blocks"). */
HB_TARGET_AVX512
static void
column_keys_blocks(const HbPtt *t, const double *xc, int nf, int c,
				   int lanes, uint16_t *kc)
{
	uint16_t	n = (uint16_t) (t->r_off[c + 1] - t->r_off[c]);

	if (t->v32)
		BLOCK_KEYS8(t->v32 + t->v_off[c], HB_PTT_V32_LANES, float, __m512,
					_mm512_loadu_ps, _mm512_set1_ps, _mm512_cmp_ps_mask, _CMP_LE_OQ);
	else
		BLOCK_KEYS8(t->v64 + t->v_off[c], HB_PTT_V64_LANES, double, __m512d,
					_mm512_loadu_pd, _mm512_set1_pd, _mm512_cmp_pd_mask, _CMP_LT_OQ);
}
#endif

/*
 * End of the block of trees that starts at tb0: trees are taken while their
 * leaf tables (two ranks and an accumulator a node) stay within
 * HB_PTT_C_TREE_BYTES, at least one, so that a block's trees stay in cache
 * while every row block walks them.
 */
static int
compact_block_end(const HbPtt *t, int tb0, int t_end, size_t acc_size)
{
	int64_t		block_bytes = 0;
	int			tb1;

	for (tb1 = tb0; tb1 < t_end &&
		 (tb1 == tb0 || block_bytes < HB_PTT_C_TREE_BYTES); tb1++)
		block_bytes += (int64_t) (2 * sizeof(uint16_t) + acc_size) <<
			t->trees[tb1].depth;
	return tb1;
}

/*
 * The ranks of nr rows (both sides of every column) into kb, by groups of
 * eight rows; the rows that pad the last group get rank 0.
 */
static void
compact_keys(const HbPtt *t, const double *x, int nf, int nr, uint16_t *kb,
			 bool portable)
{
	size_t		gstride = (size_t) 16 * t->n_used;
	uint8_t		ks[HB_PTT_C_MAX_COLUMNS];
#ifdef HB_PTT_AVX512
	bool		blocks = !portable && t->v_off != NULL && ranks_by_blocks();
#endif

	for (int c = 0; c < t->n_used; c++)
	{
		int			size = t->e_off[c + 1] - t->e_off[c];

		ks[c] = 0;
		while ((1 << ks[c]) < size)
			ks[c]++;
	}

	/* a group's inputs stay in L1 while its columns are ranked */
	for (int r0 = 0; r0 < nr; r0 += 8)
	{
		int			lanes = nr - r0 < 8 ? nr - r0 : 8;
		const double *xg = x + (size_t) r0 * nf;
		uint16_t   *kg = kb + (size_t) (r0 / 8) * gstride;

		for (int c = 0; c < t->n_used; c++)
		{
			int			k = ks[c];
			uint16_t	n = (uint16_t) (t->r_off[c + 1] - t->r_off[c]);
			const double *xc = xg + t->used[c];
			uint16_t   *kc = kg + 16 * c;
			bool		nan[8];
			uint32_t	rank[8];

#ifdef HB_PTT_AVX512
			if (blocks && t->v_off[c] >= 0)
			{
				column_keys_blocks(t, xc, nf, c, lanes, kc);
				continue;
			}
#endif
#ifdef HB_PTT_SSE2
			if (lanes == 8 && !portable)
			{
				column_keys_sse2(t, xc, nf, c, k, kc);
				continue;
			}
#endif
			if (t->e32)
			{
				uint32_t	u[8];

				for (int r = 0; r < 8; r++)
				{
					float		fv = r < lanes ? (float) xc[(size_t) r * nf] : 0.0f;

					nan[r] = fv != fv;
					u[r] = nan[r] ? 0 : key_f32(fv);
				}
				rank8_32(t->e32 + t->e_off[c], k, u, portable, rank);
			}
			else
			{
				uint64_t	u[8];

				for (int r = 0; r < 8; r++)
				{
					double		v = r < lanes ? xc[(size_t) r * nf] : 0.0;

					nan[r] = v != v;
					u[r] = nan[r] ? 0 : key_f64(v);
				}
				rank8_64(t->e64 + t->e_off[c], k, u, portable, rank);
			}
			for (int r = 0; r < 8; r++)
			{
				/* side 0: NaN below every threshold; side 1: above */
				kc[r] = r < lanes && !nan[r] ? (uint16_t) rank[r] : 0;
				kc[r + 8] = r >= lanes ? 0 : nan[r] ? n : (uint16_t) rank[r];
			}
		}
	}
}

#ifdef HB_PTT_SSE2
/* m1 where mask is set, m0 elsewhere */
static inline __m128i
mux(__m128i mask, __m128i m1, __m128i m0)
{
	return _mm_xor_si128(m0, _mm_and_si128(_mm_xor_si128(m0, m1), mask));
}

/*
 * The slots at level L (L <= 4) of eight rows: node n's mask is "right"
 * (all ones) or "left" (zero) per row; level d's bit selects among the
 * masks of its level with the bits above it.  (Four levels measured 0.98x
 * three: docs/strategies.md.)
 */
#if HB_PTT_C_TOP > 4
#error "top_sse2 selects at most four levels"
#endif
static inline __m128i
top_sse2(const uint16_t *kg, const int *off, const __m128i *thr, int L)
{
#define NODE(n) _mm_cmpgt_epi16(_mm_load_si128((const __m128i *) (kg + off[n])), thr[n])
	__m128i		b0,
				b1,
				b2,
				s;

	switch (L)
	{
		case 0:
			return _mm_set1_epi16(1);
		case 1:
			b0 = NODE(1);
			return _mm_sub_epi16(_mm_set1_epi16(2), b0);
		case 2:
			b0 = NODE(1);
			b1 = mux(b0, NODE(3), NODE(2));
			s = _mm_add_epi16(_mm_add_epi16(b0, b0), b1);
			return _mm_sub_epi16(_mm_set1_epi16(4), s);
		case 3:
			b0 = NODE(1);
			b1 = mux(b0, NODE(3), NODE(2));
			b2 = mux(b1, mux(b0, NODE(7), NODE(5)), mux(b0, NODE(6), NODE(4)));
			s = _mm_add_epi16(_mm_add_epi16(b0, b0), b1);
			s = _mm_add_epi16(_mm_add_epi16(s, s), b2);
			return _mm_sub_epi16(_mm_set1_epi16(8), s);
		default:
			{
				__m128i		b3,
							w0,
							w1,
							w2,
							w3;

				b0 = NODE(1);
				b1 = mux(b0, NODE(3), NODE(2));
				b2 = mux(b1, mux(b0, NODE(7), NODE(5)), mux(b0, NODE(6), NODE(4)));
				/* level 3: slot 8 + 4 b0 + 2 b1 + b2 */
				w0 = mux(b0, NODE(12), NODE(8));
				w1 = mux(b0, NODE(13), NODE(9));
				w2 = mux(b0, NODE(14), NODE(10));
				w3 = mux(b0, NODE(15), NODE(11));
				w0 = mux(b1, w2, w0);
				w1 = mux(b1, w3, w1);
				b3 = mux(b2, w1, w0);
				s = _mm_add_epi16(_mm_add_epi16(b0, b0), b1);
				s = _mm_add_epi16(_mm_add_epi16(s, s), b2);
				s = _mm_add_epi16(_mm_add_epi16(s, s), b3);
				return _mm_sub_epi16(_mm_set1_epi16(16), s);
			}
	}
#undef NODE
}
#endif

/* One step of the eight rows of a group (see above). */
#if defined(HB_PTT_ASM)
#define C_STEP_ASM(J, R) \
	do { \
		uint16_t	thr_ = ct[J]; \
		__asm__("cmpw %[k], %[t]\n\tadc %[j], %[j]" \
				: [j] "+r" (J) \
				: [t] "r" (thr_), [k] "m" (kg[ck[J] + (R)]) \
				: "cc"); \
	} while (0)
#endif
#define C_STEP_C(J, R) ((J) = (J) + (J) + (ct[J] < kg[ck[J] + (R)]))

#define C_LEVELS(STEP, FROM) \
	for (int d = (FROM); d < depth; d++) \
	{ \
		STEP(j0, 0); STEP(j1, 1); STEP(j2, 2); STEP(j3, 3); \
		STEP(j4, 4); STEP(j5, 5); STEP(j6, 6); STEP(j7, 7); \
	}

/*
 * One plain tree over the ng groups of a row block (nr rows): add each
 * row's leaf to acc[row * k + group of the tree].
 */
static void
compact_tree(const HbPtt *t, const HbPttTree *tr, const uint16_t *kb, int ng,
			 int nr, int k, float *acc_f, double *acc_d, bool portable)
{
	const uint16_t *ck = t->c_key + tr->c_off;
	const uint16_t *ct = t->c_thr + tr->c_off;
	size_t		gstride = (size_t) 16 * t->n_used;
	int			depth = tr->depth;
	int			g = tr->group;
	int64_t		lbase = tr->leaf_off - ((int64_t) 1 << depth);
	int			top = depth < HB_PTT_C_TOP ? depth : HB_PTT_C_TOP;
#ifdef HB_PTT_SSE2
	int			off[1 << HB_PTT_C_TOP];
	__m128i		thr[1 << HB_PTT_C_TOP];
	__m128i		jnext = _mm_setzero_si128();

	for (int n = 1; n < (1 << top); n++)
	{
		off[n] = ck[n];
		thr[n] = _mm_set1_epi16((short) ct[n]);
	}
	if (!portable && ng > 0)
		jnext = top_sse2(kb, off, thr, top);
#else
	(void) top;
	portable = true;
#endif

	for (int gi = 0; gi < ng; gi++)
	{
		const uint16_t *kg = kb + (size_t) gi * gstride;
		size_t		j0, j1, j2, j3, j4, j5, j6, j7;
		size_t		js[8];
		int			lanes = nr - gi * 8 < 8 ? nr - gi * 8 : 8;

		if (portable)
		{
			j0 = j1 = j2 = j3 = j4 = j5 = j6 = j7 = 1;
			C_LEVELS(C_STEP_C, 0);
		}
		else
		{
#ifdef HB_PTT_SSE2
			__m128i		jv = jnext;

			j0 = (size_t) _mm_extract_epi16(jv, 0);
			j1 = (size_t) _mm_extract_epi16(jv, 1);
			j2 = (size_t) _mm_extract_epi16(jv, 2);
			j3 = (size_t) _mm_extract_epi16(jv, 3);
			j4 = (size_t) _mm_extract_epi16(jv, 4);
			j5 = (size_t) _mm_extract_epi16(jv, 5);
			j6 = (size_t) _mm_extract_epi16(jv, 6);
			j7 = (size_t) _mm_extract_epi16(jv, 7);
			/*
			 * The next group's top levels before this group's walk: they
			 * run while its loads are in flight (1.13x).
			 */
			if (gi + 1 < ng)
				jnext = top_sse2(kg + gstride, off, thr, top);
#ifdef HB_PTT_ASM
			C_LEVELS(C_STEP_ASM, top);
#else
			C_LEVELS(C_STEP_C, top);
#endif
#endif
		}

		/* per row, in model tree order */
#define C_LEAVES(A, LEAF) \
		do { \
			if (lanes == 8) \
			{ \
				(A)[0] += (LEAF)[lbase + j0]; \
				(A)[k] += (LEAF)[lbase + j1]; \
				(A)[2 * k] += (LEAF)[lbase + j2]; \
				(A)[3 * k] += (LEAF)[lbase + j3]; \
				(A)[4 * k] += (LEAF)[lbase + j4]; \
				(A)[5 * k] += (LEAF)[lbase + j5]; \
				(A)[6 * k] += (LEAF)[lbase + j6]; \
				(A)[7 * k] += (LEAF)[lbase + j7]; \
			} \
			else \
			{ \
				js[0] = j0; js[1] = j1; js[2] = j2; js[3] = j3; \
				js[4] = j4; js[5] = j5; js[6] = j6; js[7] = j7; \
				for (int r = 0; r < lanes; r++) \
					(A)[(size_t) r * k] += (LEAF)[lbase + js[r]]; \
			} \
		} while (0)
		if (acc_f)
			C_LEAVES(acc_f + (size_t) gi * 8 * k + g, t->leaf_f);
		else
			C_LEAVES(acc_d + (size_t) gi * 8 * k + g, t->leaf_d);
#undef C_LEAVES
	}
}

/*
 * Trees [t_begin, t_end) over n rows with the compact kernel; false when
 * its buffers cannot be had (the caller then takes the eight-row walk).
 */
static bool
compact_accumulate(const HbPlan *p, const double *x, size_t n, int t_begin,
				   int t_end, double *margins, bool portable)
{
	const HbPtt *t = p->ptt;
	int			k = p->n_outputs;
	int			nf = p->n_features;
	bool		f32 = p->sum_f32;
	size_t		gstride = (size_t) 16 * t->n_used;
	size_t		ch = HB_PTT_C_CHUNK_KEY_BYTES /
		(sizeof(uint16_t) * (gstride ? gstride : 16)) * 8;
	size_t		acc_size = f32 ? sizeof(float) : sizeof(double);
	char	   *mem;
	uint16_t   *kb;
	void	   *acc;
	int32_t		idx[HB_PTT_C_BLOCK_ROWS];
	uint32_t	blocks = 0;

	if (ch > HB_PTT_C_CHUNK_ROWS)
		ch = HB_PTT_C_CHUNK_ROWS;
	if (ch > (n + 7) / 8 * 8)
		ch = (n + 7) / 8 * 8;
	mem = hb_alloc(ch / 8 * gstride * sizeof(uint16_t) + ch * k * acc_size + 16);
	if (mem == NULL)
		return false;
	kb = (uint16_t *) (((uintptr_t) mem + 15) & ~(uintptr_t) 15);
	acc = kb + ch / 8 * gstride;

	for (size_t c0 = 0; c0 < n; c0 += ch)
	{
		int			cn = n - c0 < ch ? (int) (n - c0) : (int) ch;
		const double *xc = x + c0 * nf;
		double	   *mc = margins + c0 * k;
		int			tb1;

		compact_keys(t, xc, nf, cn, kb, portable);
		for (size_t i = 0; i < (size_t) cn * k; i++)
		{
			if (f32)
				((float *) acc)[i] = (float) mc[i];
			else
				((double *) acc)[i] = mc[i];
		}

		for (int tb0 = t_begin; tb0 < t_end; tb0 = tb1)
		{
			tb1 = compact_block_end(t, tb0, t_end, acc_size);
			for (int r0 = 0; r0 < cn; r0 += HB_PTT_C_BLOCK_ROWS)
			{
				int			nb = cn - r0 < HB_PTT_C_BLOCK_ROWS ? cn - r0 : HB_PTT_C_BLOCK_ROWS;
				int			ng = (nb + 7) / 8;
				const uint16_t *kbb = kb + (size_t) (r0 / 8) * gstride;
				float	   *af = f32 ? (float *) acc + (size_t) r0 * k : NULL;
				double	   *ad = f32 ? NULL : (double *) acc + (size_t) r0 * k;

				for (int ti = tb0; ti < tb1; ti++)
				{
					const HbPttTree *tr = &t->trees[ti];

					if (!tr->general)
					{
						compact_tree(t, tr, kbb, ng, nb, k, af, ad, portable);
						continue;
					}
					/* categorical / zero-as-missing nodes: TT's own step */
					walk_slow(p, tr, xc + (size_t) r0 * nf, nf, nb, idx);
					for (int r = 0; r < nb; r++)
					{
						if (f32)
							af[(size_t) r * k + tr->group] += t->leaf_f[tr->leaf_off + idx[r]];
						else
							ad[(size_t) r * k + tr->group] += t->leaf_d[tr->leaf_off + idx[r]];
					}
				}
				if ((++blocks & 31) == 0)
					hb_check_interrupts();
			}
		}

		for (size_t i = 0; i < (size_t) cn * k; i++)
			mc[i] = f32 ? (double) ((float *) acc)[i] : ((double *) acc)[i];
	}
	hb_free(mem);
	return true;
}

/*
 * The depths of the trees in [t_begin, t_end) that the compact kernels
 * walk (not general), summed; *trees gets their count.  The whole model's
 * was summed at build (c_depth, c_walked): a row at a time asks for it on
 * every call.
 */
static int64_t
walked_depth(const HbPtt *t, int t_begin, int t_end, int *trees)
{
	if (t_begin == 0 && t_end == t->n_trees)
	{
		*trees = t->c_walked;
		return t->c_depth;
	}
	return depth_sum(t, t_begin, t_end, trees);
}

/*
 * Few rows: fewer than a group of eight.  The compact kernel would walk
 * eight lanes for fewer real rows, and TT's walk takes a branch per node
 * that the data decides (mispredicted about every other node).  Here each
 * row walks eight trees side by side instead: the compact kernel's
 * branch-free step over the row's own lane of the ranks, eight independent
 * chains of loads.  The leaves are added in model tree order, as
 * everywhere, so the sums are the other kernels' bits.  On the anchor
 * model (500 trees of depth 8) a row alone costs about 20 ns a tree where
 * TT's walk took 50-90; sixteen trees side by side were no faster (the
 * loads miss L2 either way).  Used where it pays (few_pays), or wherever
 * the compact kernel is forced.
 */
#define FEW_TREES 8
#define F_STEP(I) \
	do { \
		if (d < dep[I]) \
		{ \
			size_t		at_ = off[I] + j[I]; \
\
			j[I] = 2 * j[I] + (t->c_thr[at_] < kg[t->c_key[at_]]); \
		} \
	} while (0)

static void
few_rows(const HbPlan *p, const double *x, size_t n, int t_begin, int t_end,
		 double *margins, bool portable)
{
	const HbPtt *t = p->ptt;
	int			k = p->n_outputs;
	int			nf = p->n_features;
	uint16_t	kb[16 * HB_PTT_C_MAX_COLUMNS] HB_PTT_ALIGN16;

	for (size_t r0 = 0; r0 < n; r0 += 8)
	{
		int			nr = n - r0 < 8 ? (int) (n - r0) : 8;

		compact_keys(t, x + r0 * nf, nf, nr, kb, portable);
		for (int r = 0; r < nr; r++)
		{
			const uint16_t *kg = kb + r;
			const double *row = x + (r0 + r) * nf;
			double	   *m = margins + (r0 + r) * k;

			for (int tb0 = t_begin; tb0 < t_end; tb0 += FEW_TREES)
			{
				int			tn = t_end - tb0 < FEW_TREES ? t_end - tb0 : FEW_TREES;
				size_t		j[FEW_TREES];
				int64_t		off[FEW_TREES];
				int			dep[FEW_TREES];
				int			dmax = 0;

				for (int i = 0; i < FEW_TREES; i++)
				{
					const HbPttTree *tr = &t->trees[tb0 + (i < tn ? i : 0)];

					j[i] = 1;
					off[i] = tr->c_off;
					/* a general tree takes walk_slow; padding lanes do nothing */
					dep[i] = i < tn && !tr->general ? tr->depth : 0;
					if (dep[i] > dmax)
						dmax = dep[i];
				}
				for (int d = 0; d < dmax; d++)
				{
					F_STEP(0); F_STEP(1); F_STEP(2); F_STEP(3);
					F_STEP(4); F_STEP(5); F_STEP(6); F_STEP(7);
				}
				for (int i = 0; i < tn; i++)
				{
					const HbPttTree *tr = &t->trees[tb0 + i];
					int64_t		leaf;

					if (tr->general)
					{
						int32_t		idx;

						walk_slow(p, tr, row, nf, 1, &idx);
						leaf = tr->leaf_off + idx;
					}
					else
						leaf = tr->leaf_off + (int64_t) j[i] - ((int64_t) 1 << tr->depth);
					if (p->sum_f32)
						m[tr->group] = (double) ((float) m[tr->group] + t->leaf_f[leaf]);
					else
						m[tr->group] += t->leaf_d[leaf];
				}
			}
		}
	}
}
#undef F_STEP

/*
 * Does the few-row kernel pay for n rows over trees [t_begin, t_end)?  Its
 * rows are ranked first, about eight times c_cost a row (a group's ranks
 * are made for its real lanes, but a column's setup is paid per group),
 * and each tree of depth D then costs about 10 (D - 2) cycles less than
 * TT's walk, whose first levels are well predicted: on the anchor model
 * (28 columns, depth 8) one row broke even at about 15 trees, and 30
 * trees took 30 ns a tree against TT's 52; in bench/strategies.sh's grid
 * (one row, 28 columns) TT stayed ahead at depth 2 whatever the trees,
 * and at depth 4 with 10 trees.
 */
static bool
few_pays(const HbPtt *t, size_t n, int t_begin, int t_end)
{
	int64_t		saved;
	int			trees;

	if (t->c_key == NULL || n >= 8 || ptt_kernel == HB_PTT_KERNEL_WALK8)
		return false;
	if (ptt_kernel != HB_PTT_KERNEL_AUTO)
		return true;
	saved = 10 * (walked_depth(t, t_begin, t_end, &trees) - 2 * (int64_t) trees);
	return saved >= 8 * t->c_cost;
}

/*
 * Is the compact kernel worth it for trees [t_begin, t_end)?  Measured on
 * the bench models (bench/strategies.sh's, one thread): per row, a tree of
 * depth D costs the eight-row walk about 2D + 1 cycles more than this
 * kernel, and the ranks cost this kernel about 1.5 k - 1 cycles per column
 * more than the walk's keys, k the steps of the column's search
 * (c_cost: their sum, plus a fifth, made at build).  Break-even comes at
 * 20-35 trees of 28 columns.  Ranked by blocks, a column costs about 5
 * whatever k: on the anchor model's prefixes (28 columns, depth 8) the
 * walk took 111 and 144 ns a row at 8 and 12 trees, the compact kernel
 * 117 and 128; on 10 trees of depth 6 over 25 double columns 120 against
 * 95.  Top-K and the early exit rank a chunk once
 * for the whole model (hb_ptt_chunk_usable), whatever their blocks.
 * Fewer than eight rows (a forced PTT on single rows) keep the walk, which
 * was 2-3x faster there.
 */
static bool
compact_pays(const HbPtt *t, size_t n, int t_begin, int t_end)
{
	int64_t		saved;
	int			trees;

	if (t->c_key == NULL || ptt_kernel == HB_PTT_KERNEL_WALK8)
		return false;
	if (ptt_kernel != HB_PTT_KERNEL_AUTO)
		return true;
	/* a group is eight rows: below that, most of its work is wasted */
	if (n < 8)
		return false;
	saved = 2 * walked_depth(t, t_begin, t_end, &trees) + trees;
	return saved >= t->c_cost;
}

/*
 * Does PTT beat TT's walk on a batch of n < HB_AUTO_MIN_BATCH rows of the
 * whole model (hb_plan_strategy)?  Only where the few-row kernel or the
 * compact kernel pays; the eight-row walk needs a block of keys.
 */
bool
hb_ptt_small_pays(const HbPlan *p, size_t n)
{
	const HbPtt *t = p->ptt;

	if (t == NULL)
		return false;
	return n < 8 ? few_pays(t, n, 0, t->n_trees) : compact_pays(t, n, 0, t->n_trees);
}

/*
 * Chunks: the compact kernel over tree ranges for rows that drop out.
 *
 * Top-K and the class early exit score rows tree block by tree block and
 * drop the rows that are settled.  Through hb_ptt_accumulate each block
 * would rank its rows again (about a tenth of a full scoring each time on
 * the anchor model) and move their doubles around; a chunk ranks its rows
 * once, keeps their running sums in the kernel's own float32 (double)
 * accumulators, and moves ranks and sums rather than the inputs (trees
 * that need them read the caller's rows through the ids).  Rows
 * get their trees in model order, whatever the blocks, so their sums are
 * those of hb_ptt_margins, bit for bit.
 */
struct HbPttChunk
{
	const HbPlan *p;
	int			cap;			/* rows a chunk holds */
	int			n;				/* rows it holds now */
	size_t		gstride;		/* uint16 per group of eight rows */
	bool		portable;
	bool		general;		/* some tree takes walk_slow_rows */
	const double *x;			/* the rows loaded: row id is x + (id - first) * nf */
	size_t		first;
	char	   *mem[2];			/* ranks, sums, ids: two copies */
	uint16_t   *kb[2];
	float	   *af[2];
	double	   *ad[2];
	size_t	   *id[2];
	int			cur;			/* which copy is current */
};

static bool ptt_chunks = true;

void
hb_ptt_set_chunks(bool on)
{
	ptt_chunks = on;
}

bool
hb_ptt_chunk_usable(const HbPlan *p, int t_begin, int t_end)
{
	const HbPtt *t = p->ptt;

	/* at a batch size, as compact_pays sees it: ranks once for the range */
	return ptt_chunks && t != NULL && t->c_key != NULL &&
		compact_pays(t, HB_PTT_C_CHUNK_ROWS, t_begin, t_end);
}

HbPttChunk *
hb_ptt_chunk_new(const HbPlan *p)
{
	const HbPtt *t = p->ptt;
	HbPttChunk *c;
	int			k = p->n_outputs;
	size_t		ranks,
				sums,
				ids;

	if (t == NULL || t->c_key == NULL)
		return NULL;
	c = hb_alloc0(sizeof(HbPttChunk));
	if (c == NULL)
		return NULL;
	c->p = p;
	c->gstride = (size_t) 16 * t->n_used;
	c->cap = (int) (HB_PTT_C_CHUNK_KEY_BYTES /
					(sizeof(uint16_t) * (c->gstride ? c->gstride : 16)) * 8);
	if (c->cap > HB_PTT_C_CHUNK_ROWS)
		c->cap = HB_PTT_C_CHUNK_ROWS;
	c->portable = ptt_kernel == HB_PTT_KERNEL_PORTABLE;
	for (int i = 0; i < t->n_trees; i++)
		c->general |= t->trees[i].general;
	ranks = (size_t) c->cap / 8 * c->gstride * sizeof(uint16_t);
	sums = (size_t) c->cap * k * (p->sum_f32 ? sizeof(float) : sizeof(double));
	ids = (size_t) c->cap * sizeof(size_t);
	for (int b = 0; b < 2; b++)
	{
		char	   *q;

		/* zeroed: lanes past the last row are compared, never added */
		c->mem[b] = hb_alloc0(ranks + sums + ids + 3 * 16);
		if (c->mem[b] == NULL)
		{
			hb_ptt_chunk_free(c);
			return NULL;
		}
#define ALIGN16(P) ((char *) (((uintptr_t) (P) + 15) & ~(uintptr_t) 15))
		q = ALIGN16(c->mem[b]);
		c->kb[b] = (uint16_t *) q;
		q = ALIGN16(q + ranks);
		if (p->sum_f32)
			c->af[b] = (float *) q;
		else
			c->ad[b] = (double *) q;
		q = ALIGN16(q + sums);
		c->id[b] = (size_t *) q;
#undef ALIGN16
	}
	return c;
}

void
hb_ptt_chunk_free(HbPttChunk *c)
{
	if (c == NULL)
		return;
	hb_free(c->mem[0]);
	hb_free(c->mem[1]);
	hb_free(c);
}

int
hb_ptt_chunk_cap(const HbPttChunk *c)
{
	return c->cap;
}

int
hb_ptt_chunk_rows(const HbPttChunk *c)
{
	return c->n;
}

/*
 * Take n rows (n <= cap): ranks once, sums at the base margins, row i gets
 * id first_id + i.  Trees with categorical or zero-as-missing nodes read
 * the inputs again: x must stay valid while the chunk holds these rows.
 */
void
hb_ptt_chunk_load(HbPttChunk *c, const double *x, int n, size_t first_id)
{
	const HbPlan *p = c->p;
	int			k = p->n_outputs;
	int			b = c->cur;

	c->n = n;
	compact_keys(p->ptt, x, p->n_features, n, c->kb[b], c->portable);
	for (int i = 0; i < n; i++)
	{
		for (int g = 0; g < k; g++)
		{
			if (p->sum_f32)
				c->af[b][(size_t) i * k + g] = (float) p->base_margin[g];
			else
				c->ad[b][(size_t) i * k + g] = p->base_margin[g];
		}
		c->id[b][i] = first_id + i;
	}
	c->x = x;
	c->first = first_id;
}

/* Add trees [t_begin, t_end) to the sums of the first nr rows. */
void
hb_ptt_chunk_run(HbPttChunk *c, int nr, int t_begin, int t_end)
{
	const HbPlan *p = c->p;
	const HbPtt *t = p->ptt;
	int			k = p->n_outputs;
	int			nf = p->n_features;
	int			b = c->cur;
	size_t		acc_size = p->sum_f32 ? sizeof(float) : sizeof(double);
	int32_t		idx[HB_PTT_C_BLOCK_ROWS];
	const double *rows[HB_PTT_C_BLOCK_ROWS];
	uint32_t	blocks = 0;
	int			tb1;

	for (int tb0 = t_begin; tb0 < t_end; tb0 = tb1)
	{
		tb1 = compact_block_end(t, tb0, t_end, acc_size);
		for (int r0 = 0; r0 < nr; r0 += HB_PTT_C_BLOCK_ROWS)
		{
			int			nb = nr - r0 < HB_PTT_C_BLOCK_ROWS ? nr - r0 : HB_PTT_C_BLOCK_ROWS;
			int			ng = (nb + 7) / 8;
			const uint16_t *kbb = c->kb[b] + (size_t) (r0 / 8) * c->gstride;
			float	   *af = p->sum_f32 ? c->af[b] + (size_t) r0 * k : NULL;
			double	   *ad = p->sum_f32 ? NULL : c->ad[b] + (size_t) r0 * k;

			if (c->general)
				for (int r = 0; r < nb; r++)
					rows[r] = c->x + (c->id[b][r0 + r] - c->first) * nf;
			for (int ti = tb0; ti < tb1; ti++)
			{
				const HbPttTree *tr = &t->trees[ti];

				if (!tr->general)
				{
					compact_tree(t, tr, kbb, ng, nb, k, af, ad, c->portable);
					continue;
				}
				walk_slow_rows(p, tr, rows, nb, idx);
				for (int r = 0; r < nb; r++)
				{
					if (af)
						af[(size_t) r * k + tr->group] += t->leaf_f[tr->leaf_off + idx[r]];
					else
						ad[(size_t) r * k + tr->group] += t->leaf_d[tr->leaf_off + idx[r]];
				}
			}
			if ((++blocks & 31) == 0)
				hb_check_interrupts();
		}
	}
}

/*
 * Keep rows[0..m) (indexes of rows held, distinct), in that order: row j
 * becomes what row rows[j] was.  Built in the other copy, so any order
 * works; about 2 x columns 16-bit moves a row.
 */
void
hb_ptt_chunk_select(HbPttChunk *c, const int32_t *rows, int m)
{
	const HbPlan *p = c->p;
	int			k = p->n_outputs;
	int			sides = 2 * p->ptt->n_used;
	int			s = c->cur,
				d = 1 - c->cur;

	for (int j = 0; j < m; j++)
	{
		int			r = rows[j];
		const uint16_t *from = c->kb[s] + (size_t) (r / 8) * c->gstride + r % 8;
		uint16_t   *to = c->kb[d] + (size_t) (j / 8) * c->gstride + j % 8;

		for (int q = 0; q < sides; q++)
			to[8 * q] = from[8 * q];
		for (int g = 0; g < k; g++)
		{
			if (p->sum_f32)
				c->af[d][(size_t) j * k + g] = c->af[s][(size_t) r * k + g];
			else
				c->ad[d][(size_t) j * k + g] = c->ad[s][(size_t) r * k + g];
		}
		c->id[d][j] = c->id[s][r];
	}
	c->cur = d;
	c->n = m;
}

/* Row r of the current copy becomes row j (r != j), in place. */
static void
chunk_move(HbPttChunk *c, int r, int j)
{
	const HbPlan *p = c->p;
	int			k = p->n_outputs;
	int			sides = 2 * p->ptt->n_used;
	int			b = c->cur;
	const uint16_t *from = c->kb[b] + (size_t) (r / 8) * c->gstride + r % 8;
	uint16_t   *to = c->kb[b] + (size_t) (j / 8) * c->gstride + j % 8;

	for (int q = 0; q < sides; q++)
		to[8 * q] = from[8 * q];
	for (int g = 0; g < k; g++)
	{
		if (p->sum_f32)
			c->af[b][(size_t) j * k + g] = c->af[b][(size_t) r * k + g];
		else
			c->ad[b][(size_t) j * k + g] = c->ad[b][(size_t) r * k + g];
	}
	c->id[b][j] = c->id[b][r];
}

/*
 * Drop the rows whose keep[] is 0: the last rows kept fill their places,
 * so only as many rows move as are dropped before them (rows change order;
 * their ids go with them).  keep[] is updated to the rows held after.
 */
void
hb_ptt_chunk_drop(HbPttChunk *c, uint8_t *keep)
{
	int			last = c->n - 1;
	int			held = 0;

	for (int i = 0; i <= last; i++)
	{
		if (keep[i])
		{
			held = i + 1;
			continue;
		}
		while (last > i && !keep[last])
			last--;
		if (last <= i)
			break;
		chunk_move(c, last, i);
		keep[i] = 1;
		keep[last] = 0;
		held = i + 1;
		last--;
	}
	c->n = held;
}

/* The running sums of the rows held (n x outputs), as doubles. */
void
hb_ptt_chunk_margins(const HbPttChunk *c, double *out)
{
	size_t		cells = (size_t) c->n * c->p->n_outputs;

	for (size_t i = 0; i < cells; i++)
		out[i] = c->p->sum_f32 ? (double) c->af[c->cur][i] : c->ad[c->cur][i];
}

const size_t *
hb_ptt_chunk_ids(const HbPttChunk *c)
{
	return c->id[c->cur];
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

	if (few_pays(t, n, t_begin, t_end))
	{
		few_rows(p, x, n, t_begin, t_end, margins,
				 ptt_kernel == HB_PTT_KERNEL_PORTABLE);
		return;
	}
	if (compact_pays(t, n, t_begin, t_end) &&
		compact_accumulate(p, x, n, t_begin, t_end, margins,
						   ptt_kernel == HB_PTT_KERNEL_PORTABLE))
		return;
	if (n < HB_AUTO_MIN_BATCH && ptt_kernel == HB_PTT_KERNEL_AUTO)
	{
		/* below a block of keys TT's walk is the cheaper (same bits) */
		hb_tt_accumulate(p, x, n, t_begin, t_end, margins);
		return;
	}

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
	if (!hb_op_add(ops, max_ops, &n, "cast", in, out, 0,
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
		if (!hb_op_add(ops, max_ops, &n, "gather", in, lv,
					level_nodes * (int64_t) sizeof(int32_t), 0) ||
			!hb_op_add(ops, max_ops, &n, "compare", lv, lv,
					level_nodes * (int64_t) thr_size, (double) batch * trees) ||
			!hb_op_add(ops, max_ops, &n, "index", lv, lv, 0,
					3.0 * batch * trees))
			return n;
	}
	snprintf(in, sizeof(in), "%zux%d", batch, t->n_trees);
	if (!hb_op_add(ops, max_ops, &n, "gather", in, in,
				t->n_leaves * (int64_t) (p->sum_f32 ? sizeof(float) : sizeof(double)),
				0))
		return n;
	snprintf(out, sizeof(out), "%zux%d", batch, p->n_outputs);
	hb_op_add(ops, max_ops, &n, "reduce", in, out, 0, (double) batch * t->n_trees);
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
