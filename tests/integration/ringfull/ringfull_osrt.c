/* ringfull_osrt.c - CALLS wrapped OS calls that never block (poll on no descriptors, timeout 0),
 * back to back: with PROFAGENT_OSRT_THRESHOLD_NS=0 each is one OSRT record, made faster than the
 * aggregator drains them. usage: ringfull_osrt CALLS */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long calls = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
    if (calls <= 0) {
        fprintf(stderr, "usage: ringfull_osrt CALLS (a count > 0)\n");
        return 2;
    }
    for (long i = 0; i < calls; i++)
        if (poll(NULL, 0, 0) != 0)
            return 1;
    return 0;
}
