/*
 * test_util.h
 *	  TAP reporting, file, CSV and conformance manifest reading shared by the core's test programs
 *	  and benchmarks (header-only: each program is one translation unit).
 */
#ifndef HB_TEST_UTIL_H
#define HB_TEST_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* TAP: checks run and failed so far, the summary's counts */
static int	tu_n_test = 0;
static int	tu_n_fail = 0;

/* One TAP line, "ok N - ..." or "not ok N - ...", flushed at once. */
static inline void
tu_report(bool ok, const char *fmt,...)
{
	va_list		ap;

	tu_n_test++;
	if (!ok)
		tu_n_fail++;
	printf("%s %d - ", ok ? "ok" : "not ok", tu_n_test);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* A whole file, NUL-terminated (for text parsers); NULL if unreadable. */
static inline char *
tu_read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *buf;
	long		n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = n >= 0 ? malloc((size_t) n + 1) : NULL;
	if (buf == NULL || fread(buf, 1, (size_t) n, f) != (size_t) n)
	{
		fclose(f);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	fclose(f);
	*len = (size_t) n;
	return buf;
}

typedef struct TuTable
{
	int			rows;
	int			cols;
	char	  **names;			/* the header's column names */
	double	   *v;				/* rows x cols, NaN for an empty cell */
} TuTable;

static inline void
tu_free_table(TuTable *t)
{
	for (int c = 0; t->names && c < t->cols; c++)
		free(t->names[c]);
	free(t->names);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/*
 * CSV with a header line; an empty cell is a missing value.  In a
 * one-column file an empty line is a row holding one missing value.
 */
static inline bool
tu_read_csv(const char *path, TuTable *t)
{
	size_t		len;
	char	   *buf = tu_read_file(path, &len);
	char	   *p;
	char	   *start;
	int			cap = 0;

	memset(t, 0, sizeof(*t));
	if (!buf)
		return false;
	p = buf;
	t->cols = 1;
	while (*p && *p != '\n')
		if (*p++ == ',')
			t->cols++;
	t->names = calloc(t->cols, sizeof(char *));
	p = start = buf;
	for (int c = 0; c < t->cols; c++)
	{
		while (*p && *p != ',' && *p != '\n' && *p != '\r')
			p++;
		t->names[c] = strndup(start, p - start);
		if (*p == '\r')
			p++;
		if (*p)
			p++;
		start = p;
	}
	while (*p)
	{
		if ((*p == '\n' || *p == '\r') && t->cols > 1)
		{
			p++;
			continue;
		}
		if (t->rows == cap)
		{
			cap = cap ? cap * 2 : 256;
			t->v = realloc(t->v, sizeof(double) * cap * t->cols);
		}
		for (int c = 0; c < t->cols; c++)
		{
			double	   *cell = &t->v[(size_t) t->rows * t->cols + c];

			if (*p == ',' || *p == '\n' || *p == '\r' || *p == '\0')
				*cell = NAN;
			else
				*cell = strtod(p, &p);
			while (*p && *p != ',' && *p != '\n' && *p != '\r')
				p++;
			if (*p == ',')
				p++;
		}
		if (*p == '\r')
			p++;
		if (*p == '\n')
			p++;
		t->rows++;
	}
	free(buf);
	return true;
}

/* Index of a column by header name, -1 if absent. */
static inline int
tu_find_column(const TuTable *t, const char *name)
{
	for (int c = 0; c < t->cols; c++)
		if (t->names && strcmp(t->names[c], name) == 0)
			return c;
	return -1;
}

/*
 * The conformance corpus's manifest.json under dir: 1 with *doc parsed (free
 * it with hb_json_free, then free(*bytes)), 0 when there is none (the caller
 * reports its skip), -1 when it does not parse (a failed check reported).
 */
static inline int
tu_read_manifest(const char *dir, char **bytes, HbJsonDoc **doc)
{
	char		path[4096];
	size_t		len;
	HbError		err = {0};

	*doc = NULL;
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	*bytes = tu_read_file(path, &len);
	if (*bytes == NULL)
		return 0;
	if (!hb_json_parse(*bytes, len, doc, &err))
	{
		tu_report(false, "conformance manifest: %s", err.msg);
		free(*bytes);
		*bytes = NULL;
		return -1;
	}
	return 1;
}

#endif							/* HB_TEST_UTIL_H */
