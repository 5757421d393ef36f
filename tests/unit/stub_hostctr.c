/* stub_hostctr.c - host counters off, for tests that link collector/hgtx.c without hwcounters/. */
#include <stdint.h>

int pa_hc_active;
void pa_hc_sample(uint64_t t0) { (void)t0; }
