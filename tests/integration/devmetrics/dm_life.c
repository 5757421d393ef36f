/* dm_life.c - how a process with device metric streams ends: a fork child doing device work, a
 * crash (SIGSEGV) and an abort after device work, an exit while a kernel still runs, an exit
 * status of its own. usage: dm_life fork|segv|abort|exit-running|status N */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static sample_busy_t b; /* busy_ns on device 0 */

int main(int argc, char **argv)
{
    if (argc < 2)
        sample_die("usage: %s fork|segv|abort|exit-running|status N", argv[0]);
    sample_env_t env;
    sample_env_init(&env, 1);
    sample_busy_init(&env, 0, &b);
    sample_busy_run(&b, 2000000, 1);
    const char *mode = argv[1];
    if (strcmp(mode, "fork") == 0) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) { /* the child works on the device too, then leaves without atexit */
            sample_busy_run(&b, 2000000, 1);
            _exit(0);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            sample_die("fork child failed (status 0x%x)", st);
        sample_busy_run(&b, 2000000, 1);
    } else if (strcmp(mode, "segv") == 0) {
        fflush(stdout);
        raise(SIGSEGV);
    } else if (strcmp(mode, "abort") == 0) {
        fflush(stdout);
        abort();
    } else if (strcmp(mode, "exit-running") == 0) {
        sample_busy_run(&b, 100000000, 0);
        exit(0);
    } else if (strcmp(mode, "status") == 0 && argc > 2) {
        exit(atoi(argv[2]));
    } else {
        sample_die("unknown mode %s", mode);
    }
    printf("dm_life %s: OK\n", mode);
    return 0;
}
