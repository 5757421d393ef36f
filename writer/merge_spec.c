/* merge_spec.c - how `profagent merge` carries every table and column of the schema across processes. */
#include <string.h>

#include "merge_internal.h"

/* One entry per table the writer (or merge itself) can create; every column is named with its
 * kind (merge_internal.h, enum pa_mcol_kind), so a table or column added to the schema without an
 * entry here is refused by merge and fails the merge_spec unit test. Kinds after ':':
 *   t  time, ns on the session's host clock: + the input's clock offset
 *   s  STRING_IDS id: re-interned by value (0 and NULL kept: "none")
 *   g  globalTid (pid << 32 | tid): pid renumbered only when it collides with another input's
 *   p  pid: as g
 *   d  device id: + the input's device offset (unique per host, process and device)
 *   k  PCS kernel id (0 is a real id): + offset
 *   v  host-counter event index: mapped by event identity (equal events share one index)
 *   n  merge input number: + the number of inputs before it (merged DBs merged again)
 *   R C X Q L E H O  per-process ids (HGTX range, correlation, context, queue, command list
 *      (graph), memory event, call chain, ZE_OPS row): + offset, 0 and NULL kept ("none")
 *   (none) copied as is (handles, addresses, counts, durations, enumerations). */
static const pa_mtable_t pa_merge_tables[] = {
    {"META", PA_MT_META, "key value"},
    {"STRING_IDS", PA_MT_STRINGS, "id value"},
    {"THREADS", PA_MT_ROWS, "globalTid:g pid:p tid nameId:s records drops firstNs:t lastNs:t"},
    {"HGTX_RANGES", PA_MT_ROWS, "id:R start:t end:t globalTid:g endGlobalTid:g nameId:s domainId:s style level"
                                " parentId:R unterminated"},
    {"HGTX_MARKS", PA_MT_ROWS, "start:t globalTid:g nameId:s domainId:s"},
    {"OSRT_API", PA_MT_ROWS, "start:t end:t globalTid:g nameId:s ret errno"},
    {"SUMMARY_STATS", PA_MT_STATS, "category nameId:s tag count total min max avg median stddev medianExact"},
    {"SESSION_COUNTERS", PA_MT_COUNTERS, "name value"},
    {"ZE_API", PA_MT_ROWS, "start:t end:t tid:g nameId:s corrId:C result"},
    {"ZE_OPS", PA_MT_ROWS, "rowid:O start:t end:t tid:g kind corrId:C apiStart:t apiEnd:t apiNameId:s deviceId:d"
                           " contextId:X queueId:Q engine graphId:L nodeId nameId:s gridX gridY gridZ blockX blockY"
                           " blockZ bytes srcKind dstKind staticSlm dynamicSlm appendCorrId:C"},
    {"ZE_DEVICES", PA_MT_ROWS, "deviceId:d name pciBusId uuid ccMajor ccMinor ceCount cuCount totalMem cuClockHz"
                               " memClockHz timerHz simdWidth memBusWidth"},
    {"DEVICE_MEMORY", PA_MT_ROWS, "eventId:E op start:t end:t globalTid:g contextId:X memory size memKind result"
                                  " deviceHandle deviceId:d callchainId:H allocEventId:E freeEventId:E freeTime:t"
                                  " contextHandle"},
    {"CALLCHAINS", PA_MT_ROWS, "id:H stack:s stackDepth module:s function:s"},
    {"DEVICE_MEMORY_INFO", PA_MT_ROWS, "groupRulesId:s exeId:s failedAllocs unknownFrees"},
    {"HGTX_OP_ASSOC", PA_MT_ROWS, "rangeId:R opId:O how"},
    {"HOST_COUNTERS", PA_MT_HCEV, "eventIdx:v name asked encoding status errno detail type config excludeKernel"
                                  " excludeUser nameId:s askedId:s encodingId:s detailId:s"},
    {"HOST_COUNTER_RANGES", PA_MT_ROWS, "rangeId:R eventIdx:v value rawValue timeEnabled timeRunning"},
    {"HOST_COUNTER_THREADS", PA_MT_ROWS, "globalTid:g tid eventIdx:v value rawValue timeEnabled timeRunning atExit"},
    {"PCS_DEVICES", PA_MT_ROWS, "deviceId:d state periodNs notifyEvery result samples unmapped reports droppedReads"
                                " distinctIps overSamples firstReadNs:t"},
    {"PCS_REASONS", PA_MT_ROWS, "deviceId:d reasonIdx name description"},
    {"PCS_KERNELS", PA_MT_ROWS, "kernelId:k deviceId:d nameId:s base size samples"},
    {"PCS_INSTR", PA_MT_ROWS, "kernelId:k offset fileId:s line samples"},
    {"PCS_SAMPLES", PA_MT_ROWS, "kernelId:k offset reasonIdx count"},
    {"METRIC_DEVICES", PA_MT_ROWS, "deviceId:d groupName state periodNs result intervals droppedReads xveCount"
                                   " threadsPerXve coreClockMHz memPeakBps pciePeakBps"},
    {"METRIC_NAMES", PA_MT_ROWS, "deviceId:d metricId name unit"},
    /* data holds its intervals' times relative to startNs: shifting startNs/endNs shifts them */
    {"METRIC_CHUNKS", PA_MT_ROWS, "deviceId:d startNs:t endNs:t intervals nmetrics data"},
    /* the sysman timestamps (us) are the driver's own clock: copied as they are */
    {"METRIC_SYSMAN", PA_MT_ROWS, "deviceId:d hostNs:t engineTimestampUs allActiveUs computeActiveUs copyActiveUs"
                                  " memTimestampUs memReadBytes memWriteBytes pciTimestampUs pciRxBytes pciTxBytes"},
    {"RANK_DEVICE_MAP", PA_MT_ROWS, "rankId deviceId:d deviceUuid hostname pid:p"},
    /* written by merge: one row per input session, and every input's own META */
    {"MERGE_INPUTS", PA_MT_ROWS, "input:n path pid mergedPid:p rank hostname bootId deviceOffset:d deviceCount"
                                 " clockOffsetNs:t clockUncertaintyNs startWallNs"},
    {"MERGE_META", PA_MT_ROWS, "input:n key value"},
};

const pa_mtable_t *pa_merge_spec(size_t *n)
{
    *n = sizeof pa_merge_tables / sizeof pa_merge_tables[0];
    return pa_merge_tables;
}

const pa_mtable_t *pa_merge_spec_find(const char *table)
{
    for (size_t i = 0; i < sizeof pa_merge_tables / sizeof pa_merge_tables[0]; i++)
        if (strcmp(pa_merge_tables[i].name, table) == 0)
            return &pa_merge_tables[i];
    return NULL;
}

int pa_merge_spec_col(const pa_mtable_t *t, const char *col, size_t len)
{
    for (const char *p = t->cols; *p;) {
        size_t n = strcspn(p, ": ");
        int kind = p[n] == ':' ? p[n + 1] : 0;
        if (n == len && strncmp(p, col, len) == 0)
            return kind ? kind : '-';
        p += n + (kind ? 2 : 0);
        while (*p == ' ')
            p++;
    }
    return 0;
}
