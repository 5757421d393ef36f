/* pa_pcs.h - PC (EU-stall) sampling data shared by stages: ring payloads, IP -> kernel map, counts. */
#ifndef PA_PCS_H
#define PA_PCS_H

#include <stddef.h>
#include <stdint.h>

/*
 * The sampling source (sampling/) and the aggregator (agg/agg_pcs.c) exchange three ring
 * records, all written by one streamer reader thread per device, in this order on its ring:
 *
 *   PA_REC_PCS_DEVICE   once, when the device's streamer opened (or failed): pa_pcs_dev_t
 *                       followed by nreasons NUL-terminated names, then as many descriptions.
 *   PA_REC_PCS_KERNEL   a kernel created on that device, before any sample that may fall in it:
 *                       pa_pcs_kernel_t, then the name bytes, the file names (NUL-terminated,
 *                       nfiles of them) and nlines pa_pcs_line_t (offset order).
 *   PA_REC_PCS_SAMPLES  one decoded read: u.raw[0] = device index, raw[1] = nreasons,
 *                       raw[2] = reports read, raw[3] = dropped-data flag (the driver said
 *                       ZE_RESULT_WARNING_DROPPED_DATA); payload = n entries of
 *                       (1 + nreasons) uint32: IP (32-bit, bytes), then the count per reason.
 *
 * IPs are the driver's IP metric value << 3, masked to 32 bits (notes/eu-stall.md: PTI does the
 * same); kernel base addresses are masked the same way, so offset = ip - base.
 */

#define PA_PCS_MAX_REASONS 16u

/* Defaults and bounds of the sampling period (PROFAGENT_PC_SAMPLING_PERIOD_NS, Configure). */
#define PA_PCS_DEFAULT_PERIOD_NS 100000u      /* spec: "the default period of 100000 ns" */
#define PA_PCS_MIN_PERIOD_NS 1000u
#define PA_PCS_MAX_PERIOD_NS 1000000000u

enum pa_pcs_dev_state { PA_PCS_DEV_SAMPLING = 1, PA_PCS_DEV_UNSUPPORTED = 2, PA_PCS_DEV_FAILED = 3 };

typedef struct pa_pcs_dev {
    uint32_t device;       /* device index (enumeration order, as ZE_DEVICES) */
    uint32_t state;        /* enum pa_pcs_dev_state */
    uint32_t nreasons;     /* stall reasons (EVENT metrics after IP) */
    uint32_t period_ns;    /* sampling period the driver granted */
    uint32_t notify_every; /* notifyEveryNReports the driver granted */
    int32_t result;        /* ze_result_t of the failing call (state FAILED) */
} pa_pcs_dev_t;

typedef struct pa_pcs_kernel {
    uint64_t id;           /* per-process kernel id, 1.. (the PTI kernel handle) */
    uint32_t device;       /* device index */
    uint32_t base;         /* zexKernelGetBaseAddress, low 32 bits */
    uint32_t size;         /* bytes: native binary size (capped by the next kernel's base at lookup) */
    uint32_t name_len;
    uint32_t nfiles, nlines;
} pa_pcs_kernel_t;

typedef struct pa_pcs_line {
    uint32_t offset;       /* bytes from the kernel base */
    uint32_t line;         /* 1-based */
    uint32_t file;         /* index in the kernel's file names */
} pa_pcs_line_t;

/* ---- the IP -> kernel index and the online counts (agg and the PTI library) ---- */

typedef struct pa_pcs_kinfo {
    uint64_t id;
    uint32_t device, base, size, end;   /* end: base + size capped by the next kernel's base */
    char *name;                         /* owned */
    char **files; uint32_t nfiles;      /* owned */
    pa_pcs_line_t *lines; uint32_t nlines; /* owned, offset order */
    uint64_t samples;                   /* all reasons, mapped to this kernel */
    int shadowed;                       /* a newer kernel has the same base (memory reused) */
} pa_pcs_kinfo_t;

typedef struct pa_pcs_row {
    uint32_t kernel;                    /* index in pa_pcs_table_t.kernels */
    uint32_t offset;
    uint64_t counts[PA_PCS_MAX_REASONS];
} pa_pcs_row_t;

typedef struct pa_pcs_devstat {
    uint64_t samples;        /* every sample reported (mapped + unmapped) */
    uint64_t unmapped;       /* samples whose IP lay in no known kernel (dropped from the rows) */
    uint64_t reports;        /* raw reports read */
    uint64_t dropped_reads;  /* reads that returned ZE_RESULT_WARNING_DROPPED_DATA */
    uint64_t pcs;            /* distinct IPs (mapped instructions + distinct unmapped IPs) */
    uint64_t overflow;       /* samples not counted because the row budget ran out */
} pa_pcs_devstat_t;

#define PA_PCS_MAX_DEVICES 16u
#define PA_PCS_DEFAULT_MAX_ROWS (1u << 18)  /* ~112 bytes a row: bounded memory */

typedef struct pa_pcs_table {
    pa_pcs_kinfo_t *kernels; uint32_t nkernels, kcap;
    uint32_t *order; /* kernel indices sorted by (device, base) */
    /* (kernel index + 1) << 32 | offset -> row index + 1; open addressing */
    uint64_t *keys; uint32_t *vals; uint32_t map_cap, map_n;
    pa_pcs_row_t *rows; uint32_t nrows, rows_cap, max_rows;
    uint64_t *ukeys; uint32_t ucap, un;  /* distinct unmapped (device << 32 | ip) + 1, capped */
    uint32_t nreasons[PA_PCS_MAX_DEVICES];
    pa_pcs_devstat_t dev[PA_PCS_MAX_DEVICES];
} pa_pcs_table_t;

/*! pa_pcs_table_init() : empty table; max_rows 0 = PA_PCS_DEFAULT_MAX_ROWS. */
void pa_pcs_table_init(pa_pcs_table_t *t, uint32_t max_rows);
void pa_pcs_table_free(pa_pcs_table_t *t);

/*! pa_pcs_table_add_kernel() : adds a kernel (name/files/lines copied); returns its index, or
 *  -1 when out of memory. A later kernel at the same base of the same device takes its place for
 *  later samples (memory reused after zeKernelDestroy). */
long pa_pcs_table_add_kernel(pa_pcs_table_t *t, const pa_pcs_kernel_t *k, const char *name,
                             const char *const *files, const pa_pcs_line_t *lines);

/*! pa_pcs_table_add_payload() : pa_pcs_table_add_kernel() from a PA_REC_PCS_KERNEL payload of
 *  `len` bytes (truncated payloads keep what is whole). */
long pa_pcs_table_add_kernel_payload(pa_pcs_table_t *t, const uint8_t *payload, size_t len);

/*! pa_pcs_table_lookup() : kernel index of `ip` on `device`, -1 when in none. O(log kernels). */
long pa_pcs_table_lookup(const pa_pcs_table_t *t, uint32_t device, uint32_t ip);

/*! pa_pcs_table_add_samples() : counts `n` entries of (1 + nreasons) uint32 (a SAMPLES payload)
 *  of `device`. */
void pa_pcs_table_add_samples(pa_pcs_table_t *t, uint32_t device, uint32_t nreasons, const uint32_t *entries,
                              size_t n);

/*! pa_pcs_kernel_line() : source line of `offset` in kernel `k` (the last line entry at or
 *  before it); 0 and *file NULL when none. */
uint32_t pa_pcs_kernel_line(const pa_pcs_kinfo_t *k, uint32_t offset, const char **file);

/*! pa_pcs_kernel_payload() : serializes a kernel into buf (PA_REC_PCS_KERNEL layout); returns
 *  the bytes needed (call with buf NULL to size it). */
size_t pa_pcs_kernel_payload(const pa_pcs_kernel_t *k, const char *name, const char *const *files,
                             const pa_pcs_line_t *lines, uint8_t *buf, size_t cap);

#endif /* PA_PCS_H */
