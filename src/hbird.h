/*
 * hbird.h
 *	  Declarations shared by the PostgreSQL glue of hbird.
 */
#ifndef HBIRD_H
#define HBIRD_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "lib/ilist.h"
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/portal.h"
#include "utils/snapshot.h"

#include "plan.h"
#include "featurize_sparse.h"
#include "approx.h"
#include "topk.h"

#define HB_SHA256_LEN 32

/* Settings (pg_guc.c defines them all; others are declared beside their use) */
extern int	hb_max_model_bytes;
extern int	hb_plan_cache_entries;
extern int	hb_shared_cache_size;	/* kB of shared memory; 0: none */
extern bool hb_shared_cache;
extern bool hb_stat_track;
extern int	hb_stat_max;
extern void hb_define_gucs(void);

/* A compiled model version in this backend's cache. */
typedef struct HbCacheEntry
{
	char	   *name;
	int32		version;
	uint8		sha256[HB_SHA256_LEN];
	char	   *names_key;		/* the upload's feature names, or NULL */

	MemoryContext cxt;			/* owns everything below */
	HbPlan	   *plan;
	HbTask		task;
	int			n_features;
	char	  **feature_names;
	HbFeatureType *feature_types;
	int			n_outputs;
	int			n_classes;
	void	   *class_bounds;	/* HbClassBounds, built on first use
								 * (pg_classify.c) */
	HbPipeline *pipeline;		/* featurizers: rows bind to its inputs */
	struct HbSparseLinear *sparse;	/* linear over text: margins from the
									 * tokens (featurize_sparse.h), or NULL;
									 * read it through hb_entry_sparse */

	struct HbSharedHold *shared_hold;	/* pg_cache.c: the shared cache's
										 * block the plan lies in (pinned
										 * while a transaction uses it), or
										 * NULL */
	int			pins;			/* statements using it right now */
	dlist_node	lru;
	void	   *stat;			/* pg_stats.c: counters not yet flushed */
} HbCacheEntry;

/* What the catalog says about a model's active version under a snapshot. */
typedef struct HbCatalogRef
{
	char	   *name;
	Oid			owner;
	int32		version;
	uint8		sha256[HB_SHA256_LEN];
	char	   *names_key;		/* feature names from the upload, joined */
	ArrayType  *feature_names;	/* the same, as the array; may be NULL */
	char	   *format;
} HbCatalogRef;

/* hbird.c */
extern void hb_report(const HbError *err, const char *what, const char *name);
extern int	hb_errcode(HbErrCode code);
extern text *hb_require_text(FunctionCallInfo fcinfo, int argno, const char *what);

/* pg_models.c: hbird's model catalog, read with direct scans */
extern Oid	hb_catalog_relid(const char *relname);
extern bool hb_catalog_lookup(const char *name, HbCatalogRef *ref);
extern bytea *hb_catalog_bytes(const char *name, int32 version,
							   const char *column);
extern void hb_check_score_privilege(const HbCatalogRef *ref);
extern bool hb_may_score(const HbCatalogRef *ref);
extern bool hb_role_exists(Oid role);

/* pg_owner.c: who may change a model; writing the catalog */
typedef struct HbCatalogWrite
{
	Oid			caller;			/* the role executing: the checks are its */
	Oid			save_userid;
	int			save_sec_context;
	int			guc_level;
} HbCatalogWrite;

extern void hb_owner_init(void);
extern bool hb_may_change(Oid role, Oid owner);
extern void hb_check_owner(Oid role, Oid owner, const char *name);
extern void hb_check_new_model_name(const char *name);
extern void hb_write_begin(HbCatalogWrite *w, const char *what);
extern int	hb_pin_search_path(void);
extern void hb_write_end(HbCatalogWrite *w);
extern int	hb_write_sql(const char *sql, int nargs, Oid *types, Datum *values,
						 const char *nulls, int expect);
extern int	hb_write_sql_large(const char *sql, int nargs, Oid *types,
							   Datum *values, const char *nulls, int expect);
extern bool hb_write_lock_model(HbCatalogWrite *w, const char *name,
								int32 *active);
extern const char *hb_role_column_type(const char *relname,
									   const char *colname);
extern void hb_no_such_model(const char *name);

/* pg_cache.c */
extern HbCacheEntry *hb_cache_acquire(const HbCatalogRef *ref);
extern HbCacheEntry *hb_cache_acquire_quietly(const HbCatalogRef *ref);
extern void hb_cache_pin(HbCacheEntry *e);
extern void hb_cache_unpin(HbCacheEntry *e);

extern HbCacheEntry *hb_resolve_model(const char *name);
extern HbCacheEntry *hb_resolve_model_arg(FunctionCallInfo fcinfo, int argno);
extern bool hb_cache_same(const HbCacheEntry *a, const HbCacheEntry *b);
extern void hb_cache_pin_for(HbCacheEntry *e, MemoryContext cxt);
extern void hb_cache_init(void);
extern Size hb_cache_share_size(const HbCacheEntry *e);
extern void hb_cache_share_write(const HbCacheEntry *e, Size size, void *dst);
extern void hb_cache_offer(const void *src, Size size);

/* pg_shared_cache.c: blocks in the server's shared memory, across backends */
typedef bool (*HbSharedMatch) (const char *block, Size size, const void *arg);
typedef void (*HbSharedWrite) (void *dst, const void *arg);
typedef struct HbSharedBlock
{
	const char *base;			/* where it lies */
	Size		size;
	uint64		stamp;			/* which store put it there */
} HbSharedBlock;
extern void hb_shared_cache_init(void);
extern bool hb_shared_cache_on(void);
extern int	hb_shared_cache_find(uint64 hash, HbSharedMatch match, const void *arg,
								 HbSharedBlock *block);
extern int	hb_shared_cache_put(uint64 hash, Size size, HbSharedMatch match,
								const void *match_arg, HbSharedWrite write_block,
								const void *write_arg, HbSharedBlock *block);
extern bool hb_shared_cache_repin(int slot, uint64 stamp);
extern void hb_shared_cache_release(int slot);
extern void hb_shared_cache_malloc_like_compiled(void);

/* pg_bind.c */

/*
 * The featurizer steps (and the features they write) that a binding runs,
 * when only part of a pipeline's features is wanted (pg_lazy.c).
 */
typedef struct HbBindSteps
{
	const bool *step_on;
	const int32 *feats;
	int32		n_feats;
} HbBindSteps;

/*
 * Reading a binding's columns straight from tuples of one layout (the row
 * type's own, or a query's or an input plan's whose columns map to the row
 * type's): per bound value, the attribute of that layout and how it
 * converts, resolved once; per row only the values move, a float column
 * straight from the tuple into the feature matrix.
 */
typedef struct HbColumnReader
{
	TupleDesc	desc;			/* the tuples' layout */
	int			natts;			/* attributes to walk: up to the last bound */
	int			n;				/* values bound: features, or a pipeline's inputs */
	int		   *att;			/* per bound value: its attribute of desc */
	uint8	   *conv;			/* per bound value: how it converts */
	int		   *slot;			/* per bound value: its feature (direct) */
	int32	   *off;			/* per attribute < natts: its offset in a
								 * tuple without NULLs, or -1 */
	bool		fixed;			/* every bound attribute has an offset */
	bool		all_float8;		/* every bound value is a float8 */
	int32	   *boff;			/* fixed: per bound value, its offset */
	bool		contiguous;		/* fixed, all float8, and bound value i is
								 * feature slot[0] + i at boff[0] + 8 i: one
								 * copy a row */
	bool		direct;			/* numbers into features (no pipeline) */
	bool		subset;			/* direct, only the features of the
								 * binding's steps (a cheap model's) */
	/* tuples with NULLs, every attribute < natts of fixed width */
	bool		walk_fixed;
	int16	   *alen;			/* per attribute < natts: its width */
	uint8	   *amask;			/* and its alignment less one */
	int		   *bound_at;		/* per attribute < natts: bound value, or -1 */
	const char **ptr;			/* natts: one row's attributes */
	Datum	   *values;			/* desc->natts: one row deformed */
	bool	   *nulls;
} HbColumnReader;

typedef struct HbBinding
{
	Oid			tupType;
	int32		tupTypmod;
	int			natts;
	TupleDesc	desc;			/* private copy of the row type's descriptor */
	int		   *attnum;			/* per feature: 0-based attribute */
	Oid		   *atttype;		/* per feature: base type of that column */
	Datum	   *values;			/* deform buffers, natts long */
	bool	   *nulls;
	HbColumnReader rd;			/* the row type's own tuples */
	/* a model with a pipeline binds its inputs, then featurizes */
	const HbPipeline *pipeline;
	double	   *num;			/* one row's numeric inputs */
	HbText	   *text;			/* one row's text inputs */
	void	  **copies;			/* per text input: the detoasted (or
								 * converted to UTF-8) copy the
								 * row's value was read from, freed once
								 * the row is featurized; or NULL */
	bool		to_utf8;		/* texts are converted to UTF-8 first */
	MemoryContext cxt;			/* what hb_bind_desc allocated (its own,
								 * under the caller's; hb_bind_release) */
	bool		keep_texts;		/* the caller reads text after the row is
								 * featurized, and frees the copies itself
								 * (hb_bind_free_texts) */
	double	   *slots;			/* the pipeline's scratch, one row */
	const HbBindSteps *steps;	/* featurize only these steps (a cheap
								 * model's part, pg_lazy.c), or NULL */
} HbBinding;

extern void hb_bind_record(HbBinding *b, const HbCacheEntry *e,
						   HeapTupleHeader td, MemoryContext mcxt,
						   const char *model);
extern void hb_bind_desc(HbBinding *b, const HbCacheEntry *e, TupleDesc desc,
						 MemoryContext mcxt, const char *model);
extern void hb_bind_row(const HbBinding *b, const HbCacheEntry *e,
						HeapTupleHeader td, double *x);
extern void hb_bind_tuple(const HbBinding *b, const HbCacheEntry *e,
						  HeapTuple tuple, double *x);
extern void hb_bind_free_texts(const HbBinding *b);
extern void hb_bind_release(HbBinding *b);
extern void hb_reader_init(HbColumnReader *r, const HbBinding *b,
						   const HbCacheEntry *e, TupleDesc desc,
						   const int *map, const HbBindSteps *subset,
						   MemoryContext mcxt);
extern void hb_read_tuple(const HbColumnReader *r, const HbBinding *b,
						  const HbCacheEntry *e, HeapTuple tuple, double *x,
						  bool margins);

/*
 * A batch's tuples, one after another in one buffer (no allocation a row),
 * by the batch row they belong to: the rows a top-K may keep, read again or
 * made datums of only if kept.
 */
typedef struct HbTupleStore
{
	MemoryContext cxt;			/* where it lives */
	char	   *buf;
	Size		used;
	Size		cap;
	int			rows;			/* batch rows it has room for */
	Size	   *off;			/* per batch row: where its tuple starts */
	uint32	   *len;			/* and its length, 0 for none */
} HbTupleStore;

extern void hb_tuples_init(HbTupleStore *s, int rows, MemoryContext cxt);
extern void hb_tuples_put(HbTupleStore *s, int row, HeapTuple t);
extern bool hb_tuples_get(const HbTupleStore *s, int row, HeapTuple out);

/* A new batch: no row has a tuple yet. */
static inline void
hb_tuples_reset(HbTupleStore *s)
{
	s->used = 0;
	if (s->rows > 0)
		memset(s->len, 0, sizeof(uint32) * s->rows);
}
extern void hb_read_slot(const HbColumnReader *r, const HbBinding *b,
						 const HbCacheEntry *e, TupleTableSlot *slot,
						 double *x, bool margins);
extern void hb_bind_values(const HbBinding *b, const HbCacheEntry *e,
						   const Datum *values, const bool *nulls, double *x);
extern void hb_bind_values_margins(const HbBinding *b, const HbCacheEntry *e,
								   const Datum *values, const bool *nulls,
								   double *margins);
extern void hb_array_row(ArrayType *arr, const HbCacheEntry *e, double *x,
						 const char *model);
/*
 * The sparse scorer of a linear model over text, where hbird.sparse_linear
 * lets it score; NULL: rows bind to the feature vector.  Every caller that
 * chooses how rows bind asks here, so the setting turns off one path whole.
 */
extern bool hb_sparse_on;		/* pg_guc.c: hbird.sparse_linear */
static inline struct HbSparseLinear *
hb_entry_sparse(const HbCacheEntry *e)
{
	return hb_sparse_on ? e->sparse : NULL;
}

/* e->sparse only: the row's raw margins (n_outputs), no feature vector */
extern void hb_bind_row_margins(const HbBinding *b, const HbCacheEntry *e,
								HeapTupleHeader td, double *margins);
extern void hb_bind_tuple_margins(const HbBinding *b, const HbCacheEntry *e,
								  HeapTuple tuple, double *margins);

/*
 * pg_predict.c: per call site state of the scoring functions.  A call site
 * keeps up to HB_CALL_SLOTS models (the name argument may change from row
 * to row), each with its binding and buffers; the fields at the top mirror
 * the slot of the current call.
 */
#define HB_CALL_SLOTS 8

typedef struct HbCallSlot
{
	char	   *name;
	HbCacheEntry *entry;		/* pinned while in the slot */
	MemoryContext cxt;			/* name, binding, buffers */
	bool		bound;			/* binding valid for the last row type */
	HbBinding	bind;
	double	   *x;
	double	   *scratch;
	double	   *out;
	uint64		used;
	bool		cascade_loaded; /* cascade looked up (pg_tune.c) */
	HbCascade  *cascade;		/* NULL: none tuned, or hbird.cascade off */
	struct HbLazy *lazy;		/* rows bind lazily for the cascade, or NULL */
} HbCallSlot;

typedef struct HbCallState
{
	HbCacheEntry *entry;		/* of the current slot */
	double	   *x;
	double	   *scratch;
	double	   *out;
	HbCallSlot *cur;

	HbCallSlot	slots[HB_CALL_SLOTS];
	int			nslots;
	uint64		tick;
	uint64		snap_key;		/* snapshot the slots were resolved under */
	bool		snap_set;
	MemoryContextCallback cb;
} HbCallState;

extern HbCallState *hb_call_prepare(FunctionCallInfo fcinfo, int name_arg,
									bool classifier);
extern void hb_call_load_record(FunctionCallInfo fcinfo, HbCallState *st,
								int row_arg);
extern void hb_call_load_margins(FunctionCallInfo fcinfo, HbCallState *st,
								 int row_arg, double *margins);

extern HbCascade *hb_call_cascade(HbCallState *st);
extern void hb_call_cascade_run(HbCallState *st, Datum row,
								HbCascadeOut what, double *out);

extern void hb_check_single_target(const HbCacheEntry *e, const char *fn);
extern void hb_check_regression(const HbCacheEntry *e, const char *fn);

/* pg_query_rows.c: the rows of a caller's query, in batches */
#define HB_MAX_BATCH_ROWS 65536
#define HB_TOPK_BATCH_ROWS 4096	/* top-K batches: rows stay in cache */
extern int	hb_batch_memory_kb;
extern int	hb_batch_rows(const HbCacheEntry *e);
extern Oid	hb_rowtype_arg(FunctionCallInfo fcinfo, int argno);
extern char *hb_query_arg(FunctionCallInfo fcinfo, int argno, Oid rowtype);
extern Portal hb_open_query(const char *query, const char *what);
typedef struct HbQueryRows HbQueryRows;

/* what of the rows themselves a reader keeps (hb_rows_items, hb_rows_item) */
typedef enum HbRowsItems
{
	HB_ITEMS_NONE,				/* only the bound features */
	HB_ITEMS_ALL,				/* every row as a composite datum */
	HB_ITEMS_ON_DEMAND			/* each row's tuple: hb_rows_item makes the
								 * datums of the rows a caller keeps */
} HbRowsItems;

extern HbQueryRows *hb_rows_open(HbCacheEntry *e, const char *query,
								 Oid rowtype, int batch, bool margins,
								 const HbBindSteps *steps, HbRowsItems items);
extern uint64 hb_rows_next(HbQueryRows *r);
extern void hb_rows_ramp_up(HbQueryRows *r);
extern double *hb_rows_x(HbQueryRows *r);
extern Datum *hb_rows_items(HbQueryRows *r);
extern Datum hb_rows_item(HbQueryRows *r, uint64 i);
extern void hb_rows_close(HbQueryRows *r);

/*
 * A batch of bound rows (x: width doubles a row; items: the rows with
 * HB_ITEMS_ALL, else NULL: with HB_ITEMS_ON_DEMAND, hb_rows_item(rows, i))
 */
typedef void (*HbBatchFn) (void *arg, HbQueryRows *rows, const double *x,
						   Datum *items, uint64 n);
extern void hb_scan_batches(HbCacheEntry *e, const char *query, Oid rowtype,
							int batch, bool margins, const HbBindSteps *steps,
							HbRowsItems items, HbBatchFn fn, void *arg);

/* where a batched function's rows go: its tuplestore, or a stream */
typedef struct HbRowsOut
{
	ReturnSetInfo *rsinfo;		/* materialized: rsinfo->setResult */
	int			ncols;
	MemoryContext cxt;			/* streamed: this batch's rows */
	Datum	   *values;
	bool	   *nulls;
	uint64		n;
	uint64		cap;
} HbRowsOut;

extern void hb_rows_out_init(HbRowsOut *o, ReturnSetInfo *rsinfo, int ncols);
extern void hb_rows_emit(HbRowsOut *o, const Datum *values, const bool *nulls);

/*
 * pg_batch_stream.c: the batched set-returning functions streamed by a
 * plan node (HbirdBatch) rather than materialized.  Called by the node
 * (hb_stream_of(fcinfo) is not NULL), a function opens its query and fills
 * in the stream instead of reading every row itself; the node then asks
 * for the rows batch by batch (fn emits a batch's rows to out).
 */
typedef struct HbRowsStream
{
	HbQueryRows *rows;
	HbBatchFn	fn;
	void	   *arg;
	void		(*finish) (void *arg);	/* after the last row */
	HbRowsOut  *out;			/* set by the node */
	bool		want_items;		/* set by the node: the rows are read */
} HbRowsStream;

extern HbRowsStream *hb_stream_of(FunctionCallInfo fcinfo);
extern void hb_batch_function_run(FunctionCallInfo fcinfo, HbCacheEntry *e,
								  Oid rowtype, int query_argno, int batch,
								  bool margins, struct HbLazy *lazy,
								  HbRowsOut **out, bool *items, HbBatchFn fn,
								  void (*finish) (void *arg), void *arg);

/*
 * pg_batch.c: the scoring aggregates' shared machinery.  A kind says how
 * its model is checked and how a batch of bound rows becomes one value a
 * row (NULL: the predictions, or every target).  The rows are the raw
 * margins of a linear model over text (margins: hb_entry_sparse, no
 * cascade), else the feature vectors.
 */
typedef struct HbAggState HbAggState;
typedef void (*HbAggScoreFn) (HbCacheEntry *e, const HbCascade *cascade,
							  const double *x, bool margins, int n,
							  double *out, struct HbLazy *lazy);
typedef struct HbAggKind
{
	const char *fn;				/* the aggregate, in messages */
	void		(*check) (const HbCacheEntry *e, const char *fn);
	HbAggScoreFn score;
	bool		targets;		/* n_outputs values a row */
	Oid			elemtype;		/* of the result's elements */
} HbAggKind;

extern Datum hb_agg_sfunc(FunctionCallInfo fcinfo, const HbAggKind *kind);
extern Datum hb_agg_final(FunctionCallInfo fcinfo);

/*
 * pg_stats.c: counters of hb_stat_models.  Each call is a no-op unless
 * hbird is preloaded and hbird.stat_track is on.  HB_STAT_SAMPLE() picks
 * the row-at-a-time calls that get timed (a random 1 in 32).
 */
struct HbTopkStats;
extern bool hb_stat_on;			/* pg_guc.c: stat_track where preloaded */
extern uint64 hb_stat_rng;
#define HB_STAT_SAMPLE() \
	(hb_stat_on && ((hb_stat_rng = hb_stat_rng * 6364136223846793005ULL + \
					 1442695040888963407ULL) >> 59) == 0)
extern void hb_stat_init(void);
extern void hb_stat_row(HbCacheEntry *e, const instr_time *sample);
extern void hb_stat_batch(HbCacheEntry *e, int64 n, const instr_time *start,
						  bool topk);
extern void hb_stat_call(HbCacheEntry *e);
extern void hb_stat_topk(HbCacheEntry *e, const struct HbTopkStats *s);
extern void hb_stat_cache(HbCacheEntry *e, const instr_time *compile_start);
/* pg_classify.c: predicted classes */
extern bool hb_early_exit;
extern void hb_check_classifier(const HbCacheEntry *e, const char *fn);
extern void hb_classify(HbCacheEntry *e, const HbCascade *cascade,
						const double *x, size_t n, int32 *out);
extern void hb_classify_lazy(HbCacheEntry *e, const HbCascade *cascade,
							 const double *x, bool margins, size_t n,
							 int32 *out, HbCompleteRows complete, void *arg);
/* pg_tune.c: tuned approximations */
typedef enum HbTopkMode
{
	HB_TOPK_EXACT,
	HB_TOPK_APPROX,
	HB_TOPK_AUTO
} HbTopkMode;

extern bool hb_cascade_on;
extern int	hb_topk_mode;
extern bool hb_topk_bar_cut;	/* hbird.topk_bar_cut (pg_guc.c) */

typedef struct HbTuning
{
	bool		found;
	int32		k;				/* top-K: the k it was tuned for */
	HbApprox   *approx;
	double		threshold;		/* cascade */
	double		ratio;			/* top-K */
	int32		kept;
	double		cheap_cut;
	HbBarCut	bar;			/* top-K: the cut relative to the bar, or
								 * none (NaN) */
} HbTuning;

extern bool hb_tuning_load(const HbCacheEntry *e, const char *kind, int k_query,
						   MemoryContext cxt, HbTuning *out);
extern HbCascade *hb_cascade_for(const HbCacheEntry *e, MemoryContext cxt);

/* pg_lazy.c: lazy featurization for the cheap models */
typedef struct HbLazy HbLazy;

extern bool hb_lazy_on;
extern HbLazy *hb_lazy_for(const HbCacheEntry *e, const HbApprox *a,
						   bool plain, MemoryContext cxt);
extern const HbBindSteps *hb_lazy_steps(const HbLazy *l);
extern void hb_lazy_set_rows(HbLazy *l, Datum *rows);
extern void hb_lazy_fill(HbLazy *l, Datum row, double *x);
extern void hb_lazy_complete(void *arg, const size_t *rows, size_t n,
							 double *xs);

/*
 * A candidate ranks below another: a lower value, or read later (ties go
 * by input order, as the exact top-K ranks them)
 */
static inline bool
hb_ranks_below(double a, int64 a_ordinal, double b, int64 b_ordinal)
{
	return a < b || (a == b && a_ordinal > b_ordinal);
}

/* pg_waiting.c: approximate top-K's rows below the cut */
typedef struct HbWaitRow
{
	double		cheap;			/* the cheap model's score */
	double		raw;			/* what finishing the row continues */
	bool		refined;		/* raw is the second stage's (approx.h) */
	int64		ordinal;		/* input order */
	void	   *data;			/* the caller's (pfree'd with the row), or NULL */
	Datum		item;			/* the row as a datum (pfree'd), or 0 */
	Size		bytes;			/* what the row holds, for HbWaiting.bytes */
	bool		scored;			/* scored early (hb_waiting_scored): holds its
								 * place, nothing else */
} HbWaitRow;

typedef struct HbWaiting
{
	HbWaitRow  *rows;			/* a heap, the worst first; in input order
								 * after hb_waiting_in_order */
	int			n;
	int			cap;
	int64		keep;			/* the rows the answer keeps by cheap score */
	int64		above;			/* rows at or above the cut so far */
	bool		closed;			/* no row may wait any more (hb_waiting_close) */
	Size		bytes;			/* the waiting rows' bytes (HbWaitRow.bytes) */
	bool		has_floor;		/* rows scored early were let go, the best of */
	HbWaitRow	floor;			/* them this one: no row not better waits */
	MemoryContext cxt;			/* of rows */
} HbWaiting;

extern void hb_waiting_init(HbWaiting *w, int64 keep, MemoryContext cxt);
extern bool hb_waiting_may(const HbWaiting *w, double cheap, int64 ordinal);
extern void hb_waiting_add(HbWaiting *w, const HbWaitRow *r);
extern void hb_waiting_passed(HbWaiting *w, int64 n);
extern void hb_waiting_close(HbWaiting *w);
extern bool hb_waiting_outgrown(const HbWaiting *w);
extern void hb_waiting_scored(HbWaiting *w);
extern int	hb_waiting_in_order(HbWaiting *w);

/* pg_approx.c: approximate top-K over batches of rows */
typedef struct HbApproxTopk HbApproxTopk;

extern HbApproxTopk *hb_approx_topk_begin(HbCacheEntry *e, const HbTuning *t,
										  int k, bool columns,
										  MemoryContext parent);
extern void hb_approx_topk_batch(HbApproxTopk *s, const double *x,
								 const Datum *items, HbQueryRows *rows, int n);
extern int	hb_approx_topk_end(HbApproxTopk *s, double **scores, Datum **items,
							   HbTopkStats *stats);
extern struct HbLazy *hb_approx_topk_lazy(HbApproxTopk *s);

#endif							/* HBIRD_H */
