/*
 * hb_cuda.cu
 *	  CUDA kernels for tree plans, and the runtime calls around them.
 *
 * Two kernels, one thread per row, trees in model order inside the thread:
 *
 *	- PTT: strategy_ptt.c's perfect-tree layout on order-preserving integer
 *	  keys.  A block stages the keys of its rows (both NaN sides of every
 *	  used input) in shared memory with one coalesced pass over the rows,
 *	  then every step is "i = 2i + 1 + (key[fsel[i]] >= tk[i])": no branch
 *	  on the data, one 8- or 16-byte load per node.  All threads of a block
 *	  walk the same tree at the same time, so the upper levels of the tree
 *	  being walked stay in L1.  Plans with categorical or HB_MISSING_ZERO
 *	  nodes use TT.
 *	- TT: the plan's flat 16-byte nodes with exec_tt.c's rules, including
 *	  categorical sets and the three missing-value modes.
 *
 * Sums.  Each (row, output) sum is made by one thread, in model tree order,
 * with the same float32 (sum_f32) or double additions as the CPU
 * executors, written as __fadd_rn / __dadd_rn so that nothing is contracted
 * or reassociated: the margins are the CPU's to the bit.  The price is
 * parallelism over rows only, which is what large batches (the reason to
 * use a GPU) have plenty of.
 *
 * Errors.  Every runtime call is checked; a failure becomes a message
 * (cudaGetErrorString) and a 0 return, never an abort.  Indexes that can
 * exceed 2^31 (row x feature, row x output) are computed in 64 bits.
 */
#include "hb_cuda.h"

#include <cuda_runtime.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>

#define HB_CUDA_THREADS		128		/* rows per block */
#define HB_CUDA_MIN_THREADS	32
#define HB_CUDA_SMEM_MAX	49152	/* staged keys per block, without opt-in */
#define HB_CUDA_CHUNK_BYTES	((size_t) 64 << 20)	/* inputs per transfer */
#define HB_CUDA_MAX_STEPS	80		/* > HB_MAX_DEPTH: a bad plan can't hang */
#define HB_CUDA_PAIRS_MAX_ROWS	16384	/* (row, tree) kernels up to this batch */
#define HB_CUDA_PAIRS_MAX_VALS	((size_t) 8 << 20)	/* and this many leaf values */
#define HB_ZERO_THR			((double) 1e-35f)
#define HB_MAX_CAT			16777216.0

/* ---------- errors ---------- */

static void
set_why(char *why, size_t why_len, const char *fmt, ...)
{
	va_list		ap;

	if (why == NULL || why_len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

static bool
ck(cudaError_t e, const char *what, char *why, size_t why_len)
{
	if (e == cudaSuccess)
		return true;
	set_why(why, why_len, "%s: %s (%s)", what, cudaGetErrorString(e),
			cudaGetErrorName(e));
	return false;
}

#define TRY(call, what) \
	do { if (!ck((call), (what), why, why_len)) goto fail; } while (0)

/* ---------- the device-side plan ---------- */

typedef struct DevTree
{
	long long	node_off;
	long long	leaf_off;
	int			depth;
	int			group;
} DevTree;

/* passed by value to the kernels: pointers into device memory */
typedef struct DevPlan
{
	int			nf;
	int			k;
	int			n_trees;
	int			zero_snap;
	const double *base;

	/* TT */
	const int4 *nodes;
	const double *thr_d;
	const double *leaf_d;
	const int  *root;
	const int  *group;
	const unsigned *cat_words;
	const int  *cat_off;
	const int  *cat_nwords;
	const int  *cat_base;

	/* PTT */
	int			n_used;
	const int  *used;
	const DevTree *trees;
	const uint2 *pn32;			/* (fsel, tk32) */
	const ulonglong2 *pn64;		/* (tk64, fsel) */
	const float *leaf_f;
	const double *pleaf_d;
} DevPlan;

struct HbCudaPlan
{
	int			kernel;
	int			f32;			/* cmp_f32 == sum_f32 */
	int			input_f32;
	long long	n_cat_words;
	DevPlan		d;
	void	   *allocs[24];		/* device allocations, for the free */
	int			n_allocs;
	size_t		bytes;
};

/*
 * ---------- the per-row work, for the device and the host ----------
 *
 * Everything a kernel computes for a row is in __host__ __device__
 * functions, so that hb_cuda_emulate can run the very same code on the CPU:
 * machines without a GPU check the kernels' arithmetic and indexing against
 * the CPU executors (test/gpu/gpu_check.c), leaving only the launches and
 * copies to be checked on a GPU.
 */

#ifdef __CUDA_ARCH__
#define LDG(p)	__ldg(p)
#else
#define LDG(p)	(*(p))
#endif

__host__ __device__ __forceinline__ unsigned
f32_bits(float v)
{
#ifdef __CUDA_ARCH__
	return __float_as_uint(v);
#else
	unsigned	u;

	memcpy(&u, &v, sizeof(u));
	return u;
#endif
}

__host__ __device__ __forceinline__ unsigned long long
f64_bits(double v)
{
#ifdef __CUDA_ARCH__
	return (unsigned long long) __double_as_longlong(v);
#else
	unsigned long long u;

	memcpy(&u, &v, sizeof(u));
	return u;
#endif
}

__host__ __device__ __forceinline__ float
bits_f32(int i)
{
#ifdef __CUDA_ARCH__
	return __int_as_float(i);
#else
	float		f;

	memcpy(&f, &i, sizeof(f));
	return f;
#endif
}

/* the executors' additions, never contracted or reordered */
__host__ __device__ __forceinline__ float
add_leaf(float acc, float v)
{
#ifdef __CUDA_ARCH__
	return __fadd_rn(acc, v);
#else
	return acc + v;
#endif
}

__host__ __device__ __forceinline__ double
add_leaf(double acc, double v)
{
#ifdef __CUDA_ARCH__
	return __dadd_rn(acc, v);
#else
	return acc + v;
#endif
}

/* keys (strategy_ptt.c) */
__host__ __device__ __forceinline__ unsigned
key32(float v)
{
	unsigned	u = f32_bits(v);

	if (u == 0x80000000u)		/* -0 sorts with +0 */
		u = 0;
	return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__host__ __device__ __forceinline__ unsigned long long
key64(double v)
{
	unsigned long long u = f64_bits(v);

	if (u == 0x8000000000000000ull)
		u = 0;
	return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}

template <typename KT> __host__ __device__ __forceinline__ KT side_key(double v, int nan_right);

template <> __host__ __device__ __forceinline__ unsigned
side_key<unsigned>(double v, int nan_right)
{
	float		f = (float) v;	/* what strategy_ptt.c keys: the float */

	if (f != f)
		return nan_right ? 0xFFFFFFFFu : 0u;
	return key32(f) - (unsigned) nan_right;
}

template <> __host__ __device__ __forceinline__ unsigned long long
side_key<unsigned long long>(double v, int nan_right)
{
	if (v != v)
		return nan_right ? 0xFFFFFFFFFFFFFFFFull : 0ull;
	return key64(v) - (unsigned long long) nan_right;
}

__host__ __device__ __forceinline__ double
snap(const DevPlan &d, double v)
{
	/* LightGBM: inputs within the zero threshold are 0 (NaN stays NaN) */
	return (d.zero_snap && fabs(v) <= HB_ZERO_THR) ? 0.0 : v;
}

/* the node of a PTT step: fsel and the threshold key */
__host__ __device__ __forceinline__ void
ptt_node(const DevPlan &d, long long pos, int *fsel, unsigned *tk)
{
	uint2		q = LDG(&d.pn32[pos]);

	*fsel = (int) q.x;
	*tk = q.y;
}

__host__ __device__ __forceinline__ void
ptt_node(const DevPlan &d, long long pos, int *fsel, unsigned long long *tk)
{
	ulonglong2	q = LDG(&d.pn64[pos]);

	*tk = q.x;
	*fsel = (int) q.y;
}

__host__ __device__ __forceinline__ float
ptt_leaf(const DevPlan &d, long long pos, float)
{
	return LDG(&d.leaf_f[pos]);
}

__host__ __device__ __forceinline__ double
ptt_leaf(const DevPlan &d, long long pos, double)
{
	return LDG(&d.pleaf_d[pos]);
}

/* Both side keys of column c of a row, where the PTT kernel stages them. */
template <typename KT, typename XT>
__host__ __device__ __forceinline__ void
stage_key(const DevPlan &d, const XT *xr, int c, KT *dst)
{
	double		v = snap(d, (double) xr[d.used[c]]);

	dst[2 * c] = side_key<KT>(v, 0);
	dst[2 * c + 1] = side_key<KT>(v, 1);
}

/*
 * PTT, one tree of one row: the leaf value.  KT: key type (unsigned for
 * float32 models, unsigned long long for double ones), AT: accumulator
 * (float / double), XT: input type.  STAGED: kr holds the row's staged
 * keys; else each key comes from xr.
 */
template <typename KT, typename AT, typename XT, bool STAGED>
__host__ __device__ __forceinline__ AT
ptt_leaf_of(const DevPlan &d, const XT *xr, const KT *kr, int t)
{
	const DevTree tr = d.trees[t];
	int			i = 0;

	for (int lv = 0; lv < tr.depth; lv++)
	{
		int			fsel;
		KT			tk,
					key;

		ptt_node(d, tr.node_off + i, &fsel, &tk);
		if (STAGED)
			key = kr[fsel];
		else
			key = side_key<KT>(snap(d, (double) xr[d.used[fsel >> 1]]), fsel & 1);
		i = 2 * i + 1 + (key >= tk);
	}
	i -= (1 << tr.depth) - 1;
	return ptt_leaf(d, tr.leaf_off + i, (AT) 0);
}

/* PTT, one row: the leaves summed per output in model tree order. */
template <typename KT, typename AT, typename XT, bool STAGED>
__host__ __device__ __forceinline__ void
ptt_row(const DevPlan &d, const XT *xr, const KT *kr, double *mrow)
{
	AT			acc = 0;

	if (d.k == 1)
		acc = (AT) d.base[0];
	else
		for (int g = 0; g < d.k; g++)
			mrow[g] = (double) (AT) d.base[g];

	for (int t = 0; t < d.n_trees; t++)
	{
		AT			v = ptt_leaf_of<KT, AT, XT, STAGED>(d, xr, kr, t);

		if (d.k == 1)
			acc = add_leaf(acc, v);
		else
		{
			int			g = d.trees[t].group;

			mrow[g] = (double) add_leaf((AT) mrow[g], v);
		}
	}
	if (d.k == 1)
		mrow[0] = (double) acc;
}

/* plan_int.h hb_cat_in_list */
__host__ __device__ __forceinline__ bool
cat_in_list(const unsigned *w, int n, unsigned c)
{
	int			lo = 0,
				hi = n;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (LDG(&w[mid]) < c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && LDG(&w[lo]) == c;
}

/* plan_int.h hb_cat_in_set */
template <bool F32>
__host__ __device__ __forceinline__ bool
cat_in_set(const DevPlan &d, int flags, long long idx, double x)
{
	unsigned	c,
				w;

	if (F32 ? !(x >= 0.0) : !(x > -1.0))
		return false;
	if (x >= HB_MAX_CAT)
		return false;
	c = (unsigned) x;
	if (flags & HB_CUDA_FN_CAT_LIST)
		return cat_in_list(d.cat_words + d.cat_off[idx], d.cat_nwords[idx], c);
	w = c / 32 - (unsigned) d.cat_base[idx];
	if (w >= (unsigned) d.cat_nwords[idx])
		return false;
	return (d.cat_words[d.cat_off[idx] + w] >> (c % 32)) & 1;
}

/* plan_int.h hb_step_general */
template <bool F32>
__host__ __device__ __forceinline__ long long
step_general(const DevPlan &d, int flags, int left, float thr, long long idx,
			 double x)
{
	int			missing = (flags & HB_CUDA_FN_MISSING_MASK) >> HB_CUDA_FN_MISSING_SHIFT;
	bool		go_left;

	if (x != x)
	{
		if (missing == HB_CUDA_MISSING_NAN)
			return left + !(flags & HB_CUDA_FN_DEFAULT_LEFT);
		x = 0.0;
	}
	if (missing == HB_CUDA_MISSING_ZERO && fabs(x) <= HB_ZERO_THR)
		return left + !(flags & HB_CUDA_FN_DEFAULT_LEFT);
	if (flags & HB_CUDA_FN_CAT)
	{
		bool		in = cat_in_set<F32>(d, flags, idx, F32 ? (double) (float) x : x);

		go_left = (flags & HB_CUDA_FN_CAT_IN_LEFT) ? in : !in;
	}
	else if (F32)
		go_left = (float) x < thr;
	else
		go_left = x <= d.thr_d[idx];
	return left + !go_left;
}

/*
 * TT, one tree of one row: exec_tt.c's walk to the leaf, and its value.
 * F32 is both the compare and the sum precision (plans pair them).  Nodes
 * are HbFlatNode read as int4: x = thr bits, y = feature, z = left, w's
 * low byte = flags.
 */
template <typename XT, bool F32>
__host__ __device__ __forceinline__ typename std::conditional<F32, float, double>::type
tt_leaf_of(const DevPlan &d, const XT *xr, int t)
{
	long long	idx = d.root[t];
	int4		q = LDG(&d.nodes[idx]);

	/* validated plans are acyclic; the bound only guards a bad one */
	for (int s = 0; q.y >= 0 && s < HB_CUDA_MAX_STEPS; s++)
	{
		int			flags = q.w & 0xff;
		float		thr = bits_f32(q.x);
		double		xv = snap(d, (double) xr[q.y]);

		if (flags & ~HB_CUDA_FN_DEFAULT_LEFT)
			idx = step_general<F32>(d, flags, q.z, thr, idx, xv);
		else if (xv != xv)
			idx = q.z + !(flags & HB_CUDA_FN_DEFAULT_LEFT);
		else if (F32)
			idx = q.z + !((float) xv < thr);
		else
			idx = q.z + !(xv <= d.thr_d[idx]);
		q = LDG(&d.nodes[idx]);
	}
	if (F32)
		return bits_f32(q.x);	/* a leaf's value is its thr */
	return d.leaf_d[idx];
}

/* TT, one row: the leaves summed per output in model tree order. */
template <typename XT, bool F32>
__host__ __device__ __forceinline__ void
tt_row(const DevPlan &d, const XT *xr, double *mrow)
{
	typedef typename std::conditional<F32, float, double>::type AT;
	AT			acc = 0;

	if (d.k == 1)
		acc = (AT) d.base[0];
	else
		for (int g = 0; g < d.k; g++)
			mrow[g] = (double) (AT) d.base[g];

	for (int t = 0; t < d.n_trees; t++)
	{
		AT			v = tt_leaf_of<XT, F32>(d, xr, t);

		if (d.k == 1)
			acc = add_leaf(acc, v);
		else
			mrow[d.group[t]] = (double) add_leaf((AT) mrow[d.group[t]], v);
	}
	if (d.k == 1)
		mrow[0] = (double) acc;
}

/*
 * Small batches: one thread per (row, tree) writes the leaf value into
 * vals[row * n_trees + tree], then one thread per row adds them up in tree
 * order, so the sums are those of the row kernels.  groups: each tree's
 * output (the PTT tree list or the TT group array).
 */
template <typename AT>
__host__ __device__ __forceinline__ void
reduce_row(const DevPlan &d, const AT *vals, double *mrow)
{
	AT			acc = 0;

	if (d.k == 1)
	{
		acc = (AT) d.base[0];
		for (int t = 0; t < d.n_trees; t++)
			acc = add_leaf(acc, vals[t]);
		mrow[0] = (double) acc;
		return;
	}
	for (int g = 0; g < d.k; g++)
		mrow[g] = (double) (AT) d.base[g];
	for (int t = 0; t < d.n_trees; t++)
	{
		int			g = d.trees ? d.trees[t].group : d.group[t];

		mrow[g] = (double) add_leaf((AT) mrow[g], vals[t]);
	}
}

/* ---------- kernels: one thread per row ---------- */

/*
 * PTT.  SMEM: the block first stages the keys of its rows in shared memory
 * (one pass over the rows, consecutive threads on consecutive columns),
 * rows at an odd stride of keys so that threads reading their own rows hit
 * different banks.
 */
template <typename KT, typename AT, typename XT, bool SMEM>
__global__ void __launch_bounds__(HB_CUDA_THREADS)
ptt_kernel(DevPlan d, const XT *__restrict__ x, long long n,
		   double *__restrict__ m)
{
	extern __shared__ __align__(16) unsigned char smem_raw[];
	KT		   *skeys = reinterpret_cast<KT *>(smem_raw);
	const int	nu = d.n_used;
	const int	stride = 2 * nu + 1;
	const long long row0 = (long long) blockIdx.x * blockDim.x;
	const long long rest = n - row0;
	const int	nb = rest < (long long) blockDim.x ? (int) rest : (int) blockDim.x;
	const long long row = row0 + threadIdx.x;

	if (SMEM)
	{
		/* nb * nu fits an int: the host sized the block so the keys fit */
		for (int i = threadIdx.x; i < nb * nu; i += blockDim.x)
		{
			int			r = i / nu;
			int			c = i - r * nu;

			stage_key<KT, XT>(d, x + (size_t) (row0 + r) * (size_t) d.nf, c,
							  skeys + (size_t) r * stride);
		}
		__syncthreads();
	}
	if (threadIdx.x >= nb)
		return;					/* no barrier below this point */
	ptt_row<KT, AT, XT, SMEM>(d, x + (size_t) row * (size_t) d.nf,
						SMEM ? skeys + (size_t) threadIdx.x * stride : NULL,
						m + (size_t) row * (size_t) d.k);
}

template <typename XT, bool F32>
__global__ void __launch_bounds__(HB_CUDA_THREADS)
tt_kernel(DevPlan d, const XT *__restrict__ x, long long n,
		  double *__restrict__ m)
{
	const long long row = (long long) blockIdx.x * blockDim.x + threadIdx.x;

	if (row >= n)
		return;
	tt_row<XT, F32>(d, x + (size_t) row * (size_t) d.nf, m + (size_t) row * (size_t) d.k);
}

template <typename KT, typename AT, typename XT>
__global__ void __launch_bounds__(HB_CUDA_THREADS)
ptt_pairs_kernel(DevPlan d, const XT *__restrict__ x, long long n,
				 AT *__restrict__ vals)
{
	const long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x;
	long long	row;
	int			t;

	if (i >= n * d.n_trees)
		return;
	row = i / d.n_trees;
	t = (int) (i - row * d.n_trees);
	vals[i] = ptt_leaf_of<KT, AT, XT, false>(d, x + (size_t) row * (size_t) d.nf,
											 (const KT *) NULL, t);
}

template <typename XT, bool F32>
__global__ void __launch_bounds__(HB_CUDA_THREADS)
tt_pairs_kernel(DevPlan d, const XT *__restrict__ x, long long n,
				typename std::conditional<F32, float, double>::type *__restrict__ vals)
{
	const long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x;
	long long	row;
	int			t;

	if (i >= n * d.n_trees)
		return;
	row = i / d.n_trees;
	t = (int) (i - row * d.n_trees);
	vals[i] = tt_leaf_of<XT, F32>(d, x + (size_t) row * (size_t) d.nf, t);
}

template <typename AT>
__global__ void __launch_bounds__(HB_CUDA_THREADS)
reduce_kernel(DevPlan d, const AT *__restrict__ vals, long long n,
			  double *__restrict__ m)
{
	const long long row = (long long) blockIdx.x * blockDim.x + threadIdx.x;

	if (row >= n)
		return;
	reduce_row<AT>(d, vals + (size_t) row * (size_t) d.n_trees, m + (size_t) row * (size_t) d.k);
}

/* ---------- runtime ---------- */

static int	init_state = 0;		/* 0 not tried, 1 usable, -1 not */
static char init_why[256];
static char init_name[320];

extern "C" int
hb_cuda_init(char *name, size_t name_len, char *why, size_t why_len)
{
	if (init_state == 0)
	{
		int			count = 0;
		cudaError_t e = cudaGetDeviceCount(&count);
		cudaDeviceProp prop;

		init_state = -1;
		if (e != cudaSuccess)
			ck(e, "cudaGetDeviceCount", init_why, sizeof(init_why));
		else if (count == 0)
			set_why(init_why, sizeof(init_why), "no CUDA device found");
		else if (ck(cudaSetDevice(0), "cudaSetDevice", init_why, sizeof(init_why)) &&
				 ck(cudaFree(0), "creating a CUDA context", init_why, sizeof(init_why)) &&
				 ck(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties",
					init_why, sizeof(init_why)))
		{
			snprintf(init_name, sizeof(init_name), "%s (sm_%d%d, %zu MiB)",
					 prop.name, prop.major, prop.minor,
					 (size_t) (prop.totalGlobalMem >> 20));
			init_state = 1;
		}
	}
	if (name && name_len)
		snprintf(name, name_len, "%s", init_state == 1 ? init_name : "");
	if (init_state != 1)
		set_why(why, why_len, "%s", init_why);
	return init_state == 1;
}

static bool
dev_copy(HbCudaPlan *cp, const void *src, size_t bytes, const void **out,
		 char *why, size_t why_len)
{
	void	   *p = NULL;
	size_t		alloc = bytes > 0 ? bytes : 16;	/* a valid pointer even when empty */

	*out = NULL;
	if (cp->n_allocs >= (int) (sizeof(cp->allocs) / sizeof(cp->allocs[0])))
	{
		set_why(why, why_len, "too many device arrays for one plan");
		return false;
	}
	if (!ck(cudaMalloc(&p, alloc), "cudaMalloc (plan)", why, why_len))
		return false;
	cp->allocs[cp->n_allocs++] = p;
	cp->bytes += alloc;
	if (src != NULL && bytes > 0 &&
		!ck(cudaMemcpy(p, src, bytes, cudaMemcpyHostToDevice),
			"cudaMemcpy (plan)", why, why_len))
		return false;
	*out = p;
	return true;
}

/* fsel and the threshold key of each PTT node side by side; malloc'ed */
static void *
pack_ptt_nodes(const HbCudaDesc *s)
{
	size_t		nn = (size_t) s->ptt_nodes + 1;	/* strategy_ptt.c's +1 */
	void	   *out = malloc((s->cmp_f32 ? sizeof(uint2) : sizeof(ulonglong2)) * nn);

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < nn; i++)
	{
		if (s->cmp_f32)
			((uint2 *) out)[i] = make_uint2((unsigned) s->fsel[i], s->tk32[i]);
		else
			((ulonglong2 *) out)[i] =
				make_ulonglong2(s->tk64[i], (unsigned long long) (unsigned) s->fsel[i]);
	}
	return out;
}

extern "C" HbCudaPlan *
hb_cuda_plan_upload(const HbCudaDesc *s, size_t *bytes, char *why,
					size_t why_len)
{
	HbCudaPlan *cp;
	void	   *tmp = NULL;
	const void *dp;

	*bytes = 0;
	if (!hb_cuda_init(NULL, 0, why, why_len))
		return NULL;
	if (s->cmp_f32 != s->sum_f32 || s->n_trees < 0 || s->n_outputs < 1 ||
		s->n_features < 1)
	{
		set_why(why, why_len, "plan not supported on the device");
		return NULL;
	}
	cp = (HbCudaPlan *) calloc(1, sizeof(HbCudaPlan));
	if (cp == NULL)
	{
		set_why(why, why_len, "out of memory");
		return NULL;
	}
	cp->kernel = s->kernel;
	cp->f32 = s->cmp_f32;
	cp->input_f32 = s->input_f32;
	cp->d.nf = s->n_features;
	cp->d.k = s->n_outputs;
	cp->d.n_trees = s->n_trees;
	cp->d.zero_snap = s->zero_snap;

	if (!dev_copy(cp, s->base_margin, sizeof(double) * s->n_outputs, &dp, why, why_len))
		goto fail;
	cp->d.base = (const double *) dp;

	if (s->kernel == HB_CUDA_KERNEL_TT)
	{
		size_t		nn = (size_t) s->n_nodes + 1;	/* plan arrays have the +1 */

		if (!dev_copy(cp, s->nodes, 16 * nn, &dp, why, why_len))
			goto fail;
		cp->d.nodes = (const int4 *) dp;
		if (!cp->f32)
		{
			if (!dev_copy(cp, s->thr_d, sizeof(double) * nn, &dp, why, why_len))
				goto fail;
			cp->d.thr_d = (const double *) dp;
			if (!dev_copy(cp, s->leaf_d, sizeof(double) * nn, &dp, why, why_len))
				goto fail;
			cp->d.leaf_d = (const double *) dp;
		}
		if (!dev_copy(cp, s->tree_root, sizeof(int32_t) * (s->n_trees + 1), &dp, why, why_len))
			goto fail;
		cp->d.root = (const int *) dp;
		if (!dev_copy(cp, s->tree_group, sizeof(int32_t) * (s->n_trees + 1), &dp, why, why_len))
			goto fail;
		cp->d.group = (const int *) dp;
		if (s->cat_off != NULL)
		{
			if (!dev_copy(cp, s->cat_words, sizeof(uint32_t) * s->n_cat_words, &dp, why, why_len))
				goto fail;
			cp->d.cat_words = (const unsigned *) dp;
			if (!dev_copy(cp, s->cat_off, sizeof(int32_t) * nn, &dp, why, why_len))
				goto fail;
			cp->d.cat_off = (const int *) dp;
			if (!dev_copy(cp, s->cat_nwords, sizeof(int32_t) * nn, &dp, why, why_len))
				goto fail;
			cp->d.cat_nwords = (const int *) dp;
			if (!dev_copy(cp, s->cat_base, sizeof(int32_t) * nn, &dp, why, why_len))
				goto fail;
			cp->d.cat_base = (const int *) dp;
		}
	}
	else if (s->kernel == HB_CUDA_KERNEL_PTT)
	{
		size_t		nn = (size_t) s->ptt_nodes + 1;	/* strategy_ptt.c's +1 */
		size_t		node_bytes = cp->f32 ? sizeof(uint2) : sizeof(ulonglong2);

		cp->d.n_used = s->n_used;
		if (!dev_copy(cp, s->used, sizeof(int32_t) * (s->n_used > 0 ? s->n_used : 1),
					  &dp, why, why_len))
			goto fail;
		cp->d.used = (const int *) dp;

		/* the two node arrays, interleaved: one load per step */
		tmp = pack_ptt_nodes(s);
		if (tmp == NULL)
		{
			set_why(why, why_len, "out of memory");
			goto fail;
		}
		if (!dev_copy(cp, tmp, node_bytes * nn, &dp, why, why_len))
			goto fail;
		free(tmp);
		tmp = NULL;
		if (cp->f32)
			cp->d.pn32 = (const uint2 *) dp;
		else
			cp->d.pn64 = (const ulonglong2 *) dp;

		/* HbCudaTree and DevTree have the same layout */
		static_assert(sizeof(HbCudaTree) == sizeof(DevTree), "tree layout");
		if (!dev_copy(cp, s->trees, sizeof(HbCudaTree) * (s->n_trees > 0 ? s->n_trees : 1),
					  &dp, why, why_len))
			goto fail;
		cp->d.trees = (const DevTree *) dp;
		if (cp->f32)
		{
			if (!dev_copy(cp, s->leaf_f, sizeof(float) * s->ptt_leaves, &dp, why, why_len))
				goto fail;
			cp->d.leaf_f = (const float *) dp;
		}
		else
		{
			if (!dev_copy(cp, s->pleaf_d, sizeof(double) * s->ptt_leaves, &dp, why, why_len))
				goto fail;
			cp->d.pleaf_d = (const double *) dp;
		}
	}
	else
	{
		set_why(why, why_len, "unknown kernel %d", s->kernel);
		goto fail;
	}
	*bytes = cp->bytes;
	return cp;

fail:
	free(tmp);
	hb_cuda_plan_free(cp);
	return NULL;
}

extern "C" void
hb_cuda_plan_free(HbCudaPlan *cp)
{
	if (cp == NULL)
		return;
	/* errors of cudaFree are ignored: nothing better can be done */
	for (int i = 0; i < cp->n_allocs; i++)
		cudaFree(cp->allocs[i]);
	free(cp);
}

/* rows per block for the PTT kernel with staged keys; 0: keys don't fit */
static int
ptt_threads(int f32, int n_used)
{
	size_t		key = f32 ? sizeof(unsigned) : sizeof(unsigned long long);
	size_t		per_row = key * (2 * (size_t) n_used + 1);

	for (int t = HB_CUDA_THREADS; t >= HB_CUDA_MIN_THREADS; t /= 2)
		if (per_row * t <= HB_CUDA_SMEM_MAX)
			return t;
	return 0;
}

/*
 * Small batches use the (row, tree) kernels: a row kernel would give a few
 * threads per multiprocessor.  Bytes of their scratch, or 0 for the row
 * kernels.
 */
static size_t
pairs_bytes(const HbCudaPlan *cp, size_t n)
{
	if (n > HB_CUDA_PAIRS_MAX_ROWS ||
		(double) n * cp->d.n_trees > (double) HB_CUDA_PAIRS_MAX_VALS ||
		cp->d.n_trees == 0)
		return 0;
	return n * (size_t) cp->d.n_trees * (cp->f32 ? sizeof(float) : sizeof(double));
}

/*
 * Launch the plan's kernels on n rows in device memory (asynchronous).
 * dv: dv_cap bytes of scratch for the (row, tree) kernels, which run when
 * pairs_bytes(cp, n) is not 0 and fits; otherwise the row kernels do.
 */
static bool
launch(HbCudaPlan *cp, const void *dx, size_t n, double *dm, void *dv,
	   size_t dv_cap, cudaStream_t st, char *why, size_t why_len)
{
	int			threads = HB_CUDA_THREADS;
	size_t		smem = 0;
	long long	ln = (long long) n;
	size_t		blocks;

	if (n == 0)
		return true;
	if (pairs_bytes(cp, n) > 0 && dv != NULL && pairs_bytes(cp, n) <= dv_cap)
	{
		/* n * n_trees <= HB_CUDA_PAIRS_MAX_VALS: the grid fits */
		size_t		pb = (n * (size_t) cp->d.n_trees + threads - 1) / threads;
		unsigned	rb = (unsigned) ((n + threads - 1) / threads);

		if (cp->kernel == HB_CUDA_KERNEL_PTT)
		{
			if (cp->f32 && cp->input_f32)
				ptt_pairs_kernel<unsigned, float, float><<<(unsigned) pb, threads, 0, st>>>
					(cp->d, (const float *) dx, ln, (float *) dv);
			else if (cp->f32)
				ptt_pairs_kernel<unsigned, float, double><<<(unsigned) pb, threads, 0, st>>>
					(cp->d, (const double *) dx, ln, (float *) dv);
			else
				ptt_pairs_kernel<unsigned long long, double, double><<<(unsigned) pb, threads, 0, st>>>
					(cp->d, (const double *) dx, ln, (double *) dv);
		}
		else
		{
			if (cp->f32 && cp->input_f32)
				tt_pairs_kernel<float, true><<<(unsigned) pb, threads, 0, st>>>
					(cp->d, (const float *) dx, ln, (float *) dv);
			else if (cp->f32)
				tt_pairs_kernel<double, true><<<(unsigned) pb, threads, 0, st>>>
					(cp->d, (const double *) dx, ln, (float *) dv);
			else
				tt_pairs_kernel<double, false><<<(unsigned) pb, threads, 0, st>>>
					(cp->d, (const double *) dx, ln, (double *) dv);
		}
		if (!ck(cudaGetLastError(), "kernel launch", why, why_len))
			return false;
		if (cp->f32)
			reduce_kernel<float><<<rb, threads, 0, st>>>(cp->d, (const float *) dv, ln, dm);
		else
			reduce_kernel<double><<<rb, threads, 0, st>>>(cp->d, (const double *) dv, ln, dm);
		return ck(cudaGetLastError(), "kernel launch", why, why_len);
	}
	if (cp->kernel == HB_CUDA_KERNEL_PTT)
	{
		int			t = ptt_threads(cp->f32, cp->d.n_used);
		size_t		key = cp->f32 ? sizeof(unsigned) : sizeof(unsigned long long);

		if (t > 0)
		{
			threads = t;
			smem = key * (2 * (size_t) cp->d.n_used + 1) * t;
		}
		blocks = (n + threads - 1) / threads;
		if (blocks > 0x7fffffffu)
		{
			set_why(why, why_len, "batch of %zu rows is too large for one launch", n);
			return false;
		}
#define PTT_LAUNCH(KT, AT, XT) \
		do { \
			if (smem > 0) \
				ptt_kernel<KT, AT, XT, true><<<(unsigned) blocks, threads, smem, st>>> \
					(cp->d, (const XT *) dx, ln, dm); \
			else \
				ptt_kernel<KT, AT, XT, false><<<(unsigned) blocks, threads, 0, st>>> \
					(cp->d, (const XT *) dx, ln, dm); \
		} while (0)
		if (cp->f32 && cp->input_f32)
			PTT_LAUNCH(unsigned, float, float);
		else if (cp->f32)
			PTT_LAUNCH(unsigned, float, double);
		else
			PTT_LAUNCH(unsigned long long, double, double);
#undef PTT_LAUNCH
	}
	else
	{
		blocks = (n + threads - 1) / threads;
		if (blocks > 0x7fffffffu)
		{
			set_why(why, why_len, "batch of %zu rows is too large for one launch", n);
			return false;
		}
		if (cp->f32 && cp->input_f32)
			tt_kernel<float, true><<<(unsigned) blocks, threads, 0, st>>>(cp->d, (const float *) dx, ln, dm);
		else if (cp->f32)
			tt_kernel<double, true><<<(unsigned) blocks, threads, 0, st>>>(cp->d, (const double *) dx, ln, dm);
		else
			tt_kernel<double, false><<<(unsigned) blocks, threads, 0, st>>>(cp->d, (const double *) dx, ln, dm);
	}
	return ck(cudaGetLastError(), "kernel launch", why, why_len);
}

/* ---------- per-call buffers, kept between calls ---------- */

static void *buf_hx = NULL;		/* pinned host: inputs converted to float */
static void *buf_dx = NULL;		/* device inputs */
static double *buf_dm = NULL;	/* device margins */
static void *buf_dv = NULL;		/* device leaf values of small batches */
static size_t cap_hx = 0,
			cap_dx = 0,
			cap_dm = 0,
			cap_dv = 0;

extern "C" size_t
hb_cuda_buffer_bytes(void)
{
	return cap_hx + cap_dx + cap_dm + cap_dv;
}

extern "C" void
hb_cuda_release_buffers(void)
{
	if (buf_hx)
		cudaFreeHost(buf_hx);
	if (buf_dx)
		cudaFree(buf_dx);
	if (buf_dm)
		cudaFree(buf_dm);
	if (buf_dv)
		cudaFree(buf_dv);
	buf_hx = buf_dx = buf_dv = NULL;
	buf_dm = NULL;
	cap_hx = cap_dx = cap_dm = cap_dv = 0;
}

static bool
reserve(void **p, size_t *cap, size_t need, bool host, char *why, size_t why_len)
{
	if (*cap >= need)
		return true;
	if (*p)
		host ? cudaFreeHost(*p) : cudaFree(*p);
	*p = NULL;
	*cap = 0;
	if (host ? !ck(cudaMallocHost(p, need), "cudaMallocHost (staging)", why, why_len) :
		!ck(cudaMalloc(p, need), "cudaMalloc (batch)", why, why_len))
	{
		*p = NULL;
		return false;
	}
	*cap = need;
	return true;
}

/* the float (or double) input of rows [r0, r0 + nb): into hx, then to dx */
static void
convert_rows(const double *x, size_t count, float *out)
{
	for (size_t i = 0; i < count; i++)
		out[i] = (float) x[i];
}

extern "C" int
hb_cuda_margins(HbCudaPlan *cp, const double *x, size_t n, double *margins,
				char *why, size_t why_len)
{
	size_t		nf = (size_t) cp->d.nf;
	size_t		k = (size_t) cp->d.k;
	size_t		xsize = cp->input_f32 ? sizeof(float) : sizeof(double);
	size_t		chunk;

	if (n == 0)
		return 1;
	/* rows per transfer: bounded inputs and margins, at least one row */
	chunk = HB_CUDA_CHUNK_BYTES / (nf * xsize);
	if (chunk > HB_CUDA_CHUNK_BYTES / (k * sizeof(double)))
		chunk = HB_CUDA_CHUNK_BYTES / (k * sizeof(double));
	if (chunk < 1)
		chunk = 1;
	if (chunk > n)
		chunk = n;
	if (!reserve(&buf_dx, &cap_dx, chunk * nf * xsize, false, why, why_len) ||
		!reserve((void **) &buf_dm, &cap_dm, chunk * k * sizeof(double), false, why, why_len) ||
		(cp->input_f32 &&
		 !reserve(&buf_hx, &cap_hx, chunk * nf * sizeof(float), true, why, why_len)) ||
		(pairs_bytes(cp, chunk) > 0 &&
		 !reserve(&buf_dv, &cap_dv, pairs_bytes(cp, chunk), false, why, why_len)))
	{
		/* out of device or pinned memory: the context itself is fine */
		hb_cuda_release_buffers();
		return 0;
	}

	for (size_t r0 = 0; r0 < n; r0 += chunk)
	{
		size_t		nb = n - r0 < chunk ? n - r0 : chunk;
		const double *xb = x + r0 * nf;

		if (cp->input_f32)
		{
			convert_rows(xb, nb * nf, (float *) buf_hx);
			TRY(cudaMemcpy(buf_dx, buf_hx, nb * nf * sizeof(float),
						   cudaMemcpyHostToDevice), "cudaMemcpy (inputs)");
		}
		else
			TRY(cudaMemcpy(buf_dx, xb, nb * nf * sizeof(double),
						   cudaMemcpyHostToDevice), "cudaMemcpy (inputs)");
		if (!launch(cp, buf_dx, nb, buf_dm, buf_dv, cap_dv, 0, why, why_len))
			return -1;
		/* synchronous: also reports faults of the kernel */
		TRY(cudaMemcpy(margins + r0 * k, buf_dm, nb * k * sizeof(double),
					   cudaMemcpyDeviceToHost), "running the kernel");
	}
	return 1;

fail:
	return -1;
}

/* ---------- benchmark helpers ---------- */

extern "C" int
hb_cuda_stage(HbCudaPlan *cp, const double *x, size_t n, void **dx, void **dm,
			  char *why, size_t why_len)
{
	size_t		nf = (size_t) cp->d.nf;
	size_t		xsize = cp->input_f32 ? sizeof(float) : sizeof(double);
	float	   *hf = NULL;

	*dx = *dm = NULL;
	TRY(cudaMalloc(dx, n * nf * xsize + 16), "cudaMalloc (staged inputs)");
	TRY(cudaMalloc(dm, n * cp->d.k * sizeof(double) + 16), "cudaMalloc (staged margins)");
	if (cp->input_f32)
	{
		hf = (float *) malloc(n * nf * sizeof(float) + 16);
		if (hf == NULL)
		{
			set_why(why, why_len, "out of memory");
			goto fail;
		}
		convert_rows(x, n * nf, hf);
		TRY(cudaMemcpy(*dx, hf, n * nf * sizeof(float), cudaMemcpyHostToDevice),
			"cudaMemcpy (staged inputs)");
		free(hf);
		hf = NULL;
	}
	else
		TRY(cudaMemcpy(*dx, x, n * nf * sizeof(double), cudaMemcpyHostToDevice),
			"cudaMemcpy (staged inputs)");
	return 1;

fail:
	free(hf);
	if (*dx)
		cudaFree(*dx);
	if (*dm)
		cudaFree(*dm);
	*dx = *dm = NULL;
	return 0;
}

extern "C" double
hb_cuda_time_resident(HbCudaPlan *cp, const void *dx, size_t n, void *dm,
					  int reps, char *why, size_t why_len)
{
	cudaEvent_t e0 = NULL,
				e1 = NULL;
	float		ms = 0.0f;
	double		result = -1.0;
	void	   *dv = NULL;

	if (pairs_bytes(cp, n) > 0)
		TRY(cudaMalloc(&dv, pairs_bytes(cp, n)), "cudaMalloc (leaf values)");
	TRY(cudaEventCreate(&e0), "cudaEventCreate");
	TRY(cudaEventCreate(&e1), "cudaEventCreate");
	/* one untimed run: first-launch costs are not throughput */
	if (!launch(cp, dx, n, (double *) dm, dv, pairs_bytes(cp, n), 0, why, why_len))
		goto fail;
	TRY(cudaDeviceSynchronize(), "running the kernel");
	TRY(cudaEventRecord(e0, 0), "cudaEventRecord");
	for (int i = 0; i < reps; i++)
		if (!launch(cp, dx, n, (double *) dm, dv, pairs_bytes(cp, n), 0, why, why_len))
			goto fail;
	TRY(cudaEventRecord(e1, 0), "cudaEventRecord");
	TRY(cudaEventSynchronize(e1), "running the kernel");
	TRY(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
	result = (double) ms / 1000.0 / (reps > 0 ? reps : 1);

fail:
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	if (dv)
		cudaFree(dv);
	return result;
}

extern "C" int
hb_cuda_fetch(HbCudaPlan *cp, const void *dm, size_t n, double *margins,
			  char *why, size_t why_len)
{
	return ck(cudaMemcpy(margins, dm, n * cp->d.k * sizeof(double),
						 cudaMemcpyDeviceToHost), "cudaMemcpy (margins)", why, why_len);
}

extern "C" void
hb_cuda_free_device(void *ptr)
{
	if (ptr)
		cudaFree(ptr);
}

extern "C" double
hb_cuda_h2d_bandwidth(size_t bytes, int pinned, char *why, size_t why_len)
{
	void	   *h = NULL,
			   *dv = NULL;
	cudaEvent_t e0 = NULL,
				e1 = NULL;
	float		ms = 0.0f;
	double		result = -1.0;
	const int	reps = 5;

	if (pinned)
		TRY(cudaMallocHost(&h, bytes), "cudaMallocHost");
	else if ((h = malloc(bytes)) == NULL)
	{
		set_why(why, why_len, "out of memory");
		goto fail;
	}
	memset(h, 1, bytes);		/* pageable pages must exist */
	TRY(cudaMalloc(&dv, bytes), "cudaMalloc");
	TRY(cudaEventCreate(&e0), "cudaEventCreate");
	TRY(cudaEventCreate(&e1), "cudaEventCreate");
	TRY(cudaMemcpy(dv, h, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
	TRY(cudaEventRecord(e0, 0), "cudaEventRecord");
	for (int i = 0; i < reps; i++)
		TRY(cudaMemcpy(dv, h, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
	TRY(cudaEventRecord(e1, 0), "cudaEventRecord");
	TRY(cudaEventSynchronize(e1), "cudaEventSynchronize");
	TRY(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
	if (ms > 0.0f)
		result = (double) bytes * reps / ((double) ms / 1000.0);

fail:
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	if (dv)
		cudaFree(dv);
	if (h)
		pinned ? (void) cudaFreeHost(h) : free(h);
	return result;
}

/* ---------- the kernels' row code on the host ---------- */

template <typename KT, typename AT, typename XT>
static void
emulate_ptt(const DevPlan &d, const XT *x, size_t n, bool staged, KT *keys,
			double *m)
{
	for (size_t r = 0; r < n; r++)
	{
		const XT   *xr = x + r * (size_t) d.nf;

		if (staged)
		{
			for (int c = 0; c < d.n_used; c++)
				stage_key<KT, XT>(d, xr, c, keys);
			ptt_row<KT, AT, XT, true>(d, xr, keys, m + r * (size_t) d.k);
		}
		else
			ptt_row<KT, AT, XT, false>(d, xr, NULL, m + r * (size_t) d.k);
	}
}

template <typename XT, bool F32>
static void
emulate_tt(const DevPlan &d, const XT *x, size_t n, double *m)
{
	for (size_t r = 0; r < n; r++)
		tt_row<XT, F32>(d, x + r * (size_t) d.nf, m + r * (size_t) d.k);
}

/* the (row, tree) kernels and the reduction, row by row; vals: n_trees */
template <typename KT, typename AT, typename XT>
static void
emulate_ptt_pairs(const DevPlan &d, const XT *x, size_t n, AT *vals, double *m)
{
	for (size_t r = 0; r < n; r++)
	{
		for (int t = 0; t < d.n_trees; t++)
			vals[t] = ptt_leaf_of<KT, AT, XT, false>(d, x + r * (size_t) d.nf,
													 (const KT *) NULL, t);
		reduce_row<AT>(d, vals, m + r * (size_t) d.k);
	}
}

template <typename XT, bool F32>
static void
emulate_tt_pairs(const DevPlan &d, const XT *x, size_t n,
				 typename std::conditional<F32, float, double>::type *vals,
				 double *m)
{
	for (size_t r = 0; r < n; r++)
	{
		for (int t = 0; t < d.n_trees; t++)
			vals[t] = tt_leaf_of<XT, F32>(d, x + r * (size_t) d.nf, t);
		reduce_row(d, vals, m + r * (size_t) d.k);
	}
}

extern "C" int
hb_cuda_emulate(const HbCudaDesc *s, const double *x, size_t n,
				double *margins, int variant, char *why, size_t why_len)
{
	DevPlan		d;
	void	   *nodes = NULL;
	void	   *pn = NULL;
	void	   *keys = NULL;
	void	   *vals = NULL;
	float	   *xf = NULL;
	bool		staged = false;
	int			ok = 0;

	memset(&d, 0, sizeof(d));
	d.nf = s->n_features;
	d.k = s->n_outputs;
	d.n_trees = s->n_trees;
	d.zero_snap = s->zero_snap;
	d.base = s->base_margin;
	if (s->cmp_f32 != s->sum_f32)
	{
		set_why(why, why_len, "plan not supported on the device");
		return 0;
	}
	vals = malloc(sizeof(double) * ((size_t) s->n_trees + 1));
	if (vals == NULL)
		goto nomem;
	if (s->input_f32)
	{
		xf = (float *) malloc(sizeof(float) * n * (size_t) d.nf + 16);
		if (xf == NULL)
			goto nomem;
		convert_rows(x, n * (size_t) d.nf, xf);
	}
	if (s->kernel == HB_CUDA_KERNEL_TT)
	{
		size_t		bytes = 16 * ((size_t) s->n_nodes + 1);

		/* int4 wants 16-byte alignment: copy into malloc'ed memory */
		nodes = malloc(bytes);
		if (nodes == NULL)
			goto nomem;
		memcpy(nodes, s->nodes, bytes);
		d.nodes = (const int4 *) nodes;
		d.thr_d = s->thr_d;
		d.leaf_d = s->leaf_d;
		d.root = s->tree_root;
		d.group = s->tree_group;
		d.cat_words = s->cat_words;
		d.cat_off = s->cat_off;
		d.cat_nwords = s->cat_nwords;
		d.cat_base = s->cat_base;
		if (variant == 2)
		{
			if (s->cmp_f32 && s->input_f32)
				emulate_tt_pairs<float, true>(d, xf, n, (float *) vals, margins);
			else if (s->cmp_f32)
				emulate_tt_pairs<double, true>(d, x, n, (float *) vals, margins);
			else
				emulate_tt_pairs<double, false>(d, x, n, (double *) vals, margins);
		}
		else if (s->cmp_f32 && s->input_f32)
			emulate_tt<float, true>(d, xf, n, margins);
		else if (s->cmp_f32)
			emulate_tt<double, true>(d, x, n, margins);
		else
			emulate_tt<double, false>(d, x, n, margins);
	}
	else
	{
		pn = pack_ptt_nodes(s);
		keys = malloc(sizeof(unsigned long long) * (2 * (size_t) s->n_used + 1));
		if (pn == NULL || keys == NULL)
			goto nomem;
		d.n_used = s->n_used;
		d.used = s->used;
		d.trees = (const DevTree *) s->trees;
		d.pn32 = (const uint2 *) pn;
		d.pn64 = (const ulonglong2 *) pn;
		d.leaf_f = s->leaf_f;
		d.pleaf_d = s->pleaf_d;
		/* what launch does: staged keys when a block of them fits */
		staged = variant == 0 && ptt_threads(s->cmp_f32, s->n_used) > 0;
		if (variant == 2)
		{
			if (s->cmp_f32 && s->input_f32)
				emulate_ptt_pairs<unsigned, float, float>(d, xf, n, (float *) vals, margins);
			else if (s->cmp_f32)
				emulate_ptt_pairs<unsigned, float, double>(d, x, n, (float *) vals, margins);
			else
				emulate_ptt_pairs<unsigned long long, double, double>(d, x, n, (double *) vals,
																	  margins);
		}
		else if (s->cmp_f32 && s->input_f32)
			emulate_ptt<unsigned, float, float>(d, xf, n, staged, (unsigned *) keys, margins);
		else if (s->cmp_f32)
			emulate_ptt<unsigned, float, double>(d, x, n, staged, (unsigned *) keys, margins);
		else
			emulate_ptt<unsigned long long, double, double>(d, x, n, staged,
															(unsigned long long *) keys, margins);
	}
	ok = 1;
	goto done;

nomem:
	set_why(why, why_len, "out of memory");
done:
	free(xf);
	free(nodes);
	free(pn);
	free(keys);
	free(vals);
	return ok;
}
