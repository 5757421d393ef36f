/* pa_devmetrics.h - payloads of the device metric source's records (PA_REC_DM_*, PA_SP_DM_*). */
#ifndef PA_DEVMETRICS_REC_H
#define PA_DEVMETRICS_REC_H

#include <stdint.h>

/* PA_REC_DM_PEAKS payload: one device's properties the utilization peaks are computed from
 * (docs/utilization.md "Peaks"); 0 = not known (the device or driver did not say). */
typedef struct pa_dm_peaks {
    uint32_t device;
    uint32_t xve_count;        /* numSlices x numSubslicesPerSlice x numEUsPerSubslice */
    uint32_t threads_per_xve;  /* numThreadsPerEU */
    uint32_t core_mhz;         /* ze_device_properties_t.coreClockRate (max MHz) */
    uint64_t mem_peak_bps;     /* zesMemoryGetBandwidth maxBandwidth, else memory properties:
                                  maxClockRate MHz x 1e6 x 2 (DDR) x maxBusWidth / 8; B/s */
    uint64_t pcie_peak_bps;    /* zesDevicePciGetProperties maxSpeed.maxBandwidth, B/s per direction */
} pa_dm_peaks_t;
_Static_assert(sizeof(pa_dm_peaks_t) == 32, "pa_dm_peaks_t layout");

/* PA_REC_DM_SYSMAN payload: one reading of the device's sysman counters (zes_api.h), as a user's
 * tool reads them; a counter the device did not give is UINT64_MAX. */
typedef struct pa_dm_sysman {
    uint32_t device, pad;
    uint64_t host_ns;          /* CLOCK_MONOTONIC when read */
    uint64_t engine_ts_us;     /* zes_engine_stats_t.timestamp of the reads below (us) */
    uint64_t active_us[3];     /* activeTime of the ALL, COMPUTE_ALL, COPY_ALL engine groups (us) */
    uint64_t mem_ts_us;        /* zes_mem_bandwidth_t.timestamp (us) */
    uint64_t mem_read, mem_write; /* readCounter / writeCounter (bytes) */
    uint64_t pci_ts_us;        /* zes_pci_stats_t.timestamp (us) */
    uint64_t pci_rx, pci_tx;   /* rxCounter / txCounter (bytes) */
} pa_dm_sysman_t;
_Static_assert(sizeof(pa_dm_sysman_t) == 96, "pa_dm_sysman_t layout");

#define PA_DM_SYSMAN_NONE UINT64_MAX

#endif
