/* exec.c - executes one command on an engine worker: waits, real work, modelled device time. */
#include <string.h>

#include "pa_sd_engine.h"
#include "pa_sd_metrics.h"

#define PA_SD_COPY_BASE_NS 1000ull /* fixed cost of a copy or fill, plus bytes / SIMDEV_COPY_GBPS */

/* Hold the engine until host time 'end' so device time is both measured and modelled. */
static uint64_t finish_at(uint64_t start, uint64_t model_ns)
{
    uint64_t end = start + model_ns, now = pa_sd_clock_host_ns();
    if (now > end)
        end = now; /* real work took longer than the model: report what happened */
    pa_sd_clock_wait_until(end);
    return end;
}

static uint64_t exec_kernel(pa_sd_engine *eng, pa_sd_cmd *c, uint64_t start)
{
    ze_group_count_t g = c->u.k.groups;
    if (c->u.k.count_ptr && c->u.k.slot >= *c->u.k.count_ptr)
        return start; /* multiple-indirect: this slot is beyond the device-side count */
    if (c->u.k.indirect)
        g = *c->u.k.indirect;
    uint64_t items = (uint64_t)g.groupCountX * g.groupCountY * g.groupCountZ *
                     c->u.k.gsize[0] * c->u.k.gsize[1] * c->u.k.gsize[2];
    const pa_sd_kernel_def *d = &c->u.k.def;
    uint64_t requested = d->builtin ? pa_sd_builtin_run(d->builtin, c->u.k.args, items) : 0;
    uint64_t end = start + (requested ? requested : d->base_ns + d->ns_per_item * items), now;
    if (!requested && (now = pa_sd_clock_host_ns()) > end)
        end = now; /* real work took longer than the model: report what happened */
    /* busy_ns gets exactly the requested device time, even on a loaded host */
    uint32_t threads = pa_sd_kernel_threads((uint64_t)g.groupCountX * g.groupCountY * g.groupCountZ, c->u.k.gsize);
    return pa_sd_eustall_kernel(eng->dev, d->isa, d->gpu_addr, threads, start, end);
}

static uint64_t copy_cost(size_t bytes)
{
    return PA_SD_COPY_BASE_NS + bytes / pa_sd_config_get()->copy_gbps; /* 1 GB/s == 1 byte/ns */
}

static void copy_region(pa_sd_cmd *c)
{
    const ze_copy_region_t *dr = &c->u.region.dr, *sr = &c->u.region.sr;
    uint8_t *dst = c->u.region.dst;
    const uint8_t *src = c->u.region.src;
    for (uint32_t z = 0; z < dr->depth; z++)
        for (uint32_t y = 0; y < dr->height; y++) {
            size_t doff = (size_t)(dr->originZ + z) * c->u.region.dslice +
                          (size_t)(dr->originY + y) * c->u.region.dpitch + dr->originX;
            size_t soff = (size_t)(sr->originZ + z) * c->u.region.sslice +
                          (size_t)(sr->originY + y) * c->u.region.spitch + sr->originX;
            memmove(dst + doff, src + soff, dr->width);
        }
}

static void fill(pa_sd_cmd *c)
{
    uint8_t *d = c->u.fill.dst;
    size_t ps = c->u.fill.psize;
    if (ps == 1) {
        memset(d, c->u.fill.pattern[0], c->u.fill.size);
        return;
    }
    for (size_t off = 0; off < c->u.fill.size; off += ps)
        memcpy(d + off, c->u.fill.pattern, c->u.fill.size - off < ps ? c->u.fill.size - off : ps);
}

static void query_ts(pa_sd_cmd *c)
{
    for (uint32_t i = 0; i < c->u.qts.n; i++) {
        ze_kernel_timestamp_result_t r;
        memset(&r, 0, sizeof r);
        (void)pa_sd_event_get_ts(c->u.qts.events[i], &r);
        size_t off = c->u.qts.offsets ? c->u.qts.offsets[i] : i * sizeof r;
        memcpy((uint8_t *)c->u.qts.dst + off, &r, sizeof r);
    }
}

void pa_sd_exec_cmd(pa_sd_engine *eng, pa_sd_cmd *c)
{
    for (uint32_t i = 0; i < c->nwait; i++)
        pa_sd_event_wait_device(c->wait[i]);
    uint64_t start = pa_sd_clock_host_ns(), end = start;
    switch (c->type) {
    case PA_SD_CMD_KERNEL:
        end = exec_kernel(eng, c, start);
        break;
    case PA_SD_CMD_COPY:
        memmove(c->u.copy.dst, c->u.copy.src, c->u.copy.size);
        end = finish_at(start, copy_cost(c->u.copy.size));
        break;
    case PA_SD_CMD_COPY_REGION:
        copy_region(c);
        end = finish_at(start, copy_cost((size_t)c->u.region.dr.width * c->u.region.dr.height *
                                         c->u.region.dr.depth));
        break;
    case PA_SD_CMD_FILL:
        fill(c);
        end = finish_at(start, copy_cost(c->u.fill.size));
        break;
    case PA_SD_CMD_WRITE_TS:
        *c->u.wts.dst = pa_sd_clock_ticks_at(start) & pa_sd_clock_mask();
        break;
    case PA_SD_CMD_QUERY_TS:
        query_ts(c);
        break;
    case PA_SD_CMD_RESET:
        for (uint32_t i = 0; i < c->u.qts.n; i++)
            pa_sd_event_reset_device(c->u.qts.events[i]);
        break;
    default: /* barrier, signal, wait, nop: ordering only */
        break;
    }
    if (c->signal)
        pa_sd_event_signal_device(c->signal, pa_sd_clock_ticks_at(start), pa_sd_clock_ticks_at(end));
}
