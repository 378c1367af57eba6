/*
 * model_builder.h
 *	  Building a model's trees: the one place where readers add trees,
 *	  splits, leaves and category sets to the IR (model.h), and the one
 *	  check of a tree's shape.
 *
 * Every reader builds its trees through this (read_xgboost.c,
 * read_lightgbm.c, onnx/onnx_trees.c, read_pipeline.c): hb_model_read does
 * not walk a reader's trees again, so a reader must not write trees any
 * other way, nor change them after they end in a way the check would
 * refuse.  hb_model_validate checks the models it is given (stored images)
 * with the same walk (hb_tree_check), so what a tree must be is said once:
 *	- the root reaches every node at most once (a node reached twice is a
 *	  cycle or a shared subtree, which no library writes);
 *	- no path is longer than HB_MAX_DEPTH edges, so that executors can use
 *	  fixed-size stacks and perfect-tree layouts;
 *	- children, features and category sets are in range, thresholds are not
 *	  NaN, leaf values are finite, the tree adds to an output of the model.
 * The IR is not changed by any of this: the builder writes HbTree and HbNode
 * as model.h defines them.
 *
 * Node ids are the reader's.  A reader that numbers nodes as its library
 * does (XGBoost, LightGBM) keeps those numbers, so that a leaf index means
 * what the library's pred_leaf says.  A tree is built one of three ways:
 *	- of a known size (hb_mb_start_tree with n_nodes > 0): every node starts
 *	  as a zero leaf, the reader defines the nodes it has (hb_mb_numeric,
 *	  hb_mb_categorical*, hb_mb_leaf*) and hb_mb_end_tree walks and checks;
 *	- of a known size, read as it is walked (hb_mb_walk_tree): the walk asks
 *	  the reader to define each node when it first reaches it, so that nodes
 *	  the root cannot reach (XGBoost's deleted nodes) are never read and stay
 *	  zero leaves;
 *	- grown (n_nodes == 0): hb_mb_add_node appends nodes (the ONNX reader
 *	  lowers its trees that way), then hb_mb_end_tree.
 *
 * A tree being built is already the model's last tree, so that freeing the
 * model frees it whatever happens; the builder's own scratch memory goes
 * with hb_mb_free.  Errors are the builder's HbError; messages start with
 * the reader's prefix ("xgboost model: ") and name the tree and the node.
 */
#ifndef HB_MODEL_BUILDER_H
#define HB_MODEL_BUILDER_H

#include "model.h"

/* all category sets of a model together: 256 MB */
#define HB_MAX_CAT_WORDS	(1 << 26)
/* the executors read categories 0 to 2^24 - 1 */
#define HB_MAX_CATEGORY		(1 << 24)

/* How a numeric split compares: x < t, or x <= t, goes left. */
typedef enum HbSplitOp
{
	HB_SPLIT_LT,
	HB_SPLIT_LE
} HbSplitOp;

/* Reads node id of the tree being walked (see hb_mb_walk_tree). */
typedef bool (*HbNodeReader) (void *ctx, int32_t id);

typedef struct HbModelBuilder
{
	HbModel    *m;
	HbError    *err;
	const char *who;			/* start of messages: "xgboost model: " or "" */
	int32_t		n_features;		/* splits read features below this */

	/*
	 * Rules of the shape check, which the reader may set before a tree
	 * ends: leaf_first makes nodes from that id on "leaf k" in messages
	 * (LightGBM numbers its leaves apart; INT32_MAX: none), all_reached
	 * refuses nodes the root does not reach (else they stay as they are).
	 */
	int32_t		leaf_first;
	bool		all_reached;

	/* the tree being built: m->trees[m->n_trees - 1] */
	int32_t		label;			/* its number in messages */
	int32_t		width;			/* values per leaf; > 1: vector leaves */
	size_t		cap_nodes;		/* of a grown tree */
	double	   *vec;			/* vector leaves: width values per node */

	size_t		cap_trees;		/* of m->trees */
	size_t		cap_cat;		/* of m->cat_words */

	/* the walk's scratch, kept from tree to tree */
	int32_t    *stack;
	uint8_t    *seen;
	size_t		cap_walk;
} HbModelBuilder;

/*
 * Start building the trees of m, whose outputs, features (when known: else
 * any feature up to HB_MAX_FEATURES) and comparison (m->cmp) are set.
 */
extern void hb_mb_start_model(HbModelBuilder *b, HbModel *m, const char *who,
							  HbError *err);
/* The builder's scratch memory; the trees are the model's. */
extern void hb_mb_free(HbModelBuilder *b);
/* Room for n trees in all (a reader that knows its count). */
extern bool hb_mb_reserve_trees(HbModelBuilder *b, int64_t n);

/*
 * A new tree adding to output group: n_nodes zero leaves (0: a grown tree)
 * with width values per leaf (1, or the model's outputs for vector leaves:
 * the tree becomes one IR tree per output, tree k adding component k to
 * output k).  label is its number in messages.
 */
extern bool hb_mb_start_tree(HbModelBuilder *b, int32_t label, int32_t group,
							 int32_t n_nodes, int32_t width);
/* A new zero leaf of a grown tree: its id, or -1 (error set). */
extern int32_t hb_mb_add_node(HbModelBuilder *b);

/*
 * Node id splits on feature: "x op threshold" goes left, written in the
 * model's comparison (m->cmp); a missing value goes left when default_left
 * (how a missing value is recognised: HbMissing).
 */
extern void hb_mb_numeric(HbModelBuilder *b, int32_t id, int32_t feature,
						  HbSplitOp op, double threshold, bool default_left,
						  HbMissing missing, int32_t left, int32_t right);

/*
 * Node id splits on the category set cats (n of them, each below
 * HB_MAX_CATEGORY, in any order, repeats allowed): a category in the set
 * goes left when set_left, else right.  The set becomes a bitset from the
 * word of its smallest category to that of its largest, or the sorted list
 * of its categories when that bitset would be much larger (HbNode).
 */
extern bool hb_mb_categorical(HbModelBuilder *b, int32_t id, int32_t feature,
							  const uint32_t *cats, size_t n, bool set_left,
							  bool default_left, HbMissing missing,
							  int32_t left, int32_t right);

/*
 * The same with a bitset already among the model's (hb_mb_cat_words):
 * nwords words from cat_off, the first holding categories 0 to 31.
 */
extern void hb_mb_categorical_words(HbModelBuilder *b, int32_t id,
									int32_t feature, int32_t cat_off,
									int32_t nwords, bool set_left,
									bool default_left, HbMissing missing,
									int32_t left, int32_t right);

/*
 * nwords zeroed words appended to the model's category bitsets for the
 * reader to fill: their address (valid until the next call), *off the index
 * of the first; NULL with the error set when out of room.
 */
extern uint32_t *hb_mb_cat_words(HbModelBuilder *b, size_t nwords,
								 int32_t *off);

/* Node id is a leaf of that value (tree weights already applied). */
extern void hb_mb_leaf(HbModelBuilder *b, int32_t id, double value);
/* Node id is a leaf of width values (a tree started with width > 1). */
extern void hb_mb_leaf_vector(HbModelBuilder *b, int32_t id,
							  const double *values);

/* Check the tree's shape and keep it (its depth and leaves counted). */
extern bool hb_mb_end_tree(HbModelBuilder *b);

/*
 * End a tree of a known size by walking it from its root: read is called
 * once for each node the walk reaches, before its children, and must
 * define it (a split whose children it has checked against the tree's
 * size, or a leaf).  The checks are hb_mb_end_tree's.
 */
extern bool hb_mb_walk_tree(HbModelBuilder *b, HbNodeReader read, void *ctx);

/* Forget the tree being built. */
extern void hb_mb_drop_tree(HbModelBuilder *b);

/* hb_model_validate's check of tree t of a finished or stored model. */
extern bool hb_tree_check(HbModel *m, int32_t t, HbError *err);

#endif							/* HB_MODEL_BUILDER_H */
