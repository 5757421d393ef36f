/* memory.c - device/host/shared allocations backed by host memory, with per-device accounting. */
#include <stdlib.h>
#include <string.h>

#include "pa_sd_internal.h"

typedef struct pa_sd_alloc {
    uintptr_t base;
    size_t size;
    ze_memory_type_t type;
    pa_sd_device *device; /* NULL for host allocations */
    uint64_t id;
    const void *context;  /* owning context: zeMemFree through another one is rejected */
} pa_sd_alloc;

/* Sorted by base so interior pointers resolve by binary search; allocation is not a hot path. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pa_sd_alloc *g_allocs;
static size_t g_n, g_cap;
static uint64_t g_next_id = 1;

/* Index of the last allocation with base <= p, or -1. Caller holds g_mu. */
static long find_floor(uintptr_t p)
{
    long lo = 0, hi = (long)g_n - 1, ans = -1;
    while (lo <= hi) {
        long mid = (lo + hi) / 2;
        if (g_allocs[mid].base <= p) {
            ans = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return ans;
}

static long find_containing(const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    long i = find_floor(p);
    if (i >= 0 && p < g_allocs[i].base + (g_allocs[i].size ? g_allocs[i].size : 1))
        return i;
    return -1;
}

int pa_sd_mem_lookup(const void *ptr, void **base, size_t *size, ze_memory_type_t *type, pa_sd_device **dev)
{
    int found = 0;
    pthread_mutex_lock(&g_mu);
    long i = find_containing(ptr);
    if (i >= 0) {
        found = 1;
        if (base) *base = (void *)g_allocs[i].base;
        if (size) *size = g_allocs[i].size;
        if (type) *type = g_allocs[i].type;
        if (dev) *dev = g_allocs[i].device;
    }
    pthread_mutex_unlock(&g_mu);
    return found;
}

static int table_insert(const pa_sd_alloc *a)
{
    if (g_n == g_cap) {
        size_t nc = g_cap ? g_cap * 2 : 256;
        pa_sd_alloc *na = realloc(g_allocs, nc * sizeof *na);
        if (!na)
            return -1;
        g_allocs = na;
        g_cap = nc;
    }
    long i = find_floor(a->base) + 1;
    memmove(&g_allocs[i + 1], &g_allocs[i], (g_n - (size_t)i) * sizeof *a);
    g_allocs[i] = *a;
    g_n++;
    return 0;
}

/* Reserve bytes on dev; fails when the device's memory would be exceeded. */
static int reserve(pa_sd_device *dev, size_t size)
{
    uint64_t total = pa_sd_config_get()->mem_bytes;
    uint64_t used = atomic_load(&dev->mem_used);
    do {
        if (size > total || used > total - size)
            return -1;
    } while (!atomic_compare_exchange_weak(&dev->mem_used, &used, used + size));
    return 0;
}

static ze_result_t mem_alloc(ze_context_handle_t hc, ze_memory_type_t type, pa_sd_device *dev, size_t size,
                             size_t alignment, void **pptr)
{
    if (size == 0)
        return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    if (alignment & (alignment - 1))
        return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
    if (dev && reserve(dev, size) != 0)
        return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    size_t align = alignment < 64 ? 64 : alignment;
    size_t rounded = (size + align - 1) / align * align;
    void *p = aligned_alloc(align, rounded);
    if (p) {
        /* Fresh device memory reads as zeros, like freshly mapped pages on real drivers. */
        memset(p, 0, rounded);
        pthread_mutex_lock(&g_mu);
        pa_sd_alloc a = {(uintptr_t)p, size, type, dev, g_next_id++, hc};
        int rc = table_insert(&a);
        pthread_mutex_unlock(&g_mu);
        if (rc == 0) {
            *pptr = p;
            return ZE_RESULT_SUCCESS;
        }
        free(p);
    }
    if (dev)
        atomic_fetch_sub(&dev->mem_used, size);
    return dev ? ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
}

ze_result_t pa_sd_zeMemAllocDevice(ze_context_handle_t hc, const ze_device_mem_alloc_desc_t *desc,
                                size_t size, size_t alignment, ze_device_handle_t hd, void **pptr)
{
    pa_sd_device *dev = pa_sd_device_of(hd);
    if (!pa_sd_context_of(hc) || !dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !pptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return mem_alloc(hc, ZE_MEMORY_TYPE_DEVICE, dev, size, alignment, pptr);
}

ze_result_t pa_sd_zeMemAllocShared(ze_context_handle_t hc, const ze_device_mem_alloc_desc_t *ddesc,
                                const ze_host_mem_alloc_desc_t *hdesc, size_t size, size_t alignment,
                                ze_device_handle_t hd, void **pptr)
{
    if (!pa_sd_context_of(hc))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (hd && !pa_sd_device_of(hd))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!ddesc || !hdesc || !pptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return mem_alloc(hc, ZE_MEMORY_TYPE_SHARED, pa_sd_device_of(hd), size, alignment, pptr);
}

ze_result_t pa_sd_zeMemAllocHost(ze_context_handle_t hc, const ze_host_mem_alloc_desc_t *desc,
                              size_t size, size_t alignment, void **pptr)
{
    if (!pa_sd_context_of(hc))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !pptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return mem_alloc(hc, ZE_MEMORY_TYPE_HOST, NULL, size, alignment, pptr);
}

ze_result_t pa_sd_zeMemFree(ze_context_handle_t hc, void *ptr)
{
    if (!pa_sd_context_of(hc))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!ptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    pthread_mutex_lock(&g_mu);
    long i = find_floor((uintptr_t)ptr);
    if (i < 0 || g_allocs[i].base != (uintptr_t)ptr || g_allocs[i].context != (const void *)hc) {
        pthread_mutex_unlock(&g_mu);
        return ZE_RESULT_ERROR_INVALID_ARGUMENT; /* not the start of a live allocation of hc */
    }
    pa_sd_alloc a = g_allocs[i];
    memmove(&g_allocs[i], &g_allocs[i + 1], (g_n - (size_t)i - 1) * sizeof a);
    g_n--;
    pthread_mutex_unlock(&g_mu);
    if (a.device)
        atomic_fetch_sub(&a.device->mem_used, a.size);
    free(ptr);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeMemFreeExt(ze_context_handle_t hc, const ze_memory_free_ext_desc_t *desc, void *ptr)
{
    if (!desc)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return pa_sd_zeMemFree(hc, ptr);
}

/* Unknown pointers are not an error here: the spec answers ZE_MEMORY_TYPE_UNKNOWN. */
ze_result_t pa_sd_zeMemGetAllocProperties(ze_context_handle_t hc, const void *ptr,
                                       ze_memory_allocation_properties_t *props,
                                       ze_device_handle_t *phDevice)
{
    if (!pa_sd_context_of(hc))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!ptr || !props)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    props->type = ZE_MEMORY_TYPE_UNKNOWN;
    props->id = 0;
    props->pageSize = 0;
    if (phDevice)
        *phDevice = NULL;
    pthread_mutex_lock(&g_mu);
    long i = find_containing(ptr);
    if (i >= 0) {
        props->type = g_allocs[i].type;
        props->id = g_allocs[i].id;
        props->pageSize = 4096;
        if (phDevice)
            *phDevice = (ze_device_handle_t)g_allocs[i].device;
    }
    pthread_mutex_unlock(&g_mu);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeMemGetAddressRange(ze_context_handle_t hc, const void *ptr, void **pBase,
                                    size_t *pSize)
{
    if (!pa_sd_context_of(hc))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!ptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    void *base;
    size_t size;
    if (!pa_sd_mem_lookup(ptr, &base, &size, NULL, NULL))
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (pBase)
        *pBase = base;
    if (pSize)
        *pSize = size;
    return ZE_RESULT_SUCCESS;
}

/* The allocation table lock is held across fork so the child never inherits it locked. */
void pa_sd_mem_atfork(int phase)
{
    if (phase == PA_SD_FORK_PREPARE)
        pthread_mutex_lock(&g_mu);
    else
        pthread_mutex_unlock(&g_mu);
}
