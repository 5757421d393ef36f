/* pa_record.h - the fixed-size records exchanged between stages (collector -> agg -> writer). */
#ifndef PA_RECORD_H
#define PA_RECORD_H

#include <stddef.h>
#include <stdint.h>

/*
 * Two families of 64-byte records share one layout:
 *
 *  - ring records  (PA_REC_*): written by application threads into their own
 *    single-producer ring (common/pa_ring.h), read by the aggregator.
 *  - spool records (PA_SP_*):  written by the aggregator into the zstd spool
 *    (agg/spool.h) after it resolved strings and pairs (push/pop -> range),
 *    read back by the writer at exit; one spool record becomes one DB row.
 *
 * A record may carry bytes (a name, a stack) in the slots that follow it:
 * `nslots` counts the header slot plus the continuation slots, `len` is the
 * number of payload bytes stored in the continuation slots (raw 64-byte
 * chunks, no header, the last one zero-padded). Records without payload have
 * nslots == 1 and len == 0.
 *
 * All times are ns on CLOCK_MONOTONIC (pa_clock_ns() in pa_clock.h) unless a
 * field says "ticks". Exception in the ring only: t0 and t1 of the kinds pa_record_stamped()
 * names are stamps (pa_clock_stamp(): ns, or PA_CLOCK_TICK | raw TSC), which pa_ring_drain()
 * converts to ns before its sink sees the record: consumers of drained records (agg/, spool,
 * writer) only ever see ns.
 */

#define PA_SLOT_SIZE 64u

/* Ring record kinds (producer -> aggregator). Ranges 0x0100.. are reserved per source. */
enum pa_rec_kind {
    PA_REC_NONE = 0,
    /* thread lifecycle, 0x01.. */
    PA_REC_THREAD_NAME = 0x01,   /* payload: thread name bytes */
    PA_REC_THREAD_EXIT = 0x02,   /* t0: exit time; last record of a ring */
    /* HGTX, 0x10.. ; names travel as payload bytes */
    PA_REC_HGTX_PUSH = 0x10,     /* t0, u.hgtx.domain, u.hgtx.level (per domain), name: payload or inline */
    PA_REC_HGTX_POP = 0x11,      /* t0, u.hgtx.domain; u.hgtx.level = level of the closed range (-1: empty stack) */
    PA_REC_HGTX_START = 0x12,    /* t0, u.hgtx.id, u.hgtx.domain, name: payload or inline */
    PA_REC_HGTX_END = 0x13,      /* t0, u.hgtx.id (PA_HGTX_ID_LOST set: its start was dropped) */
    PA_REC_HGTX_MARK = 0x14,     /* t0, u.hgtx.domain, name: payload or inline */
    PA_REC_HGTX_DOMAIN = 0x15,   /* u.hgtx.domain = new id, name: payload or inline */
    PA_REC_HGTX_DOMAIN_DESTROY = 0x16,
    /* OS runtime, 0x20.. */
    PA_REC_OSRT = 0x20,          /* t0, t1, u.osrt */
    /* One range per source (common/pa_source.h): a source emits kinds of its own range only;
     * the kinds of ze and mem are defined in their own sections below, pcsamp/hwctr/itt by
     * their sources. 0xf0..0xff: free for the next source. */
    PA_REC_HGTX_FIRST = 0x10,
    PA_REC_HGTX_LAST = 0x1f,
    PA_REC_OSRT_FIRST = 0x20,
    PA_REC_OSRT_LAST = 0x3f,
    PA_REC_ZE_FIRST = 0x40,
    PA_REC_ZE_LAST = 0x7f,
    PA_REC_MEM_FIRST = 0x80,
    PA_REC_MEM_LAST = 0x9f,
    PA_REC_PCSAMP_FIRST = 0xa0,  /* sampling/: EU-stall (PC) samples, kernel code maps */
    PA_REC_PCSAMP_LAST = 0xbf,
    PA_REC_HWCTR_FIRST = 0xc0,   /* hwcounters/: libpfm4 host counters, device metric streams */
    PA_REC_HWCTR_LAST = 0xdf,
    PA_REC_ITT_FIRST = 0xe0,     /* collector/: ITT tasks, frames, markers */
    PA_REC_ITT_LAST = 0xef,
    /* Level Zero (collector/ze*.c) */
    PA_REC_ZE_API = 0x40,        /* t0, t1 of one ze call, u.ze */
    PA_REC_ZE_OP = 0x41,         /* t0, t1 device start/end (host ns); payload = pa_ze_op_t + kernel name */
    PA_REC_ZE_DEVICE = 0x42,     /* payload = pa_ze_device_t */
    PA_REC_ZE_COUNTS = 0x43,     /* at detach: u.raw[0] ops not collected, raw[1] in-flight table full */
    /* ITT collector (collector/itt*.c): its tasks, frames and marks travel as HGTX records */
    PA_REC_ITT_COUNTS = 0xe0,    /* at exit: payload = "name value\n" lines (unmapped calls, misuse) */
    /* device memory (collector/mem.c) */
    PA_REC_MEM_ALLOC = 0x80,     /* t0, t1, u.mem; payload = pa_mem_stack_hdr_t + frames (common/pa_callstack.h) */
    PA_REC_MEM_FREE = 0x81,      /* t0, t1, u.mem (size 0, kind 0) */
    PA_REC_MEM_MODULE = 0x82,    /* dlclose unloaded a module (collector/mem_dl.c): t0; u.raw = {unload
                                    generation, load bias, lowest, end address}; payload = its path */
    /* PC sampling (sampling/, written by the streamer reader threads): layouts in common/pa_pcs.h */
    PA_REC_PCS_DEVICE = 0xa0,    /* t0; payload = pa_pcs_dev_t + reason names + descriptions */
    PA_REC_PCS_KERNEL = 0xa1,    /* t0 = creation; payload = pa_pcs_kernel_t + name + files + lines */
    PA_REC_PCS_SAMPLES = 0xa2,   /* t0 = read time; u.raw = {device, nreasons, reports, dropped}; entries */
    /* host counters (hwcounters/, layouts in common/pa_hostctr.h): first half of the hwctr range */
    PA_REC_HC_FIRST = 0xc0,
    PA_REC_HC_LAST = 0xcf,
    PA_REC_HC_SAMPLE = 0xc0,     /* group read just before the HGTX record with the same t0 on this
                                    thread (or at thread exit, PA_RF_HC_EXIT): see pa_hc_sample_t */
    PA_REC_HC_EVENT = 0xc1,      /* outcome of one asked/substituted event: u.raw see pa_hostctr.h;
                                    payload = "name\0asked\0encoding\0detail" */
    PA_REC_HC_THREAD = 0xc2,     /* a thread's open attempt: u.raw[0] status, raw[1] errno */
    /* device metric streams (hwcounters/devmetrics*.c): second half of the hwctr range */
    PA_REC_DM_FIRST = 0xd0,
    PA_REC_DM_LAST = 0xdf,
    PA_REC_DM_DEVICE = 0xd0,     /* one device's streamer: u.raw = {device, state (PA_DM_*), period ns,
                                    ze_result}; payload = group "\0" then nmetrics x name "\0" unit "\0" */
    PA_REC_DM_SAMPLES = 0xd1,    /* u.raw = {device, nmetrics, nsamples, dropped reads}; payload =
                                    nsamples x {start ns, duration ns (uint64), nmetrics doubles} */
    PA_REC_DM_PEAKS = 0xd2,      /* payload = pa_dm_peaks_t (common/pa_devmetrics.h) */
    PA_REC_DM_SYSMAN = 0xd3,     /* payload = pa_dm_sysman_t: one sysman reading of a device */
};

/* PA_REC_DM_DEVICE states */
enum pa_dm_state { PA_DM_STREAMING = 1, PA_DM_NO_GROUP = 2, PA_DM_FAILED = 3 };

/* Spool record kinds (aggregator -> writer). */
enum pa_sp_kind {
    PA_SP_NONE = 0,
    PA_SP_STRING = 0x1001,       /* u.str.id; payload = bytes (exact, may hold NUL and 0xFF) */
    PA_SP_THREAD = 0x1002,       /* tid, t0 first event, t1 last event, u.thread */
    PA_SP_HGTX_RANGE = 0x1010,   /* t0 start, t1 end, tid = starting thread, u.range */
    PA_SP_HGTX_MARK = 0x1011,    /* t0, tid, u.range.name_id, u.range.domain_id */
    PA_SP_HGTX_ASSOC = 0x1012,   /* range -> device op (agg/agg_proj.c): u.raw[0] range_id,
                                    raw[1] op id (1-based order of PA_SP_ZE_OP in the spool),
                                    raw[2] how: 0 launched in the range, 1 through a graph
                                    (regular list recorded in it), 2 graph executed in it */
    PA_SP_OSRT = 0x1020,         /* t0, t1, tid, u.osrt; u.osrt.pad = STRING id of the function
                                    name (0: the writer names it from u.osrt.func) */
    PA_SP_ZE_FIRST = 0x1040,
    PA_SP_ZE_LAST = 0x107f,
    PA_SP_ZE_API = 0x1040,       /* t0, t1, tid, u.ze (api = STRING id of the API name) */
    PA_SP_ZE_OP = 0x1041,        /* t0, t1, tid = launching thread; payload = pa_ze_op_t (name_ids set) */
    PA_SP_ZE_DEVICE = 0x1042,    /* payload = pa_ze_device_t */
    PA_SP_ZE_COUNTS = 0x1043,    /* u.raw[0] uncollected ops, raw[1] in-flight table full; payload
                                    (detach's): clock-pair error ns, contexts' lost ops, full-ring
                                    waits, ns, given up, capture lists submitted */
    PA_SP_MEM_FIRST = 0x1080,
    PA_SP_MEM_LAST = 0x109f,
    /* spool kinds of the sources to come mirror their ring ranges (0x1000 | ring range) */
    PA_SP_PCSAMP_FIRST = 0x10a0,
    PA_SP_PCSAMP_LAST = 0x10bf,
    PA_SP_HWCTR_FIRST = 0x10c0,
    PA_SP_HWCTR_LAST = 0x10df,
    PA_SP_ITT_FIRST = 0x10e0,
    PA_SP_ITT_LAST = 0x10ef,
    PA_SP_ITT_COUNTS = 0x10e0,   /* payload of PA_REC_ITT_COUNTS as is -> SESSION_COUNTERS itt_* */
    /* device memory (agg/agg_mem.c): see pa_mem_sp_t in common/pa_callstack.h */
    PA_SP_MEM_ALLOC = 0x1080,    /* t0, t1, tid, u.mem; payload = pa_mem_sp_t */
    PA_SP_MEM_FREE = 0x1081,     /* t0, t1, tid, u.mem (size = matched allocation's); payload = pa_mem_sp_t */
    PA_SP_MEM_FRAME = 0x1082,    /* one frame of a call chain: u.raw = {chain id, depth, frame STRING id,
                                    module STRING id << 32 | function STRING id} */
    PA_SP_MEM_INFO = 0x1083,     /* u.raw = {rules STRING id, exe STRING id, failed allocs, unknown frees} */
    /* PC sampling (agg/agg_pcs.c): written at the end, from the online counts */
    PA_SP_PCS_DEVICE = 0x10a0,   /* payload = pa_pcs_dev_t + names + descriptions (as the ring record);
                                    u.raw = {samples, unmapped, reports, dropped reads} */
    PA_SP_PCS_KERNEL = 0x10a1,   /* payload as PA_REC_PCS_KERNEL; u.raw[0] = samples mapped to it,
                                    raw[1] = STRING id of the name */
    PA_SP_PCS_INSTR = 0x10a2,    /* u.raw[0] kernel id, raw[1] offset, raw[2] STRING id of the source
                                    file (0: none), raw[3] line; payload = nreasons uint64 counts */
    PA_SP_PCS_COUNTS = 0x10a3,   /* u.raw[0] device, raw[1] distinct IPs, raw[2] samples over the row
                                    budget (not counted per instruction), raw[3] first read ns */
    PA_SP_MEM_COUNTS = 0x1084,   /* u.raw[0] = memory records lost by the collector (ring full after
                                    the bounded wait, no ring) */
    /* host counters (agg/agg_hc.c -> writer/writer_hc.c), layouts in common/pa_hostctr.h */
    PA_SP_HC_FIRST = 0x10c0,
    PA_SP_HC_LAST = 0x10cf,
    PA_SP_HC_EVENT = 0x10c0,     /* one event outcome: u.raw as PA_REC_HC_EVENT, t0 = asked STRING id,
                                    t1 = encoding STRING id, tid = detail STRING id */
    PA_SP_HC_RANGE = 0x10c1,     /* one range's deltas: u.raw[0] range id, raw[1] time enabled, raw[2]
                                    time running (ns); payload = n x {scaled, raw} uint64 pairs */
    PA_SP_HC_THREAD = 0x10c2,    /* a thread's totals: tid, t0 = time enabled, t1 = time running;
                                    u.raw[0] = PA_RF_HC_EXIT when read at its exit; payload = n x
                                    {scaled, raw} uint64 pairs */
    /* device metric streams: the ring records as they are (agg passes them through) */
    PA_SP_DM_FIRST = 0x10d0,
    PA_SP_DM_LAST = 0x10df,
    PA_SP_DM_DEVICE = 0x10d0,    /* as PA_REC_DM_DEVICE */
    PA_SP_DM_SAMPLES = 0x10d1,   /* as PA_REC_DM_SAMPLES */
    PA_SP_DM_PEAKS = 0x10d2,     /* as PA_REC_DM_PEAKS */
    PA_SP_DM_SYSMAN = 0x10d3,    /* as PA_REC_DM_SYSMAN */
    PA_SP_HC_COUNTS = 0x10c3,    /* u.raw = {threads opened, threads failed, samples unmatched,
                                    ranges without counters} */
};

/* pa_record_t.flags */
#define PA_RF_UNTERMINATED 0x0001u  /* PA_SP_HGTX_RANGE: still open at exit; t1 = session end */
#define PA_RF_STARTEND     0x0002u  /* PA_SP_HGTX_RANGE: start/end style (else push/pop) */
#define PA_RF_TRUNCATED    0x0004u  /* payload was cut to fit (len is what was kept) */
#define PA_RF_INLINE       0x0008u  /* HGTX ring records: the name is inside the header slot at
                                       pa_hgtx_inline_off(kind), PA_RF_INLINE_LEN(flags) bytes;
                                       len == 0, nslots == 1 (a short push costs one slot) */
#define PA_RF_BAD_DOMAIN   0x0010u  /* HGTX ring records: the domain handle was never returned by
                                       hgtxDomainCreateA or was destroyed; domain = 0 (misuse) */
#define PA_RF_INLINE_LEN(f) (((f) >> 16) & 0xffu)  /* inline name bytes (flags bits 16..23) */

/* OS runtime functions (PA_REC_OSRT u.osrt.func); names in pa_osrt_name(). */
enum pa_osrt_func {
    PA_OSRT_PTHREAD_COND_WAIT = 1, PA_OSRT_PTHREAD_COND_TIMEDWAIT, PA_OSRT_PTHREAD_MUTEX_LOCK,
    PA_OSRT_PTHREAD_JOIN, PA_OSRT_POLL, PA_OSRT_PPOLL, PA_OSRT_SELECT, PA_OSRT_PSELECT,
    PA_OSRT_EPOLL_WAIT, PA_OSRT_EPOLL_PWAIT, PA_OSRT_NANOSLEEP, PA_OSRT_CLOCK_NANOSLEEP,
    PA_OSRT_USLEEP, PA_OSRT_SLEEP, PA_OSRT_SEM_WAIT, PA_OSRT_SEM_TIMEDWAIT,
    PA_OSRT_READ, PA_OSRT_WRITE, PA_OSRT_OPEN, PA_OSRT_WAITPID, PA_OSRT_PTHREAD_RWLOCK_RDLOCK,
    PA_OSRT_PTHREAD_RWLOCK_WRLOCK, PA_OSRT_PTHREAD_BARRIER_WAIT,
    PA_OSRT_COUNT
};

typedef struct pa_record {
    uint16_t kind;    /* enum pa_rec_kind or enum pa_sp_kind */
    uint16_t nslots;  /* 1 + continuation slots */
    uint32_t len;     /* payload bytes in continuation slots */
    uint32_t tid;     /* OS thread id (gettid) of the producing / owning thread */
    uint32_t flags;   /* PA_RF_* */
    uint64_t t0;      /* ns */
    uint64_t t1;      /* ns; 0 when the record is an instant */
    union {
        uint64_t raw[4];
        /* HGTX ring records; with PA_RF_INLINE the name sits in the header (pa_hgtx_inline_off) */
        struct { uint32_t domain; int32_t level; uint64_t id; uint8_t text[16]; } hgtx;
        struct { uint32_t func; int32_t ret; int32_t err; uint32_t pad; uint64_t aux[2]; } osrt;
        struct { uint64_t id; uint64_t pad[3]; } str;
        struct {
            uint32_t name_id;    /* STRING id of the range name (domain not included) */
            uint32_t domain_id;  /* STRING id of the domain name, 0 = none */
            uint32_t range_id;   /* unique per session, > 0 */
            uint32_t parent_id;  /* enclosing push/pop range, 0 = none */
            int32_t level;       /* push/pop stack level, 0 = outermost; -1 for start/end */
            uint32_t end_tid;    /* thread that ended it (start/end may differ) */
            uint64_t pad;
        } range;
        struct { uint64_t drops; uint32_t name_id; uint32_t pad; uint64_t records; uint64_t pad2; } thread;
        /* PA_REC_ZE_API: api = enum pa_ze_api_id (common/pa_ze_api_ids.h); PA_SP_ZE_API: STRING id.
         * aux (ring): regular-list serial / ops per execute, see api_aux() in collector/ze_api.c */
        struct { uint64_t corr_id; uint32_t api; int32_t result; uint64_t aux[2]; } ze;
        /* PA_REC_MEM_* / PA_SP_MEM_*: kind = ze_memory_type_t, result = ze_result_t */
        struct { uint64_t ptr; uint64_t size; uint64_t context; uint32_t kind; int32_t result; } mem;
    } u;
} pa_record_t;

_Static_assert(sizeof(pa_record_t) == PA_SLOT_SIZE, "pa_record_t must be one 64-byte slot");

/* Level Zero device operation (payload of PA_REC_ZE_OP / PA_SP_ZE_OP). Ring: the kernel
 * name bytes follow the struct (name_len of them); spool: name_id/api_name_id are STRING ids. */
/* PA_ZE_OP_BARRIER: zeCommandListAppendBarrier / AppendMemoryRangesBarrier executed on the device
 * (as unitrace records them); not a kernel, copy or fill: the reports listing those leave it out */
enum pa_ze_op_kind { PA_ZE_OP_KERNEL = 1, PA_ZE_OP_COPY = 2, PA_ZE_OP_FILL = 3, PA_ZE_OP_BARRIER = 4 };
enum pa_ze_mem_kind { PA_ZE_MEM_UNKNOWN = 0, PA_ZE_MEM_HOST = 1, PA_ZE_MEM_DEVICE = 2,
                      PA_ZE_MEM_SHARED = 3, PA_ZE_MEM_PAGEABLE = 4 };
typedef struct pa_ze_op {
    uint64_t corr_id;            /* of the launching call (append, or execute for regular lists) */
    uint64_t api_t0, api_t1;     /* that call's start/end, ns */
    uint64_t context, queue;     /* handles (queue: command queue, or the immediate list) */
    uint64_t graph_id;           /* regular command list handle, 0 = immediate */
    uint64_t bytes;              /* copies/fills */
    uint32_t kind;               /* enum pa_ze_op_kind */
    uint32_t api;                /* ring: enum pa_ze_api_id; spool: STRING id of the API name */
    uint32_t device;             /* device index (enumeration order), UINT32_MAX = unknown */
    uint32_t engine;             /* queue ordinal << 16 | queue index, UINT32_MAX = unknown */
    uint32_t node_id;            /* append index in the regular list */
    uint32_t name_id;            /* spool: STRING id of the mangled kernel name (0: not a kernel) */
    uint32_t grid[3], block[3];  /* group count / group size, 0 = unknown */
    uint8_t src_kind, dst_kind;  /* enum pa_ze_mem_kind */
    uint16_t name_len;           /* ring: kernel name bytes after the struct */
    uint32_t pad0;
    uint64_t append_corr;        /* regular lists: corr id of the append call (graph node), else 0 */
    uint32_t slm_static;         /* kernels: ze_kernel_properties_t.localMemSize, bytes */
    uint32_t slm_dynamic;        /* kernels: local-memory arguments (zeKernelSetArgumentValue with a
                                    NULL value: size bytes of shared local memory), summed at append */
} pa_ze_op_t;
_Static_assert(sizeof(pa_ze_op_t) == 128, "pa_ze_op_t is two slots");

/* Level Zero device attributes (payload of PA_REC_ZE_DEVICE / PA_SP_ZE_DEVICE). */
typedef struct pa_ze_device {
    uint32_t index, cc_major, cc_minor, ce_count, cu_count; /* cu_count: XVE (EU) count */
    uint32_t simd_width;         /* physicalEUSimdWidth, 0 = unknown */
    uint64_t total_mem, cu_clock_hz, mem_clock_hz, timer_hz;
    char name[256];
    char uuid[40];               /* hex */
    char pci[24];                /* "dddd:bb:dd.f" or "-" */
    uint32_t mem_bus_bits;       /* widest memory's maxBusWidth (bits), 0 = unknown */
    uint32_t pad;
} pa_ze_device_t;

/* A start/end id whose start record was refused by a full ring (collector/hgtx.c): its end is
 * a consequence of the drop, not the end of an unknown id. Bit 63 clear: ITT keys set it. */
#define PA_HGTX_ID_LOST (1ull << 62)
static inline int pa_hgtx_id_lost(uint64_t id) { return (id >> 62) == 1; }

/*! pa_hgtx_inline_off() : byte offset in the 64-byte header where an inline HGTX name starts;
 *  PA_SLOT_SIZE - offset is its capacity: 24 bytes (u.hgtx.id + text) for kinds without an id
 *  (push, mark, domain), 16 (u.hgtx.text) for PA_REC_HGTX_START, which needs u.hgtx.id. */
static inline uint32_t pa_hgtx_inline_off(uint16_t kind)
{
    return kind == PA_REC_HGTX_START ? (uint32_t)offsetof(pa_record_t, u.hgtx.text)
                                     : (uint32_t)offsetof(pa_record_t, u.hgtx.id);
}

/*! pa_record_stamped() : 1 for the ring kinds whose t0/t1 may be TSC stamps (the hot paths:
 *  a ze API call, an HGTX push or pop); see pa_clock_stamp() in pa_clock.h. */
static inline int pa_record_stamped(uint16_t kind)
{
    return kind == PA_REC_ZE_API || kind == PA_REC_HGTX_PUSH || kind == PA_REC_HGTX_POP;
}

/*! pa_record_slots() : slots needed for a record carrying `len` payload bytes. */
static inline uint32_t pa_record_slots(uint32_t len)
{
    return 1u + (len + PA_SLOT_SIZE - 1u) / PA_SLOT_SIZE;
}

#endif /* PA_RECORD_H */
