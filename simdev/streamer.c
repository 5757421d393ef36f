/* streamer.c - what the device side of every simdev metric streamer shares (EU stall, ComputeBasic):
 * one per device, opened once at a time, and a notification event that follows "at least N
 * reports pending" as the driver's event state does. */
#include "pa_sd_metrics.h"

int pa_sd_streamer_begin(pa_sd_streamer *s, uint32_t notify_n, ze_event_handle_t ev, uint64_t *gen)
{
    if (s->open)
        return 1;
    s->notify_n = notify_n;
    s->ev = ev;
    s->ev_set = false;
    *gen = ++s->gen;
    s->open = true;
    return 0;
}

bool pa_sd_streamer_is(const pa_sd_streamer *s, uint64_t gen) { return s->open && s->gen == gen; }

void pa_sd_streamer_end(pa_sd_streamer *s)
{
    s->open = false;
    s->ev = NULL;
}

void pa_sd_streamer_notify(pa_sd_streamer *s, uint64_t pending)
{
    bool want = pending >= s->notify_n;
    if (!s->ev || want == s->ev_set)
        return;
    pa_sd_event *ev = pa_sd_event_of(s->ev);
    if (!ev) /* destroyed by the application: left alone */
        return;
    if (want) {
        uint64_t t = pa_sd_clock_ticks_at(pa_sd_clock_host_ns());
        pa_sd_event_signal_device(ev, t, t);
    } else {
        pa_sd_event_reset_device(ev);
    }
    s->ev_set = want;
}

uint32_t pa_sd_streamer_capacity(uint64_t bytes, uint32_t report_bytes)
{
    uint64_t n = bytes / report_bytes;
    return (uint32_t)(n < 1 ? 1 : n > UINT32_MAX ? UINT32_MAX : n);
}

bool pa_sd_streamer_atfork(pa_sd_streamer *s, int phase)
{
    if (phase == PA_SD_FORK_PREPARE) {
        pthread_mutex_lock(&s->mu);
        return false;
    }
    if (phase == PA_SD_FORK_PARENT) {
        pthread_mutex_unlock(&s->mu);
        return false;
    }
    pa_sd_streamer_end(s); /* the parent's reader thread does not exist in the child */
    pthread_mutex_init(&s->mu, NULL);
    return true;
}
