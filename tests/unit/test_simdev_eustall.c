/* test_simdev_eustall.c - simdev EU-stall sampling through the loader: metric group discovery,
 * streamer state machine and return codes, period rounding, sample counts of busy_ns, dominant
 * instruction of a -g OpenCL C kernel, overflow, notification, calculation, kernel addresses.
 * Modes (argv[1]): none = everything (needs ZET_ENABLE_METRICS=1); "off" = no group expected. */
#include <level_zero/zet_api.h>

#include "test_simdev_util.h"

#ifdef PA_HAVE_LIBDW
#include <elfutils/libdw.h>
#include <libelf.h>
#endif

#define TICK_NS 52u /* 1e9 / 19.2 MHz, integer */
#define MAX_PERIOD (7u * 251u * TICK_NS)
#define MIN_PERIOD (1u * 251u * TICK_NS)

/* Waits until everything appended to l so far has run (a barrier signalling a fresh event). */
static void list_sync(ze_command_list_handle_t l)
{
    ze_event_pool_handle_t p = ts_pool(1);
    ze_event_handle_t e = event_at(p, 0);
    ZE_OK(zeCommandListAppendBarrier(l, e, 0, NULL));
    ZE_OK(zeEventHostSynchronize(e, UINT64_MAX));
    ZE_OK(zeEventDestroy(e));
    ZE_OK(zeEventPoolDestroy(p));
}

/* The group named name on dev, NULL when the device has none. */
static zet_metric_group_handle_t group_named(ze_device_handle_t dev, const char *name)
{
    uint32_t n = 0;
    ZE_OK(zetMetricGroupGet(dev, &n, NULL));
    zet_metric_group_handle_t gs[8] = {NULL};
    assert_true(n <= 8);
    ZE_OK(zetMetricGroupGet(dev, &n, gs));
    for (uint32_t i = 0; i < n; i++) {
        zet_metric_group_properties_t p = {.stype = ZET_STRUCTURE_TYPE_METRIC_GROUP_PROPERTIES};
        ZE_OK(zetMetricGroupGetProperties(gs[i], &p));
        if (strcmp(p.name, name) == 0)
            return gs[i];
    }
    return NULL;
}

static zet_metric_group_handle_t group_of(ze_device_handle_t dev)
{
    zet_metric_group_handle_t g = group_named(dev, "EuStallSampling");
    assert_non_null(g);
    return g;
}

static zet_metric_streamer_handle_t open_streamer(ze_device_handle_t dev, zet_metric_group_handle_t g,
                                                  uint32_t period, uint32_t notify, ze_event_handle_t ev)
{
    zet_metric_streamer_desc_t d = {ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC, NULL, notify, period};
    zet_metric_streamer_handle_t s = NULL;
    ZE_OK(zetContextActivateMetricGroups(g_ctx, dev, 1, &g));
    ZE_OK(zetMetricStreamerOpen(g_ctx, dev, g, &d, ev, &s));
    return s;
}

/* Reads everything pending into a growing buffer; returns bytes, *res the last result. */
static size_t drain(zet_metric_streamer_handle_t s, uint8_t **buf, size_t *cap, ze_result_t *res)
{
    size_t used = 0;
    *res = ZE_RESULT_SUCCESS;
    for (;;) {
        size_t sz = 0;
        ZE_OK(zetMetricStreamerReadData(s, UINT32_MAX, &sz, NULL));
        if (used + sz > *cap) {
            *cap = used + sz;
            *buf = realloc(*buf, *cap);
        }
        ze_result_t r = zetMetricStreamerReadData(s, UINT32_MAX, &sz, *buf + used);
        assert_true(r == ZE_RESULT_SUCCESS || r == ZE_RESULT_WARNING_DROPPED_DATA);
        if (r != ZE_RESULT_SUCCESS)
            *res = r;
        used += sz;
        if (sz == 0)
            return used;
    }
}

/* Independent decode of the PVC layout (notes): IP bits 0-28, 8-bit counters from bit 29 in the
 * order active, other, control, pipe, send, dist, sbid, sync, inst_fetch. */
static void decode(const uint8_t *r, uint64_t *ip, uint32_t cnt[9], uint16_t *flags)
{
    unsigned __int128 v = 0;
    for (int i = 12; i >= 0; i--)
        v = (v << 8) | r[i];
    *ip = (uint64_t)(v & 0x1fffffff);
    for (int k = 0; k < 9; k++)
        cnt[k] = (uint32_t)(v >> (29 + 8 * k)) & 0xff;
    *flags = (uint16_t)(r[50] | (r[51] << 8));
}

static uint64_t total_samples(const uint8_t *buf, size_t bytes)
{
    uint64_t t = 0, ip;
    uint32_t c[9];
    uint16_t f;
    for (size_t o = 0; o < bytes; o += 64) {
        decode(buf + o, &ip, c, &f);
        for (int k = 0; k < 9; k++)
            t += c[k];
    }
    return t;
}

static void test_discovery(void **state)
{
    (void)state;
    zet_metric_group_handle_t g = group_of(g_dev[0]);
    zet_metric_group_properties_t p = {.stype = ZET_STRUCTURE_TYPE_METRIC_GROUP_PROPERTIES};
    ZE_OK(zetMetricGroupGetProperties(g, &p));
    assert_string_equal(p.name, "EuStallSampling");
    assert_string_equal(p.description, "EU stall sampling");
    assert_int_equal(p.samplingType, ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED);
    assert_int_equal(p.metricCount, 10);
    static const char *names[10] = {"IP", "Active", "ControlStall", "PipeStall", "SendStall", "DistStall",
                                    "SbidStall", "SyncStall", "InstrFetchStall", "OtherStall"};
    uint32_t n = 0;
    ZE_OK(zetMetricGet(g, &n, NULL));
    assert_int_equal(n, 10);
    zet_metric_handle_t m[10];
    ZE_OK(zetMetricGet(g, &n, m));
    for (uint32_t i = 0; i < 10; i++) {
        zet_metric_properties_t mp = {.stype = ZET_STRUCTURE_TYPE_METRIC_PROPERTIES};
        ZE_OK(zetMetricGetProperties(m[i], &mp));
        assert_string_equal(mp.name, names[i]);
        assert_int_equal(mp.metricType, i == 0 ? ZET_METRIC_TYPE_IP_EXP : ZET_METRIC_TYPE_EVENT);
        assert_int_equal(mp.resultType, ZET_VALUE_TYPE_UINT64);
        assert_string_equal(mp.resultUnits, i == 0 ? "Address" : "Events");
        assert_string_equal(mp.component, "XVE");
    }
    assert_int_equal(zetMetricGroupGetProperties(g, NULL), ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    assert_int_equal(zetMetricGroupGet(g_dev[0], NULL, NULL), ZE_RESULT_ERROR_INVALID_NULL_POINTER);
}

static void test_state_machine(void **state)
{
    (void)state;
    zet_metric_group_handle_t g0 = group_of(g_dev[0]), g1 = group_of(g_dev[1]);
    zet_metric_streamer_desc_t d = {ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC, NULL, 100, 100000};
    zet_metric_streamer_handle_t s = NULL, s2 = NULL;
    ZE_OK(zetContextActivateMetricGroups(g_ctx, g_dev[0], 0, NULL));
    assert_int_equal(zetMetricStreamerOpen(g_ctx, g_dev[0], g0, &d, NULL, &s), ZE_RESULT_NOT_READY);
    /* a group of another device, the same domain twice */
    assert_int_equal(zetContextActivateMetricGroups(g_ctx, g_dev[0], 1, &g1), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    zet_metric_group_handle_t twice[2] = {g0, g0};
    assert_int_equal(zetContextActivateMetricGroups(g_ctx, g_dev[0], 2, twice), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    ZE_OK(zetContextActivateMetricGroups(g_ctx, g_dev[0], 1, &g0));
    assert_int_equal(zetMetricStreamerOpen(g_ctx, g_dev[0], g0, NULL, NULL, &s), ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    assert_int_equal(zetMetricStreamerOpen(g_ctx, g_dev[0], g1, &d, NULL, &s), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    zet_metric_group_handle_t both[2] = {g0, group_named(g_dev[0], "ComputeBasic")};
    assert_non_null(both[1]);
    ZE_OK(zetContextActivateMetricGroups(g_ctx, g_dev[0], 2, both)); /* two domains together */
    ZE_OK(zetMetricStreamerOpen(g_ctx, g_dev[0], g0, &d, NULL, &s));
    assert_int_equal(d.samplingPeriod, MAX_PERIOD); /* 100000 -> unit 7 -> 91364 ns */
    assert_int_equal(d.notifyEveryNReports, 100);
    assert_int_equal(zetMetricStreamerOpen(g_ctx, g_dev[0], g0, &d, NULL, &s2), ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
    /* another device has its own streamer */
    ZE_OK(zetContextActivateMetricGroups(g_ctx, g_dev[1], 1, &g1));
    ZE_OK(zetMetricStreamerOpen(g_ctx, g_dev[1], g1, &d, NULL, &s2));
    /* size query: the size of maxReportCount reports, bounded by the device buffer */
    size_t sz = 0;
    ZE_OK(zetMetricStreamerReadData(s, 10, &sz, NULL));
    assert_int_equal(sz, 640);
    sz = 0;
    ZE_OK(zetMetricStreamerReadData(s, UINT32_MAX, &sz, NULL));
    assert_int_equal(sz, SIMDEV_DEFAULT_EUSTALL_BUFFER_KB * 1024u);
    assert_int_equal(zetMetricStreamerReadData(s, 10, NULL, NULL), ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    ZE_OK(zetMetricStreamerClose(s));
    ZE_OK(zetMetricStreamerClose(s2));
    /* reopen after close; rounding of small, zero and huge requests */
    uint32_t cases[][2] = {{0, MIN_PERIOD}, {13052, MIN_PERIOD}, {26103, MIN_PERIOD}, {26104, 2 * MIN_PERIOD},
                           {1000000000u, MAX_PERIOD}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zet_metric_streamer_desc_t dd = {ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC, NULL, 0, cases[i][0]};
        ZE_OK(zetMetricStreamerOpen(g_ctx, g_dev[0], g0, &dd, NULL, &s));
        assert_int_equal(dd.samplingPeriod, cases[i][1]);
        assert_int_equal(dd.notifyEveryNReports, 1); /* 0 -> 1 */
        ZE_OK(zetMetricStreamerClose(s));
    }
    zet_metric_streamer_desc_t big = {ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC, NULL, UINT32_MAX, 100000};
    ZE_OK(zetMetricStreamerOpen(g_ctx, g_dev[0], g0, &big, NULL, &s));
    assert_int_equal(big.notifyEveryNReports, SIMDEV_DEFAULT_EUSTALL_BUFFER_KB * 1024u / 64u);
    ZE_OK(zetMetricStreamerClose(s));
    /* deactivation makes the next open NOT_READY again */
    ZE_OK(zetContextActivateMetricGroups(g_ctx, g_dev[0], 0, NULL));
    assert_int_equal(zetMetricStreamerOpen(g_ctx, g_dev[0], g0, &d, NULL, &s), ZE_RESULT_NOT_READY);
    assert_int_equal(zetMetricStreamerClose(NULL), ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
}

static uint64_t kernel_base(ze_kernel_handle_t k)
{
    ze_result_t (*get_base)(ze_kernel_handle_t, uint64_t *) = NULL;
    ZE_OK(zeDriverGetExtensionFunctionAddress(g_drv, "zexKernelGetBaseAddress", (void **)&get_base));
    assert_non_null(get_base);
    uint64_t base = 0;
    ZE_OK(get_base(k, &base));
    return base;
}

/* A busy_ns kernel of D ns on one thread gives one sample per sampling instant in (start, end]:
 * floor(D / P) or ceil(D / P) samples, all inside the kernel's code. */
static void test_busy_count(void **state)
{
    (void)state;
    const char *names[] = {"busy_ns"};
    ze_module_handle_t m = module_spirv(g_dev[0], names, 1);
    ze_kernel_handle_t k = kernel(m, "busy_ns");
    uint64_t base = kernel_base(k);
    size_t bin = 0;
    ZE_OK(zeModuleGetNativeBinary(m, &bin, NULL));
    zet_metric_group_handle_t g = group_of(g_dev[0]);
    zet_metric_streamer_handle_t s = open_streamer(g_dev[0], g, 100000, 1000, NULL);
    ze_command_list_handle_t l = imm_list(g_dev[0], 0, 0);
    const uint64_t D = 20000000;
    launch_busy(l, k, D, NULL);
    list_sync(l);
    uint8_t *buf = NULL;
    size_t cap = 0;
    ze_result_t r;
    size_t bytes = drain(s, &buf, &cap, &r);
    ZE_OK(r);
    uint64_t t = total_samples(buf, bytes);
    printf("busy_ns %llu ns at %u ns: %llu samples (expected %llu..%llu)\n", (unsigned long long)D, MAX_PERIOD,
           (unsigned long long)t, (unsigned long long)(D / MAX_PERIOD), (unsigned long long)(D / MAX_PERIOD + 1));
    assert_true(t >= D / MAX_PERIOD && t <= D / MAX_PERIOD + 1);
    for (size_t o = 0; o < bytes; o += 64) {
        uint64_t ip;
        uint32_t c[9];
        uint16_t f;
        decode(buf + o, &ip, c, &f);
        assert_true(ip * 8 >= base && ip * 8 < base + bin);
        assert_int_equal(f, 0);
    }
    ZE_OK(zetMetricStreamerClose(s));
    ZE_OK(zeCommandListDestroy(l));
    ZE_OK(zeKernelDestroy(k));
    ZE_OK(zeModuleDestroy(m));
    free(buf);
}

static void test_addresses(void **state)
{
    (void)state;
    const char *names[] = {"vector_add", "saxpy", "mystery"};
    ze_module_handle_t m = module_spirv(g_dev[0], names, 3);
    ze_kernel_handle_t k[3];
    uint64_t b[3];
    for (int i = 0; i < 3; i++) {
        k[i] = kernel(m, names[i]);
        b[i] = kernel_base(k[i]);
        assert_int_equal(b[i] % 64, 0);
        assert_true(b[i] < (1ull << 32));
    }
    /* synthetic bodies: vector_add 8 instructions (128 bytes), saxpy 9 (144 -> 192 aligned) */
    assert_int_equal(b[1] - b[0], 128);
    assert_int_equal(b[2] - b[1], 192);
    size_t sz = 0;
    ZE_OK(zeModuleGetNativeBinary(m, &sz, NULL));
    assert_int_equal(sz, 128 + 192 + 7 * 16 + 16); /* generic body: 7 instructions, padded to 64 */
    uint8_t *bin = malloc(sz);
    ZE_OK(zeModuleGetNativeBinary(m, &sz, bin));
    /* instruction 3 of vector_add: a 4-byte global load (class 3) on line 3 */
    assert_int_equal(bin[3 * 16 + 2], 3);
    assert_int_equal(bin[3 * 16 + 4], 3);
    assert_int_equal(bin[3 * 16 + 8], 4);
    free(bin);
    void *fp = (void *)1;
    assert_int_equal(zeDriverGetExtensionFunctionAddress(g_drv, "zexNoSuchFunction", &fp), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    assert_null(fp);
    ze_module_handle_t m2 = module_spirv(g_dev[0], names, 1);
    ze_kernel_handle_t k2 = kernel(m2, "vector_add");
    assert_true(kernel_base(k2) >= b[2] + 16 * 7); /* modules never overlap */
    ZE_OK(zeKernelDestroy(k2));
    ZE_OK(zeModuleDestroy(m2));
    for (int i = 0; i < 3; i++)
        ZE_OK(zeKernelDestroy(k[i]));
    ZE_OK(zeModuleDestroy(m));
}

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n);
    if (fread(b, 1, *n, f) != *n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

/* The -g OpenCL C kernel: the global load of line 9 in the loop must be the hottest IP, with
 * SendStall its dominant reason; all samples = threads x instants within one instant per thread. */
static void test_dominant(void **state)
{
    (void)state;
#ifndef PA_SPIRV_HOT
    skip();
#else
    size_t n = 0;
    uint8_t *spv = read_file(PA_SPIRV_HOT, &n);
    assert_non_null(spv);
    ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV, n, spv, "", NULL};
    ze_module_handle_t m = NULL;
    ZE_OK(zeModuleCreate(g_ctx, g_dev[0], &md, &m, NULL));
    free(spv);
    ze_kernel_handle_t k = kernel(m, "eustall_hot");
    uint64_t base = kernel_base(k);
    size_t bin_n = 0;
    ZE_OK(zeModuleGetNativeBinary(m, &bin_n, NULL));
    uint8_t *bin = malloc(bin_n);
    ZE_OK(zeModuleGetNativeBinary(m, &bin_n, bin));
    /* expected: the instruction of class LOAD (3) on line 9 */
    int64_t hot = -1;
    for (size_t o = 0; o + 16 <= bin_n; o += 16)
        if (bin[o + 2] == 3 && (bin[o + 4] | bin[o + 5] << 8) == 9)
            hot = (int64_t)o;
    assert_true(hot >= 0);
    free(bin);
    void *src = dev_alloc(g_dev[0], 4096), *dst = dev_alloc(g_dev[0], 65536 * 4);
    uint32_t iters = 16;
    ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof src, &src));
    ZE_OK(zeKernelSetArgumentValue(k, 1, sizeof dst, &dst));
    ZE_OK(zeKernelSetArgumentValue(k, 2, sizeof iters, &iters));
    ZE_OK(zeKernelSetGroupSize(k, 256, 1, 1));
    zet_metric_group_handle_t g = group_of(g_dev[0]);
    zet_metric_streamer_handle_t s = open_streamer(g_dev[0], g, 100000, 1000, NULL);
    ze_command_list_handle_t l = imm_list(g_dev[0], 0, 0);
    ze_group_count_t gc = {4096, 1, 1}; /* 1M items: 2048 threads busy, ~1 ms of device time */
    ze_event_pool_handle_t pool = ts_pool(1);
    ze_event_handle_t ev = event_at(pool, 0);
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &gc, ev, 0, NULL));
    list_sync(l);
    ze_kernel_timestamp_result_t ts;
    ZE_OK(zeEventQueryKernelTimestamp(ev, &ts));
    uint32_t bits;
    uint64_t hz = timer_hz(g_dev[0], &bits);
    uint64_t dur = ticks_to_ns(ts.global.kernelStart, ts.global.kernelEnd, bits, hz);
    uint8_t *buf = NULL;
    size_t cap = 0;
    ze_result_t r;
    size_t bytes = drain(s, &buf, &cap, &r);
    ZE_OK(r);
    /* calculation through the driver: per unique IP, IP then 9 counts */
    uint32_t nv = 0;
    ZE_OK(zetMetricGroupCalculateMetricValues(g, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, bytes, buf, &nv, NULL));
    assert_int_equal(nv, bytes / 64 * 10);
    zet_typed_value_t *v = malloc(nv * sizeof *v);
    ZE_OK(zetMetricGroupCalculateMetricValues(g, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, bytes, buf, &nv, v));
    assert_int_equal(nv % 10, 0);
    uint64_t best = 0, best_ip = 0, sum = 0, prev = 0;
    uint32_t best_reason = 0;
    for (uint32_t e = 0; e < nv / 10; e++) {
        uint64_t ip = v[e * 10].value.ui64, t = 0;
        assert_true(e == 0 || ip > prev); /* unique, ascending */
        prev = ip;
        for (int q = 1; q < 10; q++)
            t += v[e * 10 + q].value.ui64;
        sum += t;
        if (t > best) {
            best = t;
            best_ip = ip;
            best_reason = 0;
            for (int q = 1; q < 10; q++)
                if (v[e * 10 + q].value.ui64 > v[e * 10 + best_reason + 1].value.ui64)
                    best_reason = (uint32_t)q - 1;
        }
    }
    assert_int_equal(sum, total_samples(buf, bytes));
    /* the kernel interval in ticks is within 2 ticks of the host interval the device sampled */
    uint64_t instants = (dur > 2 * TICK_NS ? dur - 2 * TICK_NS : 0) / MAX_PERIOD;
    uint64_t instants_hi = (dur + 2 * TICK_NS) / MAX_PERIOD + 1;
    printf("eustall_hot: %llu ns, %llu samples (2048 x %llu..%llu instants), hottest offset 0x%llx "
           "(%.1f%%, expected 0x%llx), reason %u\n", (unsigned long long)dur, (unsigned long long)sum,
           (unsigned long long)instants, (unsigned long long)instants_hi,
           (unsigned long long)(best_ip * 8 - base), 100.0 * (double)best / (double)sum, (unsigned long long)hot,
           best_reason);
    assert_true(sum >= 2048 * instants && sum <= 2048 * instants_hi);
    assert_int_equal(best_ip * 8 - base, (uint64_t)hot);
    assert_int_equal(best_reason, 3); /* SendStall */
    /* the multiple-values variant: one set, same values */
    uint32_t sets = 0, tot = 0;
    ZE_OK(zetMetricGroupCalculateMultipleMetricValuesExp(g, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, bytes, buf,
                                                         &sets, &tot, NULL, NULL));
    assert_int_equal(sets, 1);
    assert_int_equal(tot, bytes / 64 * 10);
    uint32_t counts[1] = {0};
    zet_typed_value_t *v2 = malloc(tot * sizeof *v2);
    ZE_OK(zetMetricGroupCalculateMultipleMetricValuesExp(g, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, bytes, buf,
                                                         &sets, &tot, counts, v2));
    assert_int_equal(tot, nv);
    assert_int_equal(counts[0], nv);
    for (uint32_t i = 0; i < nv; i++)
        assert_int_equal(v2[i].value.ui64, v[i].value.ui64);
    assert_int_equal(zetMetricGroupCalculateMetricValues(g, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, 63, buf, &nv, v),
                     ZE_RESULT_ERROR_INVALID_SIZE);
    assert_int_equal(zetMetricGroupCalculateMetricValues(g, ZET_METRIC_GROUP_CALCULATION_TYPE_MAX_METRIC_VALUES, bytes, buf,
                                                         &nv, v), ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
    free(v);
    free(v2);
    free(buf);
    ZE_OK(zetMetricStreamerClose(s));
    ZE_OK(zeEventDestroy(ev));
    ZE_OK(zeEventPoolDestroy(pool));
    ZE_OK(zeCommandListDestroy(l));
    ZE_OK(zeKernelDestroy(k));
    ZE_OK(zeModuleDestroy(m));
    ZE_OK(zeMemFree(g_ctx, src));
    ZE_OK(zeMemFree(g_ctx, dst));
#endif
}

/* Notification: the event is signalled once N reports are pending and clears when they are read. */
static void test_notify(void **state)
{
    (void)state;
    const char *names[] = {"busy_ns"};
    ze_module_handle_t m = module_spirv(g_dev[0], names, 1);
    ze_kernel_handle_t k = kernel(m, "busy_ns");
    ze_event_pool_handle_t pool = ts_pool(1);
    ze_event_handle_t ev = event_at(pool, 0);
    zet_metric_group_handle_t g = group_of(g_dev[0]);
    zet_metric_streamer_handle_t s = open_streamer(g_dev[0], g, MIN_PERIOD, 50, ev);
    assert_int_equal(zeEventQueryStatus(ev), ZE_RESULT_NOT_READY);
    ze_command_list_handle_t l = imm_list(g_dev[0], 0, 0);
    launch_busy(l, k, 3000000, NULL); /* 3 ms / 13052 ns = 229 reports */
    ZE_OK(zeEventHostSynchronize(ev, 2000000000ull));
    list_sync(l);
    uint8_t *buf = NULL;
    size_t cap = 0;
    ze_result_t r;
    size_t bytes = drain(s, &buf, &cap, &r);
    ZE_OK(r);
    assert_true(bytes / 64 >= 228 && bytes / 64 <= 230);
    assert_int_equal(zeEventQueryStatus(ev), ZE_RESULT_NOT_READY);
    ZE_OK(zetMetricStreamerClose(s));
    free(buf);
    ZE_OK(zeCommandListDestroy(l));
    ZE_OK(zeEventDestroy(ev));
    ZE_OK(zeEventPoolDestroy(pool));
    ZE_OK(zeKernelDestroy(k));
    ZE_OK(zeModuleDestroy(m));
}

/* Overflow (run with SIMDEV_EUSTALL_BUFFER_KB=1: 16 reports): the read after the loss returns
 * WARNING_DROPPED_DATA with a full buffer; the next stored report carries the overflow flag and
 * its calculation returns WARNING_DROPPED_DATA too. */
static void test_overflow(void **state)
{
    (void)state;
    const char *names[] = {"busy_ns"};
    ze_module_handle_t m = module_spirv(g_dev[0], names, 1);
    ze_kernel_handle_t k = kernel(m, "busy_ns");
    zet_metric_group_handle_t g = group_of(g_dev[0]);
    zet_metric_streamer_handle_t s = open_streamer(g_dev[0], g, MIN_PERIOD, 1, NULL);
    size_t sz = 0;
    ZE_OK(zetMetricStreamerReadData(s, UINT32_MAX, &sz, NULL));
    assert_int_equal(sz, 1024);
    ze_command_list_handle_t l = imm_list(g_dev[0], 0, 0);
    launch_busy(l, k, 2000000, NULL); /* ~153 reports into a buffer of 16 */
    list_sync(l);
    uint8_t buf[1024];
    sz = sizeof buf;
    assert_int_equal(zetMetricStreamerReadData(s, UINT32_MAX, &sz, buf), ZE_RESULT_WARNING_DROPPED_DATA);
    assert_int_equal(sz, 1024);
    sz = sizeof buf;
    ZE_OK(zetMetricStreamerReadData(s, UINT32_MAX, &sz, buf)); /* warning reported once */
    assert_int_equal(sz, 0);
    launch_busy(l, k, 200000, NULL);
    list_sync(l);
    sz = sizeof buf;
    ZE_OK(zetMetricStreamerReadData(s, UINT32_MAX, &sz, buf));
    assert_true(sz >= 64);
    uint64_t ip;
    uint32_t c[9];
    uint16_t f;
    decode(buf, &ip, c, &f);
    assert_int_equal(f & 0x100, 0x100);
    uint32_t nv = 0;
    ZE_OK(zetMetricGroupCalculateMetricValues(g, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, sz, buf, &nv, NULL));
    zet_typed_value_t v[160];
    assert_true(nv <= 160);
    assert_int_equal(zetMetricGroupCalculateMetricValues(g, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, sz, buf, &nv, v),
                     ZE_RESULT_WARNING_DROPPED_DATA);
    ZE_OK(zetMetricStreamerClose(s));
    ZE_OK(zeCommandListDestroy(l));
    ZE_OK(zeKernelDestroy(k));
    ZE_OK(zeModuleDestroy(m));
}

/* zetModuleGetDebugInfo: an ELF whose DWARF line table maps every instruction address (device
 * address = kernel base + 16 i) to the file and line of the -g kernel; read back with libdw. */
static void test_debug_info(void **state)
{
    (void)state;
#if !defined(PA_SPIRV_HOT) || !defined(PA_HAVE_LIBDW)
    skip();
#else
    size_t n = 0;
    uint8_t *spv = read_file(PA_SPIRV_HOT, &n);
    assert_non_null(spv);
    ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV, n, spv, "", NULL};
    ze_module_handle_t m = NULL;
    ZE_OK(zeModuleCreate(g_ctx, g_dev[0], &md, &m, NULL));
    free(spv);
    ze_kernel_handle_t k = kernel(m, "eustall_hot");
    uint64_t base = kernel_base(k);
    size_t bin_n = 0;
    ZE_OK(zeModuleGetNativeBinary(m, &bin_n, NULL));
    uint8_t *bin = malloc(bin_n);
    ZE_OK(zeModuleGetNativeBinary(m, &bin_n, bin));
    size_t sz = 0;
    ZE_OK(zetModuleGetDebugInfo(m, ZET_MODULE_DEBUG_INFO_FORMAT_ELF_DWARF, &sz, NULL));
    assert_true(sz > 64);
    uint8_t *dbg = malloc(sz);
    ZE_OK(zetModuleGetDebugInfo(m, ZET_MODULE_DEBUG_INFO_FORMAT_ELF_DWARF, &sz, dbg));
    elf_version(EV_CURRENT);
    Elf *elf = elf_memory((char *)dbg, sz);
    assert_non_null(elf);
    Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
    assert_non_null(dw);
    Dwarf_Die cu;
    assert_non_null(dwarf_addrdie(dw, base, &cu));
    int checked = 0, line9 = 0;
    for (size_t o = 0; o + 16 <= bin_n; o += 16) {
        uint32_t want = bin[o + 4] | bin[o + 5] << 8 | bin[o + 6] << 16 | (uint32_t)bin[o + 7] << 24;
        Dwarf_Line *ln = dwarf_getsrc_die(&cu, base + o);
        assert_non_null(ln);
        int got = -1;
        assert_int_equal(dwarf_lineno(ln, &got), 0);
        assert_int_equal(got, want);
        const char *f = dwarf_linesrc(ln, NULL, NULL);
        assert_non_null(f);
        if (want) /* real lines come from the OpenCL C file */
            assert_non_null(strstr(f, "eustall_hot.cl"));
        line9 += want == 9;
        checked++;
    }
    printf("debug info: %d instructions mapped, %d on line 9\n", checked, line9);
    assert_true(checked > 10 && line9 >= 6);
    assert_int_equal(zetModuleGetDebugInfo(m, ZET_MODULE_DEBUG_INFO_FORMAT_FORCE_UINT32, &sz, NULL),
                     ZE_RESULT_ERROR_INVALID_ENUMERATION);
    dwarf_end(dw);
    elf_end(elf);
    free(dbg);
    free(bin);
    ZE_OK(zeKernelDestroy(k));
    ZE_OK(zeModuleDestroy(m));
#endif
}

/* No ZET_ENABLE_METRICS: no group at all. SIMDEV_EUSTALL=0: no EuStallSampling (ComputeBasic stays). */
static void test_no_group(void **state)
{
    (void)state;
    uint32_t n = 5;
    ZE_OK(zetMetricGroupGet(g_dev[0], &n, NULL));
    if (getenv("ZET_ENABLE_METRICS"))
        assert_null(group_named(g_dev[0], "EuStallSampling"));
    else
        assert_int_equal(n, 0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "off") == 0) {
        const struct CMUnitTest t[] = {cmocka_unit_test(test_no_group)};
        return cmocka_run_group_tests(t, setup, NULL);
    }
    if (strcmp(mode, "overflow") == 0) {
        const struct CMUnitTest t[] = {cmocka_unit_test(test_overflow)};
        return cmocka_run_group_tests(t, setup, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discovery), cmocka_unit_test(test_state_machine), cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_busy_count), cmocka_unit_test(test_notify), cmocka_unit_test(test_dominant),
        cmocka_unit_test(test_debug_info),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
