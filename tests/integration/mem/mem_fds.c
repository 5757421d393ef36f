/* mem_fds.c - after device allocations (their stacks walked), writes to fd 1 and reads fd 0,
 * then opens a file: writes "write=R/E read=R/E open=FD" into argv[1]. The agent must hold no
 * fd: started with 0/1 closed both fail with EBADF (9) and open() gets 0; else open() gets 3. */
#define QA_IMPL
#include "mem_qa.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static void *fds_alloc(size_t n) { return qa_alloc(n); } /* one more frame to walk */

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    qa_init();
    for (int i = 0; i < 4; i++)
        (void)fds_alloc(64u << i);
    errno = 0;
    ssize_t w = write(1, "x", 1);
    int we = errno;
    char c;
    errno = 0;
    ssize_t r = read(0, &c, 1);
    int re = errno;
    int fd = open("/dev/null", O_RDONLY);
    FILE *out = fopen(argv[1], "w");
    if (!out)
        return 3;
    fprintf(out, "write=%zd/%d read=%zd/%d open=%d\n", w, we, r, re, fd);
    return fclose(out) == 0 ? 0 : 4;
}
