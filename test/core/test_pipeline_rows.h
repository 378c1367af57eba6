/*
 * test_pipeline_rows.h
 *	  The input rows of the exported pipeline fixtures
 *	  (test/fixtures/pipelines): rows.csv, then rows_extra.csv (accented
 *	  text, values at split thresholds).  Row i has id i, which is how the
 *	  *.expected.csv files refer to them.
 */
#ifndef TEST_PIPELINE_ROWS_H
#define TEST_PIPELINE_ROWS_H

#include "test_util.h"

#define TU_PIPELINE_DIR "test/fixtures/pipelines/"
#define TU_MAX_ROWS 1024

/* id and five columns, no quoting; an empty cell is NULL */
typedef struct TuRows
{
	int			n;
	char	   *cells[TU_MAX_ROWS][6];
} TuRows;

static inline void
tu_load_rows_from(TuRows *rows, const char *path)
{
	size_t		len;
	char	   *buf = tu_read_file(path, &len);
	char	   *line;
	char	   *save = NULL;

	if (buf == NULL)
	{
		printf("Bail out! %s missing\n", path);
		exit(1);
	}
	line = strtok_r(buf, "\n", &save);	/* header */
	while ((line = strtok_r(NULL, "\n", &save)) != NULL && rows->n < TU_MAX_ROWS)
	{
		char	   *p = line;

		for (int c = 0; c < 6; c++)
		{
			char	   *e = strchr(p, ',');

			if (e == NULL || c == 5)
				e = p + strlen(p);
			rows->cells[rows->n][c] = e > p ? strndup(p, e - p) : NULL;
			p = *e ? e + 1 : e;
		}
		rows->n++;
	}
	free(buf);
}

static inline void
tu_load_pipeline_rows(TuRows *rows)
{
	tu_load_rows_from(rows, TU_PIPELINE_DIR "rows.csv");
	tu_load_rows_from(rows, TU_PIPELINE_DIR "rows_extra.csv");
}

static inline void
tu_free_rows(TuRows *rows)
{
	for (int i = 0; i < rows->n; i++)
		for (int c = 0; c < 6; c++)
			free(rows->cells[i][c]);
	rows->n = 0;
}

/* The column of an input name, -1 if the rows have none. */
static inline int
tu_pipeline_column(const char *name)
{
	static const char *const cols[] = {"id", "age", "income", "city", "plan", "review"};

	for (int c = 0; c < 6; c++)
		if (strcmp(cols[c], name) == 0)
			return c;
	return -1;
}

#endif							/* TEST_PIPELINE_ROWS_H */
