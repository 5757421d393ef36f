/* clock.c - the device clock: host CLOCK_MONOTONIC mapped to device ticks (README "Clock"). */
#include <sched.h>
#include <time.h>

#include "pa_sd_internal.h"

static uint64_t g_epoch_ns;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

uint64_t pa_sd_clock_host_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void clock_init(void) { g_epoch_ns = pa_sd_clock_host_ns(); }

uint64_t pa_sd_clock_mask(void)
{
    uint32_t bits = pa_sd_config_get()->timestamp_bits;
    return bits >= 64 ? UINT64_MAX : ((1ull << bits) - 1ull);
}

/* ticks = start + ((host - epoch) + offset) * hz / 1e9; 128-bit so no overflow for years. */
uint64_t pa_sd_clock_ticks_at(uint64_t host_ns)
{
    const pa_sd_config *c = pa_sd_config_get();
    pthread_once(&g_once, clock_init);
    __int128 rel = (__int128)host_ns - (__int128)g_epoch_ns + c->clock_offset_ns;
    if (rel >= 0 && rel < (__int128)(UINT64_MAX / c->timer_hz)) /* the same floor in 64 bits (fast) */
        return c->clock_start_ticks + (uint64_t)rel * c->timer_hz / 1000000000u;
    __int128 t = rel * (__int128)c->timer_hz;
    t = t >= 0 ? t / 1000000000 : -((-t + 999999999) / 1000000000); /* floor */
    return c->clock_start_ticks + (uint64_t)t; /* unsigned wrap is the intended modulo */
}

uint64_t pa_sd_clock_now_ticks(void) { return pa_sd_clock_ticks_at(pa_sd_clock_host_ns()) & pa_sd_clock_mask(); }

void pa_sd_clock_wait_until(uint64_t host_ns)
{
    const uint64_t spin_ns = 60000;
    for (;;) {
        uint64_t now = pa_sd_clock_host_ns();
        if (now >= host_ns || pa_sd_shutting_down())
            return;
        uint64_t left = host_ns - now;
        if (left > spin_ns) {
            /* Sleep in slices of at most 10 ms so a shutdown is noticed promptly. */
            uint64_t nap = left - spin_ns;
            if (nap > 10000000)
                nap = 10000000;
            struct timespec ts = {(time_t)(nap / 1000000000ull), (long)(nap % 1000000000ull)};
            nanosleep(&ts, NULL);
        } else {
            sched_yield();
        }
    }
}
