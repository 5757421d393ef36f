/* identity.c - what places a session among others at start: its rank, boot id and wall-clock anchor. */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include "../common/pa_clock.h"
#include "../common/pa_rank.h"
#include "../writer/writer.h"
#include "session.h"

static char boot_id[40];

static uint64_t now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The boot id names one boot of one machine: two sessions with the same one share CLOCK_MONOTONIC. */
static void read_boot_id(void)
{
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, boot_id, sizeof boot_id - 1) : -1;
    if (fd >= 0)
        close(fd);
    n = n < 0 ? 0 : n;
    while (n > 0 && (boot_id[n - 1] == '\n' || boot_id[n - 1] == ' '))
        n--;
    boot_id[n] = '\0';
}

/* CLOCK_REALTIME bracketed by two reads of the clock every time is recorded on (pa_clock_ns():
 * CLOCK_MONOTONIC, through the TSC where it is invariant), the tightest of 5 tries (a preemption
 * between the reads widens one try only): the anchor maps this host's monotonic clock onto the
 * wall clock to within anchor_err_ns. The kernel's own estimate of the wall clock's error
 * (adjtimex, read-only) bounds how well two hosts' wall clocks agree. */
static void take_anchor(pa_session_meta_t *m)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t a = pa_clock_ns(), w = now(CLOCK_REALTIME), b = pa_clock_ns();
        if (b - a < best) {
            best = b - a;
            m->anchor_mono_ns = a + (b - a) / 2;
            m->anchor_wall_ns = w;
        }
    }
    m->anchor_err_ns = best / 2 + 1;
    struct timex tx;
    memset(&tx, 0, sizeof tx); /* modes 0: read only, allowed without privileges */
    int st = adjtimex(&tx);
    if (st < 0) {
        m->wall_esterror_ns = m->wall_maxerror_ns = -1;
        m->wall_synced = -1;
        return;
    }
    m->wall_esterror_ns = (int64_t)tx.esterror * 1000;
    m->wall_maxerror_ns = (int64_t)tx.maxerror * 1000;
    m->wall_synced = st != TIME_ERROR && !(tx.status & STA_UNSYNC);
}

void pa_session_identity(pa_session_meta_t *m)
{
    const pa_rank_info_t *r = pa_rank_self();
    m->rank = r->rank >= 0 ? (int)r->rank : -1;
    m->rank_var = r->var;
    read_boot_id();
    m->boot_id = boot_id;
    take_anchor(m);
}
