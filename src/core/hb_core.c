/*
 * hb_core.c
 *	  Error reports and allocation hooks of the core.
 */
#include "hb_core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *
default_alloc(size_t size)
{
	return malloc(size ? size : 1);
}

static void *
default_realloc(void *ptr, size_t size)
{
	return realloc(ptr, size ? size : 1);
}

static void *
default_alloc_must(size_t size)
{
	void	   *p = malloc(size ? size : 1);

	if (p == NULL)
	{
		fprintf(stderr, "hbird: out of memory (%zu bytes)\n", size);
		abort();
	}
	return p;
}

static HbAllocator allocator = {default_alloc, default_realloc, free,
default_alloc_must};

void		(*hb_interrupt_hook) (void) = NULL;

void
hb_set_allocator(const HbAllocator *a)
{
	if (a)
		allocator = *a;
	else
	{
		allocator.alloc = default_alloc;
		allocator.realloc = default_realloc;
		allocator.free = free;
		allocator.alloc_must = default_alloc_must;
	}
	if (allocator.alloc_must == NULL)
		allocator.alloc_must = default_alloc_must;
}

void *
hb_alloc(size_t size)
{
	return allocator.alloc(size);
}

void *
hb_alloc_must(size_t size)
{
	return allocator.alloc_must(size);
}

void *
hb_alloc0(size_t size)
{
	void	   *p = allocator.alloc(size);

	if (p)
		memset(p, 0, size);
	return p;
}

void *
hb_realloc(void *ptr, size_t size)
{
	if (ptr == NULL)
		return allocator.alloc(size);
	return allocator.realloc(ptr, size);
}

void
hb_free(void *ptr)
{
	if (ptr)
		allocator.free(ptr);
}

void *
hb_grow(void *arr, size_t *cap, size_t need, size_t elem)
{
	size_t		ncap = *cap ? *cap : 64;
	void	   *na;

	if (need <= *cap && arr != NULL)
		return arr;
	while (ncap < need)
		ncap *= 2;
	na = hb_realloc(arr, ncap * elem);
	if (na != NULL)
		*cap = ncap;
	return na;
}

char *
hb_strndup(const char *s, size_t n)
{
	char	   *r = hb_alloc(n + 1);

	if (r)
	{
		memcpy(r, s, n);
		r[n] = '\0';
	}
	return r;
}

char *
hb_strdup(const char *s)
{
	return hb_strndup(s, strlen(s));
}

bool
hb_fail(HbError *err, HbErrCode code, const char *fmt,...)
{
	va_list		ap;

	if (err == NULL)
		return false;
	/* keep the first error: later ones are usually its consequences */
	if (err->code != HB_OK)
		return false;
	err->code = code;
	err->detail[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return false;
}

void
hb_fail_detail(HbError *err, const char *fmt,...)
{
	va_list		ap;

	if (err == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(err->detail, sizeof(err->detail), fmt, ap);
	va_end(ap);
}

int
hb_cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static int
cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

const char *
hb_sort_find_repeat(const char **names, size_t n)
{
	qsort(names, n, sizeof(const char *), cmp_name);
	for (size_t i = 1; i < n; i++)
		if (strcmp(names[i - 1], names[i]) == 0)
			return names[i];
	return NULL;
}
