/* itt_static.h - a stand-in for ittnotify's static part, for tests and benchmarks: one function
 * pointer per entry point, filled by the collector INTEL_LIBITTNOTIFY64 names through its
 * __itt_api_init (the protocol of collector/itt_abi.h). Without a collector every pointer stays
 * NULL and ITT_CALL() skips the call, as instrumented libraries do. */
#ifndef PA_TEST_ITT_STATIC_H
#define PA_TEST_ITT_STATIC_H

#include "../../../collector/itt_abi.h"

typedef pa_itt_domain_t itt_domain;
typedef pa_itt_string_handle_t itt_string;
typedef pa_itt_id_t itt_id;
typedef pa_itt_clock_domain_t itt_clock;
typedef pa_itt_clock_info_t itt_clock_info;

/* X(name, return type, parameter list) for every entry point the tests call. */
#define ITT_ENTRIES(X) \
    X(domain_create, itt_domain *, (const char *)) \
    X(string_handle_create, itt_string *, (const char *)) \
    X(task_begin, void, (const itt_domain *, itt_id, itt_id, itt_string *)) \
    X(task_begin_fn, void, (const itt_domain *, itt_id, itt_id, void *)) \
    X(task_end, void, (const itt_domain *)) \
    X(task_begin_ex, void, (const itt_domain *, itt_clock *, unsigned long long, itt_id, itt_id, itt_string *)) \
    X(task_begin_fn_ex, void, (const itt_domain *, itt_clock *, unsigned long long, itt_id, itt_id, void *)) \
    X(task_end_ex, void, (const itt_domain *, itt_clock *, unsigned long long)) \
    X(task_begin_overlapped, void, (const itt_domain *, itt_id, itt_id, itt_string *)) \
    X(task_begin_overlapped_ex, void, (const itt_domain *, itt_clock *, unsigned long long, itt_id, itt_id, itt_string *)) \
    X(task_end_overlapped, void, (const itt_domain *, itt_id)) \
    X(task_end_overlapped_ex, void, (const itt_domain *, itt_clock *, unsigned long long, itt_id)) \
    X(region_begin, void, (const itt_domain *, itt_id, itt_id, itt_string *)) \
    X(region_end, void, (const itt_domain *, itt_id)) \
    X(frame_begin_v3, void, (const itt_domain *, itt_id *)) \
    X(frame_end_v3, void, (const itt_domain *, itt_id *)) \
    X(frame_submit_v3, void, (const itt_domain *, itt_id *, unsigned long long, unsigned long long)) \
    X(marker, void, (const itt_domain *, itt_id, itt_string *, int)) \
    X(marker_ex, void, (const itt_domain *, itt_clock *, unsigned long long, itt_id, itt_string *, int)) \
    X(mark_create, int, (const char *)) \
    X(mark, int, (int, const char *)) \
    X(mark_global, int, (int, const char *)) \
    X(event_create, int, (const char *, int)) \
    X(event_start, int, (int)) \
    X(event_end, int, (int)) \
    X(thread_set_name, void, (const char *)) \
    X(thr_name_set, int, (const char *, int)) \
    X(pause, void, (void)) \
    X(resume, void, (void)) \
    X(detach, void, (void)) \
    X(get_timestamp, unsigned long long, (void)) \
    X(clock_domain_create, itt_clock *, (pa_itt_get_clock_info_fn, void *)) \
    X(clock_domain_reset, void, (void)) \
    X(id_create, void, (const itt_domain *, itt_id)) \
    X(id_destroy, void, (const itt_domain *, itt_id)) \
    X(api_version, const char *, (void)) \
    X(sync_create, void, (void *, const char *, const char *, int)) \
    X(sync_prepare, void, (void *)) \
    X(counter_create, void *, (const char *, const char *)) \
    X(counter_inc, void, (void *)) \
    X(metadata_add, void, (const itt_domain *, itt_id, itt_string *, int, size_t, void *))

#define ITT_DECLARE(n, r, p) extern r(*itt_##n) p;
ITT_ENTRIES(ITT_DECLARE)
#undef ITT_DECLARE

/* Calls entry `n` when a collector set it (as the ittnotify macros do), else does nothing. */
#define ITT_CALL(n, ...) (itt_##n ? itt_##n(__VA_ARGS__) : 0)
#define ITT_CALLV(n, ...) do { if (itt_##n) itt_##n(__VA_ARGS__); } while (0)

/*! itt_static_init() : loads INTEL_LIBITTNOTIFY64 (if set) and calls its __itt_api_init with
 *  the table; `pre` are domains created "by the static part" before, handed over in the
 *  descriptor's domain list. Returns 1 when a collector took the table, 0 otherwise. */
int itt_static_init(itt_domain *pre);

static const itt_id itt_null = {0, 0, 0};
static inline itt_id itt_id_make(void *addr, unsigned long long extra)
{
    itt_id id = {(unsigned long long)(size_t)addr, extra, 0};
    return id;
}

#endif
