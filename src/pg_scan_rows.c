/*
 * pg_scan_rows.c
 *	  The batching scan's rows read lazily: for a cheap model only (its
 *	  columns, or the featurizer steps its features need), their tuples
 *	  kept for the batch, and read again in full for the rows the full
 *	  model scores; the values handed up for a kept row, deformed from its
 *	  tuple.  Used by the executor (pg_scan_exec.c: cascades) and by top-K
 *	  (pg_scan_topk.c: approximate top-K, the deferred rows' values).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "utils/memutils.h"

#include "pg_scan_exec.h"

/*
 * Read call c's rows for cheap model a only, as hb_lazy_for says (plain:
 * the cheap model's columns of a model without featurizers too; with
 * featurizers, the steps its features need), keeping their tuples so that
 * the rows the full model scores are read again in full (hb_scan_read_row_full);
 * in full when a reads every column or step, or a is NULL.
 */
void
hb_scan_read_cheaply(HbScoreState *st, ScoreCall *c, const HbApprox *a, bool plain)
{
	HbLazy	   *l;

	c->lazy_cols = false;
	if (a == NULL)
		return;
	/* done again at every rescan: what the last time allocated goes */
	if (c->lazy_cxt == NULL)
		c->lazy_cxt = AllocSetContextCreate(c->cxt, "hbird batching scan lazy reading",
											ALLOCSET_SMALL_SIZES);
	MemoryContextReset(c->lazy_cxt);
	l = hb_lazy_for(c->e, a, plain, c->lazy_cxt);
	if (l == NULL)
		return;
	c->bind_cheap = c->bind;
	c->bind_cheap.steps = hb_lazy_steps(l);
	hb_reader_init(&c->rd_cheap, &c->bind_cheap, c->e, st->in_desc, c->colmap,
				   hb_lazy_steps(l), c->lazy_cxt);
	c->lazy_cols = c->rd_cheap.subset || c->bind.pipeline != NULL;
}

/*
 * Batch row b of a lazily read call, read again in full into x; a row read
 * in full already (no tuple kept) is copied from where it was read, src.
 */
void
hb_scan_read_row_full(ScoreCall *c, int b, double *x, const double *src)
{
	HeapTupleData t;

	if (!hb_tuples_get(&c->tup, b, &t))
	{
		if (x != src)
			memcpy(x, src, sizeof(double) * c->width);
		return;
	}
	hb_read_tuple(&c->rd, &c->bind, c->e, &t, x, false);
}

/*
 * defer_rows: batch row i's values that the expressions read, from the
 * tuple its top-K call kept (by-reference values point into that tuple,
 * which lasts until the next batch is read).
 */
void
hb_scan_row_values(HbScoreState *st, int i)
{
	ScoreCall  *c = &st->calls[st->topk_call];
	Datum	   *rv = st->vals + (size_t) i * st->n_input;
	bool	   *rn = st->nulls + (size_t) i * st->n_input;
	HeapTupleData t;

	if (!hb_tuples_get(&c->tup, i, &t))
		return;					/* read when it came: no tuple of its own */
	heap_deform_tuple(&t, c->tup_desc[i], st->row_values, st->row_nulls);
	for (int k = 0; k < st->n_kept; k++)
	{
		int			col = st->kept[k];

		if (col >= st->n_phys)
			continue;			/* the row's identity: read when it came */
		rv[col] = st->row_values[col];
		rn[col] = st->row_nulls[col];
	}
}
