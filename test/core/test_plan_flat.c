/*
 * test_plan_flat.c
 *	  A plan written flat (plan_flat.c) and read back at another address
 *	  must score with the original's bits, in every strategy and kernel,
 *	  after the original and the first copy are gone.
 *
 * Every pointer field's size is checked against what its builder asked
 * for (a size the walk gets wrong would copy too little, or read another
 * array), and damaged or foreign blocks must be refused.
 *
 * Run from the repository root (fixtures: test/fixtures, or $HB_FIXTURES).
 * TAP output; exit status 1 when a test fails.
 */
#include <dirent.h>
#include <stdint.h>
#include <sys/types.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_int.h"
#include "early_exit.h"
#include "topk.h"
#include "test_util.h"
#include "test_models.h"

#define N_ROWS		300

/* ---------- sizes ---------- */

/*
 * The builders allocate through a recorder, so that the walk's size of
 * each field can be compared with what was asked for, byte for byte.
 */
#define REC_SLOTS	(1 << 20)

static void *rec_ptr[REC_SLOTS];
static size_t rec_size[REC_SLOTS];

static size_t
rec_hash(const void *p)
{
	return (size_t) (((uintptr_t) p >> 4) * 0x9E3779B97F4A7C15ULL) & (REC_SLOTS - 1);
}

static void
rec_put(void *p, size_t size)
{
	size_t		h = rec_hash(p);

	while (rec_ptr[h] != NULL && rec_ptr[h] != p)
		h = (h + 1) & (REC_SLOTS - 1);
	rec_ptr[h] = p;
	rec_size[h] = size;
}

/* (size_t) -1: not allocated through the recorder */
static size_t
rec_get(const void *p)
{
	size_t		h = rec_hash(p);

	while (rec_ptr[h] != NULL)
	{
		if (rec_ptr[h] == p)
			return rec_size[h];
		h = (h + 1) & (REC_SLOTS - 1);
	}
	return (size_t) -1;
}

static void *
rec_alloc(size_t size)
{
	void	   *p = malloc(size ? size : 1);

	if (p != NULL)
		rec_put(p, size);
	return p;
}

static void *
rec_realloc(void *ptr, size_t size)
{
	void	   *p = realloc(ptr, size ? size : 1);

	if (p != NULL)
		rec_put(p, size);
	return p;
}

/* freed blocks stay recorded: a later block at the same address replaces them */
static const HbAllocator recorder = {rec_alloc, rec_realloc, free, NULL};

typedef struct SizeCheck
{
	int			arrays;
	int			wrong;
	char		why[256];
} SizeCheck;

static bool
check_one(void **slot, size_t bytes, void *arg)
{
	SizeCheck  *c = arg;
	size_t		asked;

	if (*slot == NULL)
		return true;
	c->arrays++;
	asked = rec_get(*slot);
	if (asked != bytes && c->wrong++ == 0)
		snprintf(c->why, sizeof(c->why), "field %d: walked %zu bytes, allocated %zd",
				 c->arrays, bytes, (ssize_t) asked);
	return true;
}

/*
 * No word of a view's structs may still be an address the writer's
 * builders allocated: a pointer field the walk misses would be one (the
 * view's arrays are in the test's own block, its ptt and gemm its own).
 */
static int
stale_words(const void *s, size_t size, const void *skip1, const void *skip2)
{
	int			n = 0;

	for (size_t off = 0; off + sizeof(void *) <= size; off += sizeof(void *))
	{
		const char *at = (const char *) s + off;
		void	   *w;

		if (at == skip1 || at == skip2)
			continue;
		memcpy(&w, at, sizeof(w));
		if (w != NULL && rec_get(w) != (size_t) -1)
			n++;
	}
	return n;
}

static int
view_stale(const HbPlan *v)
{
	return stale_words(v, sizeof(HbPlan), &v->ptt, &v->gemm) +
		(v->ptt ? stale_words(v->ptt, hb_ptt_struct_size(), NULL, NULL) : 0) +
		(v->gemm ? stale_words(v->gemm, hb_gemm_struct_size(), NULL, NULL) : 0);
}

/* ---------- comparing ---------- */

/* What a plan gives for x, every way it can score. */
typedef struct Scores
{
	int			n;
	double	   *m[8];
	bool		have[8];
	int32_t    *cls;			/* classes with the early exit, or NULL */
	double	   *pred;			/* hb_plan_predict: after the link */
} Scores;

static const char *const way_names[] = {
	"auto", "TT", "PTT", "GEMM", "PTT walk", "PTT compact", "PTT portable",
	"trees 1.. added to the base"
};

static void
score_all(const HbPlan *p, const double *x, size_t n, Scores *s)
{
	size_t		cells = n * p->n_outputs;

	memset(s, 0, sizeof(*s));
	for (int w = 0; w < 8; w++)
	{
		s->m[w] = malloc(sizeof(double) * cells);
		memset(s->m[w], 0x7f, sizeof(double) * cells);
	}
	hb_plan_margins(p, x, n, s->m[0]);
	s->have[0] = true;
	hb_plan_margins_with(p, HB_STRATEGY_TT, x, n, s->m[1]);
	s->have[1] = true;
	if (p->ptt != NULL)
	{
		hb_plan_margins_with(p, HB_STRATEGY_PTT, x, n, s->m[2]);
		s->have[2] = true;
		for (int k = 0; k < 3; k++)
		{
			hb_ptt_set_kernel(k == 0 ? HB_PTT_KERNEL_WALK8 :
							  k == 1 ? HB_PTT_KERNEL_COMPACT : HB_PTT_KERNEL_PORTABLE);
			hb_plan_margins_with(p, HB_STRATEGY_PTT, x, n, s->m[4 + k]);
			s->have[4 + k] = true;
		}
		hb_ptt_set_kernel(HB_PTT_KERNEL_AUTO);
	}
	if (p->gemm != NULL)
	{
		hb_plan_margins_with(p, HB_STRATEGY_GEMM, x, n, s->m[3]);
		s->have[3] = true;
	}
	if (p->n_trees > 1)
	{
		hb_plan_base_margins(p, n, s->m[7]);
		hb_plan_accumulate(p, x, n, 1, p->n_trees, s->m[7]);
		s->have[7] = true;
	}
	s->pred = malloc(sizeof(double) * cells);
	hb_plan_predict(p, x, n, s->pred, s->pred);
	if (hb_class_supported(p))
	{
		HbClassBounds *b = hb_class_bounds(p);
		HbClassStats st;

		memset(&st, 0, sizeof(st));
		s->cls = malloc(sizeof(int32_t) * n);
		hb_early_exit_classes(p, b, x, n, s->cls, &st);
		hb_class_bounds_free(b);
	}
}

static void
free_scores(Scores *s)
{
	for (int w = 0; w < 8; w++)
		free(s->m[w]);
	free(s->cls);
	free(s->pred);
}

/* The rows top-K keeps, with their margins, as one string of bits. */
static double
topk_offer(void *arg, size_t row, double margin)
{
	double	   *kept = arg;

	kept[row] = margin;
	return 0.0;					/* the bar stays where it started */
}

static bool
topk_same(const HbPlan *a, const HbPlan *b, const double *x, size_t n)
{
	double	   *ka = malloc(sizeof(double) * n),
			   *kb = malloc(sizeof(double) * n);
	double		ta = -INFINITY,
				tb = -INFINITY;
	HbTopkBounds *ba,
			   *bb;
	HbTopkStats sa = {0},
				sb = {0};
	bool		same;

	if (!hb_topk_supported(a))
	{
		free(ka);
		free(kb);
		return true;
	}
	memset(ka, 0, sizeof(double) * n);
	memset(kb, 0, sizeof(double) * n);
	ba = hb_topk_bounds(a);
	bb = hb_topk_bounds(b);
	/* a bar halfway up: some rows are dropped, the others offered */
	ta = tb = 0.0;
	hb_topk_score(a, ba, x, n, &ta, topk_offer, ka, &sa);
	hb_topk_score(b, bb, x, n, &tb, topk_offer, kb, &sb);
	same = memcmp(ka, kb, sizeof(double) * n) == 0 && memcmp(&ta, &tb, sizeof(ta)) == 0 &&
		memcmp(&sa, &sb, sizeof(sa)) == 0;
	hb_topk_bounds_free(ba);
	hb_topk_bounds_free(bb);
	free(ka);
	free(kb);
	return same;
}

/*
 * Write p flat, free p, move the block to another address (8 bytes off
 * a 64-byte boundary, as shared memory may place it), spoil the first copy
 * and score from the second.
 */
static void
check_plan(const char *name, HbPlan *p, const double *x, size_t n)
{
	Scores		want,
				got;
	SizeCheck	sc = {0};
	size_t		size = hb_plan_flat_size(p);
	char	   *first,
			   *raw,
			   *moved;
	HbPlan	   *v = NULL;
	HbPlan	   *twice = NULL;
	HbError		err = {0};
	bool		same = true;
	const char *which = NULL;
	size_t		cells = n * p->n_outputs;

	(void) hb_plan_arrays(p, check_one, &sc);
	tu_report(sc.wrong == 0 && sc.arrays > 0, "%s: %d arrays walked with their allocated sizes%s%s",
			  name, sc.arrays, sc.wrong ? ": " : "", sc.why);
	if (size == 0)
	{
		tu_report(false, "%s: hb_plan_flat_size is 0", name);
		hb_plan_free(p);
		return;
	}
	score_all(p, x, n, &want);
	first = malloc(size);
	hb_plan_flat_write(p, first);
	{
		/* the same plan written twice: the same bytes (padding zeroed) */
		char	   *again = malloc(size);

		memset(again, 0xa5, size);	/* what the write leaves shows */
		hb_plan_flat_write(p, again);
		tu_report(memcmp(first, again, size) == 0, "%s: two writes give the same %zu bytes",
				  name, size);
		free(again);
	}
	hb_plan_free(p);

	raw = malloc(size + 72);
	moved = (char *) (((uintptr_t) raw + 63) & ~(uintptr_t) 63) + 8;
	memcpy(moved, first, size);
	memset(first, 0xa5, size);
	free(first);

	if (!hb_plan_flat_view(moved, size, &v, &err))
	{
		tu_report(false, "%s: view refused: %s", name, err.msg);
		free_scores(&want);
		free(raw);
		return;
	}
	tu_report(view_stale(v) == 0, "%s: no field of the view points where the writer's did",
			  name);
	score_all(v, x, n, &got);
	for (int w = 0; w < 8 && same; w++)
	{
		if (want.have[w] != got.have[w] ||
			(want.have[w] && memcmp(want.m[w], got.m[w], sizeof(double) * cells) != 0))
		{
			same = false;
			which = way_names[w];
		}
	}
	if (same && memcmp(want.pred, got.pred, sizeof(double) * cells) != 0)
	{
		same = false;
		which = "predictions";
	}
	if (same && ((want.cls == NULL) != (got.cls == NULL) ||
				 (want.cls && memcmp(want.cls, got.cls, sizeof(int32_t) * n) != 0)))
	{
		same = false;
		which = "classes with the early exit";
	}
	tu_report(same, "%s: the view scores with the original's bits (%s%s, predictions%s)%s%s",
			  name, v->ptt ? "TT, PTT's three kernels" : "TT",
			  v->gemm ? ", GEMM" : "", got.cls ? ", classes" : "",
			  same ? "" : ": differs in ", same ? "" : which);
	tu_report(hb_plan_flat_size(v) == 0, "%s: a view is not written again", name);
	if (v->n_outputs == 1 && v->n_trees > 0)
	{
		/* a second view of the same block, beside the first */
		if (hb_plan_flat_view(moved, size, &twice, &err))
			tu_report(topk_same(v, twice, x, n) &&
					  memcmp(got.m[0], want.m[0], sizeof(double) * cells) == 0,
					  "%s: two views of one block give the same top-K", name);
		else
			tu_report(false, "%s: second view refused: %s", name, err.msg);
		hb_plan_free(twice);
	}
	hb_plan_free(v);
	free_scores(&want);
	free_scores(&got);
	free(raw);
}

/* ---------- damaged blocks ---------- */

static void
test_refusals(void)
{
	GenOpts		o;
	HbModel    *m;
	HbPlan	   *p = NULL,
			   *v = NULL;
	HbError		err = {0};
	size_t		size;
	char	   *b,
			   *c;
	bool		ok = true;
	uint32_t	n_arrays;
	uint64_t	table_off;

	memset(&o, 0, sizeof(o));
	o.depth = 5;
	o.cmp = HB_CMP_LT_F32;
	o.n_outputs = 1;
	o.n_features = 7;
	o.p_leaf = 0.2;
	o.n_trees = 12;
	o.default_left = -1;
	m = random_model(&o);
	hb_plan_build(m, &p, &err);
	size = hb_plan_flat_size(p);
	b = malloc(size);
	c = malloc(size);
	hb_plan_flat_write(p, b);

	/* header: magic, then the struct sizes, n_arrays, total, offsets */
	memcpy(&n_arrays, b + 20, sizeof(n_arrays));
	memcpy(&table_off, b + 56, sizeof(table_off));

	tu_report(!hb_plan_flat_view(b, size - 1, &v, &err) && err.code == HB_ERR_PARSE &&
			  v == NULL, "a block one byte short is refused (%s)", err.msg);
	tu_report(!hb_plan_flat_view(b, 16, &v, &err) && v == NULL,
			  "a block shorter than its header is refused");

	memcpy(c, b, size);
	c[0] ^= 1;
	tu_report(!hb_plan_flat_view(c, size, &v, &err) && v == NULL, "a wrong magic is refused");

	memcpy(c, b, size);
	c[8] ^= 8;					/* sizeof(HbPlan) of another build */
	tu_report(!hb_plan_flat_view(c, size, &v, &err) && v == NULL,
			  "another build's struct size is refused");

	/* every array's size and offset, one at a time */
	for (uint32_t i = 0; i < n_arrays; i++)
		for (int field = 0; field < 2; field++)
		{
			uint64_t	val;
			char	   *at = c + table_off + 16 * i + 8 * field;

			memcpy(c, b, size);
			memcpy(&val, at, sizeof(val));
			if (val == 0)
				continue;
			val += field == 0 ? 64 : 4;
			memcpy(at, &val, sizeof(val));
			if (hb_plan_flat_view(c, size, &v, &err))
			{
				ok = false;
				hb_plan_free(v);
				v = NULL;
			}
		}
	tu_report(ok, "a moved or resized array is refused, for each of %u fields", n_arrays);

	hb_plan_free(p);
	hb_model_free(m);
	free(b);
	free(c);
}

/* ---------- models ---------- */

static void
test_random_models(void)
{
	for (int depth = 0; depth <= 12; depth += 2)
		for (int variant = 0; variant < 8; variant++)
		{
			GenOpts		o;
			HbModel    *m;
			HbPlan	   *p = NULL;
			HbError		err = {0};
			double	   *x;
			char		name[160];

			memset(&o, 0, sizeof(o));
			o.depth = depth;
			o.cmp = (variant & 1) ? HB_CMP_LE_F64 : HB_CMP_LT_F32;
			o.n_outputs = (variant & 2) ? 3 : 1;
			o.n_features = 3 + irand(30);
			o.p_leaf = depth <= 6 ? 0.15 : 0.45;
			o.n_trees = depth <= 8 ? 20 + irand(20) : 6 + irand(6);
			o.default_left = -1;
			o.kinds = (variant & 4) != 0;
			m = random_model(&o);
			snprintf(name, sizeof(name), "random depth %d %s %d output%s%s", depth,
					 o.cmp == HB_CMP_LT_F32 ? "f32 <" : "f64 <=", o.n_outputs,
					 o.n_outputs > 1 ? "s" : "",
					 o.kinds ? ", categorical/ZERO/NONE nodes" : "");
			if (m == NULL || !hb_plan_build(m, &p, &err))
			{
				tu_report(false, "%s: %s", name, m ? err.msg : "generator");
				hb_model_free(m);
				continue;
			}
			x = random_inputs(o.n_features, N_ROWS);
			check_plan(name, p, x, N_ROWS);
			free(x);
			hb_model_free(m);
		}
}

static void
test_linear(void)
{
	for (int k = 1; k <= 3; k += 2)
	{
		HbModel    *m = linear_model(9, k, false);
		HbPlan	   *p = NULL;
		HbError		err = {0};
		double	   *x = random_inputs(9, N_ROWS);
		char		name[64];

		snprintf(name, sizeof(name), "linear, %d output%s", k, k > 1 ? "s" : "");
		if (hb_plan_build(m, &p, &err))
			check_plan(name, p, x, N_ROWS);
		else
			tu_report(false, "%s: %s", name, err.msg);
		free(x);
		hb_model_free(m);
	}
}

/* Every model file of the fixtures (XGBoost JSON and UBJSON, LightGBM). */
static void
test_fixtures(void)
{
	const char *dir = getenv("HB_FIXTURES") ? getenv("HB_FIXTURES") : "test/fixtures";
	DIR		   *d = opendir(dir);
	struct dirent *de;
	int			n = 0;

	if (d == NULL)
	{
		tu_report(false, "cannot open %s", dir);
		return;
	}
	while ((de = readdir(d)) != NULL)
	{
		const char *dot = strrchr(de->d_name, '.');
		char		path[4096];
		char	   *bytes;
		size_t		len;
		HbModel    *m = NULL;
		HbPlan	   *p = NULL;
		HbError		err = {0};
		double	   *x;

		if (dot == NULL || strstr(de->d_name, ".expected") != NULL ||
			(strcmp(dot, ".json") != 0 && strcmp(dot, ".ubj") != 0 &&
			 strcmp(dot, ".txt") != 0))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		bytes = tu_read_file(path, &len);
		if (bytes == NULL || !hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err) ||
			!hb_plan_build(m, &p, &err))
		{
			/* fixtures of refusals and other formats' inputs are not models */
			free(bytes);
			hb_model_free(m);
			continue;
		}
		free(bytes);
		x = random_inputs(m->n_features, N_ROWS);
		check_plan(de->d_name, p, x, N_ROWS);
		free(x);
		hb_model_free(m);
		n++;
	}
	closedir(d);
	tu_report(n >= 10, "%d fixture models written and read back", n);
}

int
main(void)
{
	init_pool();
	hb_set_allocator(&recorder);
	test_refusals();
	test_random_models();
	test_linear();
	test_fixtures();
	printf("1..%d\n", tu_n_test);
	return tu_n_fail > 0;
}
