/* hgtx.h - HGTX range-annotation API (NVTX-like): push/pop, start/end, marks, domains. */
#ifndef PROFAGENT_HGTX_H
#define PROFAGENT_HGTX_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Applications link libhgtx.so (pkg-config hgtx). Without the agent preloaded every
 * function is a no-op costing a few ns; with libprofagent.so preloaded the agent's
 * definitions of these same symbols take precedence and record the calls.
 * Names are copied when the call is made: the caller may free or reuse its buffer. */

/* Names (messages, domain names) longer than HGTX_MESSAGE_MAX bytes are cut to that length
 * and the record is flagged truncated; shorter names are stored byte-exact (any bytes but NUL).
 * Names up to 24 bytes (16 for start/end ranges) travel inside one 64-byte ring slot; longer
 * ones take ceil(len/64) more slots of the thread's ring (PROFAGENT_RING_SIZE; a name never
 * takes more than half the ring: with a ring smaller than 256 KiB it is cut further). */
#define HGTX_MESSAGE_MAX (128u * 1024u)

/* Push/pop stacks are per (thread, domain), as in NVTX: hgtxDomainRangePop(d) closes the
 * innermost range that d has open on the calling thread, whatever other domains pushed since;
 * levels and parents count only the ranges of the same domain. The level returned by
 * push/pop is exact for the default domain and the first 14 domains created; later domains
 * share one counter for the returned value (the recorded ranges stay exact per domain).
 *
 * Domain handles are only those returned by hgtxDomainCreateA(), until hgtxDomainDestroy().
 * Any other non-NULL handle (garbage, or destroyed: tracked for the first 4095 domains) is
 * counted as misuse ("bad domain handle" in the summary, SESSION_COUNTERS
 * hgtx_misuse_bad_domain) and the call acts on the default domain. */

typedef uint64_t hgtxRangeId_t;             /* 0 = invalid */
typedef struct hgtxDomainRegistration_st *hgtxDomainHandle_t; /* NULL = default domain */

/*! hgtxRangePushA() : opens a nested range on the calling thread.
 *  Returns the 0-based level of the new range, or a negative value on error. */
int hgtxRangePushA(const char *message);

/*! hgtxRangePop() : closes the innermost range of the calling thread.
 *  Returns the level of the closed range, or -1 when the stack was empty (counted as misuse). */
int hgtxRangePop(void);

/*! hgtxRangeStartA() : opens a range that any thread may end. Returns its id (> 0, opaque:
 *  pass it to hgtxRangeEnd as is), or 0 when not profiling. */
hgtxRangeId_t hgtxRangeStartA(const char *message);

/*! hgtxRangeEnd() : ends a range opened by hgtxRangeStartA(), on any thread. Unknown or
 *  already-ended ids are counted as misuse, never fatal. A range whose start or end record the
 *  agent dropped (a full ring) is counted as cut by a drop, not as misuse nor as left open. */
void hgtxRangeEnd(hgtxRangeId_t id);

/*! hgtxMarkA() : an instantaneous event. */
void hgtxMarkA(const char *message);

/*! hgtxDomainCreateA() : a named domain; its ranges are shown as "domain:range".
 *  Returns NULL when not profiling (NULL is accepted everywhere as the default domain). */
hgtxDomainHandle_t hgtxDomainCreateA(const char *name);
void hgtxDomainDestroy(hgtxDomainHandle_t domain);
int hgtxDomainRangePushA(hgtxDomainHandle_t domain, const char *message);
int hgtxDomainRangePop(hgtxDomainHandle_t domain);
hgtxRangeId_t hgtxDomainRangeStartA(hgtxDomainHandle_t domain, const char *message);
void hgtxDomainRangeEnd(hgtxDomainHandle_t domain, hgtxRangeId_t id);
void hgtxDomainMarkA(hgtxDomainHandle_t domain, const char *message);

/* Collective-library transfer stages (pccl_stage_sum, docs/collectives.md): a stage is a range
 * in the domain HGTX_PCCL_DOMAIN named "<stage>, ch:<channel>, RX" or "..., TX", pushed on the
 * thread doing the transfer inside the operator range that launched the collective kernel (the
 * report takes the stage's device from that range's kernels). */
#define HGTX_PCCL_DOMAIN "PCCL"

/*! hgtxPcclStageName() : writes the stage name "<stage>, ch:<channel>, RX|TX" (tx != 0: TX) to
 *  buf (sz bytes, NUL-terminated). Returns snprintf's result (>= sz: cut). */
static inline int hgtxPcclStageName(char *buf, size_t sz, const char *stage, unsigned channel, int tx)
{
    return snprintf(buf, sz, "%s, ch:%u, %s", stage, channel, tx ? "TX" : "RX");
}

#ifdef __cplusplus
}
#endif
#endif
