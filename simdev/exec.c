/* exec.c - executes one command on an engine worker: waits, real work, modelled device time. */
#include <string.h>

#include "pa_sd_engine.h"
#include "pa_sd_activity.h"
#include "pa_sd_metrics.h"

#define PA_SD_COPY_BASE_NS 1000ull /* fixed cost of a copy or fill, plus bytes / SIMDEV_COPY_GBPS */

static uint64_t arg_u64(uint8_t (*args)[PA_SD_ARG_BYTES], int i, int bytes)
{
    uint64_t v = 0;
    memcpy(&v, args[i], (size_t)bytes);
    return v;
}

/* Loop iterations of a launch (README "Activity accounting"): builtins from their arguments,
 * SPIR-V bodies SIMDEV_ISA_LOOP_TRIPS. */
static uint64_t loop_trips(const pa_sd_kernel_def *d, uint8_t (*args)[PA_SD_ARG_BYTES], uint64_t items,
                           uint64_t requested_ns)
{
    uint64_t it = items ? items : 1;
    if (d->isa && d->isa->synthetic) {
        switch (d->builtin) {
        case PA_SD_BI_GEMM: return arg_u64(args, 5, 4);                              /* K */
        case PA_SD_BI_REDUCE_SUM: return (arg_u64(args, 2, 4) + it - 1) / it;        /* n / items */
        case PA_SD_BI_ALLREDUCE: return (arg_u64(args, 1, 4) + it - 1) / it;
        case PA_SD_BI_BUSY_NS: /* a 4-instruction spin loop, one instruction per cycle */
            return requested_ns * pa_sd_config_get()->core_clock_mhz / 1000 / 4;
        default: break;
        }
    }
    return pa_sd_config_get()->isa_loop_trips;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    unsigned __int128 p = (unsigned __int128)a * b;
    return p > UINT64_MAX ? UINT64_MAX : (uint64_t)p;
}

/* Totals of a launch: instructions = per-work-item mix x SIMD threads (groups x ceil(group size /
 * 8)), bytes = per-work-item bytes x work items. */
static void kernel_mix(const pa_sd_kernel_def *d, uint64_t trips, uint64_t simd_threads, uint64_t items,
                       uint64_t *tot)
{
    pa_sd_isa_mix m;
    pa_sd_isa_get_mix(d->isa, trips, &m);
    tot[PA_SD_C_ALU0] = mul_sat(m.alu0, simd_threads);
    tot[PA_SD_C_ALU1] = mul_sat(m.alu1, simd_threads);
    tot[PA_SD_C_XMX] = mul_sat(m.xmx, simd_threads);
    tot[PA_SD_C_SEND] = mul_sat(m.send, simd_threads);
    tot[PA_SD_C_CONTROL] = mul_sat(m.control, simd_threads);
    tot[PA_SD_C_GMEM_READ] = tot[PA_SD_C_L3_READ] = mul_sat(m.global_read, items);
    tot[PA_SD_C_GMEM_WRITE] = tot[PA_SD_C_L3_WRITE] = mul_sat(m.global_write, items);
    tot[PA_SD_C_SLM_READ] = mul_sat(m.slm_read, items);
    tot[PA_SD_C_SLM_WRITE] = mul_sat(m.slm_write, items);
}

/* Shortest device time the totals need at the device's peaks: the busiest pipe at one
 * instruction per cycle per EU, memory bytes at the memory peak (README). */
static uint64_t bound_ns(const uint64_t *tot)
{
    uint64_t busiest = 0;
    for (int c = PA_SD_C_ALU0; c <= PA_SD_C_CONTROL; c++)
        if (tot[c] > busiest)
            busiest = tot[c];
    uint64_t per_ns = (uint64_t)SIMDEV_EU_COUNT * pa_sd_config_get()->core_clock_mhz; /* per 1000 ns */
    uint64_t pipe = (uint64_t)(((unsigned __int128)busiest * 1000 + per_ns - 1) / per_ns);
    unsigned __int128 bytes = (unsigned __int128)tot[PA_SD_C_GMEM_READ] + tot[PA_SD_C_GMEM_WRITE];
    uint64_t mem = (uint64_t)((bytes * 1000 + SIMDEV_MEM_PEAK_MBPS - 1) / SIMDEV_MEM_PEAK_MBPS);
    return pipe > mem ? pipe : mem;
}

/* Thread residency and EU activity over the launch's device time. */
static void kernel_occupancy(const pa_sd_kernel_def *d, uint32_t threads, uint64_t dur_ns, uint64_t *tot)
{
    uint64_t cycles = dur_ns * pa_sd_config_get()->core_clock_mhz / 1000;
    uint64_t eus = threads < SIMDEV_EU_COUNT ? threads : SIMDEV_EU_COUNT, num, den;
    pa_sd_isa_active_share(d->isa, &num, &den);
    uint64_t eu_cycles = eus * cycles;
    tot[PA_SD_C_EU_ACTIVE] = (uint64_t)((unsigned __int128)eu_cycles * num / den);
    tot[PA_SD_C_EU_STALL] = eu_cycles - tot[PA_SD_C_EU_ACTIVE];
    tot[PA_SD_C_THREAD_NS] = (uint64_t)threads * dur_ns;
}

static uint64_t exec_kernel(pa_sd_engine *eng, pa_sd_cmd *c, uint64_t start)
{
    uint64_t tot[PA_SD_C_COUNT] = {0};
    ze_group_count_t g = c->u.k.groups;
    if (c->u.k.count_ptr && c->u.k.slot >= *c->u.k.count_ptr) {
        pa_sd_activity_add(eng, start, start, tot);
        return start; /* multiple-indirect: this slot is beyond the device-side count */
    }
    if (c->u.k.indirect)
        g = *c->u.k.indirect;
    uint64_t groups = (uint64_t)g.groupCountX * g.groupCountY * g.groupCountZ;
    uint64_t gs = (uint64_t)c->u.k.gsize[0] * c->u.k.gsize[1] * c->u.k.gsize[2];
    uint64_t items = groups * gs, simd_threads = groups * ((gs + SIMDEV_SIMD_WIDTH - 1) / SIMDEV_SIMD_WIDTH);
    const pa_sd_kernel_def *d = &c->u.k.def;
    uint64_t done_ns = 0;
    uint64_t requested = d->builtin ? pa_sd_builtin_run(d->builtin, c->u.k.args, items, &done_ns) : 0;
    kernel_mix(d, loop_trips(d, c->u.k.args, items, requested), simd_threads, items, tot);
    uint64_t model = d->base_ns + d->ns_per_item * items, bound = bound_ns(tot), now;
    uint64_t end = start + (requested ? requested : model > bound ? model : bound);
    if (!requested && (now = done_ns ? done_ns : pa_sd_clock_host_ns()) > end)
        end = now; /* real work took longer than the model: report what happened */
    /* busy_ns gets exactly the requested device time, even on a loaded host */
    uint32_t threads = pa_sd_kernel_threads(groups, c->u.k.gsize);
    kernel_occupancy(d, threads, end - start, tot);
    pa_sd_activity_add(eng, start, end, tot);
    return pa_sd_eustall_kernel(eng->dev, d->isa, d->gpu_addr, threads, start, end);
}

/* Which device's memory a pointer is in (device and shared allocations), NULL for host memory. */
static pa_sd_device *mem_device(const void *p)
{
    ze_memory_type_t type;
    pa_sd_device *dev = NULL;
    if (!pa_sd_mem_lookup(p, NULL, NULL, &type, &dev) || type == ZE_MEMORY_TYPE_HOST)
        return NULL;
    return dev;
}

/* Bytes of a copy by path and device memory traffic of the engine's device (README). */
static void copy_totals(pa_sd_engine *eng, const void *dst, const void *src, uint64_t bytes, uint64_t *tot)
{
    pa_sd_device *sd = mem_device(src), *dd = mem_device(dst);
    if (!sd && dd)
        tot[PA_SD_C_H2D] = bytes;
    else if (sd && !dd)
        tot[PA_SD_C_D2H] = bytes;
    else if (sd && dd)
        tot[sd == dd ? PA_SD_C_D2D : PA_SD_C_PEER] = bytes;
    if (sd)
        tot[PA_SD_C_GMEM_READ] = bytes;
    if (dd)
        tot[PA_SD_C_GMEM_WRITE] = bytes;
    (void)eng;
}

static uint64_t copy_cost(size_t bytes)
{
    return PA_SD_COPY_BASE_NS + bytes / pa_sd_config_get()->copy_gbps; /* 1 GB/s == 1 byte/ns */
}

/* A copy or fill: real bytes moved, then held to its modelled end and accounted. */
static uint64_t finish_copy(pa_sd_engine *eng, uint64_t start, uint64_t bytes, const uint64_t *tot)
{
    uint64_t end = start + copy_cost(bytes), now = pa_sd_clock_host_ns();
    if (now > end)
        end = now;
    pa_sd_activity_add(eng, start, end, tot);
    pa_sd_clock_wait_until(end);
    return end;
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
    uint64_t tot[PA_SD_C_COUNT] = {0}, bytes;
    if (c->type == PA_SD_CMD_KERNEL || c->type == PA_SD_CMD_COPY || c->type == PA_SD_CMD_COPY_REGION ||
        c->type == PA_SD_CMD_FILL)
        pa_sd_activity_begin(eng, start);
    switch (c->type) {
    case PA_SD_CMD_KERNEL:
        end = exec_kernel(eng, c, start);
        break;
    case PA_SD_CMD_COPY:
        memmove(c->u.copy.dst, c->u.copy.src, c->u.copy.size);
        copy_totals(eng, c->u.copy.dst, c->u.copy.src, c->u.copy.size, tot);
        end = finish_copy(eng, start, c->u.copy.size, tot);
        break;
    case PA_SD_CMD_COPY_REGION:
        copy_region(c);
        bytes = (uint64_t)c->u.region.dr.width * c->u.region.dr.height * c->u.region.dr.depth;
        copy_totals(eng, c->u.region.dst, c->u.region.src, bytes, tot);
        end = finish_copy(eng, start, bytes, tot);
        break;
    case PA_SD_CMD_FILL:
        fill(c);
        tot[PA_SD_C_FILL] = c->u.fill.size;
        if (mem_device(c->u.fill.dst))
            tot[PA_SD_C_GMEM_WRITE] = c->u.fill.size;
        end = finish_copy(eng, start, c->u.fill.size, tot);
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
