/*
 * test_device.c
 *	  test/gpu/gpu_check.c as a core test, without the benchmark: the
 *	  dispatch of hb_plan_margins in modes cpu / auto / gpu (the fallback
 *	  to the CPU on machines without a device), and the CUDA kernels'
 *	  per-row code, run on the CPU when there is no device, against the CPU
 *	  executors on random and conformance models.  With a device the
 *	  kernels themselves are compared too.
 */
#define GPU_CHECK_NO_BENCH 1
#include "../gpu/gpu_check.c"
