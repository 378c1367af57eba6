/*
 * bench_clock.h
 *	  The clock and the load figure shared by the core benchmarks
 *	  (bench/strategies.c, bench/topk_core.c).
 */
#ifndef HB_BENCH_CLOCK_H
#define HB_BENCH_CLOCK_H

#include <stdio.h>
#include <time.h>

/* seconds on the monotonic clock */
static inline double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The 1-minute load average: other work on the machine skews timings. */
static inline double
load_avg(void)
{
	FILE	   *f = fopen("/proc/loadavg", "r");
	double		l = -1;

	if (f)
	{
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

#endif							/* HB_BENCH_CLOCK_H */
