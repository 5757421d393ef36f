/* sampling.h - the PC (EU-stall) sampling source of the agent: hooks the session calls. */
#ifndef PA_SAMPLING_H
#define PA_SAMPLING_H

/*
 * Opt-in (README "PC sampling"): PROFAGENT_PC_SAMPLING=1 (profagent run --pc-sampling) opens one
 * EuStallSampling streamer per device that offers it, at PROFAGENT_PC_SAMPLING_PERIOD_NS
 * (default 100000 ns), from the constructor to the exit path. One reader thread per device
 * drains its streamer into its own ring (the application's threads never wait for it); the
 * aggregator maps IPs to kernels (base/size recorded at zeKernelCreate) and counts per (kernel,
 * instruction, reason); the writer stores PCS_* tables. A device without support gets one
 * warning; everything else is profiled as usual. The PTI-compatible API
 * (include/profagent/pti_pc_sampling.h, libprofagent_pti.so) runs on this same engine when the
 * agent is preloaded, so its samples land in the DB too.
 */

/*! pa_sampling_preinit() : before the agent's zeInit: sets ZET_ENABLE_METRICS=1 (unless the user
 *  set it; another value gets one warning) when PROFAGENT_PC_SAMPLING=1 or the PTI library is
 *  in the process. */
void pa_sampling_preinit(void);

/*! pa_sampling_init() : after the Level Zero source attached: finds the EU-stall devices,
 *  registers the kernel tracer, starts the readers when PROFAGENT_PC_SAMPLING=1. Returns the
 *  number of devices sampled. */
int pa_sampling_init(void);

/*! pa_sampling_finish() : exit path, before the aggregator's final drain: final read of every
 *  streamer, close (bounded: 2 s per reader). */
void pa_sampling_finish(void);

/*! pa_sampling_fork_child() : the readers do not exist in a fork child. */
void pa_sampling_fork_child(void);

#endif
