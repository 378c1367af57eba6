/*
 * hb_core.h
 *	  Shared definitions of the hbird core: allocator hooks and error reports.
 *
 * The core has no PostgreSQL include.  It never longjmps: every function that
 * can fail returns false and fills an HbError, which the caller turns into
 * whatever its world uses (ereport in a backend, a message in a unit test).
 * Memory comes from hooks so that a backend can route it into a memory
 * context and a unit test into malloc.
 */
#ifndef HB_CORE_H
#define HB_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum HbErrCode
{
	HB_OK = 0,
	HB_ERR_PARSE,				/* bytes are not the format they claim to be */
	HB_ERR_INVALID,				/* well-formed but meaningless model */
	HB_ERR_UNSUPPORTED,			/* valid model using something hbird lacks */
	HB_ERR_LIMIT,				/* beyond a size or depth limit */
	HB_ERR_NOMEM,				/* an allocation failed */
	HB_ERR_ARGUMENT,			/* bad argument from the caller */
	HB_ERR_DEVICE				/* no usable GPU, or the GPU failed */
} HbErrCode;

typedef struct HbError
{
	HbErrCode	code;
	char		msg[512];
	char		detail[512];
} HbError;

/* Record an error; returns false so that callers can write "return hb_fail(...)". */
extern bool hb_fail(HbError *err, HbErrCode code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
/* Add a detail line to an error already recorded. */
extern void hb_fail_detail(HbError *err, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

/*
 * Allocation hooks.  alloc returns NULL on failure (it must not longjmp
 * while the core holds foreign resources, so the glue uses a NO_OOM flavour);
 * the core checks every result.
 */
typedef struct HbAllocator
{
	void	   *(*alloc) (size_t size);
	void	   *(*realloc) (void *ptr, size_t size);
	void		(*free) (void *ptr);
	/* never returns NULL: raises the caller's out-of-memory error itself */
	void	   *(*alloc_must) (size_t size);
} HbAllocator;

extern void hb_set_allocator(const HbAllocator *a);
extern void *hb_alloc(size_t size);
extern void *hb_alloc0(size_t size);

/*
 * Scratch memory of the scoring paths, which have no error return: the
 * hook raises out of memory its own way (ereport in a backend; a message
 * and abort() elsewhere).  Only for code that holds nothing but
 * hook-allocated memory, like hb_check_interrupts.
 */
extern void *hb_alloc_must(size_t size);
extern void *hb_realloc(void *ptr, size_t size);
extern void hb_free(void *ptr);
extern char *hb_strdup(const char *s);

/* qsort comparator: doubles in ascending order */
extern int	hb_cmp_double(const void *a, const void *b);

/*
 * Sort the n names in place (byte order) and return one that appears
 * twice, or NULL.  n log n: readers take up to a million names, and
 * comparing every pair took minutes there.
 */
extern const char *hb_sort_find_repeat(const char **names, size_t n);

/*
 * arr (of *cap elements of elem bytes), grown to hold at least need
 * elements, doubling from 64: the possibly moved array, or NULL when out
 * of memory (then arr and *cap are unchanged).
 */
extern void *hb_grow(void *arr, size_t *cap, size_t need, size_t elem);
extern char *hb_strndup(const char *s, size_t n);

/*
 * Interrupt hook: long loops in the core call hb_check_interrupts(), which a
 * backend points at CHECK_FOR_INTERRUPTS.  It may longjmp, so it is called
 * only where the core holds nothing but hook-allocated memory.
 */
extern void (*hb_interrupt_hook) (void);

static inline void
hb_check_interrupts(void)
{
	if (hb_interrupt_hook)
		hb_interrupt_hook();
}

#endif							/* HB_CORE_H */
