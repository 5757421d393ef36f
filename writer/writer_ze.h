/* writer_ze.h - Level Zero helpers shared by the ze writer, its reports and its summary. */
#ifndef PA_WRITER_ZE_H
#define PA_WRITER_ZE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "writer.h"

/*! pa_ze_demangle() : malloc'd demangled form of a kernel name (abi::__cxa_demangle from the
 *  C++ runtime, loaded on first use); a name that is not mangled or fails to demangle is
 *  returned as is (copied). NULL only when out of memory. */
char *pa_ze_demangle(const char *mangled);

/*! pa_ze_base_name() : the function name only of a demangled name ("ns::f<int>(int)" -> "f",
 *  template arguments dropped, spec 2.3.4 base): *start points into `demangled`, returns the length. */
size_t pa_ze_base_name(const char *demangled, const char **start);

/*! pa_ze_sql_register() : SQL function ze_kname(name, mode) on db: mode 0 demangled, 1 base,
 *  2 mangled (as given). Returns 0 or -1. */
int pa_ze_sql_register(sqlite3 *db);

/*! pa_ze_counts() : uncollected / in-flight-table-full counters loaded from the spool. */
void pa_ze_counts(uint64_t *uncollected, uint64_t *table_full);
/*! pa_ze_ctx_lost_count() : device operations still in flight when the application destroyed
 *  their context (the agent's events went with it: no device times), loaded from the spool. */
uint64_t pa_ze_ctx_lost_count(void);
/*! pa_ze_ring_waits() : the Level Zero API records' waits for room in a full ring loaded from the
 *  spool (collector/emit_full.c pa_emit_full, PROFAGENT_RING_FULL=wait): waits, their total
 *  time (ns), waits given up (the aggregator made no progress: those records were dropped). */
void pa_ze_ring_waits(uint64_t *waits, uint64_t *wait_ns, uint64_t *given_up);
/*! pa_ze_intercept() : how ze calls were intercepted: path 1 = the loader's entry points, 2 = its
 *  tracing layer (reason: 1 forced, 2 ZE_ENABLE_TRACING_LAYER=1 set, 3 calls not bound to the
 *  agent, 4 loader code not recognized, 5 architecture), 0 = Level Zero not attached. */
void pa_ze_intercept(uint64_t *path, uint64_t *reason);

/*! pa_ze_busy_compute() : device busy time for the exit summary: per deviceId, the union (ns) of
 *  the [start, end) intervals of the ZE_OPS rows in `db` (one pass in start order), kept until
 *  the summary prints it. Called once the ZE_OPS rows are written. Returns 0 or -1 (SQL error:
 *  the summary then shows no utilization). */
int pa_ze_busy_compute(sqlite3 *db);

/*! pa_ze_summary_print() : the Level Zero section of the exit summary (from the aggregates):
 *  top kernels and API calls, copies/fills by direction, device utilization, uncollected. */
void pa_ze_summary_print(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res);

#endif
