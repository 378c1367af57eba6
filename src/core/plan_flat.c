/*
 * plan_flat.c
 *	  A compiled plan as one block of bytes that another process can read
 *	  in place, wherever it maps the block.
 *
 * A parallel worker used to compile each model its leader had already
 * compiled: reading the stored image, building the layouts, touching
 * every new page (about 95 ms for 500 trees of depth 8 on a small virtual
 * machine, per worker and per query: workers do not outlive their query).  The leader now copies
 * its plan into the query's shared memory (pg_scan_exec.c), and a worker
 * reads it from there: hb_plan_flat_view allocates the few structs and
 * points their arrays into the block, which it neither copies nor frees.
 *
 * Layout: a header; the structs (HbPlan, then HbPtt and HbGemm when the
 * plan has them), byte for byte; a table of (offset, bytes) per pointer
 * field, in the order hb_ptt_arrays and hb_gemm_arrays visit them; then
 * the arrays, each at a multiple of 64 bytes from the start.  Offset 0
 * stands for NULL.  The reader checks every size against the structs it
 * copied, so a block from another build (another struct layout) is
 * refused, never misread.
 */
#include "plan_int.h"

#define FLAT_MAGIC		"HBPLAN01"
#define FLAT_ALIGN		64

typedef struct FlatHeader
{
	char		magic[8];
	uint32_t	plan_size;		/* sizeof(HbPlan) and the others, of the */
	uint32_t	ptt_size;		/* build that wrote it */
	uint32_t	gemm_size;
	uint32_t	n_arrays;
	uint64_t	total;
	uint64_t	plan_off;
	uint64_t	ptt_off;		/* 0: no PTT layout */
	uint64_t	gemm_off;		/* 0: no GEMM layout */
	uint64_t	table_off;
} FlatHeader;

typedef struct FlatArray
{
	uint64_t	off;			/* from the start; 0: NULL */
	uint64_t	bytes;
} FlatArray;

static uint64_t
flat_align(uint64_t n)
{
	return (n + FLAT_ALIGN - 1) & ~(uint64_t) (FLAT_ALIGN - 1);
}

/*
 * Every pointer field of the plan and its layouts that a flat copy holds,
 * with sizes as hb_plan_build_ex allocates them.  dev (a device copy) is
 * not data.
 */
bool
hb_plan_arrays(HbPlan *p, HbArrayFn fn, void *arg)
{
	int64_t		n_nodes = p->n_nodes + 1;

	_Static_assert(sizeof(void *) != 8 || sizeof(HbPlan) == 216,
				   "a field was added to HbPlan: visit it in hb_plan_arrays");

	if (p->n_outputs < 1 || p->n_features < 0 || p->n_trees < 0 ||
		p->n_nodes < 0 || p->n_cat_words < 0)
		return false;
	HB_VISIT_ARRAY(fn, arg, p->base_margin, p->n_outputs);
	HB_VISIT_ARRAY(fn, arg, p->weights, (int64_t) p->n_features * p->n_outputs);
	HB_VISIT_ARRAY(fn, arg, p->bias, p->n_outputs);
	HB_VISIT_ARRAY(fn, arg, p->tree_root, (int64_t) p->n_trees + 1);
	HB_VISIT_ARRAY(fn, arg, p->tree_group, (int64_t) p->n_trees + 1);
	HB_VISIT_ARRAY(fn, arg, p->nodes, n_nodes);
	/*
	 * Float32 plans compare and sum in the nodes' floats: the double copies
	 * are read by the layouts' builders only, so a view has none (NULL),
	 * and the block is a third smaller for 500 trees of depth 8.
	 */
	if (!p->sum_f32)
	{
		HB_VISIT_ARRAY(fn, arg, p->thr_d, n_nodes);
		HB_VISIT_ARRAY(fn, arg, p->leaf_d, n_nodes);
	}
	HB_VISIT_ARRAY(fn, arg, p->cat_words, p->n_cat_words);
	HB_VISIT_ARRAY(fn, arg, p->cat_off, n_nodes);
	HB_VISIT_ARRAY(fn, arg, p->cat_nwords, n_nodes);
	HB_VISIT_ARRAY(fn, arg, p->cat_base, n_nodes);
	if (p->ptt != NULL && !hb_ptt_arrays(p->ptt, p, fn, arg))
		return false;
	if (p->gemm != NULL && !hb_gemm_arrays(p->gemm, fn, arg))
		return false;
	return true;
}

/* Sizing: one table entry and one aligned array per field. */
typedef struct SizeWalk
{
	uint32_t	n_arrays;
	uint64_t	bytes;
} SizeWalk;

static bool
size_one(void **slot, size_t bytes, void *arg)
{
	SizeWalk   *w = arg;

	w->n_arrays++;
	if (*slot != NULL)
		w->bytes += flat_align(bytes);
	return true;
}

/* Where the arrays start: after the header, the structs and the table. */
static uint64_t
arrays_start(const FlatHeader *h)
{
	return flat_align(h->table_off + sizeof(FlatArray) * (uint64_t) h->n_arrays);
}

/*
 * Where everything of p goes, into h (offsets, n_arrays, total); the total
 * bytes, 0 if p cannot be written.
 */
static uint64_t
flat_layout(const HbPlan *p, FlatHeader *h)
{
	SizeWalk	w = {0};
	uint64_t	off = flat_align(sizeof(FlatHeader));

	memset(h, 0, sizeof(*h));
	if (p == NULL || p->borrowed || !hb_plan_arrays((HbPlan *) p, size_one, &w))
		return 0;
	h->plan_off = off;
	off = flat_align(off + sizeof(HbPlan));
	if (p->ptt != NULL)
	{
		h->ptt_off = off;
		off = flat_align(off + hb_ptt_struct_size());
	}
	if (p->gemm != NULL)
	{
		h->gemm_off = off;
		off = flat_align(off + hb_gemm_struct_size());
	}
	h->table_off = off;
	h->n_arrays = w.n_arrays;
	h->total = arrays_start(h) + w.bytes;
	return h->total > SIZE_MAX ? 0 : h->total;
}

/* The bytes hb_plan_flat_write needs for p; 0 if p cannot be written. */
size_t
hb_plan_flat_size(const HbPlan *p)
{
	FlatHeader	h;

	return (size_t) flat_layout(p, &h);
}

typedef struct WriteWalk
{
	char	   *base;
	FlatArray  *table;
	uint32_t	i;
	uint64_t	next;
} WriteWalk;

/* An array at its place, then zeros up to the next one's. */
static bool
write_one(void **slot, size_t bytes, void *arg)
{
	WriteWalk  *w = arg;
	FlatArray  *a = &w->table[w->i++];

	a->off = 0;
	a->bytes = bytes;
	if (*slot == NULL)
		return true;
	a->off = w->next;
	if (bytes > 0)
		memcpy(w->base + w->next, *slot, bytes);
	memset(w->base + w->next + bytes, 0, flat_align(bytes) - bytes);
	w->next += flat_align(bytes);
	return true;
}

/*
 * Write p into dst, hb_plan_flat_size(p) bytes (which must not be 0).  The
 * padding is zeroed, so two writes of one plan are the same bytes.
 */
void
hb_plan_flat_write(const HbPlan *p, void *dst)
{
	FlatHeader	h;
	WriteWalk	ww;
	char	   *base = dst;

	(void) flat_layout(p, &h);
	memcpy(h.magic, FLAT_MAGIC, sizeof(h.magic));
	h.plan_size = (uint32_t) sizeof(HbPlan);
	h.ptt_size = (uint32_t) hb_ptt_struct_size();
	h.gemm_size = (uint32_t) hb_gemm_struct_size();
	/* the header, the structs and the table; the arrays zero their own padding */
	memset(base, 0, arrays_start(&h));
	memcpy(base, &h, sizeof(h));
	memcpy(base + h.plan_off, p, sizeof(HbPlan));
	if (p->ptt != NULL)
		memcpy(base + h.ptt_off, p->ptt, hb_ptt_struct_size());
	if (p->gemm != NULL)
		memcpy(base + h.gemm_off, p->gemm, hb_gemm_struct_size());

	ww.base = base;
	ww.table = (FlatArray *) (base + h.table_off);
	ww.i = 0;
	ww.next = arrays_start(&h);
	(void) hb_plan_arrays((HbPlan *) p, write_one, &ww);
}

typedef struct ViewWalk
{
	const char *base;
	const FlatArray *table;
	uint32_t	n;
	uint32_t	i;
	uint64_t	next;			/* where the next array must start */
	uint64_t	total;
} ViewWalk;

/*
 * The copied struct still holds the writer's pointers: NULL where the
 * writer had none, which the table must agree with.
 */
static bool
view_one(void **slot, size_t bytes, void *arg)
{
	ViewWalk   *w = arg;
	const FlatArray *a;

	if (w->i >= w->n)
		return false;
	a = &w->table[w->i++];
	if (*slot == NULL)
		return a->off == 0;
	/* the arrays follow one another, as hb_plan_flat_write placed them */
	if (a->off != w->next || a->bytes != bytes || a->off > w->total ||
		bytes > w->total - a->off)
		return false;
	*slot = (void *) (w->base + a->off);
	w->next += flat_align(bytes);
	return true;
}

/*
 * A plan reading the block at src (size bytes, written by
 * hb_plan_flat_write of this build), which must stay mapped and unchanged
 * for as long as the plan lives; hb_plan_free frees only what this
 * allocated.  false (HB_ERR_PARSE) for a block this build did not write.
 */
bool
hb_plan_flat_view(const void *src, size_t size, HbPlan **out, HbError *err)
{
	const char *base = src;
	FlatHeader	h;
	HbPlan	   *p = NULL;
	HbPtt	   *ptt = NULL;
	HbGemm	   *gemm = NULL;
	ViewWalk	w;

	*out = NULL;
	if (size < sizeof(FlatHeader))
		return hb_fail(err, HB_ERR_PARSE, "flat plan too short");
	memcpy(&h, base, sizeof(h));
	if (memcmp(h.magic, FLAT_MAGIC, sizeof(h.magic)) != 0 ||
		h.plan_size != sizeof(HbPlan) ||
		h.ptt_size != hb_ptt_struct_size() ||
		h.gemm_size != hb_gemm_struct_size() ||
		h.total != size ||
		h.plan_off == 0 || h.plan_off + sizeof(HbPlan) > size ||
		(h.ptt_off != 0 && h.ptt_off + hb_ptt_struct_size() > size) ||
		(h.gemm_off != 0 && h.gemm_off + hb_gemm_struct_size() > size) ||
		h.table_off > size ||
		(size - h.table_off) / sizeof(FlatArray) < h.n_arrays)
		return hb_fail(err, HB_ERR_PARSE, "not a flat plan of this build");

	p = hb_alloc(sizeof(HbPlan));
	if (h.ptt_off != 0)
		ptt = hb_alloc(hb_ptt_struct_size());
	if (h.gemm_off != 0)
		gemm = hb_alloc(hb_gemm_struct_size());
	if (p == NULL || (h.ptt_off != 0 && ptt == NULL) ||
		(h.gemm_off != 0 && gemm == NULL))
	{
		hb_free(p);
		hb_free(ptt);
		hb_free(gemm);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	memcpy(p, base + h.plan_off, sizeof(HbPlan));
	if (ptt != NULL)
		memcpy(ptt, base + h.ptt_off, hb_ptt_struct_size());
	if (gemm != NULL)
		memcpy(gemm, base + h.gemm_off, hb_gemm_struct_size());
	/* the writer's pointers to its structs are not worth checking */
	if ((p->ptt != NULL) != (ptt != NULL) || (p->gemm != NULL) != (gemm != NULL))
		goto bad;
	p->ptt = ptt;
	p->gemm = gemm;
	p->dev = NULL;
	p->borrowed = true;
	if (p->sum_f32)
	{
		p->thr_d = NULL;
		p->leaf_d = NULL;
	}

	w.base = base;
	w.table = (const FlatArray *) (base + h.table_off);
	w.n = h.n_arrays;
	w.i = 0;
	w.next = arrays_start(&h);
	w.total = size;
	if (!hb_plan_arrays(p, view_one, &w) || w.i != w.n || w.next != size)
		goto bad;
	*out = p;
	return true;

bad:
	hb_free(p);
	hb_free(ptt);
	hb_free(gemm);
	return hb_fail(err, HB_ERR_PARSE, "not a flat plan of this build");
}
