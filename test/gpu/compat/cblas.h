/*
 * cblas.h (test/gpu/compat)
 *	  The two BLAS calls the core makes, for hosts without OpenBLAS (GPU test
 *	  hosts with no package access).  run.sh uses this only when the system
 *	  has no <cblas.h>; cblas_min.c implements it.
 */
#ifndef HB_COMPAT_CBLAS_H
#define HB_COMPAT_CBLAS_H

enum CBLAS_ORDER
{
	CblasRowMajor = 101,
	CblasColMajor = 102
};
enum CBLAS_TRANSPOSE
{
	CblasNoTrans = 111,
	CblasTrans = 112,
	CblasConjTrans = 113
};

extern void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta,
						enum CBLAS_TRANSPOSE tb, int m, int n, int k,
						float alpha, const float *a, int lda,
						const float *b, int ldb, float beta,
						float *c, int ldc);
extern void cblas_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta,
						enum CBLAS_TRANSPOSE tb, int m, int n, int k,
						double alpha, const double *a, int lda,
						const double *b, int ldb, double beta,
						double *c, int ldc);

#endif							/* HB_COMPAT_CBLAS_H */
