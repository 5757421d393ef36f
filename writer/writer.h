/* writer.h - builds the SQLite DB from the spool and the aggregates; prints the exit summary. */
#ifndef PA_WRITER_H
#define PA_WRITER_H

#include <stdint.h>
#include <stdio.h>

#include "../agg/agg.h"

#define PA_SCHEMA_VERSION 1

typedef struct pa_session_meta {
    uint32_t pid;
    const char *hostname;
    const char *cmdline;         /* argv joined by spaces */
    uint64_t start_wall_ns;      /* CLOCK_REALTIME at session start */
    uint64_t start_mono_ns;      /* CLOCK_MONOTONIC at session start */
    uint64_t end_mono_ns;
    int rank;                    /* -1 when unknown */
    int complete;                /* 0: the session did not finish (marked in META) */
} pa_session_meta_t;

/*! pa_writer_write_db() : creates `db_path` (must not exist), loads every spool record,
 *  the aggregates and META. Returns 0 or -1 after logging why. */
int pa_writer_write_db(const char *db_path, const char *spool_path, const pa_session_meta_t *meta,
                       const pa_agg_results_t *res);

/*! pa_summary_print() : the human summary printed at exit. */
void pa_summary_print(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res,
                      const char *db_path);

#endif
