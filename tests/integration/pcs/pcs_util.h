/* pcs_util.h - what the PC-sampling tests share: a simdev environment and a busy_ns kernel run. */
#ifndef PCS_UTIL_H
#define PCS_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "common.h"

/* One kernel object and an immediate list on device 0 of env. */
typedef struct pcs_run {
    sample_env_t env;
    ze_module_handle_t mod;
    ze_kernel_handle_t busy;
    ze_command_list_handle_t list;
    ze_event_pool_handle_t pool;
    ze_event_handle_t done;
} pcs_run_t;

static inline void pcs_run_init(pcs_run_t *r)
{
    sample_env_init(&r->env, 1);
    r->mod = sample_module_native(&r->env, r->env.devices[0], "SIMDEV-MODULE 1\nkernel busy_ns\n");
    r->busy = sample_kernel(r->mod, "busy_ns", 1);
    r->list = sample_immediate(&r->env, r->env.devices[0], 0, 0);
    r->pool = sample_event_pool(&r->env, 1, 0);
    r->done = sample_event(r->pool, 0);
}

/*! pcs_run_busy() : runs busy_ns(ns) once and waits for it. */
static inline void pcs_run_busy(pcs_run_t *r, uint64_t ns)
{
    sample_set_arg(r->busy, 0, sizeof ns, &ns);
    sample_launch_1d(r->list, r->busy, 1, 1, r->done);
    SAMPLE_CHECK(zeEventHostSynchronize(r->done, UINT64_MAX));
    SAMPLE_CHECK(zeEventHostReset(r->done));
}

#define PCS_CHECK(cond, ...)                                                                \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fprintf(stderr, "\n");                                                          \
            pcs_failures++;                                                                 \
        }                                                                                   \
    } while (0)
static int pcs_failures;

#endif
