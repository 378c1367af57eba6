/*
 * featurize_deps.c
 *	  What each feature of a pipeline is derived from, and what featurizing
 *	  part of the features costs.
 *
 * The cheap-feature approximations of the statistical shortcuts pick
 * features by importance per unit of featurization cost, and score rows
 * after featurizing only what the cheap model reads.  Both need the step
 * graph read backwards: a feature's slot, the step that wrote it, that
 * step's input slots, and so on down to the raw inputs.  Steps are single
 * assignment and ordered (hb_pipeline_validate), so one backward pass over
 * the steps finds every dependency.
 */
#include "hb_core.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "featurize.h"

/* output o reads input o only */
static bool
elementwise(const HbStep *s)
{
	switch (s->kind)
	{
		case HB_STEP_AFFINE:
		case HB_STEP_IMPUTE:
		case HB_STEP_MISSING_IND:
		case HB_STEP_BINARIZE:
		case HB_STEP_CAST_F32:
		case HB_STEP_ARITH:
		case HB_STEP_CLIP:
		case HB_STEP_MISSING_BELOW:
			return s->n_out == s->n_in;
		default:
			return false;
	}
}

int32_t
hb_pipeline_input_group(const HbPipeline *p, int32_t input)
{
	(void) p;
	return input < HB_MAX_FEATURE_GROUPS - 1 ? input : HB_MAX_FEATURE_GROUPS - 1;
}

bool
hb_pipeline_deps(const HbPipeline *p, HbPipelineDeps *d, HbError *err)
{
	uint64_t   *slot = hb_alloc0(sizeof(uint64_t) * ((size_t) p->n_slots + 1));
	uint64_t   *text = hb_alloc0(sizeof(uint64_t) * ((size_t) p->n_text_inputs + 1));

	memset(d, 0, sizeof(*d));
	d->feat_groups = hb_alloc0(sizeof(uint64_t) * ((size_t) p->n_features + 1));
	if (!slot || !text || !d->feat_groups)
	{
		hb_free(slot);
		hb_free(text);
		hb_pipeline_deps_free(d);
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	}
	d->n_groups = p->n_inputs < HB_MAX_FEATURE_GROUPS ? p->n_inputs : HB_MAX_FEATURE_GROUPS;
	for (int32_t i = 0; i < p->n_inputs; i++)
	{
		uint64_t	bit = UINT64_C(1) << hb_pipeline_input_group(p, i);

		if (p->inputs[i].type == HB_INPUT_TEXT)
			text[p->inputs[i].index] |= bit;
		else
			slot[p->inputs[i].index] |= bit;
	}
	/* forwards: a step's outputs derive from whatever its inputs derive from */
	for (int32_t k = 0; k < p->n_steps; k++)
	{
		const HbStep *s = &p->steps[k];
		uint64_t	m = 0;

		if (elementwise(s))
		{
			for (int32_t o = 0; o < s->n_out; o++)
				slot[s->out + o] = slot[s->in[o]];
			continue;
		}
		if (hb_step_reads_text(s))
			m = text[s->text_input];
		else
			for (int32_t i = 0; i < s->n_in; i++)
				m |= slot[s->in[i]];
		for (int32_t o = 0; o < s->n_out; o++)
			slot[s->out + o] = m;
	}
	for (int32_t j = 0; j < p->n_features; j++)
		d->feat_groups[j] = slot[p->feature_slot[j]];
	hb_free(slot);
	hb_free(text);
	return true;
}

void
hb_pipeline_deps_free(HbPipelineDeps *d)
{
	hb_free(d->feat_groups);
	d->feat_groups = NULL;
}

int32_t
hb_feature_list(const bool *feat_on, int32_t n_features, int32_t *feats)
{
	int32_t		n = 0;

	for (int32_t j = 0; j < n_features; j++)
		if (feat_on[j])
			feats[n++] = j;
	return n;
}

void
hb_pipeline_steps_for(const HbPipeline *p, const bool *feat_on, bool *step_on)
{
	bool	   *need = hb_alloc_must(sizeof(bool) * ((size_t) p->n_slots + 1));

	memset(need, 0, sizeof(bool) * ((size_t) p->n_slots + 1));
	for (int32_t j = 0; j < p->n_features; j++)
		if (feat_on[j])
			need[p->feature_slot[j]] = true;
	/* backwards: a step runs when any of its outputs is needed */
	for (int32_t k = p->n_steps - 1; k >= 0; k--)
	{
		const HbStep *s = &p->steps[k];
		bool		on = false;

		for (int32_t o = 0; o < s->n_out && !on; o++)
			on = need[s->out + o];
		step_on[k] = on;
		if (on && elementwise(s))
		{
			/* the step runs whole; its other outputs are not read */
			for (int32_t o = 0; o < s->n_out; o++)
				if (need[s->out + o])
					need[s->in[o]] = true;
		}
		else if (on && !hb_step_reads_text(s))
			for (int32_t i = 0; i < s->n_in; i++)
				need[s->in[i]] = true;
	}
	hb_free(need);
}

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

/* Best of three runs of the masked steps over the rows, per row. */
static bool
time_steps(const HbPipeline *p, const HbRawRows *rows, const bool *step_on,
		   const int32_t *feats, int32_t n_feats, double *x, double *slots,
		   double *ns, HbError *err)
{
	double		best = INFINITY;

	for (int rep = 0; rep < 3; rep++)
	{
		double		t0 = now_ns();

		if (!hb_pipeline_run_steps(p, rows, x, slots, step_on, feats, n_feats, err))
			return false;
		t0 = now_ns() - t0;
		if (t0 < best)
			best = t0;
	}
	*ns = best / (double) (rows->n > 0 ? rows->n : 1);
	return true;
}

bool
hb_pipeline_group_costs(const HbPipeline *p, const HbPipelineDeps *d,
						const HbRawRows *rows, double *group_ns,
						double *all_ns, HbError *err)
{
	size_t		nf = (size_t) p->n_features;
	double	   *x = hb_alloc(sizeof(double) * (rows->n * nf + 1));
	double	   *slots = hb_alloc0(sizeof(double) * (hb_pipeline_row_slots(p) + 1));
	bool	   *feat_on = hb_alloc(sizeof(bool) * (nf + 1));
	bool	   *step_on = hb_alloc(sizeof(bool) * ((size_t) p->n_steps + 1));
	int32_t    *feats = hb_alloc(sizeof(int32_t) * (nf + 1));
	bool		ok = true;
	double		base = 0.0;

	if (!x || !slots || !feat_on || !step_on || !feats)
	{
		ok = hb_fail(err, HB_ERR_NOMEM, "out of memory");
		goto done;
	}
	/* what binding a row costs whatever runs: not any group's */
	memset(feat_on, 0, sizeof(bool) * (nf + 1));
	memset(step_on, 0, sizeof(bool) * ((size_t) p->n_steps + 1));
	ok = time_steps(p, rows, step_on, feats, 0, x, slots, &base, err) &&
		time_steps(p, rows, NULL, NULL, 0, x, slots, all_ns, err);
	for (int32_t g = 0; g < d->n_groups && ok; g++)
	{
		uint64_t	bit = UINT64_C(1) << g;

		for (size_t j = 0; j < nf; j++)
			feat_on[j] = (d->feat_groups[j] & bit) != 0;
		hb_pipeline_steps_for(p, feat_on, step_on);
		ok = time_steps(p, rows, step_on, feats, hb_feature_list(feat_on, (int32_t) nf, feats),
						x, slots, &group_ns[g], err);
		group_ns[g] = group_ns[g] > base ? group_ns[g] - base : 0.0;
		hb_check_interrupts();
	}
done:
	hb_free(x);
	hb_free(slots);
	hb_free(feat_on);
	hb_free(step_on);
	hb_free(feats);
	return ok;
}
