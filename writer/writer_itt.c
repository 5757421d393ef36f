/* writer_itt.c - the ITT collector's counters (calls not mapped, misuse) into SESSION_COUNTERS. */
#include <stdlib.h>
#include <string.h>

#include "writer_internal.h"

/* Payload: "name value\n" lines (collector/itt.c); each becomes SESSION_COUNTERS('itt_<name>',
 * value), added to what an earlier record of the same session stored. */
static int itt_on_record(sqlite3 *db, const pa_record_t *rec, const uint8_t *payload)
{
    if (rec->kind != PA_SP_ITT_COUNTS || !payload || !rec->len)
        return 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "INSERT INTO SESSION_COUNTERS(name, value) VALUES('itt_' || ?1, ?2)"
                           " ON CONFLICT(name) DO UPDATE SET value = value + excluded.value", -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc = 0;
    const char *p = (const char *)payload, *end = p + rec->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *sp = NULL;
        for (const char *q = le; q > p; q--)
            if (q[-1] == ' ') {
                sp = q - 1;
                break;
            }
        if (sp && sp > p) {
            char num[24];
            size_t nl_len = (size_t)(le - sp - 1);
            if (nl_len && nl_len < sizeof num) {
                memcpy(num, sp + 1, nl_len);
                num[nl_len] = '\0';
                sqlite3_bind_text(st, 1, p, (int)(sp - p), SQLITE_TRANSIENT);
                sqlite3_bind_int64(st, 2, strtoll(num, NULL, 10));
                if (sqlite3_step(st) != SQLITE_DONE)
                    rc = -1;
                sqlite3_reset(st);
            }
        }
        p = le + 1;
    }
    sqlite3_finalize(st);
    return rc;
}

const pa_writer_source_t pa_writer_source_itt = {
    .name = "itt",
    .on_record = itt_on_record,
};
