/* pa_stddev.h - the one standard-deviation formula every report and the summary use. */
#ifndef PA_STDDEV_H
#define PA_STDDEV_H

#include <math.h>
#include <stdint.h>

/*! pa_stddev_pop() : population standard deviation sqrt(m2 / n), from Welford's running sum of
 *  squared deviations m2 (unit: that of the values, ns or bytes); 0 for n <= 1.
 *  Population, not sample: the spec's example (asys-stats-reports.txt 2.3.9, hgtx_kern_sum) gives
 *  instances 3474616 and 4562345 a StdDev of 543864 = (4562345 - 3474616) / 2, and a single
 *  instance 0 (the sample formula would be undefined there). */
static inline double pa_stddev_pop(uint64_t n, double m2)
{
    return (n > 1 && m2 > 0) ? sqrt(m2 / (double)n) : 0.0;
}

/*! pa_stat_trunc() : the one rule for printing a statistic as an integer (Avg, Med, StdDev, Proj
 *  Avg/Med/StdDev, in every report, the exit summary and the aggregates' printout): truncated
 *  toward zero, as the spec's examples do (asys-stats-reports.txt 2.3.2: 13487638 / 1495 =
 *  9021.83 is printed 9021; 2.3.14: an average of 34907845.96 is 34907845), not rounded. A value
 *  a floating-point error (relative 1e-12) below an integer counts as that integer, so an exact
 *  mean or root computed in doubles (e.g. sqrt of a Welford sum) is not cut one short. */
static inline int64_t pa_stat_trunc(double v)
{
    if (!(v == v) || v >= 9.2e18 || v <= -9.2e18)
        return v > 0 ? INT64_MAX : v < 0 ? INT64_MIN : 0;
    double a = fabs(v), r = floor(a + a * 1e-12 + 1e-9);
    return v < 0 ? -(int64_t)r : (int64_t)r;
}

#endif
