/* bench_rss.c - runs a command and prints its peak RSS: "maxrss_kib N" (wait4 rusage).
 * A launcher of its own because ru_maxrss survives execve: a child forked from python would
 * report python's RSS. usage: bench_rss CMD [ARGS...]  (the command's stdout is discarded) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_rss CMD [ARGS...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, 1);
        execvp(argv[1], argv + 1);
        perror(argv[1]);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0)
        return 1;
    printf("maxrss_kib %ld\n", ru.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
