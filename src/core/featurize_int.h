/*
 * featurize_int.h
 *	  Pieces of the featurizer executor (featurize.c) shared with the sparse
 *	  linear scorer (featurize_sparse.c) and the pipeline reader
 *	  (read_pipeline.c); not part of the IR contract.
 */
#ifndef HB_FEATURIZE_INT_H
#define HB_FEATURIZE_INT_H

#include "featurize.h"

/*
 * Strings -> their index in a list (terms[i]; the list must outlive the
 * index): build (NULL when out of memory), find (-1 when absent; of equal
 * strings, the first), free.
 */
typedef struct HbNameIndex HbNameIndex;
extern HbNameIndex *hb_name_index_build(char *const *terms, int32_t n);
extern int32_t hb_name_index_find(const HbNameIndex *v, char *const *terms,
								  const char *s, size_t len);
extern void hb_name_index_free(HbNameIndex *v);

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
