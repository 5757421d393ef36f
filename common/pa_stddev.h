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

#endif
