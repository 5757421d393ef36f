/* pa_names.h - display names of the enums in pa_record.h, shared by the aggregator and the writer. */
#ifndef PA_NAMES_H
#define PA_NAMES_H

#include <stdint.h>

/*! pa_osrt_name() : the C function name of an enum pa_osrt_func value ("pthread_cond_wait",
 *  "nanosleep", ...). Out-of-range values give "unknown"; never NULL. */
const char *pa_osrt_name(uint32_t func);

#endif
