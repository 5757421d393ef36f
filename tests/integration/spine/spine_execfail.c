/* spine_execfail.c - exec calls that fail return to a process whose session goes on: execv of a
 * missing file (ENOENT), execvp of a command found on no PATH entry (ENOENT), execv with an
 * argument bigger than Linux copies (E2BIG); Level Zero calls and HGTX ranges before and after.
 * Prints each exec's errno as "NAME errno" (the application's view, unchanged by the agent) and
 * the calls it made: "ze_driver_get N", "before N", "after N". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <level_zero/ze_api.h>
#include <profagent/hgtx.h>

static int ranges(const char *name, int n)
{
    for (int i = 0; i < n; i++) {
        hgtxRangePushA(name);
        hgtxRangePop();
    }
    return n;
}

int main(void)
{
    int before = ranges("before", 3);
    char *argv[] = {"prog", NULL};
    errno = 0;
    int rc = execv("/nonexistent/prog", argv);
    printf("execv_missing %d %s\n", rc, errno == ENOENT ? "ENOENT" : strerror(errno));
    errno = 0;
    rc = execvp("profagent-no-such-command", argv);
    printf("execvp_missing %d %s\n", rc, errno == ENOENT ? "ENOENT" : strerror(errno));
    size_t big = 200 * 1024; /* > MAX_ARG_STRLEN (32 pages) */
    char *s = malloc(big + 1);
    if (!s)
        return 2;
    memset(s, 'x', big);
    s[big] = '\0';
    char *bargv[] = {"true", s, NULL};
    errno = 0;
    rc = execv("/bin/true", bargv);
    printf("execv_big %d %s\n", rc, errno == E2BIG ? "E2BIG" : strerror(errno));
    free(s);
    int calls = 0;
    if (zeInit(0) != ZE_RESULT_SUCCESS)
        return 3;
    for (int i = 0; i < 7; i++) {
        uint32_t n = 0;
        zeDriverGet(&n, NULL);
        calls++;
    }
    int after = ranges("after", 11);
    printf("ze_driver_get %d\nbefore %d\nafter %d\n", calls, before, after);
    return 0;
}
