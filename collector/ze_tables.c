/* ze_tables.c - handle -> info tables for lists, queues and kernels: inserted on create
 * (slow path, under a mutex), looked up lock-free on the append path; and the application's
 * events -> their pools (lock-free throughout). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ze_internal.h"

#define PA_ZE_OBJ_SLOTS 8192u            /* power of two; live lists+queues+kernels */
#define PA_ZE_TOMB ((uintptr_t)1)        /* deleted key: probing continues past it */

static _Atomic uintptr_t keys[PA_ZE_OBJ_SLOTS];
static pa_ze_obj_info_t infos[PA_ZE_OBJ_SLOTS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static uint32_t slot_of(uintptr_t h)
{
    h ^= h >> 17;
    h *= 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 40) & (PA_ZE_OBJ_SLOTS - 1);
}

pa_ze_obj_info_t *pa_ze_obj_get(const void *h)
{
    uintptr_t k = (uintptr_t)h;
    if (k <= PA_ZE_TOMB)
        return NULL;
    for (uint32_t i = slot_of(k), n = 0; n < PA_ZE_OBJ_SLOTS; i = (i + 1) & (PA_ZE_OBJ_SLOTS - 1), n++) {
        uintptr_t cur = atomic_load_explicit(&keys[i], memory_order_acquire);
        if (cur == k)
            return &infos[i];
        if (cur == 0)
            return NULL;
    }
    return NULL;
}

pa_ze_obj_info_t *pa_ze_obj_put(const void *h, int type)
{
    uintptr_t k = (uintptr_t)h;
    if (k <= PA_ZE_TOMB)
        return NULL;
    pa_ze_obj_info_t *res = NULL;
    pthread_mutex_lock(&mu);
    uint32_t free_slot = UINT32_MAX;
    for (uint32_t i = slot_of(k), n = 0; n < PA_ZE_OBJ_SLOTS; i = (i + 1) & (PA_ZE_OBJ_SLOTS - 1), n++) {
        uintptr_t cur = atomic_load_explicit(&keys[i], memory_order_relaxed);
        if (cur == k) { /* handle reused without a destroy we saw: replace */
            free_slot = i;
            break;
        }
        if (cur == PA_ZE_TOMB && free_slot == UINT32_MAX)
            free_slot = i;
        if (cur == 0) {
            if (free_slot == UINT32_MAX)
                free_slot = i;
            break;
        }
    }
    if (free_slot != UINT32_MAX) {
        atomic_store_explicit(&keys[free_slot], PA_ZE_TOMB, memory_order_release);
        res = &infos[free_slot];
        memset(res, 0, sizeof *res);
        res->type = type;
        res->device = UINT32_MAX;
        res->engine = UINT32_MAX;
        res->cmd_head = res->cmd_tail = PA_ZE_CMD_NONE;
        /* published by the caller's fill + this store: readers see the key last */
        atomic_store_explicit(&keys[free_slot], k, memory_order_release);
    }
    pthread_mutex_unlock(&mu);
    return res;
}

void pa_ze_obj_del(const void *h)
{
    pa_ze_obj_info_t *o = pa_ze_obj_get(h);
    if (!o)
        return;
    pthread_mutex_lock(&mu);
    atomic_store_explicit(&keys[o - infos], PA_ZE_TOMB, memory_order_release);
    pthread_mutex_unlock(&mu);
}

uint32_t pa_ze_obj_ctx_live(const void *ctx)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < PA_ZE_OBJ_SLOTS; i++)
        if (atomic_load_explicit(&keys[i], memory_order_acquire) > PA_ZE_TOMB && infos[i].context == ctx &&
            (infos[i].type == PA_ZE_OBJ_LIST || infos[i].type == PA_ZE_OBJ_QUEUE))
            n++;
    return n;
}

uint32_t pa_ze_each_kernel(void (*fn)(void *module, void *kernel, const char *name))
{
    /* copied under the lock, called after it: fn calls the driver, the application's creates
     * and destroys wait for nothing of it */
    struct { void *m, *k; const char *name; } *v = NULL;
    uint32_t n = 0, cap = 0;
    pthread_mutex_lock(&mu);
    for (uint32_t i = 0; i < PA_ZE_OBJ_SLOTS; i++) {
        uintptr_t k = atomic_load_explicit(&keys[i], memory_order_acquire);
        if (k <= PA_ZE_TOMB || infos[i].type != PA_ZE_OBJ_KERNEL || !infos[i].module || !infos[i].name)
            continue;
        if (n == cap) {
            uint32_t nc = cap ? cap * 2 : 64;
            void *nv = realloc(v, nc * sizeof *v);
            if (!nv)
                break;
            v = nv;
            cap = nc;
        }
        v[n].m = infos[i].module;
        v[n].k = (void *)k;
        v[n].name = infos[i].name;
        n++;
    }
    pthread_mutex_unlock(&mu);
    for (uint32_t i = 0; i < n; i++)
        fn(v[i].m, v[i].k, v[i].name);
    free(v);
    return n;
}

/* ---- application event -> its pool ----
 * Why a table of its own: applications hold many more events than lists and kernels (one per
 * operation in some runtimes), which would crowd those out of the table above, and zeEventCreate
 * should cost no lock. Open addressing over a bounded window: an event is stored within
 * PA_ZE_EV_WINDOW slots of its hash, so every probe (put, get, del) reads at most that many keys
 * and deleted slots (tombstones) are reused by later puts: no cleanup is ever needed. A bitmap
 * of the slots holding an event lets a pool's destroy visit those only: reading every slot cost
 * 229,000 instructions per zeEventPoolDestroy (callgrind). */
#define PA_ZE_EV_SLOTS (1u << 15)
#define PA_ZE_EV_WINDOW 64u
static _Atomic uintptr_t ev_keys[PA_ZE_EV_SLOTS];
static _Atomic uintptr_t ev_pools[PA_ZE_EV_SLOTS];
static _Atomic uint64_t ev_used[PA_ZE_EV_SLOTS / 64];

static uint32_t ev_slot_of(uintptr_t h)
{
    h ^= h >> 17;
    h *= 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 49) & (PA_ZE_EV_SLOTS - 1);
}

/* The slot holding `ev`, UINT32_MAX when none. */
static uint32_t ev_find(uintptr_t ev)
{
    for (uint32_t i = ev_slot_of(ev), n = 0; n < PA_ZE_EV_WINDOW; i = (i + 1) & (PA_ZE_EV_SLOTS - 1), n++) {
        uintptr_t cur = atomic_load_explicit(&ev_keys[i], memory_order_acquire);
        if (cur == ev)
            return i;
        if (cur == 0)
            break; /* puts fill a window's empty slots in order: nothing of ev lies beyond */
    }
    return UINT32_MAX;
}

int pa_ze_evmap_put(const void *ev, const void *pool)
{
    uintptr_t k = (uintptr_t)ev;
    if (k <= PA_ZE_TOMB || !pool)
        return -1;
    /* the handle of an event whose destroy the agent did not see (a driver reusing it): replaced */
    uint32_t i = ev_find(k);
    if (i != UINT32_MAX) {
        atomic_store_explicit(&ev_pools[i], (uintptr_t)pool, memory_order_release);
        return 0;
    }
    /* no two threads put the same handle at once (it is created once): a slot won by the CAS is
     * this event's; the pool follows the key (a get in between sees "unknown", which callers
     * treat as "maybe any pool") */
    i = ev_slot_of(k);
    for (uint32_t n = 0; n < PA_ZE_EV_WINDOW; i = (i + 1) & (PA_ZE_EV_SLOTS - 1), n++) {
        uintptr_t cur = atomic_load_explicit(&ev_keys[i], memory_order_relaxed);
        if ((cur == 0 || cur == PA_ZE_TOMB) &&
            atomic_compare_exchange_strong_explicit(&ev_keys[i], &cur, k, memory_order_acq_rel, memory_order_relaxed)) {
            atomic_store_explicit(&ev_pools[i], (uintptr_t)pool, memory_order_release);
            atomic_fetch_or(&ev_used[i / 64], 1ull << (i % 64));
            return 0;
        }
    }
    return -1;
}

const void *pa_ze_evmap_get(const void *ev)
{
    uintptr_t k = (uintptr_t)ev;
    if (k <= PA_ZE_TOMB)
        return NULL;
    uint32_t i = ev_find(k);
    return i == UINT32_MAX ? NULL : (const void *)atomic_load_explicit(&ev_pools[i], memory_order_acquire);
}

/* Frees slot i, which held key k: its pool first (a get then sees "unknown"), then the key. */
static void ev_free_slot(uint32_t i, uintptr_t k)
{
    atomic_store_explicit(&ev_pools[i], 0, memory_order_release);
    if (!atomic_compare_exchange_strong(&ev_keys[i], &k, PA_ZE_TOMB))
        return;
    /* a put may take the slot between the two: it sets the bit after its key, so a key seen now
     * sets it again (sequentially consistent: one of the two sees the other) */
    atomic_fetch_and(&ev_used[i / 64], ~(1ull << (i % 64)));
    if (atomic_load(&ev_keys[i]) > PA_ZE_TOMB)
        atomic_fetch_or(&ev_used[i / 64], 1ull << (i % 64));
}

void pa_ze_evmap_del(const void *ev)
{
    uintptr_t k = (uintptr_t)ev;
    uint32_t i = k > PA_ZE_TOMB ? ev_find(k) : UINT32_MAX;
    if (i != UINT32_MAX)
        ev_free_slot(i, k);
}

uint32_t pa_ze_evmap_del_pool(const void *pool)
{
    uint32_t n = 0;
    for (uint32_t w = 0; pool && w < PA_ZE_EV_SLOTS / 64; w++) {
        for (uint64_t u = atomic_load_explicit(&ev_used[w], memory_order_acquire); u; u &= u - 1) {
            uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(u);
            if (atomic_load_explicit(&ev_pools[i], memory_order_relaxed) != (uintptr_t)pool)
                continue;
            uintptr_t k = atomic_load_explicit(&ev_keys[i], memory_order_acquire);
            if (k > PA_ZE_TOMB) {
                ev_free_slot(i, k);
                n++;
            }
        }
    }
    return n;
}
