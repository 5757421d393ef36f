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

/* Longest wait (ns) of a memory record for room in a full ring (mem.c mem_emit). */
#define PA_MEM_WAIT_NS 200000000ull

/*! pa_mem_dropped_count() : memory records lost so far (ring still full after the bounded
 *  wait, or no ring); read by the aggregator at exit. */
uint64_t pa_mem_dropped_count(void);

/* ---- internal to the mem source (mem.c, mem_python.c, mem_dl.c) ---- */

/*! pa_mem_emit() : pa_emit() for memory records: on a full ring waits (spin, then yield, no
 *  lock) at most PA_MEM_WAIT_NS for the aggregator to make room; a record still refused is
 *  counted (pa_mem_dropped_count). A thread whose last wait timed out does not wait again
 *  until its ring has room. */
struct pa_record;
void pa_mem_emit(const struct pa_record *rec, const void *payload, uint32_t len);

/*! pa_mem_dl_gen_now() : the module-unload generation (number of dlclose calls that began so
 *  far); stored with each stack (pa_mem_stack_hdr_t.gen). One relaxed load. */
uint32_t pa_mem_dl_gen_now(void);

/*! pa_mem_python_init() : looks up the CPython C API with dlsym (slow path, once); no-op when
 *  CPython is not in the process. */
void pa_mem_python_init(void);

/*! pa_mem_python_capture() : when the calling thread holds the GIL, writes its Python frames
 *  innermost first as "file\x1f" "function\x1f" "line\n" into buf[cap] and their count into
 *  *nframes, and the count of outer frames that did not fit (at most PROFAGENT_CALLSTACK_DEPTH
 *  frames are written) into *omitted. Returns the bytes written (0 when no CPython, no GIL, or no frame). No malloc of
 *  the agent's own; names of a code object are looked up once and cached per thread. */
uint32_t pa_mem_python_capture(char *buf, uint32_t cap, uint32_t *nframes, uint32_t *omitted);

/*! pa_mem_unw_redirect() : points libunwind's own calls of pipe2/read/write/close/syscall (the object
 *  holding address `inside`, loaded RTLD_LOCAL) at fd-less replacements (mem_unw.c), before its
 *  first walk, so its address validation keeps no pipe in the application's fd space. Returns
 *  the number of slots redirected (5 for libunwind 1.6: one per function), 0 when none was found
 *  (the caller then does not use libunwind), -1 when no loaded object holds `inside`. */
int pa_mem_unw_redirect(const void *inside);

#endif
