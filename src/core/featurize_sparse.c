/*
 * featurize_sparse.c
 *	  Linear models over wide text features, scored from the non-zero
 *	  columns (featurize_sparse.h).
 *
 * The dense path writes every kept column of a text step into its slot,
 * copies every feature into the row and multiplies the whole row: three
 * passes over tens of thousands of doubles for the forty-odd non-zero
 * columns of a short document.  Here the step's kept columns and the
 * model's coefficients are folded into one table per step (kept column x
 * output), and a row adds value x table row for each of its non-zero
 * columns.  The values are hb_text_terms', the very ones the dense path
 * writes, and each product is the one the dense path forms; only the
 * order of the sum differs (the dense path sums by feature, in blocks, with
 * BLAS), so margins agree to rounding, far inside the 1e-6 relative
 * agreement with scikit-learn that the exports are held to.
 */
#include "featurize_sparse.h"
#include "featurize_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct SparseStep
{
	const HbStep *step;
	double	   *w;				/* n_used x n_outputs */
} SparseStep;

struct HbSparseLinear
{
	const HbPipeline *p;
	int32_t		k;				/* outputs */
	double	   *bias;			/* bias + base margin, per output */
	bool	   *run;			/* per step: run it dense */
	int32_t		n_dense;		/* features read from slots */
	int32_t    *dense_slot;
	double	   *dense_w;		/* n_dense x k */
	int32_t		n_text;
	SparseStep *text;
};

void
hb_sparse_linear_free(HbSparseLinear *s)
{
	if (s == NULL)
		return;
	hb_free(s->bias);
	hb_free(s->run);
	hb_free(s->dense_slot);
	hb_free(s->dense_w);
	for (int32_t i = 0; i < s->n_text; i++)
		hb_free(s->text[i].w);
	hb_free(s->text);
	hb_free(s);
}

int32_t
hb_sparse_linear_n_text_steps(const HbSparseLinear *s)
{
	return s ? s->n_text : 0;
}

int
hb_sparse_linear_ops(const HbSparseLinear *s, size_t n, HbPlanOp *ops,
					 int max_ops)
{
	int			k = 0;

	if (s->n_dense > 0 && k < max_ops)
	{
		HbPlanOp   *o = &ops[k++];

		memset(o, 0, sizeof(*o));
		o->strategy = HB_STRATEGY_TT;
		o->op = "dot";
		snprintf(o->in_shape, sizeof(o->in_shape), "%zux%d", n, (int) s->n_dense);
		snprintf(o->out_shape, sizeof(o->out_shape), "%zux%d", n, (int) s->k);
		o->param_bytes = (int64_t) sizeof(double) * (s->n_dense + 1) * s->k;
		o->flops = 2.0 * n * s->n_dense * s->k;
	}
	for (int32_t i = 0; i < s->n_text && k < max_ops; i++)
	{
		HbPlanOp   *o = &ops[k++];
		int32_t		used = s->text[i].step->n_used;

		memset(o, 0, sizeof(*o));
		o->strategy = HB_STRATEGY_TT;
		o->op = "text weights";
		/* the step's width; a row reads only its non-zero columns */
		snprintf(o->in_shape, sizeof(o->in_shape), "%zux%d (non-zero)", n, (int) used);
		snprintf(o->out_shape, sizeof(o->out_shape), "%zux%d", n, (int) s->k);
		o->param_bytes = (int64_t) sizeof(double) * used * s->k;
		o->flops = -1.0;
	}
	return k;
}


/* Does any step read a slot of [lo, hi)?  Then those slots must exist. */
static bool
slots_read(const HbPipeline *p, int32_t lo, int32_t hi)
{
	for (int32_t k = 0; k < p->n_steps; k++)
	{
		const HbStep *s = &p->steps[k];

		if (hb_step_reads_text(s) || s->in == NULL)
			continue;
		for (int32_t i = 0; i < s->n_in; i++)
			if (s->in[i] >= lo && s->in[i] < hi)
				return true;
	}
	return false;
}

/* A vectorizer whose kept columns go only to the model: scored sparse. */
static bool
scored_sparse(const HbPipeline *p, const HbStep *st)
{
	return (st->kind == HB_STEP_HASHING || st->kind == HB_STEP_TFIDF) &&
		st->n_used > 0 && !slots_read(p, st->out, st->out + st->n_used);
}

/* The sparse step owning slot, or -1. */
static int32_t
owner(const HbSparseLinear *s, int32_t slot)
{
	for (int32_t t = 0; t < s->n_text; t++)
	{
		const HbStep *st = s->text[t].step;

		if (slot >= st->out && slot < st->out + st->n_used)
			return t;
	}
	return -1;
}

bool
hb_sparse_linear_build(const HbModel *m, const HbPipeline *p,
					   HbSparseLinear **out, HbError *err)
{
	HbSparseLinear *s;
	int32_t		k = m->n_outputs;
	int32_t		n_cand = 0;

	*out = NULL;
	if (p == NULL || m->estimator != HB_EST_LINEAR || m->sum_f32 ||
		p->n_features != m->n_features || k < 1)
		return true;
	for (int32_t i = 0; i < p->n_steps; i++)
		n_cand += scored_sparse(p, &p->steps[i]);
	if (n_cand == 0)
		return true;

	s = hb_alloc0(sizeof(HbSparseLinear));
	if (s == NULL)
		goto nomem;
	s->p = p;
	s->k = k;
	s->bias = hb_alloc(sizeof(double) * k);
	s->run = hb_alloc(sizeof(bool) * (p->n_steps > 0 ? p->n_steps : 1));
	s->text = hb_alloc0(sizeof(SparseStep) * n_cand);
	s->dense_slot = hb_alloc(sizeof(int32_t) * (p->n_features > 0 ? p->n_features : 1));
	s->dense_w = hb_alloc(sizeof(double) * k * (p->n_features > 0 ? p->n_features : 1));
	if (!s->bias || !s->run || !s->text || !s->dense_slot || !s->dense_w)
		goto nomem;
	for (int32_t g = 0; g < k; g++)
		s->bias[g] = m->bias[g] + m->base_margin[g];
	for (int32_t i = 0; i < p->n_steps; i++)
	{
		const HbStep *st = &p->steps[i];

		s->run[i] = true;
		if (scored_sparse(p, st))
		{
			SparseStep *t = &s->text[s->n_text++];

			t->step = st;
			t->w = hb_alloc0(sizeof(double) * k * st->n_used);
			if (t->w == NULL)
				goto nomem;
			s->run[i] = false;
		}
	}

	/* fold each feature's coefficients into its step's table, or keep it dense */
	for (int32_t j = 0; j < p->n_features; j++)
	{
		int32_t		slot = p->feature_slot[j];
		int32_t		t = owner(s, slot);
		const double *wj = m->weights + (size_t) j * k;

		if (t >= 0)
		{
			double	   *row = s->text[t].w + (size_t) (slot - s->text[t].step->out) * k;

			for (int32_t g = 0; g < k; g++)
				row[g] += wj[g];
		}
		else
		{
			s->dense_slot[s->n_dense] = slot;
			memcpy(s->dense_w + (size_t) s->n_dense * k, wj, sizeof(double) * k);
			s->n_dense++;
		}
	}
	*out = s;
	return true;

nomem:
	hb_sparse_linear_free(s);
	return hb_fail(err, HB_ERR_NOMEM, "out of memory");
}

void
hb_sparse_linear_missing(const HbSparseLinear *s, double *margins)
{
	memcpy(margins, s->bias, sizeof(double) * s->k);
}

/* Index of col among the step's kept columns, or -1. */
static inline int32_t
find_used(const HbStep *st, int64_t col)
{
	int32_t		lo = 0,
				hi = st->n_used - 1;

	while (lo <= hi)
	{
		int32_t		mid = lo + (hi - lo) / 2;

		if (st->used_cols[mid] < col)
			lo = mid + 1;
		else if (st->used_cols[mid] > col)
			hi = mid - 1;
		else
			return mid;
	}
	return -1;
}

bool
hb_sparse_linear_margins(const HbSparseLinear *s, const HbRawRows *rows,
						 double *margins, double *slots, HbError *err)
{
	const HbPipeline *p = s->p;
	HbTextScratch *ts;
	int32_t		k = s->k;
	bool		ok = true;
	static const HbText no_text = {NULL, 0};

	if (p->n_text_inputs > 0 && rows->text == NULL)
		return hb_fail(err, HB_ERR_ARGUMENT, "pipeline has text inputs but none were bound");
	ts = hb_text_scratch_new();
	if (ts == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	for (size_t r = 0; r < rows->n && ok; r++)
	{
		const double *num = rows->num ? rows->num + r * p->n_num_inputs : NULL;
		const HbText *texts = rows->text ? rows->text + r * p->n_text_inputs : &no_text;
		double	   *mr = margins + r * k;

		if ((r & 1023) == 1023)
			hb_check_interrupts();
		for (int32_t i = 0; i < p->n_num_inputs; i++)
			slots[i] = num ? num[i] : NAN;
		for (int32_t i = 0; i < p->n_steps && ok; i++)
			if (s->run[i])
				ok = hb_step_run(p, &p->steps[i], slots, texts, ts, err);
		if (!ok)
			break;

		memcpy(mr, s->bias, sizeof(double) * k);
		/* the dense linear executor's rule: a missing feature adds nothing */
		for (int32_t j = 0; j < s->n_dense; j++)
		{
			double		x = slots[s->dense_slot[j]];
			const double *w = s->dense_w + (size_t) j * k;

			if (isnan(x))
				continue;
			for (int32_t g = 0; g < k; g++)
				mr[g] += x * w[g];
		}
		for (int32_t t = 0; t < s->n_text; t++)
		{
			const HbStep *st = s->text[t].step;
			const HbTextTerm *terms;
			size_t		n_terms;

			if (!hb_text_terms(ts, st, &texts[st->text_input], &terms, &n_terms))
			{
				ok = hb_fail(err, HB_ERR_NOMEM, "out of memory");
				break;
			}
			for (size_t i = 0; i < n_terms; i++)
			{
				int32_t		u = find_used(st, terms[i].col);
				const double *w;

				/* a NaN value (an overflowing idf) is missing, as in the dense path */
				if (u < 0 || isnan(terms[i].val))
					continue;
				w = s->text[t].w + (size_t) u * k;
				for (int32_t g = 0; g < k; g++)
					mr[g] += terms[i].val * w[g];
			}
		}
	}
	hb_text_scratch_free(ts);
	return ok;
}
