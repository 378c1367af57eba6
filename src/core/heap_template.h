/*
 * heap_template.h
 *	  A binary min-heap of "the best so far" over an array of structs,
 *	  instantiated per element type (the way PostgreSQL's
 *	  lib/sort_template.h is), so the comparison inlines.
 *
 * The root is the worst element held: the one the next better candidate
 * replaces.  The caller owns the array, its length and its growth (heaps
 * here start small and grow: a hash aggregate may hold one per group, and
 * most groups hold few rows).  lib/binaryheap.h would allocate every slot
 * up front and compare through a function pointer.
 *
 * Before including, define:
 *	HB_HEAP_PREFIX			prefix of the functions (e.g. top)
 *	HB_HEAP_ELEMENT_TYPE	the element type
 *	HB_HEAP_WORSE(a, b)		true when *a ranks below *b (pointers)
 * It defines, static inline:
 *	PREFIX_sift_up(elements, i)		after appending at i
 *	PREFIX_sift_down(elements, n, i)	after replacing element i of n
 * and undefines the three macros.
 */

#define HB_HEAP_CAT_(a, b) a##_##b
#define HB_HEAP_CAT(a, b) HB_HEAP_CAT_(a, b)
#define HB_HEAP_SIFT_UP HB_HEAP_CAT(HB_HEAP_PREFIX, sift_up)
#define HB_HEAP_SIFT_DOWN HB_HEAP_CAT(HB_HEAP_PREFIX, sift_down)

static inline void
HB_HEAP_SIFT_UP(HB_HEAP_ELEMENT_TYPE *h, int i)
{
	while (i > 0)
	{
		int			parent = (i - 1) / 2;
		HB_HEAP_ELEMENT_TYPE tmp;

		if (!(HB_HEAP_WORSE(&h[i], &h[parent])))
			return;
		tmp = h[i];
		h[i] = h[parent];
		h[parent] = tmp;
		i = parent;
	}
}

static inline void
HB_HEAP_SIFT_DOWN(HB_HEAP_ELEMENT_TYPE *h, int n, int i)
{
	for (;;)
	{
		int			l = 2 * i + 1,
					r = l + 1,
					m = i;
		HB_HEAP_ELEMENT_TYPE tmp;

		if (l < n && HB_HEAP_WORSE(&h[l], &h[m]))
			m = l;
		if (r < n && HB_HEAP_WORSE(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

#undef HB_HEAP_SIFT_UP
#undef HB_HEAP_SIFT_DOWN
#undef HB_HEAP_CAT
#undef HB_HEAP_CAT_
#undef HB_HEAP_PREFIX
#undef HB_HEAP_ELEMENT_TYPE
#undef HB_HEAP_WORSE
