/* mkdb.c - writes the synthetic session of synth.h to a spool and builds DB argv[1] from it. */
#include <stdio.h>

#include "synth.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s OUT.db SPOOL\n", argv[0]);
        return 2;
    }
    pa_session_meta_t meta;
    pa_agg_results_t res;
    pa_stat_row_t rows[2];
    pa_thread_info_t th[2];
    if (synth_write_spool(argv[2]) != 0) {
        fprintf(stderr, "mkdb: cannot write spool %s\n", argv[2]);
        return 1;
    }
    synth_meta(&meta);
    synth_results(&res, rows, th);
    if (pa_writer_write_db(argv[1], argv[2], &meta, &res) != 0)
        return 1;
    pa_summary_print(stdout, &meta, &res, argv[1]);
    return 0;
}
