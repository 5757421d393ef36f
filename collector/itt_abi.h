/* itt_abi.h - the parts of the ittnotify ABI a collector meets: object layouts and the static
 * part's descriptor, as instrumented libraries (oneDNN, oneTBB, PyTorch) lay them out. */
#ifndef PA_ITT_ABI_H
#define PA_ITT_ABI_H

#include <pthread.h>
#include <stddef.h>

/*
 * Every instrumented library carries the ittnotify "static part": a table of function pointers
 * (one per entry point, initially a lazy-init stub) and a descriptor. On the first call it
 * dlopen()s the library INTEL_LIBITTNOTIFY64 names; when that library exports __itt_api_init,
 * it calls __itt_api_init(descriptor, groups) once, under its own mutex, and the collector sets
 * every pointer of the descriptor's api list: to its own implementation, or to the entry's
 * null_func. Objects (domains, string handles) created before that moment were allocated by the
 * static part itself, with the reserved fields zeroed; the collector may use those fields.
 * The instrumented side skips every call on a domain whose `flags` is 0.
 * Layouts: ittnotify.h / ittnotify_config.h of the ittapi project (x86-64, natural alignment).
 */

typedef struct pa_itt_domain {
    volatile int flags;    /* 0: calls on this domain are skipped by the instrumented side */
    const char *nameA;
    const void *nameW;     /* wide name (Windows only) */
    int extra1;            /* reserved to the collector: unused */
    void *extra2;          /* reserved to the collector: HGTX domain id (0: not assigned yet) */
    struct pa_itt_domain *next;
} pa_itt_domain_t;

typedef struct pa_itt_string_handle {
    const char *strA;
    const void *strW;
    int extra1;            /* reserved to the collector: name length + 1 (0: not measured yet) */
    void *extra2;
    struct pa_itt_string_handle *next;
} pa_itt_string_handle_t;

/* Passed by value (24 bytes: in memory on the stack, SysV x86-64). */
typedef struct pa_itt_id { unsigned long long d1, d2, d3; } pa_itt_id_t;

typedef struct pa_itt_clock_info {
    unsigned long long clock_freq; /* ticks per second */
    unsigned long long clock_base; /* tick value at the clock domain's creation or last reset */
} pa_itt_clock_info_t;

typedef void (*pa_itt_get_clock_info_fn)(pa_itt_clock_info_t *info, void *data);

typedef struct pa_itt_clock_domain {
    pa_itt_clock_info_t info;
    pa_itt_get_clock_info_fn fn;
    void *fn_data;
    int extra1;
    void *extra2;
    struct pa_itt_clock_domain *next;
} pa_itt_clock_domain_t;

/* One entry of the static part's api list; the list ends with name == NULL. */
typedef struct pa_itt_api_info {
    const char *name;      /* "__itt_task_begin", ... */
    void **func_ptr;       /* the pointer the instrumented code calls through */
    void *init_func;       /* the lazy-init stub */
    void *null_func;       /* what to set when the collector does not implement the entry */
    int group;             /* __itt_group_id bits */
} pa_itt_api_info_t;

/* The static part's descriptor (first fields only: those stable across ittapi versions). */
typedef struct pa_itt_global {
    unsigned char magic[8];
    unsigned long version_major, version_minor, version_build;
    volatile long api_initialized, mutex_initialized, atomic_counter;
    pthread_mutex_t mutex;
    void *lib;
    void *error_handler;
    const char **dll_path_ptr;
    pa_itt_api_info_t *api_list_ptr;
    struct pa_itt_global *next;
    void *thread_list;
    pa_itt_domain_t *domain_list;
    pa_itt_string_handle_t *string_list;
} pa_itt_global_t;

#define PA_ITT_TIMESTAMP_NONE ((unsigned long long)-1) /* __itt_timestamp_none */

#endif
