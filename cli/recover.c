/* recover.c - `profagent recover FILE.spool.zst [-o OUT.db]`: a DB from a dead process's spool. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "pa_outname.h"
#include "writer.h"

#define SPOOL_SUFFIX ".spool.zst"

/* "<db>.<pid>.<tag>.spool.zst" (session/session.c): the DB name the session meant and its pid.
 * Returns 0, or -1 when the name is not of that shape. */
static int parse_spool_name(const char *spool, char *db, size_t size, uint32_t *pid)
{
    size_t n = strlen(spool), sl = strlen(SPOOL_SUFFIX);
    if (n <= sl || strcmp(spool + n - sl, SPOOL_SUFFIX) != 0 || n - sl >= size)
        return -1;
    memcpy(db, spool, n - sl);
    db[n - sl] = '\0';
    char *tag = strrchr(db, '.');
    if (!tag || tag == db)
        return -1;
    *tag = '\0';
    char *pd = strrchr(db, '.');
    char *end;
    unsigned long v = pd ? strtoul(pd + 1, &end, 10) : 0;
    if (!pd || end == pd + 1 || *end || v == 0 || v > UINT32_MAX)
        return -1;
    *pd = '\0';
    *pid = (uint32_t)v;
    return 0;
}

int pa_cli_recover(int argc, char **argv)
{
    const char *spool = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc)
            out = argv[++i];
        else if (argv[i][0] == '-' || spool) {
            pa_cli_error("recover: unexpected '%s'; usage: profagent recover FILE.spool.zst [-o OUT.db]", argv[i]);
            return PA_CLI_EUSAGE;
        } else
            spool = argv[i];
    }
    if (!spool) {
        pa_cli_error("recover: no spool given; usage: profagent recover FILE.spool.zst [-o OUT.db]");
        return PA_CLI_EUSAGE;
    }
    char meant[PATH_MAX], db[PATH_MAX];
    uint32_t pid = 0;
    if (access(spool, R_OK) != 0) { /* the file first: a missing one is not a naming problem */
        pa_cli_error("recover: cannot read '%s': %s", spool, strerror(errno));
        return PA_CLI_EDATA;
    }
    if (parse_spool_name(spool, meant, sizeof meant, &pid) < 0) {
        if (!out) {
            pa_cli_error("recover: '%s' is not named <DB>.<pid>.<tag>.spool.zst; give the DB name with -o", spool);
            return PA_CLI_EUSAGE;
        }
        pid = 0;
    }
    if (out)
        snprintf(db, sizeof db, "%s", out);
    else if (pa_outname_unique(meant, db, sizeof db) < 0) {
        pa_cli_error("recover: no free name for '%s'; give one with -o", meant);
        return PA_CLI_EDATA;
    }
    if (pa_writer_recover(spool, db, pid) != 0) {
        pa_cli_error("recover: no DB built from '%s'", spool);
        return PA_CLI_EDATA;
    }
    printf("Database: %s (recovered, session_complete=0; the spool '%s' can be removed)\n", db, spool);
    return PA_CLI_OK;
}
