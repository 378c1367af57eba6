/*
 * strategy_gemm.c
 *	  Hummingbird's GEMM strategy: a tree as two small matrix products,
 *	  over OpenBLAS.
 *
 * For tree t with I internal nodes and L = I + 1 leaves, and a chunk of R
 * rows:
 *
 *	(A) gather: G[r][i] = x[r][feature_i].  Hummingbird computes this as a
 *		GEMM X.A with a 0/1 selection matrix A; here it is a plain gather,
 *		because in a GEMM a NaN (missing) or infinite input times a 0 entry
 *		is NaN, which would poison every node of the row, not just the
 *		nodes that split on that feature.
 *	(B) compare: B[r][i] = 1 if the row goes left at node i, else 0, with
 *		the node's missing-value rule applied (exactly TT's semantics).
 *	(C) P = B . C_t, one cblas_sgemm, where C_t[i][l] is +1 if leaf l is in
 *		the left subtree of node i, -1 if in the right subtree, 0 if not
 *		below i.  It is computed transposed, P^T = C_t^T . B^T (L x R), so
 *		that every loop around it runs along the R rows of the chunk.
 *	(D) P[r][l] = (left edges of l's path the row takes) - (right edges of
 *		l's path the row does not take), so P[r][l] equals D_t[l], the
 *		number of left edges on l's path, for the leaf the row reaches and
 *		is smaller for every other leaf: somewhere on their paths the row
 *		went the other way, which costs at least one.
 *	(E) the row adds that leaf's value, in model tree order.
 *
 * Exactness: every entry of B and C_t is 0 or +-1 and every partial sum an
 * integer of magnitude at most the depth, so float32 arithmetic is exact
 * whatever order, blocking or FMA the BLAS uses; single precision serves
 * double models too (their comparisons, in step B, are in double).  Leaf
 * values are never put through the GEMM: a one-hot GEMM against the leaves
 * would be exact per tree, but summing trees inside the BLAS would not add
 * them in tree order, and float32 sums depend on the order.
 *
 * One GEMM per tree and chunk.  Putting several trees into one product
 * needs a block-diagonal C, which multiplies mostly zeros; per-tree products
 * of HB_GEMM_ROWS columns already have a GEMM-friendly shape, and 256 rows
 * measured fastest (a chunk's inputs, B and P stay in L2).
 *
 * Layout.  C_t is not stored: it is rebuilt into scratch for each tree and
 * chunk from the leaves' paths (memset plus one store per path edge, about
 * 1/(2R) of the product it feeds), so the plan holds O(nodes) bytes instead
 * of O(I x L) per tree (130 MB for 500 trees of depth 8).  The scratch (the
 * chunk's inputs transposed, B^T, P^T, C_t^T and the rows' leaf numbers) is
 * allocated per call and bounded at build time by max_bytes; if it can't
 * be allocated the call falls back to TT, which gives the same bits.
 *
 * Node kinds: as in strategy_ptt.c, categorical and HB_MISSING_ZERO nodes
 * call hb_step_general on the plan node they came from, HB_MISSING_NONE
 * nodes store the fixed direction of the 0 a NaN becomes, and plain nodes
 * use a branch-free formula.  Nothing is refused for its kind.
 *
 * OpenBLAS may run a large product on several threads (OPENBLAS_NUM_THREADS
 * decides; the per-tree products here are mostly too small for that); the
 * results are the same bits either way.
 */
#include "plan_int.h"

#include <cblas.h>
#include <stdio.h>
#include <string.h>

#define HB_GEMM_ROWS		256		/* rows per product: a chunk stays in L2 */
#define HB_GEMM_LANES		16		/* rows per step of the inner loops */

/* dleft bits */
#define HB_GEMM_NAN_LEFT	0x01	/* a NaN input goes left */
#define HB_GEMM_GENERAL		0x02	/* call hb_step_general (category, ZERO) */

typedef struct HbGemmTree
{
	int64_t		node_off;		/* first internal node in the node arrays */
	int64_t		leaf_off;		/* first leaf in the leaf arrays */
	int32_t		n_int;			/* I_t */
	int32_t		n_leaves;		/* L_t = I_t + 1 */
	int32_t		group;
} HbGemmTree;

struct HbGemm
{
	int32_t		n_trees;
	HbGemmTree *trees;
	int32_t		max_int;		/* I_max */
	int32_t		max_leaves;		/* L_max */
	int32_t		rows;			/* rows per product, fits max_bytes */
	int64_t		n_int;
	int64_t		n_leaves;
	int64_t		n_path;			/* edges over all leaves' paths */
	double		c_entries;		/* sum of I_t x L_t, for hb_gemm_ops */

	int32_t		n_used;			/* features some split uses */
	int32_t    *used;			/* column -> feature */

	/* internal nodes, in the tree's preorder */
	int32_t    *column;			/* of the split feature */
	float	   *thr_f;			/* HB_CMP_LT_F32 models */
	double	   *thr_d;			/* HB_CMP_LE_F64 models */
	uint8_t    *dleft;			/* HB_GEMM_* bits */
	int32_t    *src;			/* plan node, for general nodes */

	/* leaves, left to right */
	float	   *leaf_f;			/* sum_f32 models */
	double	   *leaf_d;
	float	   *lefts;			/* D_t[l]: left edges on the path */
	int64_t    *path_off;		/* n_leaves + 1: leaf l's edges */
	int32_t    *path;			/* edge: 2 * node + went_right */
	size_t		bytes;
};

/* Does the plan node need hb_step_general rather than the bit formula? */
static bool
node_is_general(const HbFlatNode *n)
{
	int			missing = (n->flags & HB_FN_MISSING_MASK) >> HB_FN_MISSING_SHIFT;

	return (n->flags & HB_FN_CAT) || missing == HB_MISSING_ZERO;
}

/*
 * Temporaries of a call that scores chunks of `rows` rows: the chunk's
 * used inputs transposed (columns x rows, doubles at most), BT (I x rows),
 * PT (L x rows), C_t^T (L x I) and the rows' leaf numbers.
 */
static double
scratch_bytes(double rows, double cols, double max_int, double max_leaves)
{
	return sizeof(double) * cols * rows +
		sizeof(float) * (rows * max_int + rows * max_leaves + max_int * max_leaves) +
		sizeof(int32_t) * rows;
}

/* Per-tree counters while the layout is filled. */
typedef struct GemmFill
{
	HbGemm	   *g;
	const HbPlan *p;
	HbGemmTree *tr;
	const int32_t *column;		/* feature -> column */
	int32_t		next_int;		/* within the tree */
	int32_t		next_leaf;
	int64_t		next_path;		/* global */
	int32_t		path[HB_MAX_DEPTH + 1];
} GemmFill;

/*
 * Preorder walk of the plan's tree: internal nodes get their numbers on the
 * way down, leaves left to right with a copy of the path that led there.
 */
static void
fill(GemmFill *f, int64_t idx, int depth)
{
	HbGemm	   *g = f->g;
	const HbPlan *p = f->p;
	const HbFlatNode *n = &p->nodes[idx];

	if (n->feature < 0)
	{
		int64_t		l = f->tr->leaf_off + f->next_leaf++;
		int			lefts = 0;

		if (g->leaf_f)
			g->leaf_f[l] = n->thr;
		else
			g->leaf_d[l] = p->leaf_d[idx];
		g->path_off[l] = f->next_path;
		for (int e = 0; e < depth; e++)
		{
			g->path[f->next_path++] = f->path[e];
			lefts += !(f->path[e] & 1);
		}
		g->path_off[l + 1] = f->next_path;
		g->lefts[l] = (float) lefts;
	}
	else
	{
		int32_t		i = f->next_int++;
		int64_t		pos = f->tr->node_off + i;
		int			missing = (n->flags & HB_FN_MISSING_MASK) >> HB_FN_MISSING_SHIFT;
		bool		nan_left;

		g->column[pos] = f->column[n->feature];
		if (g->thr_f)
			g->thr_f[pos] = n->thr;
		else
			g->thr_d[pos] = p->thr_d[idx];
		/* NONE: a NaN is 0, whose direction the threshold alone fixes */
		if (missing == HB_MISSING_NONE)
			nan_left = p->cmp == HB_CMP_LT_F32 ? 0.0f < n->thr :
				0.0 <= p->thr_d[idx];
		else
			nan_left = (n->flags & HB_FN_DEFAULT_LEFT) != 0;
		g->dleft[pos] = nan_left ? HB_GEMM_NAN_LEFT : 0;
		g->src[pos] = (int32_t) idx;
		if (node_is_general(n))
			g->dleft[pos] |= HB_GEMM_GENERAL;
		f->path[depth] = 2 * i;
		fill(f, n->left, depth + 1);
		f->path[depth] = 2 * i + 1;
		fill(f, n->left + 1, depth + 1);
	}
}

bool
hb_gemm_build(HbPlan *p, const HbModel *m, size_t max_bytes, HbError *err)
{
	bool		f32 = p->cmp == HB_CMP_LT_F32;
	size_t		thr_size = f32 ? sizeof(float) : sizeof(double);
	HbGemm	   *g;
	int64_t		n_int = 0,
				n_path = 0;
	int32_t		max_int = 0;
	double		c_entries = 0;
	double		layout;
	int32_t		rows;
	int32_t    *column;
	int32_t		n_used = 0;
	GemmFill	f;

	hb_gemm_free(p->gemm);
	p->gemm = NULL;
	if (p->estimator != HB_EST_TREES || m->estimator != HB_EST_TREES ||
		m->n_trees != p->n_trees)
		return hb_fail(err, HB_ERR_ARGUMENT,
					   "the GEMM strategy needs the tree model its plan was built from");
	if (p->sum_f32 != f32)
		return hb_fail(err, HB_ERR_UNSUPPORTED,
					   "tree models must sum in the precision they compare in");

	/* columns, in feature order: the features that some split uses */
	column = hb_alloc(sizeof(int32_t) * p->n_features);
	if (column == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	memset(column, 0xff, sizeof(int32_t) * p->n_features);	/* -1 */
	for (int64_t k = 0; k < p->n_nodes; k++)
		if (p->nodes[k].feature >= 0)
			column[p->nodes[k].feature] = 0;
	for (int32_t ft = 0; ft < p->n_features; ft++)
		if (column[ft] == 0)
			column[ft] = n_used++;

	/* sizes: a tree's nodes lie between its root and the next tree's */
	for (int t = 0; t < p->n_trees; t++)
	{
		int64_t		end = t + 1 < p->n_trees ? p->tree_root[t + 1] : p->n_nodes;
		int32_t		internal = 0;

		for (int64_t k = p->tree_root[t]; k < end; k++)
			if (p->nodes[k].feature >= 0)
				internal++;
		n_int += internal;
		if (internal > max_int)
			max_int = internal;
		c_entries += (double) internal * (internal + 1);
	}
	for (int t = 0; t < m->n_trees; t++)
	{
		/* path edges: the sum of leaf depths, from the IR */
		const HbTree *tree = &m->trees[t];
		int32_t		stack[2 * (HB_MAX_DEPTH + 2)];
		int32_t		depth[2 * (HB_MAX_DEPTH + 2)];
		int			sp = 0;

		if ((t & 63) == 0)
			hb_check_interrupts();

		stack[sp] = 0;
		depth[sp++] = 0;
		while (sp > 0)
		{
			const HbNode *nd = &tree->nodes[stack[--sp]];
			int32_t		d = depth[sp];

			if (nd->left == HB_LEAF)
			{
				n_path += d;
				continue;
			}
			stack[sp] = nd->left;
			depth[sp++] = d + 1;
			stack[sp] = nd->right;
			depth[sp++] = d + 1;
		}
	}

	layout = sizeof(HbGemm) + (double) sizeof(HbGemmTree) * p->n_trees +
		(double) sizeof(int32_t) * n_used +
		(double) n_int * (sizeof(int32_t) + thr_size + 1 + sizeof(int32_t)) +
		(double) (n_int + p->n_trees) * (thr_size + sizeof(float) + sizeof(int64_t)) +
		(double) n_path * sizeof(int32_t);

	/* the tallest product whose temporaries fit next to the layout */
	for (rows = HB_GEMM_ROWS; rows >= HB_GEMM_LANES; rows /= 2)
		if (layout + scratch_bytes(rows, n_used, max_int, max_int + 1) <= (double) max_bytes)
			break;
	if (rows < HB_GEMM_LANES)
	{
		hb_fail(err, HB_ERR_LIMIT,
				"GEMM strategy would need %.0f bytes, more than the limit of %zu",
				layout + scratch_bytes(HB_GEMM_LANES, n_used, max_int, max_int + 1),
				max_bytes);
		hb_fail_detail(err, "The largest tree has %d split nodes; its C matrix alone is %.0f bytes.",
					   max_int, sizeof(float) * (double) max_int * (max_int + 1));
		hb_free(column);
		return false;
	}
	if ((double) max_int * (max_int + 1) > INT32_MAX)
	{
		hb_free(column);
		return hb_fail(err, HB_ERR_LIMIT, "tree too large for a BLAS product");
	}

	g = hb_alloc0(sizeof(HbGemm));
	if (g == NULL)
	{
		hb_free(column);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	g->n_trees = p->n_trees;
	g->max_int = max_int;
	g->max_leaves = max_int + 1;
	g->rows = rows;
	g->n_int = n_int;
	g->n_leaves = n_int + p->n_trees;
	g->n_path = n_path;
	g->c_entries = c_entries;
	g->n_used = n_used;
	g->used = hb_alloc(sizeof(int32_t) * (n_used + 1));
	g->trees = hb_alloc0(sizeof(HbGemmTree) * (p->n_trees + 1));
	g->column = hb_alloc(sizeof(int32_t) * (n_int + 1));
	g->dleft = hb_alloc(n_int + 1);
	g->src = hb_alloc(sizeof(int32_t) * (n_int + 1));
	g->lefts = hb_alloc(sizeof(float) * g->n_leaves);
	g->path_off = hb_alloc(sizeof(int64_t) * (g->n_leaves + 1));
	g->path = hb_alloc(sizeof(int32_t) * (n_path + 1));
	if (f32)
	{
		g->thr_f = hb_alloc(sizeof(float) * (n_int + 1));
		g->leaf_f = hb_alloc(sizeof(float) * g->n_leaves);
	}
	else
	{
		g->thr_d = hb_alloc(sizeof(double) * (n_int + 1));
		g->leaf_d = hb_alloc(sizeof(double) * g->n_leaves);
	}
	if (!g->used || !g->trees || !g->column || !g->dleft || !g->src ||
		!g->lefts || !g->path_off || !g->path ||
		(f32 ? !g->thr_f || !g->leaf_f : !g->thr_d || !g->leaf_d))
	{
		hb_free(column);
		hb_gemm_free(g);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	for (int32_t ft = 0; ft < p->n_features; ft++)
		if (column[ft] >= 0)
			g->used[column[ft]] = ft;

	memset(&f, 0, sizeof(f));
	f.g = g;
	f.p = p;
	f.column = column;
	for (int64_t t = 0, leaf = 0; t < p->n_trees; t++)
	{
		HbGemmTree *tr = &g->trees[t];
		int64_t		int_off = t == 0 ? 0 : g->trees[t - 1].node_off + g->trees[t - 1].n_int;

		tr->node_off = int_off;
		tr->leaf_off = leaf;
		tr->group = p->tree_group[t];
		f.tr = tr;
		f.next_int = 0;
		f.next_leaf = 0;
		fill(&f, p->tree_root[t], 0);
		tr->n_int = f.next_int;
		tr->n_leaves = f.next_leaf;
		leaf += tr->n_leaves;
	}
	hb_free(column);
	g->bytes = (size_t) layout;
	p->gemm = g;
	return true;
}

/*
 * Every pointer field of the layout with its size, as built above, for
 * plan_flat.c (the assertion stops the build when a field is added).
 */
size_t
hb_gemm_struct_size(void)
{
	return sizeof(HbGemm);
}

bool
hb_gemm_arrays(HbGemm *g, HbArrayFn fn, void *arg)
{
	_Static_assert(sizeof(void *) != 8 || sizeof(HbGemm) == 168,
					 "a field was added to HbGemm: visit it in hb_gemm_arrays");

	if (g->n_used < 0 || g->n_int < 0 || g->n_leaves < 0 || g->n_path < 0)
		return false;
	HB_VISIT_ARRAY(fn, arg, g->used, (int64_t) g->n_used + 1);
	HB_VISIT_ARRAY(fn, arg, g->trees, (int64_t) g->n_trees + 1);
	HB_VISIT_ARRAY(fn, arg, g->column, g->n_int + 1);
	HB_VISIT_ARRAY(fn, arg, g->thr_f, g->n_int + 1);
	HB_VISIT_ARRAY(fn, arg, g->thr_d, g->n_int + 1);
	HB_VISIT_ARRAY(fn, arg, g->dleft, g->n_int + 1);
	HB_VISIT_ARRAY(fn, arg, g->src, g->n_int + 1);
	HB_VISIT_ARRAY(fn, arg, g->leaf_f, g->n_leaves);
	HB_VISIT_ARRAY(fn, arg, g->leaf_d, g->n_leaves);
	HB_VISIT_ARRAY(fn, arg, g->lefts, g->n_leaves);
	HB_VISIT_ARRAY(fn, arg, g->path_off, g->n_leaves + 1);
	HB_VISIT_ARRAY(fn, arg, g->path, g->n_path + 1);
	return true;
}

void
hb_gemm_free(HbGemm *g)
{
	if (g == NULL)
		return;
	hb_free(g->trees);
	hb_free(g->used);
	hb_free(g->column);
	hb_free(g->thr_f);
	hb_free(g->thr_d);
	hb_free(g->dleft);
	hb_free(g->src);
	hb_free(g->leaf_f);
	hb_free(g->leaf_d);
	hb_free(g->lefts);
	hb_free(g->path_off);
	hb_free(g->path);
	hb_free(g);
}

size_t
hb_gemm_bytes(const HbGemm *g)
{
	return g ? g->bytes : 0;
}

/*
 * The inner loops run along the rows of a chunk in fixed groups of
 * HB_GEMM_LANES: a constant trip count lets gcc -O2 vectorize them with
 * plain SSE2 (no epilogue, no -march).  Chunks are padded to a multiple of
 * it with zero inputs, whose results nobody reads.
 */
static int
round_lanes(int n)
{
	return (n + HB_GEMM_LANES - 1) / HB_GEMM_LANES * HB_GEMM_LANES;
}

/*
 * The chunk's inputs, transposed: xT[f][r].  A node's compare then reads one
 * contiguous line instead of one cache line per row, and float32 models
 * convert each input once per chunk instead of once per node.
 */
static void
transpose_chunk(const HbPlan *p, const double *x, int nb, int ld, void *xT)
{
	const HbGemm *g = p->gemm;
	int			nf = p->n_features;
	int			padded = round_lanes(nb);

	if (p->cmp == HB_CMP_LT_F32)
	{
		float	   *out = xT;

		for (int r = 0; r < nb; r++)
			for (int c = 0; c < g->n_used; c++)
				out[(size_t) c * ld + r] = (float) x[(size_t) r * nf + g->used[c]];
		for (int c = 0; c < g->n_used; c++)
			for (int r = nb; r < padded; r++)
				out[(size_t) c * ld + r] = 0.0f;
	}
	else
	{
		double	   *out = xT;

		for (int r = 0; r < nb; r++)
			for (int c = 0; c < g->n_used; c++)
				out[(size_t) c * ld + r] = x[(size_t) r * nf + g->used[c]];
		for (int c = 0; c < g->n_used; c++)
			for (int r = nb; r < padded; r++)
				out[(size_t) c * ld + r] = 0.0;
	}
}

/* b[r] = 1 if the row goes left: below the threshold, or NaN sent left */
static void
compare_f32(const float *restrict col, float *restrict b, int n, float t,
			int nan_left)
{
	for (int r0 = 0; r0 < n; r0 += HB_GEMM_LANES)
		for (int j = 0; j < HB_GEMM_LANES; j++)
		{
			float		v = col[r0 + j];
			int			less = v < t;

			b[r0 + j] = (float) (less | ((v != v) & nan_left));
		}
}

static void
compare_f64(const double *restrict col, float *restrict b, int n, double t,
			int nan_left)
{
	for (int r0 = 0; r0 < n; r0 += HB_GEMM_LANES)
		for (int j = 0; j < HB_GEMM_LANES; j++)
		{
			double		v = col[r0 + j];
			int			le = v <= t;

			b[r0 + j] = (float) (le | ((v != v) & nan_left));
		}
}

/*
 * (A) + (B): "goes left" for one tree, transposed: BT[i][r], I x padded
 * rows with row stride ld.
 */
static void
compare_rows(const HbPlan *p, const HbGemmTree *tr, const double *x,
			 const void *xT, int nb, int ld, float *BT)
{
	const HbGemm *g = p->gemm;
	int			nf = p->n_features;
	int			padded = round_lanes(nb);

	for (int i = 0; i < tr->n_int; i++)
	{
		int64_t		node = tr->node_off + i;
		int32_t		c = g->column[node];
		int			nan_left = g->dleft[node] & HB_GEMM_NAN_LEFT;
		float	   *b = BT + (size_t) i * ld;

		if (g->dleft[node] & HB_GEMM_GENERAL)
		{
			const HbFlatNode *n = &p->nodes[g->src[node]];
			const double *col = x + g->used[c];

			/* TT's own step, on the node this one came from, on the double */
			for (int r = 0; r < nb; r++)
				b[r] = hb_step_general(p, n, g->src[node], col[(size_t) r * nf]) == n->left;
			for (int r = nb; r < padded; r++)
				b[r] = 0.0f;
		}
		else if (g->thr_f)
			compare_f32((const float *) xT + (size_t) c * ld, b, padded,
						g->thr_f[node], nan_left);
		else
			compare_f64((const double *) xT + (size_t) c * ld, b, padded,
						g->thr_d[node], nan_left);
	}
}

/* C_t transposed, L x I row-major, from the leaves' paths. */
static void
build_ct(const HbGemm *g, const HbGemmTree *tr, float *CT)
{
	int			ni = tr->n_int;

	memset(CT, 0, sizeof(float) * ni * tr->n_leaves);
	for (int l = 0; l < tr->n_leaves; l++)
	{
		int64_t		leaf = tr->leaf_off + l;

		for (int64_t e = g->path_off[leaf]; e < g->path_off[leaf + 1]; e++)
		{
			int32_t		edge = g->path[e];

			CT[(size_t) l * ni + (edge >> 1)] = (edge & 1) ? -1.0f : 1.0f;
		}
	}
}

/*
 * (D) for leaf l: P <= D_t everywhere and equal only at the row's leaf, so
 * ">=" finds it (without the unordered case that "==" must handle).
 */
static void
mark_leaf(const float *restrict pl, int32_t *restrict leaf, int n, float d,
		  int32_t l)
{
	for (int r0 = 0; r0 < n; r0 += HB_GEMM_LANES)
		for (int j = 0; j < HB_GEMM_LANES; j++)
			leaf[r0 + j] += (pl[r0 + j] >= d) * l;
}

void
hb_gemm_margins(const HbPlan *p, const double *x, size_t n, double *margins)
{
	const HbGemm *g = p->gemm;
	int			k = p->n_outputs;
	int			nf = p->n_features;
	int			ld;
	char	   *scratch;
	void	   *xT;
	float	   *BT,
			   *PT,
			   *CT;
	int32_t    *leaf;

	if (g == NULL || n == 0)
	{
		hb_tt_margins(p, x, n, margins);
		return;
	}
	ld = round_lanes(n < (size_t) g->rows ? (int) n : g->rows);
	scratch = hb_alloc((size_t) scratch_bytes(ld, g->n_used, g->max_int, g->max_leaves));
	if (scratch == NULL)
	{
		/* no room for the temporaries: TT needs none and gives the same bits */
		hb_tt_margins(p, x, n, margins);
		return;
	}
	/* doubles first, then floats, then int32: each part stays aligned */
	xT = scratch;
	BT = (float *) (scratch + sizeof(double) * g->n_used * ld);
	PT = BT + (size_t) ld * g->max_int;
	CT = PT + (size_t) ld * g->max_leaves;
	leaf = (int32_t *) (CT + (size_t) g->max_int * g->max_leaves);

	for (size_t r = 0; r < n; r++)
		for (int gr = 0; gr < k; gr++)
			margins[r * k + gr] = p->sum_f32 ?
				(double) (float) p->base_margin[gr] : p->base_margin[gr];

	for (size_t r0 = 0; r0 < n; r0 += g->rows)
	{
		int			nb = n - r0 < (size_t) g->rows ? (int) (n - r0) : g->rows;
		int			padded = round_lanes(nb);
		const double *xb = x + r0 * nf;
		double	   *mb = margins + r0 * k;

		transpose_chunk(p, xb, nb, ld, xT);
		for (int t = 0; t < g->n_trees; t++)
		{
			const HbGemmTree *tr = &g->trees[t];
			int			ni = tr->n_int;
			const float *lefts = g->lefts + tr->leaf_off;

			memset(leaf, 0, sizeof(int32_t) * padded);
			if (ni > 0)
			{
				/* (C): PT = C_t^T . BT, L x padded rows */
				compare_rows(p, tr, xb, xT, nb, ld, BT);
				build_ct(g, tr, CT);
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
							tr->n_leaves, padded, ni, 1.0f, CT, ni, BT, ld,
							0.0f, PT, ld);
				for (int l = 1; l < tr->n_leaves; l++)
					mark_leaf(PT + (size_t) l * ld, leaf, padded, lefts[l], l);
			}

			/* (E): in tree order, float32 sums for float32 models */
			if (p->sum_f32)
			{
				const float *val = g->leaf_f + tr->leaf_off;

				for (int r = 0; r < nb; r++)
				{
					double	   *acc = &mb[(size_t) r * k + tr->group];

					*acc = (double) ((float) *acc + val[leaf[r]]);
				}
			}
			else
			{
				const double *val = g->leaf_d + tr->leaf_off;

				for (int r = 0; r < nb; r++)
					mb[(size_t) r * k + tr->group] += val[leaf[r]];
			}
		}
		hb_check_interrupts();
	}
	hb_free(scratch);
}

/*
 * The ops of a batch, all trees together: gather and compare give the
 * batch x (sum I_t) matrix, the per-tree products batch x (sum L_t); the
 * gemm's param_bytes are those of the C_t matrices it multiplies with.
 */
int
hb_gemm_ops(const HbPlan *p, size_t batch, HbPlanOp *ops, int max_ops)
{
	const HbGemm *g = p->gemm;
	size_t		thr_size = p->cmp == HB_CMP_LT_F32 ? sizeof(float) : sizeof(double);
	char		x[64],
				bi[64],
				bl[64],
				bt[64],
				out[64];
	int			n = 0;

	if (g == NULL || ops == NULL)
		return 0;
	snprintf(x, sizeof(x), "%zux%d", batch, p->n_features);
	/* the gather reads the g->n_used features that splits use */
	snprintf(bi, sizeof(bi), "%zux%lld", batch, (long long) g->n_int);
	snprintf(bl, sizeof(bl), "%zux%lld", batch, (long long) g->n_leaves);
	snprintf(bt, sizeof(bt), "%zux%d", batch, g->n_trees);
	snprintf(out, sizeof(out), "%zux%d", batch, p->n_outputs);
	if (hb_op_add(ops, max_ops, &n, "gather", x, bi,
			   (g->n_int + g->n_used) * (int64_t) sizeof(int32_t), 0) &&
		hb_op_add(ops, max_ops, &n, "compare", bi, bi,
			   g->n_int * (int64_t) (thr_size + 1), 3.0 * batch * g->n_int) &&
		hb_op_add(ops, max_ops, &n, "gemm", bi, bl,
			   (int64_t) (g->c_entries * sizeof(float)),
			   2.0 * batch * g->c_entries) &&
		hb_op_add(ops, max_ops, &n, "compare", bl, bl,
			   g->n_leaves * (int64_t) sizeof(float), (double) batch * g->n_leaves) &&
		hb_op_add(ops, max_ops, &n, "gather", bl, bt,
			   g->n_leaves * (int64_t) (p->sum_f32 ? sizeof(float) : sizeof(double)),
			   0))
		hb_op_add(ops, max_ops, &n, "reduce", bt, out, 0, (double) batch * g->n_trees);
	return n;
}
