/* mem.h - device-memory source: hooks the Level Zero tracer calls for allocations and frees. */
#ifndef PA_MEM_H
#define PA_MEM_H

#include <stdint.h>

/*
 * Called from the epilogues of zeMemAllocDevice/Host/Shared and zeMemFree/zeMemFreeExt,
 * on the application thread that made the call. They capture the native call stack
 * (depth PROFAGENT_CALLSTACK_DEPTH, default 32; Python frames when the thread holds the
 * GIL) and push one ring record; no symbolization, no malloc, no locks. errno is preserved.
 */

/*! pa_mem_on_alloc() : one allocation attempt. t0_ns/t1_ns: call start/end (CLOCK_MONOTONIC
 *  ns); kind: ze_memory_type_t (1 host, 2 device, 3 shared); context/device: ze handles
 *  (device NULL for host allocations); size in bytes; ptr: the returned address (NULL when
 *  the call failed); ze_result: the call's ze_result_t (non-zero = failed, never counted). */
void pa_mem_on_alloc(uint64_t t0_ns, uint64_t t1_ns, uint32_t kind,
                     void *context, void *device, uint64_t size, void *ptr, int32_t ze_result);

/*! pa_mem_on_free() : one zeMemFree/zeMemFreeExt of `ptr` in `context`; ze_result as returned. */
void pa_mem_on_free(uint64_t t0_ns, uint64_t t1_ns, void *context, void *ptr, int32_t ze_result);

#endif
