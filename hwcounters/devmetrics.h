/* devmetrics.h - device metric streams (time-based metric groups, e.g. ComputeBasic) as a source. */
#ifndef PA_DEVMETRICS_H
#define PA_DEVMETRICS_H

#include <stdint.h>

#include "../common/pa_devmetrics.h"
#include "../common/pa_record.h"
#include "../common/pa_ring.h"

/*! pa_dm_env() : sets ZET_ENABLE_METRICS=1 and ZES_ENABLE_SYSMAN=1 (unless the user set them;
 *  a user's other ZET_ENABLE_METRICS is said): must precede the application's first zeInit. */
void pa_dm_env(void);
/*! pa_dm_start() : once the application initialized Level Zero (never initialized here; after
 *  pa_dm_env()): finds the
 *  time-based group `group` on every device (one warning naming the groups that exist when a
 *  device has none of that name) and starts one streamer reader per device, sampling every
 *  `period_us` (the driver rounds it). Returns the number of devices streaming (0 is no error). */
int pa_dm_start(const char *group, uint64_t period_us);
/*! pa_dm_stop() : exit path: every reader reads once more, writes its last interval, closes its
 *  streamer; each join bounded by 2 s. */
void pa_dm_stop(void);
/*! pa_dm_after_fork_child() : readers do not exist in a fork child: forget them. */
void pa_dm_after_fork_child(void);

/* A device's sysman handles (devmetrics_sysman.c); NULL/0 where the device has none. */
typedef struct pa_dm_sysman_dev {
    void *device;              /* ze_device_handle_t, NULL when sysman answered nothing */
    void *engine[3];           /* zes_engine_handle_t of the ALL, COMPUTE_ALL, COPY_ALL groups */
    void *mem;                 /* zes_mem_handle_t of the first memory module */
    int pci, pci_counters;     /* PCI properties read / bandwidth counters exist */
    uint64_t pcie_peak_bps;    /* maxSpeed.maxBandwidth, B/s */
} pa_dm_sysman_dev_t;
/*! pa_dm_sysman_open() : finds the engine groups, memory module and PCI counters of `device` (a
 *  ze_device_handle_t). Returns 0, or -1 when sysman gives nothing for it (readings then hold
 *  PA_DM_SYSMAN_NONE). */
int pa_dm_sysman_open(void *device, pa_dm_sysman_dev_t *s);
/*! pa_dm_sysman_read() : one reading of the counters (PA_DM_SYSMAN_NONE where missing). */
void pa_dm_sysman_read(const pa_dm_sysman_dev_t *s, uint32_t index, pa_dm_sysman_t *out);
/*! pa_dm_peaks_read() : XVE count, threads, clock (zeDeviceGetProperties), memory peak (sysman
 *  maxBandwidth, else zeDeviceGetMemoryProperties), PCIe peak (sysman); 0 where unknown. */
void pa_dm_peaks_read(const pa_dm_sysman_dev_t *s, void *device, uint32_t index, pa_dm_peaks_t *out);

/* Reader rings (devmetrics_source.c). */
pa_ring_t *pa_dm_ring_open(uint32_t device);
void pa_dm_ring_emit(pa_ring_t *r, const pa_record_t *rec, const void *payload, uint32_t len);
void pa_dm_ring_close(pa_ring_t *r);

#endif
