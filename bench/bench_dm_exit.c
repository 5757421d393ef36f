/* bench_dm_exit.c - the exit summary's busiest-ranges pass (writer/writer_dm_summary.c) alone, on a
 * DB a metrics run wrote: CPU ms per pass (median), and the section it prints (to compare two
 * builds). usage: bench_dm_exit DB [REPS]  prints `name value unit` lines, the section on stderr. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "writer_dm.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_dm_exit DB [REPS]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (reps < 1 || reps > 1000)
        reps = 5;
    sqlite3 *db;
    if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "bench_dm_exit: cannot open %s\n", argv[1]);
        return 1;
    }
    long long nint = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT coalesce(sum(intervals), 0) FROM METRIC_CHUNKS", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            nint = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    double *ms = calloc((size_t)reps, sizeof *ms);
    if (!ms)
        return 1;
    for (int i = 0; i < reps; i++) {
        FILE *out = i == 0 ? stderr : fopen("/dev/null", "w");
        uint64_t t0 = bench_cpu_ns();
        pa_dm_summary_ranges(db, out ? out : stderr);
        ms[i] = (double)(bench_cpu_ns() - t0) / 1e6;
        if (out && out != stderr)
            fclose(out);
    }
    printf("dm_exit_intervals %lld intervals (all devices)\n", nint);
    printf("dm_exit_ranges_first_cpu_ms %.3f ms (the first pass: cold allocations, as at exit)\n", ms[0]);
    printf("dm_exit_ranges_cpu_ms %.3f ms (median of %d passes)\n", bench_median(ms, (size_t)reps), reps);
    free(ms);
    sqlite3_close(db);
    return 0;
}
