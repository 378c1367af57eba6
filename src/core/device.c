/*
 * device.c
 *	  Which batches run on the GPU, the device copies of plans, and the
 *	  fallback to the CPU (device.h).
 *
 * Built with HB_USE_CUDA this calls the CUDA part (src/cuda/hb_cuda.h);
 * without it every answer is "the CPU", with the reason.
 *
 * Device copies.  A plan's device copy hangs off the plan (HbPlan.dev) and
 * is registered here in least-recently-used order.  Its bookkeeping is
 * malloc'ed, not taken from the allocator hooks, because a backend frees
 * plans by deleting memory contexts: if one ever goes without
 * hb_device_plan_free, what is lost is a small struct, and its device
 * memory is still counted and evicted under the budget.
 */
#include "plan_int.h"
#include "device.h"
#include "exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HB_USE_CUDA
#include "../cuda/hb_cuda.h"

_Static_assert(HB_CUDA_FN_DEFAULT_LEFT == HB_FN_DEFAULT_LEFT &&
			   HB_CUDA_FN_CAT == HB_FN_CAT &&
			   HB_CUDA_FN_CAT_IN_LEFT == HB_FN_CAT_IN_LEFT &&
			   HB_CUDA_FN_CAT_LIST == HB_FN_CAT_LIST &&
			   HB_CUDA_FN_MISSING_SHIFT == HB_FN_MISSING_SHIFT &&
			   HB_CUDA_FN_MISSING_MASK == HB_FN_MISSING_MASK &&
			   HB_CUDA_MISSING_NAN == HB_MISSING_NAN &&
			   HB_CUDA_MISSING_ZERO == HB_MISSING_ZERO &&
			   HB_CUDA_MISSING_NONE == HB_MISSING_NONE,
			   "hb_cuda.h mirrors plan_int.h");
_Static_assert(sizeof(HbFlatNode) == 16, "the kernels read 16-byte nodes");
#endif

typedef struct HbDevPlan
{
	struct HbDevPlan *prev;		/* registry, most recently used first */
	struct HbDevPlan *next;
	int			kernel;			/* HB_CUDA_KERNEL_* the copy was made for */
#ifdef HB_USE_CUDA
	HbCudaPlan *cp;				/* NULL when evicted */
#endif
	size_t		bytes;
	size_t		refused_budget; /* budget under which it did not fit, or 0 */
	char		refused[256];
} HbDevPlan;

static HbDeviceMode mode = HB_DEVICE_AUTO;
static int64_t min_batch = HB_DEVICE_DEFAULT_MIN_BATCH;
static size_t budget = HB_DEVICE_DEFAULT_BUDGET;

static HbDevPlan *lru_head = NULL;
static HbDevPlan *lru_tail = NULL;
static size_t resident_bytes = 0;
static int	resident_plans = 0;
static int64_t n_batches = 0;
static int64_t n_rows = 0;
static int64_t n_fallbacks = 0;
static char last_error[512];

#ifdef HB_USE_CUDA
/* a failure while running is not retried: the context may be unusable */
static bool broken = false;
static char broken_why[256];
#endif

void		(*hb_device_error_hook) (const HbError *err) = NULL;

void
hb_device_set_mode(HbDeviceMode m)
{
	mode = m;
}

HbDeviceMode
hb_device_mode(void)
{
	return mode;
}

void
hb_device_set_min_batch(int64_t rows)
{
	min_batch = rows < 2 ? 2 : rows;
}

bool
hb_device_built(void)
{
#ifdef HB_USE_CUDA
	return true;
#else
	return false;
#endif
}

#ifdef HB_USE_CUDA
static char dev_name[320];
#endif

bool
hb_device_available(HbError *err)
{
#ifdef HB_USE_CUDA
	char		why[256] = "";

	if (broken)
		return hb_fail(err, HB_ERR_DEVICE, "the CUDA device failed earlier in this process: %s",
					   broken_why);
	if (!hb_cuda_init(dev_name, sizeof(dev_name), why, sizeof(why)))
		return hb_fail(err, HB_ERR_DEVICE, "no CUDA device or driver found: %s", why);
	return true;
#else
	return hb_fail(err, HB_ERR_DEVICE,
				   "no CUDA device: hbird was built without CUDA (nvcc not found at build time, or USE_CUDA=0)");
#endif
}

const char *
hb_device_name(void)
{
#ifdef HB_USE_CUDA
	return dev_name;
#else
	return "";
#endif
}

/* ---------- the registry ---------- */

static void
lru_unlink(HbDevPlan *d)
{
	if (d->prev)
		d->prev->next = d->next;
	else if (lru_head == d)
		lru_head = d->next;
	if (d->next)
		d->next->prev = d->prev;
	else if (lru_tail == d)
		lru_tail = d->prev;
	d->prev = d->next = NULL;
}

static inline void
lru_push_front(HbDevPlan *d)
{
	d->prev = NULL;
	d->next = lru_head;
	if (lru_head)
		lru_head->prev = d;
	lru_head = d;
	if (lru_tail == NULL)
		lru_tail = d;
}

/* Free the device memory of d; the bookkeeping stays with its plan. */
static void
evict(HbDevPlan *d)
{
#ifdef HB_USE_CUDA
	if (d->cp == NULL)
		return;
	hb_cuda_plan_free(d->cp);
	d->cp = NULL;
	resident_bytes -= d->bytes;
	resident_plans--;
	d->bytes = 0;
#else
	(void) d;
#endif
}

void
hb_device_set_budget(size_t bytes)
{
	budget = bytes;
	/* a smaller budget takes effect now, oldest copies first */
	for (HbDevPlan *d = lru_tail; d != NULL && resident_bytes > budget; d = d->prev)
		evict(d);
}

void
hb_device_plan_free(const HbPlan *cp)
{
	HbPlan	   *p = (HbPlan *) cp;

	if (p == NULL || p->dev == NULL)
		return;
	evict(p->dev);
	lru_unlink(p->dev);
	free(p->dev);
	p->dev = NULL;
}

/* ---------- what runs where ---------- */

#ifdef HB_USE_CUDA
/*
 * Kernel for a plan: PTT where the CPU would use PTT for large batches and
 * the layout has no node that needs the general step; TT otherwise.
 * hbird.tree_strategy = tt / ptt forces the choice as on the CPU.
 */
static int
choose_kernel(const HbPlan *p)
{
	HbPttView	v;
	HbStrategy	o = hb_exec_forced();
	double		fullness = p->max_depth > 0 ? p->avg_leaf_depth / p->max_depth : 1.0;

	if (!hb_ptt_view(p, &v) || v.general || o == HB_STRATEGY_TT)
		return HB_CUDA_KERNEL_TT;
	if (o == HB_STRATEGY_PTT)
		return HB_CUDA_KERNEL_PTT;
	return fullness >= HB_AUTO_PTT_FULLNESS ? HB_CUDA_KERNEL_PTT : HB_CUDA_KERNEL_TT;
}

/* float inputs lose nothing unless a double comparison is made somewhere */
static bool
input_f32(const HbPlan *p)
{
	if (p->cmp != HB_CMP_LT_F32 || !p->sum_f32 || p->zero_snap)
		return false;
	for (int64_t i = 0; i < p->n_nodes; i++)
	{
		const HbFlatNode *n = &p->nodes[i];

		/* HB_MISSING_ZERO compares |x| in double */
		if (n->feature >= 0 &&
			((n->flags & HB_FN_MISSING_MASK) >> HB_FN_MISSING_SHIFT) == HB_MISSING_ZERO)
			return false;
	}
	return true;
}

/* Device bytes a copy will take (what hb_cuda_plan_upload allocates). */
static size_t
estimate_bytes(const HbCudaDesc *d)
{
	double		b = sizeof(double) * d->n_outputs + 16;

	if (d->kernel == HB_CUDA_KERNEL_TT)
	{
		double		nn = (double) d->n_nodes + 1;

		b += 16.0 * nn + 8.0 * (d->n_trees + 1);
		if (!d->cmp_f32)
			b += 16.0 * nn;
		if (d->cat_off)
			b += 4.0 * d->n_cat_words + 12.0 * nn;
	}
	else
	{
		double		nn = (double) d->ptt_nodes + 1;

		b += 4.0 * (d->n_used + 1) + sizeof(HbCudaTree) * (double) (d->n_trees + 1) +
			(d->cmp_f32 ? 8.0 : 16.0) * nn +
			(d->sum_f32 ? 4.0 : 8.0) * (double) d->ptt_leaves;
	}
	return b > (double) SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t) b;
}

/*
 * The description of plan p for kernel; *trees is malloc'ed (PTT) for the
 * caller to free.  False when out of memory.
 */
static bool
build_desc(const HbPlan *p, int kernel, HbCudaDesc *d, HbCudaTree **trees)
{
	HbPttView	v;

	*trees = NULL;
	memset(d, 0, sizeof(*d));
	d->kernel = kernel;
	d->cmp_f32 = p->cmp == HB_CMP_LT_F32;
	d->sum_f32 = p->sum_f32;
	d->input_f32 = input_f32(p);
	d->zero_snap = p->zero_snap;
	d->n_features = p->n_features;
	d->n_outputs = p->n_outputs;
	d->n_trees = p->n_trees;
	d->base_margin = p->base_margin;
	if (kernel == HB_CUDA_KERNEL_TT)
	{
		d->n_nodes = p->n_nodes;
		d->nodes = p->nodes;
		d->thr_d = p->thr_d;
		d->leaf_d = p->leaf_d;
		d->tree_root = p->tree_root;
		d->tree_group = p->tree_group;
		d->n_cat_words = p->n_cat_words;
		d->cat_words = p->cat_words;
		d->cat_off = p->cat_off;
		d->cat_nwords = p->cat_nwords;
		d->cat_base = p->cat_base;
		return true;
	}
	hb_ptt_view(p, &v);
	*trees = malloc(sizeof(HbCudaTree) * (p->n_trees + 1));
	if (*trees == NULL)
		return false;
	for (int i = 0; i < p->n_trees; i++)
		hb_ptt_view_tree(p, i, &(*trees)[i].node_off, &(*trees)[i].leaf_off,
						 &(*trees)[i].depth, &(*trees)[i].group);
	d->n_used = v.n_used;
	d->used = v.used;
	d->trees = *trees;
	d->ptt_nodes = v.n_nodes;
	d->ptt_leaves = v.n_leaves;
	d->fsel = v.fsel;
	d->tk32 = v.tk32;
	d->tk64 = v.tk64;
	d->leaf_f = v.leaf_f;
	d->pleaf_d = v.leaf_d;
	return true;
}
#endif

bool
hb_device_plan_upload(const HbPlan *cp, HbError *err)
{
#ifdef HB_USE_CUDA
	HbPlan	   *p = (HbPlan *) cp;
	HbDevPlan  *d = p->dev;
	HbCudaDesc	desc;
	HbCudaTree *trees = NULL;
	size_t		need,
				got = 0;
	char		why[256] = "";
	int			kernel;

	if (!hb_device_available(err))
		return false;
	if (p->estimator != HB_EST_TREES || p->n_trees == 0)
		return hb_fail(err, HB_ERR_DEVICE,
					   "only tree ensembles run on the CUDA device; this model runs on the CPU");
	kernel = choose_kernel(p);
	if (d != NULL && d->cp != NULL && d->kernel == kernel)
	{
		/* resident: most recently used now */
		lru_unlink(d);
		lru_push_front(d);
		return true;
	}
	if (d != NULL && d->refused_budget == budget && d->kernel == kernel)
		return hb_fail(err, HB_ERR_DEVICE, "%s", d->refused);
	if (d == NULL)
	{
		d = calloc(1, sizeof(HbDevPlan));
		if (d == NULL)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		p->dev = d;
		lru_push_front(d);
	}
	evict(d);					/* made for the other kernel */
	d->kernel = kernel;
	d->refused_budget = 0;

	if (!build_desc(p, kernel, &desc, &trees))
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");

	need = estimate_bytes(&desc);
	if (need > budget)
	{
		free(trees);
		d->refused_budget = budget;
		snprintf(d->refused, sizeof(d->refused),
				 "the plan needs %zu bytes of device memory, more than hbird.gpu_memory (%zu bytes)",
				 need, budget);
		return hb_fail(err, HB_ERR_DEVICE, "%s", d->refused);
	}
	/* make room: least recently used copies first */
	for (HbDevPlan *o = lru_tail; o != NULL && resident_bytes + need > budget; o = o->prev)
		if (o != d)
			evict(o);

	d->cp = hb_cuda_plan_upload(&desc, &got, why, sizeof(why));
	free(trees);
	if (d->cp == NULL)
		return hb_fail(err, HB_ERR_DEVICE, "copying the plan to the CUDA device failed: %s", why);
	d->bytes = got;
	resident_bytes += got;
	resident_plans++;
	lru_unlink(d);
	lru_push_front(d);
	return true;
#else
	(void) cp;
	return hb_device_available(err);
#endif
}

bool
hb_device_margins(const HbPlan *p, const double *x, size_t n, double *margins,
				  HbError *err)
{
#ifdef HB_USE_CUDA
	char		why[256] = "";
	int			rc;

	if (!hb_device_plan_upload(p, err))
		return false;
	rc = hb_cuda_margins(p->dev->cp, x, n, margins, why, sizeof(why));
	if (rc < 0)
	{
		/* the context may be gone: nothing more is sent to the device */
		broken = true;
		snprintf(broken_why, sizeof(broken_why), "%s", why);
		evict(p->dev);
		return hb_fail(err, HB_ERR_DEVICE, "CUDA error: %s", why);
	}
	if (rc == 0)
		return hb_fail(err, HB_ERR_DEVICE, "no room on the CUDA device for the batch: %s", why);
	n_batches++;
	n_rows += (int64_t) n;
	return true;
#else
	(void) p;
	(void) x;
	(void) n;
	(void) margins;
	return hb_device_available(err);
#endif
}

bool
hb_device_wanted(const HbPlan *p, size_t n, HbError *err)
{
	if (mode == HB_DEVICE_CPU || n < 2)
		return false;
	if (mode == HB_DEVICE_AUTO && (int64_t) n < min_batch)
		return false;
	/* linear models are a memory-bound pass: they stay on the CPU */
	if (p->estimator != HB_EST_TREES || p->n_trees == 0)
		return false;
	if (!hb_device_available(err))
	{
		if (mode == HB_DEVICE_AUTO)
			memset(err, 0, sizeof(*err));
		return false;
	}
	/* a plan already found too big for hbird.gpu_memory */
	if (p->dev != NULL && p->dev->refused_budget == budget && budget > 0)
	{
		if (mode == HB_DEVICE_GPU)
			hb_fail(err, HB_ERR_DEVICE, "%s", p->dev->refused);
		return false;
	}
	return true;
}

bool
hb_device_try_margins(const HbPlan *p, const double *x, size_t n,
					  double *margins)
{
	HbError		err;

	/* the common cases first, without touching err */
	if (mode == HB_DEVICE_CPU || n < 2 ||
		(mode == HB_DEVICE_AUTO && (int64_t) n < min_batch))
		return false;
	memset(&err, 0, sizeof(err));
	if (!hb_device_wanted(p, n, &err))
	{
		if (err.code != HB_OK && hb_device_error_hook)
			hb_device_error_hook(&err);
		return false;
	}
	if (hb_device_margins(p, x, n, margins, &err))
		return true;
	snprintf(last_error, sizeof(last_error), "%s", err.msg);
	if (mode == HB_DEVICE_GPU && hb_device_error_hook)
		hb_device_error_hook(&err);
	n_fallbacks++;
	return false;
}

void
hb_device_stats(HbDeviceStats *s)
{
	memset(s, 0, sizeof(*s));
	s->budget = budget;
	s->resident_bytes = resident_bytes;
	s->resident_plans = resident_plans;
#ifdef HB_USE_CUDA
	s->buffer_bytes = hb_cuda_buffer_bytes();
#endif
	s->min_batch = min_batch;
	s->batches = n_batches;
	s->rows = n_rows;
	s->fallbacks = n_fallbacks;
	snprintf(s->last_error, sizeof(s->last_error), "%s", last_error);
}

void *
hb_device_plan_handle(const HbPlan *p)
{
#ifdef HB_USE_CUDA
	return p->dev ? (void *) p->dev->cp : NULL;
#else
	(void) p;
	return NULL;
#endif
}

bool
hb_device_emulate_margins(const HbPlan *p, int variant, const double *x,
						  size_t n, double *margins, const char **kernel,
						  HbError *err)
{
#ifdef HB_USE_CUDA
	HbCudaDesc	desc;
	HbCudaTree *trees;
	char		why[256] = "";
	int			k;
	bool		ok;

	*kernel = "none";
	if (p->estimator != HB_EST_TREES || p->n_trees == 0)
		return hb_fail(err, HB_ERR_DEVICE, "only tree ensembles run on the CUDA device");
	k = choose_kernel(p);
	*kernel = k == HB_CUDA_KERNEL_PTT ? "ptt" : "tt";
	if (!build_desc(p, k, &desc, &trees))
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	ok = hb_cuda_emulate(&desc, x, n, margins, variant, why, sizeof(why));
	free(trees);
	if (!ok)
		return hb_fail(err, HB_ERR_DEVICE, "%s", why);
	return true;
#else
	(void) p;
	(void) variant;
	(void) x;
	(void) n;
	(void) margins;
	*kernel = "none";
	return hb_device_available(err);
#endif
}
