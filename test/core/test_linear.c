/*
 * test_linear.c
 *	  Linear models: double-precision models run as one GEMM per block and
 *	  must equal a plain per-row sum; float32 (XGBoost gblinear) models keep
 *	  the library's order.  Missing inputs contribute nothing.  TAP output.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "test_models.h"

static int	n_test = 0;
static int	n_fail = 0;

static void
ok(bool cond, const char *what)
{
	n_test++;
	if (!cond)
		n_fail++;
	printf("%s %d - %s\n", cond ? "ok" : "not ok", n_test, what);
}

int
main(void)
{
	const int	nf = 37;
	const size_t n = 3001;
	double	   *x = malloc(sizeof(double) * n * nf);

	for (size_t i = 0; i < n * nf; i++)
		x[i] = (i % 11 == 0) ? NAN : cos(i * 0.37) * 10.0;

	for (int variant = 0; variant < 4; variant++)
	{
		bool		f32 = variant & 1;
		int			k = variant & 2 ? 3 : 1;
		HbModel    *m = linear_model(nf, k, f32);
		HbPlan	   *p = NULL;
		HbError		err = {0};
		double	   *batch = malloc(sizeof(double) * n * k);
		double	   *one = malloc(sizeof(double) * k);
		double		worst = 0.0;
		bool		same_single = true;
		char		what[200];

		if (!hb_model_validate(m, &err) || !hb_plan_build(m, &p, &err))
		{
			printf("not ok %d - build linear model: %.100s\n", ++n_test, err.msg);
			n_fail++;
			continue;
		}
		hb_plan_margins(p, x, n, batch);
		for (size_t r = 0; r < n; r++)
		{
			hb_plan_margins(p, x + r * nf, 1, one);
			for (int g = 0; g < k; g++)
			{
				/* the reference: a double sum, NaN skipped */
				double		want = m->bias[g] + m->base_margin[g];
				double		mag = fabs(want);

				for (int f = 0; f < nf; f++)
					if (!isnan(x[r * nf + f]))
					{
						want += x[r * nf + f] * m->weights[f * k + g];
						mag += fabs(x[r * nf + f] * m->weights[f * k + g]);
					}
				/* rounding scales with the terms, not with their sum */
				worst = fmax(worst, fabs(batch[r * k + g] - want) / fmax(1.0, mag));
				/* the same bits, whatever the batch (and, in double, the reference's) */
				if (one[g] != batch[r * k + g] || (!f32 && batch[r * k + g] != want))
					same_single = false;
			}
		}
		snprintf(what, sizeof(what), "%s linear, %d outputs: batch within %s of a double sum, relative to the terms (worst %.3g)",
				 f32 ? "float32" : "double", k, f32 ? "5e-6" : "1e-14", worst);
		ok(worst <= (f32 ? 5e-6 : 1e-14), what);
		snprintf(what, sizeof(what), "%s linear, %d outputs: one row at a time gives the batch's margins, bit for bit%s",
				 f32 ? "float32" : "double", k, f32 ? "" : ", the double sum's in feature order");
		ok(same_single, what);
		free(batch);
		free(one);
		hb_plan_free(p);
		hb_model_free(m);
	}
	free(x);
	printf("# passed %d failed %d\n", n_test - n_fail, n_fail);
	return n_fail ? 1 : 0;
}
