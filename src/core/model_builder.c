/*
 * model_builder.c
 *	  Building a model's trees and checking their shape (model_builder.h).
 *
 * The one walk of a tree lives here: every reader's trees go through it when
 * they end (hb_model_read trusts that and does not walk them again), and
 * hb_model_validate runs it on every tree of the models it is given (stored
 * images), so a tree that reaches an executor has passed it.  The walk uses an explicit stack of n_nodes + 1 entries: a node is
 * expanded at most once (the second visit is an error), and each expansion
 * pops one entry and pushes two.
 */
#include "model_builder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One walk: the tree, the rules it is held to, and its scratch. */
typedef struct Walk
{
	HbTree	   *tree;
	const HbModel *m;			/* its outputs and category sets */
	const char *who;
	int32_t		label;
	int32_t		n_features;
	int32_t		leaf_first;
	bool		all_reached;
	HbNodeReader read;
	void	   *ctx;
	const double *vec;			/* vector leaves: width values per node */
	int32_t		width;
	int32_t    *stack;			/* (id, depth) pairs */
	uint8_t    *seen;
	HbError    *err;
} Walk;

/* "node 3", or "leaf 2" for a reader that numbers its leaves apart. */
static const char *
node_word(const Walk *w, int32_t id, int32_t *num)
{
	if (id >= w->leaf_first)
	{
		*num = id - w->leaf_first;
		return "leaf";
	}
	*num = id;
	return "node";
}

static bool
reached_twice(const Walk *w, int32_t id)
{
	int32_t		num;
	const char *word = node_word(w, id, &num);

	if (id >= w->leaf_first)
		return hb_fail(w->err, HB_ERR_INVALID, "%stree %d: %s %d is reached twice",
					   w->who, w->label, word, num);
	return hb_fail(w->err, HB_ERR_INVALID,
				   "%stree %d: %s %d is reached twice (cycle or shared subtree)",
				   w->who, w->label, word, num);
}

/* What a split node must hold besides its children. */
static bool
check_split(const Walk *w, int32_t id, const HbNode *n)
{
	if (n->feature < 0 || n->feature >= w->n_features)
		return hb_fail(w->err, HB_ERR_INVALID,
					   "%stree %d: node %d splits on feature %d, but the model has %d features",
					   w->who, w->label, id, n->feature, w->n_features);
	if (n->is_cat)
	{
		if (n->cat_off < 0 || n->cat_nwords < 0 ||
			(int64_t) n->cat_off + n->cat_nwords > w->m->n_cat_words ||
			n->cat_list > 1 || n->cat_base < 0 ||
			(n->cat_list ? n->cat_base != 0 :
			 (int64_t) n->cat_base + n->cat_nwords > HB_MAX_CATEGORY / 32))
			return hb_fail(w->err, HB_ERR_INVALID,
						   "%stree %d: node %d has a category set out of range",
						   w->who, w->label, id);
		/* a list is searched by halves: ascending, each category valid */
		for (int32_t k = 0; n->cat_list && k < n->cat_nwords; k++)
		{
			uint32_t	c = w->m->cat_words[n->cat_off + k];

			if (c >= HB_MAX_CATEGORY ||
				(k > 0 && c <= w->m->cat_words[n->cat_off + k - 1]))
				return hb_fail(w->err, HB_ERR_INVALID,
							   "%stree %d: node %d has a category list out of order or out of range",
							   w->who, w->label, id);
		}
	}
	else if (isnan(n->threshold))
		return hb_fail(w->err, HB_ERR_INVALID,
					   "%stree %d: node %d has a NaN split threshold",
					   w->who, w->label, id);
	if (n->missing > HB_MISSING_NONE)
		return hb_fail(w->err, HB_ERR_INVALID,
					   "%stree %d: node %d has an unknown missing-value rule",
					   w->who, w->label, id);
	return true;
}

/* The first node the walk did not reach, named. */
static bool
not_reachable(const Walk *w)
{
	int32_t		id = 0,
				num;
	const char *word;

	while (id < w->tree->n_nodes && w->seen[id])
		id++;
	word = node_word(w, id, &num);
	return hb_fail(w->err, HB_ERR_INVALID,
				   "%stree %d: %s %d is not reachable from the root",
				   w->who, w->label, word, num);
}

/*
 * Walk the tree from its root (depth first, right child first), reading
 * each node when first reached if w->read is set, and count its depth and
 * leaves.
 */
static bool
walk(Walk *w)
{
	HbTree	   *tree = w->tree;
	int32_t		n = tree->n_nodes;
	int32_t		sp = 0,
				reached = 0,
				max_depth = 0,
				leaves = 0;

	if (n <= 0)
		return hb_fail(w->err, HB_ERR_INVALID, "%stree %d has no nodes",
					   w->who, w->label);
	if (tree->group < 0 || tree->group >= w->m->n_outputs)
		return hb_fail(w->err, HB_ERR_INVALID,
					   "%stree %d adds to output %d, but the model has %d outputs",
					   w->who, w->label, tree->group, w->m->n_outputs);
	memset(w->seen, 0, n);
	w->stack[0] = 0;
	w->stack[1] = 0;
	sp = 1;
	while (sp > 0)
	{
		int32_t		id,
					d;
		const HbNode *node;

		sp--;
		id = w->stack[2 * sp];
		d = w->stack[2 * sp + 1];
		if (w->seen[id])
			return reached_twice(w, id);
		w->seen[id] = 1;
		reached++;
		if (d > max_depth)
			max_depth = d;
		if (d > HB_MAX_DEPTH)
			return hb_fail(w->err, HB_ERR_LIMIT, "%stree %d is deeper than %d levels",
						   w->who, w->label, HB_MAX_DEPTH);
		if (w->read && !w->read(w->ctx, id))
			return false;
		node = &tree->nodes[id];
		if (node->left == HB_LEAF && node->right == HB_LEAF)
		{
			bool		finite = isfinite(node->value);

			for (int32_t k = 1; k < w->width && finite; k++)
				finite = isfinite(w->vec[(size_t) id * w->width + k]);
			if (!finite)
				return hb_fail(w->err, HB_ERR_INVALID,
							   "%stree %d: leaf %d has a non-finite value", w->who,
							   w->label, id >= w->leaf_first ? id - w->leaf_first : id);
			leaves++;
			continue;
		}
		if (node->left < 0 || node->left >= n || node->right < 0 || node->right >= n)
			return hb_fail(w->err, HB_ERR_INVALID,
						   "%stree %d: node %d has a child index out of range (%d, %d; %d nodes)",
						   w->who, w->label, id, node->left, node->right, n);
		if (!check_split(w, id, node))
			return false;
		w->stack[2 * sp] = node->left;
		w->stack[2 * sp + 1] = d + 1;
		sp++;
		w->stack[2 * sp] = node->right;
		w->stack[2 * sp + 1] = d + 1;
		sp++;
	}
	if (w->all_reached && reached != n)
		return not_reachable(w);
	tree->depth = max_depth;
	tree->n_leaves = leaves;
	return true;
}

bool
hb_tree_check(HbModel *m, int32_t t, HbError *err)
{
	Walk		w;
	HbTree	   *tree = &m->trees[t];
	size_t		n = tree->n_nodes > 0 ? (size_t) tree->n_nodes : 1;
	bool		ok;

	memset(&w, 0, sizeof(w));
	w.tree = tree;
	w.m = m;
	w.who = "";
	w.label = t;
	w.n_features = m->n_features;
	w.leaf_first = INT32_MAX;
	w.err = err;
	w.stack = hb_alloc(sizeof(int32_t) * 2 * (n + 1));
	w.seen = hb_alloc(n);
	if (w.stack == NULL || w.seen == NULL)
		ok = hb_fail(err, HB_ERR_NOMEM, "out of memory");
	else
		ok = walk(&w);
	hb_free(w.stack);
	hb_free(w.seen);
	return ok;
}


/* ---------- the builder ---------- */

static bool
nomem(HbModelBuilder *b)
{
	return hb_fail(b->err, HB_ERR_NOMEM, "%sout of memory", b->who);
}

void
hb_mb_start_model(HbModelBuilder *b, HbModel *m, const char *who, HbError *err)
{
	memset(b, 0, sizeof(*b));
	b->m = m;
	b->err = err;
	b->who = who ? who : "";
	b->n_features = m->n_features > 0 ? m->n_features : HB_MAX_FEATURES;
	b->leaf_first = INT32_MAX;
	b->cap_trees = (size_t) m->n_trees;
	b->cap_cat = (size_t) m->n_cat_words;
	m->estimator = HB_EST_TREES;
}

void
hb_mb_free(HbModelBuilder *b)
{
	hb_free(b->vec);
	hb_free(b->stack);
	hb_free(b->seen);
	b->vec = NULL;
	b->stack = NULL;
	b->seen = NULL;
	b->cap_walk = 0;
}

bool
hb_mb_reserve_trees(HbModelBuilder *b, int64_t n)
{
	HbTree	   *trees;

	if (n <= (int64_t) b->cap_trees)
		return true;
	trees = hb_realloc(b->m->trees, sizeof(HbTree) * (size_t) n);
	if (trees == NULL)
		return nomem(b);
	b->m->trees = trees;
	b->cap_trees = (size_t) n;
	return true;
}

static HbTree *
current(HbModelBuilder *b)
{
	return &b->m->trees[b->m->n_trees - 1];
}

static void
zero_leaf(HbNode *node)
{
	memset(node, 0, sizeof(*node));
	node->left = HB_LEAF;
	node->right = HB_LEAF;
}

bool
hb_mb_start_tree(HbModelBuilder *b, int32_t label, int32_t group,
				 int32_t n_nodes, int32_t width)
{
	HbModel    *m = b->m;
	HbTree	   *trees,
			   *tree;

	if (m->n_trees >= INT32_MAX - 1)
		return hb_fail(b->err, HB_ERR_LIMIT, "%smodel has too many trees", b->who);
	trees = hb_grow(m->trees, &b->cap_trees, (size_t) m->n_trees + 1, sizeof(HbTree));
	if (trees == NULL)
		return nomem(b);
	m->trees = trees;
	tree = &m->trees[m->n_trees++];
	memset(tree, 0, sizeof(*tree));
	tree->group = group;
	b->label = label;
	b->width = width > 1 ? width : 1;
	b->leaf_first = INT32_MAX;
	b->cap_nodes = 0;
	hb_free(b->vec);
	b->vec = NULL;
	if (n_nodes <= 0)
		return true;
	tree->nodes = hb_alloc(sizeof(HbNode) * (size_t) n_nodes);
	if (tree->nodes == NULL)
		return nomem(b);
	tree->n_nodes = n_nodes;
	b->cap_nodes = (size_t) n_nodes;
	for (int32_t i = 0; i < n_nodes; i++)
		zero_leaf(&tree->nodes[i]);
	if (b->width > 1)
	{
		b->vec = hb_alloc0(sizeof(double) * (size_t) n_nodes * b->width);
		if (b->vec == NULL)
			return nomem(b);
	}
	return true;
}

int32_t
hb_mb_add_node(HbModelBuilder *b)
{
	HbTree	   *tree = current(b);
	HbNode	   *nodes;

	if (tree->n_nodes >= INT32_MAX - 1)
	{
		hb_fail(b->err, HB_ERR_LIMIT, "%stree %d has too many nodes", b->who, b->label);
		return -1;
	}
	nodes = hb_grow(tree->nodes, &b->cap_nodes, (size_t) tree->n_nodes + 1, sizeof(HbNode));
	if (nodes == NULL)
	{
		nomem(b);
		return -1;
	}
	tree->nodes = nodes;
	zero_leaf(&nodes[tree->n_nodes]);
	return tree->n_nodes++;
}

/* "x op t" as the model's comparison (HbCmp) puts it. */
static double
model_threshold(const HbModel *m, HbSplitOp op, double t)
{
	if (m->cmp == HB_CMP_LT_F32)
		return op == HB_SPLIT_LT ? (double) (float) t :
			(double) nextafterf((float) t, INFINITY);
	return op == HB_SPLIT_LE ? t : nextafter(t, -INFINITY);
}

void
hb_mb_numeric(HbModelBuilder *b, int32_t id, int32_t feature, HbSplitOp op,
			  double threshold, bool default_left, HbMissing missing,
			  int32_t left, int32_t right)
{
	HbNode	   *node = &current(b)->nodes[id];

	node->left = left;
	node->right = right;
	node->feature = feature;
	node->threshold = model_threshold(b->m, op, threshold);
	node->default_left = default_left;
	node->missing = (uint8_t) missing;
	node->is_cat = 0;
	node->cat_in_left = 0;
	node->cat_off = 0;
	node->cat_nwords = 0;
	node->cat_base = 0;
	node->cat_list = 0;
}

uint32_t *
hb_mb_cat_words(HbModelBuilder *b, size_t nwords, int32_t *off)
{
	HbModel    *m = b->m;
	uint32_t   *words;

	if (nwords > (size_t) (HB_MAX_CAT_WORDS - m->n_cat_words))
	{
		hb_fail(b->err, HB_ERR_LIMIT,
				"%scategorical splits need more than %d bitset words",
				b->who, HB_MAX_CAT_WORDS);
		return NULL;
	}
	words = hb_grow(m->cat_words, &b->cap_cat, (size_t) m->n_cat_words + nwords,
					sizeof(uint32_t));
	if (words == NULL)
	{
		nomem(b);
		return NULL;
	}
	m->cat_words = words;
	memset(words + m->n_cat_words, 0, sizeof(uint32_t) * nwords);
	*off = m->n_cat_words;
	m->n_cat_words += (int32_t) nwords;
	return words + *off;
}

void
hb_mb_categorical_words(HbModelBuilder *b, int32_t id, int32_t feature,
						int32_t cat_off, int32_t nwords, bool set_left,
						bool default_left, HbMissing missing,
						int32_t left, int32_t right)
{
	HbNode	   *node = &current(b)->nodes[id];

	node->left = left;
	node->right = right;
	node->feature = feature;
	node->threshold = 0.0;
	node->default_left = default_left;
	node->missing = (uint8_t) missing;
	node->is_cat = 1;
	node->cat_in_left = set_left;
	node->cat_off = cat_off;
	node->cat_nwords = nwords;
	node->cat_base = 0;
	node->cat_list = 0;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a,
				y = *(const uint32_t *) b;

	return (x > y) - (x < y);
}

/*
 * A set may be a bitset of this many words whatever its size: one cache
 * line, the 256 categories most models never go beyond.
 */
#define CAT_BITSET_MIN_WORDS	8

bool
hb_mb_categorical(HbModelBuilder *b, int32_t id, int32_t feature,
				  const uint32_t *cats, size_t n, bool set_left,
				  bool default_left, HbMissing missing, int32_t left,
				  int32_t right)
{
	uint32_t   *sorted;
	size_t		nu = 0,
				span,
				nwords;
	uint32_t	lo = 0;
	uint32_t   *words;
	int32_t		off;
	bool		list;
	HbNode	   *node;

	for (size_t i = 0; i < n; i++)
		if (cats[i] >= HB_MAX_CATEGORY)
			return hb_fail(b->err, HB_ERR_LIMIT,
						   "%stree %d: node %d has category %u (categories are 0 to %d)",
						   b->who, b->label, id, cats[i], HB_MAX_CATEGORY - 1);
	sorted = hb_alloc(sizeof(uint32_t) * (n ? n : 1));
	if (sorted == NULL)
		return nomem(b);
	if (n > 0)
		memcpy(sorted, cats, sizeof(uint32_t) * n);
	qsort(sorted, n, sizeof(uint32_t), cmp_u32);
	for (size_t i = 0; i < n; i++)
		if (nu == 0 || sorted[i] != sorted[nu - 1])
			sorted[nu++] = sorted[i];
	/* an empty set (no reader writes one) is a bitset of one zero word */
	span = 1;
	if (nu > 0)
	{
		lo = sorted[0] / 32;
		span = (size_t) (sorted[nu - 1] / 32 - lo) + 1;
	}

	/*
	 * XGBoost sizes a node's bitset by its largest category, so a 55 kB
	 * model whose 128 nodes each test one category near 2^24 took 2 MB of
	 * bits per node, 256 MB in every backend that compiled it.  Here a set
	 * costs at most one cache line or two words per category it lists, a
	 * few times what the file spends writing it: a bitset from the word of
	 * its smallest category when its span is that small (one load per
	 * test), else its categories sorted, searched by halves (at most 25
	 * steps).  Starting bitsets at their smallest word alone would still
	 * give {0, 2^24 - 1} 2 MB; a cap on the span would refuse models that
	 * XGBoost trains and scores, such as hashed ids far apart in one set.
	 */
	list = span > CAT_BITSET_MIN_WORDS && span > 2 * nu;
	nwords = list ? nu : span;
	words = hb_mb_cat_words(b, nwords, &off);
	if (words == NULL)
	{
		hb_free(sorted);
		return false;
	}
	if (list)
		memcpy(words, sorted, sizeof(uint32_t) * nu);
	else
		for (size_t i = 0; i < nu; i++)
			words[sorted[i] / 32 - lo] |= (uint32_t) 1 << (sorted[i] % 32);
	hb_free(sorted);
	hb_mb_categorical_words(b, id, feature, off, (int32_t) nwords, set_left,
							default_left, missing, left, right);
	node = &current(b)->nodes[id];
	node->cat_base = list ? 0 : (int32_t) lo;
	node->cat_list = list;
	return true;
}

void
hb_mb_leaf(HbModelBuilder *b, int32_t id, double value)
{
	HbNode	   *node = &current(b)->nodes[id];

	zero_leaf(node);
	node->value = value;
}

void
hb_mb_leaf_vector(HbModelBuilder *b, int32_t id, const double *values)
{
	hb_mb_leaf(b, id, values[0]);
	memcpy(b->vec + (size_t) id * b->width, values, sizeof(double) * b->width);
}

/*
 * A vector-leaf tree: trees 1 .. width - 1 get the nodes of tree 0 (read
 * with component 0) and their own component of each leaf.
 */
static bool
expand_vector_leaves(HbModelBuilder *b)
{
	HbModel    *m = b->m;
	int32_t		first = m->n_trees - 1;

	if (!hb_mb_reserve_trees(b, (int64_t) m->n_trees + b->width - 1))
		return false;
	for (int32_t k = 1; k < b->width; k++)
	{
		const HbTree *src = &m->trees[first];
		HbTree	   *tree = &m->trees[m->n_trees];

		*tree = *src;
		tree->group = k;
		tree->nodes = hb_alloc(sizeof(HbNode) * (size_t) src->n_nodes);
		if (tree->nodes == NULL)
			return nomem(b);
		m->n_trees++;
		memcpy(tree->nodes, src->nodes, sizeof(HbNode) * (size_t) src->n_nodes);
		for (int32_t id = 0; id < src->n_nodes; id++)
			if (tree->nodes[id].left == HB_LEAF)
				tree->nodes[id].value = b->vec[(size_t) id * b->width + k];
	}
	return true;
}

static bool
finish_tree(HbModelBuilder *b, HbNodeReader read, void *ctx)
{
	HbTree	   *tree = current(b);
	size_t		n = tree->n_nodes > 0 ? (size_t) tree->n_nodes : 1;
	Walk		w;

	if (n > b->cap_walk)
	{
		hb_free(b->stack);
		hb_free(b->seen);
		b->stack = hb_alloc(sizeof(int32_t) * 2 * (n + 1));
		b->seen = hb_alloc(n);
		b->cap_walk = b->stack && b->seen ? n : 0;
		if (b->cap_walk == 0)
			return nomem(b);
	}
	memset(&w, 0, sizeof(w));
	w.tree = tree;
	w.m = b->m;
	w.who = b->who;
	w.label = b->label;
	w.n_features = b->n_features;
	w.leaf_first = b->leaf_first;
	w.all_reached = b->all_reached;
	w.read = read;
	w.ctx = ctx;
	w.vec = b->vec;
	w.width = b->vec ? b->width : 1;
	w.stack = b->stack;
	w.seen = b->seen;
	w.err = b->err;
	if (!walk(&w))
		return false;
	if (tree->depth > b->m->max_depth)
		b->m->max_depth = tree->depth;
	/* last: it moves the model's trees */
	return b->width <= 1 || expand_vector_leaves(b);
}

bool
hb_mb_end_tree(HbModelBuilder *b)
{
	return finish_tree(b, NULL, NULL);
}

bool
hb_mb_walk_tree(HbModelBuilder *b, HbNodeReader read, void *ctx)
{
	return finish_tree(b, read, ctx);
}

void
hb_mb_drop_tree(HbModelBuilder *b)
{
	HbModel    *m = b->m;

	if (m->n_trees > 0)
	{
		hb_free(m->trees[m->n_trees - 1].nodes);
		m->n_trees--;
	}
}
