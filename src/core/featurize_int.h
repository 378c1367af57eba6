/*
 * featurize_int.h
 *	  Pieces of the featurizer executor (featurize.c) shared with the sparse
 *	  linear scorer (featurize_sparse.c); not part of the IR contract.
 */
#ifndef HB_FEATURIZE_INT_H
#define HB_FEATURIZE_INT_H

#include "featurize.h"

/* Growable buffers of the text analysers, reused from row to row. */
typedef struct HbTextScratch HbTextScratch;

/* One non-zero column of a document's text vector. */
typedef struct HbTextTerm
{
	int64_t		col;
	double		val;
} HbTextTerm;

extern HbTextScratch *hb_text_scratch_new(void);
extern void hb_text_scratch_free(HbTextScratch *t);

/*
 * The non-zero columns of text step s over one document, after weighting
 * and normalisation (over every column, kept or not), ascending by column,
 * in t's memory until the next call.  False only when out of memory.
 */
extern bool hb_text_terms(HbTextScratch *t, const HbStep *s, const HbText *txt,
						  const HbTextTerm **terms, size_t *n_terms);

/* Run one step of p over one row's slots (hb_pipeline_run's inner step). */
extern bool hb_step_run(const HbPipeline *p, const HbStep *s, double *slots,
						const HbText *texts, HbTextScratch *ts, HbError *err);

#endif							/* HB_FEATURIZE_INT_H */
