/* hostctr_list.c - the libpfm4 event names usable here (profagent counters); libpfm4 only, no agent state. */
#include <stdio.h>
#include <string.h>

#include <perfmon/pfmlib_perf_event.h>

#include "hostctr.h"

static int list_pmu(FILE *out, pfm_pmu_t pmu)
{
    pfm_pmu_info_t pinfo;
    memset(&pinfo, 0, sizeof pinfo);
    pinfo.size = sizeof pinfo;
    if (pfm_get_pmu_info(pmu, &pinfo) != PFM_SUCCESS || !pinfo.is_present)
        return 0;
    int n = 0;
    for (int idx = pinfo.first_event; idx != -1; idx = pfm_get_event_next(idx)) {
        pfm_event_info_t info;
        memset(&info, 0, sizeof info);
        info.size = sizeof info;
        if (pfm_get_event_info(idx, PFM_OS_PERF_EVENT_EXT, &info) != PFM_SUCCESS)
            continue;
        fprintf(out, "%s::%s\t%s\n", pinfo.name, info.name, info.desc ? info.desc : "");
        n++;
    }
    return n;
}

int pa_hc_list_events(FILE *out)
{
    if (pfm_initialize() != PFM_SUCCESS)
        return -1;
    fprintf(out, "# libpfm4 event names for PROFAGENT_HOST_COUNTERS (PMU::EVENT; the generic names\n"
                 "# cycles, instructions, cache-misses, branch-misses, task-clock, context-switches,\n"
                 "# page-faults, cpu-migrations are accepted too). Hardware events need a CPU PMU: on a\n"
                 "# machine without one (many VMs) they fail to open and software events are used.\n");
    int n = list_pmu(out, PFM_PMU_PERF_EVENT);
    pfm_pmu_t pmu;
    pfm_for_all_pmus(pmu) {
        if (pmu != PFM_PMU_PERF_EVENT && pmu != PFM_PMU_PERF_EVENT_RAW)
            n += list_pmu(out, pmu);
    }
    return n;
}
