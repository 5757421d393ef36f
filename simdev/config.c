/* config.c - SIMDEV_* environment variables parsed once into pa_sd_config, with clear messages. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pa_sd_internal.h"

static pa_sd_config g_cfg;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Parse an unsigned decimal (or 0x hex) value in [lo, hi]; 0 on success. */
static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end = NULL;
    if (!s || !*s || *s == '-')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_i64(const char *s, int64_t *out)
{
    char *end = NULL;
    if (!s || !*s)
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (errno || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

/* Read one unsigned variable; on a bad value print one message and keep the default. */
static void env_u64(const char *name, uint64_t lo, uint64_t hi, uint64_t *val)
{
    const char *s = getenv(name);
    uint64_t v;
    if (!s)
        return;
    if (parse_u64(s, lo, hi, &v) == 0) {
        *val = v;
        return;
    }
    fprintf(stderr,
            "simdev: %s=\"%s\" is not valid; accepted: an integer in [%" PRIu64 ", %" PRIu64
            "]; using default %" PRIu64 "\n", name, s, lo, hi, *val);
}

static void config_parse(void)
{
    pa_sd_config *c = &g_cfg;
    uint64_t v;
    c->devices = SIMDEV_DEFAULT_DEVICES;
    c->timer_hz = SIMDEV_DEFAULT_TIMER_HZ;
    c->timestamp_bits = SIMDEV_DEFAULT_TIMESTAMP_BITS;
    c->clock_offset_ns = SIMDEV_DEFAULT_CLOCK_OFFSET_NS;
    c->clock_start_ticks = 0;
    c->mem_bytes = SIMDEV_DEFAULT_MEM_MB << 20;
    c->base_ns = SIMDEV_DEFAULT_BASE_NS;
    c->ns_per_item = SIMDEV_DEFAULT_NS_PER_ITEM;
    c->copy_gbps = SIMDEV_DEFAULT_COPY_GBPS;
    c->core_clock_mhz = SIMDEV_DEFAULT_CORE_CLOCK_MHZ;
    c->isa_loop_trips = SIMDEV_DEFAULT_ISA_LOOP_TRIPS;
    c->eustall = true;
    c->eustall_seed = 1;
    c->eustall_buffer = SIMDEV_DEFAULT_EUSTALL_BUFFER_KB * 1024ull;
    c->oa = true;
    c->oa_buffer = SIMDEV_DEFAULT_OA_BUFFER_KB * 1024ull;

    v = c->devices;
    env_u64("SIMDEV_DEVICES", 1, PA_SD_MAX_DEVICES, &v);
    c->devices = (uint32_t)v;
    /* <= 1 GHz so the pre-1.2 timerResolution (ns per tick, rounded) is never 0 */
    env_u64("SIMDEV_TIMER_HZ", 1000, 1000000000ull, &c->timer_hz);

    const char *bits = getenv("SIMDEV_TIMESTAMP_BITS");
    if (bits) {
        if (parse_u64(bits, 32, 64, &v) == 0 && (v == 32 || v == 36 || v == 64))
            c->timestamp_bits = (uint32_t)v;
        else
            fprintf(stderr, "simdev: SIMDEV_TIMESTAMP_BITS=\"%s\" is not valid; accepted: 32, 36 "
                            "or 64; using default %u\n", bits, c->timestamp_bits);
    }
    const char *off = getenv("SIMDEV_CLOCK_OFFSET_NS");
    if (off && parse_i64(off, &c->clock_offset_ns) != 0) {
        c->clock_offset_ns = SIMDEV_DEFAULT_CLOCK_OFFSET_NS;
        fprintf(stderr, "simdev: SIMDEV_CLOCK_OFFSET_NS=\"%s\" is not valid; accepted: a signed "
                        "integer (ns); using default %lld\n", off, (long long)c->clock_offset_ns);
    }
    env_u64("SIMDEV_CLOCK_START_TICKS", 0, UINT64_MAX, &c->clock_start_ticks);
    v = c->mem_bytes >> 20;
    env_u64("SIMDEV_MEM_MB", 1, 1ull << 24, &v);
    c->mem_bytes = v << 20;
    env_u64("SIMDEV_KERNEL_BASE_NS", 0, 10000000000ull, &c->base_ns);
    env_u64("SIMDEV_KERNEL_NS_PER_ITEM", 0, 1000000ull, &c->ns_per_item);
    env_u64("SIMDEV_COPY_GBPS", 1, 100000ull, &c->copy_gbps);
    v = c->core_clock_mhz;
    env_u64("SIMDEV_CORE_CLOCK_MHZ", 100, 10000, &v);
    c->core_clock_mhz = (uint32_t)v;
    v = c->isa_loop_trips;
    env_u64("SIMDEV_ISA_LOOP_TRIPS", 1, 1024, &v);
    c->isa_loop_trips = (uint32_t)v;
    v = 1;
    env_u64("SIMDEV_EUSTALL", 0, 1, &v);
    c->eustall = v != 0;
    env_u64("SIMDEV_EUSTALL_SEED", 0, UINT64_MAX, &c->eustall_seed);
    v = c->eustall_buffer / 1024;
    env_u64("SIMDEV_EUSTALL_BUFFER_KB", 1, 1ull << 20, &v);
    c->eustall_buffer = v * 1024;
    v = 1;
    env_u64("SIMDEV_COMPUTE_BASIC", 0, 1, &v);
    c->oa = v != 0;
    v = c->oa_buffer / 1024;
    env_u64("SIMDEV_OA_BUFFER_KB", 1, 1ull << 20, &v);
    c->oa_buffer = v * 1024;
    v = 60000;
    env_u64("SIMDEV_ALLREDUCE_TIMEOUT_MS", 1, 3600000, &v);
    c->allreduce_timeout_ns = v * 1000000ull;
    env_u64("SIMDEV_FAULT_LIST_APPENDS", 0, UINT64_MAX, &c->fault_list_appends);
    env_u64("SIMDEV_FAULT_LIST_BARRIERS", 0, UINT64_MAX, &c->fault_list_barriers);
    v = 0;
    env_u64("SIMDEV_FAULT_TS_QUERY_US", 0, 10000000, &v);
    c->fault_ts_query_ns = v * 1000;
    v = 0;
    env_u64("SIMDEV_FAULT_CLOCK_SYNC_US", 0, 10000000, &v);
    c->fault_clock_ns = v * 1000;
}

const pa_sd_config *pa_sd_config_get(void)
{
    pthread_once(&g_once, config_parse);
    return &g_cfg;
}
