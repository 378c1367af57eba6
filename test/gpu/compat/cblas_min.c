/*
 * cblas_min.c (test/gpu/compat)
 *	  Plain loops for cblas_sgemm / cblas_dgemm: C = alpha op(A) op(B) +
 *	  beta C.  Slow but complete; only for building the core where no BLAS
 *	  is installed.  The GEMM strategy's products are of 0 / +-1 entries, so
 *	  they are exact in any summation order.
 */
#include "cblas.h"

#include <stddef.h>

/* element (i, j) of a matrix stored with leading dimension ld */
#define AT(p, ld, i, j, rowmajor) \
	(p)[(rowmajor) ? (size_t) (i) * (ld) + (j) : (size_t) (j) * (ld) + (i)]

#define GEMM_BODY(T) \
	int			rm = order == CblasRowMajor; \
\
	for (int i = 0; i < m; i++) \
		for (int j = 0; j < n; j++) \
		{ \
			T			s = 0; \
\
			for (int l = 0; l < k; l++) \
			{ \
				T			av = ta == CblasNoTrans ? AT(a, lda, i, l, rm) : AT(a, lda, l, i, rm); \
				T			bv = tb == CblasNoTrans ? AT(b, ldb, l, j, rm) : AT(b, ldb, j, l, rm); \
\
				s += av * bv; \
			} \
			if (beta == 0) \
				AT(c, ldc, i, j, rm) = alpha * s; \
			else \
				AT(c, ldc, i, j, rm) = alpha * s + beta * AT(c, ldc, i, j, rm); \
		}

void
cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta,
			enum CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
			const float *a, int lda, const float *b, int ldb, float beta,
			float *c, int ldc)
{
	GEMM_BODY(float)
}

void
cblas_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta,
			enum CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
			const double *a, int lda, const double *b, int ldb, double beta,
			double *c, int ldc)
{
	GEMM_BODY(double)
}
