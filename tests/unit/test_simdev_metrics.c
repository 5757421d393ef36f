/* test_simdev_metrics.c - simdev ComputeBasic stream and sysman through the loader: exact
 * instruction and byte counts of known workloads (ALU-only, loads/stores, matrix, a copy train),
 * interval tiling, period rounding, and sysman engine/memory/PCI counters consistent with the
 * stream. Needs ZET_ENABLE_METRICS=1. */
#include <math.h>
#include <stdbool.h>
#include <level_zero/zes_api.h>
#include <level_zero/zet_api.h>

#include "test_simdev_util.h"

#define NM 26 /* ComputeBasic metrics */
enum { M_BEGIN, M_GPUTIME, M_CLOCKS, M_FREQ, M_GPU_BUSY, M_XVE_ACTIVE, M_XVE_STALL, M_OCC, M_ALU0, M_ALU1, M_XMX,
       M_SEND, M_CONTROL, M_GMEM_R, M_GMEM_W, M_L3_R, M_L3_W, M_SLM_R, M_SLM_W, M_CS_BUSY, M_COPY_BUSY,
       M_H2D, M_D2H, M_D2D, M_PEER, M_FILL };
static const char *g_names[NM] = {
    "QueryBeginTime", "GpuTime", "GpuCoreClocks", "AvgGpuCoreFrequencyMHz", "GPU_BUSY", "XVE_ACTIVE", "XVE_STALL",
    "XVE_THREADS_OCCUPANCY_ALL", "XVE_INST_EXECUTED_ALU0_ALL", "XVE_INST_EXECUTED_ALU1_ALL",
    "XVE_INST_EXECUTED_XMX_ALL", "XVE_INST_EXECUTED_SEND_ALL", "XVE_INST_EXECUTED_CONTROL_ALL",
    "GPU_MEMORY_BYTE_READ", "GPU_MEMORY_BYTE_WRITE", "L3_BYTE_READ", "L3_BYTE_WRITE", "SLM_BYTE_READ",
    "SLM_BYTE_WRITE", "COMMAND_PARSER_COMPUTE_ENGINE_BUSY", "COMMAND_PARSER_COPY_ENGINE_BUSY", "COPY_BYTE_H2D",
    "COPY_BYTE_D2H", "COPY_BYTE_D2D", "COPY_BYTE_PEER", "FILL_BYTE"};

static zet_metric_group_handle_t compute_basic(ze_device_handle_t dev)
{
    uint32_t n = 0;
    ZE_OK(zetMetricGroupGet(dev, &n, NULL));
    zet_metric_group_handle_t gs[8];
    assert_true(n >= 1 && n <= 8);
    ZE_OK(zetMetricGroupGet(dev, &n, gs));
    for (uint32_t i = 0; i < n; i++) {
        zet_metric_group_properties_t p = {.stype = ZET_STRUCTURE_TYPE_METRIC_GROUP_PROPERTIES};
        ZE_OK(zetMetricGroupGetProperties(gs[i], &p));
        if (strcmp(p.name, "ComputeBasic") == 0)
            return gs[i];
    }
    fail_msg("no ComputeBasic group");
    return NULL;
}

/* Hand-built SPIR-V kernel "k" whose body is n instructions of opcode op then OpReturn. */
static ze_module_handle_t body_module(ze_device_handle_t dev, uint32_t op, uint32_t n)
{
    uint32_t w[256];
    size_t k = 0;
    w[k++] = 0x07230203u; w[k++] = 0x00010000u; w[k++] = 0; w[k++] = 100; w[k++] = 0;
    w[k++] = (4u << 16) | 15u; w[k++] = 6; w[k++] = 10; w[k++] = 'k'; /* OpEntryPoint Kernel %10 "k" */
    w[k++] = (2u << 16) | 19u; w[k++] = 1;                              /* %1 = OpTypeVoid */
    w[k++] = (3u << 16) | 33u; w[k++] = 2; w[k++] = 1;                  /* %2 = OpTypeFunction %1 */
    w[k++] = (3u << 16) | 22u; w[k++] = 3; w[k++] = 32;                 /* %3 = OpTypeFloat 32 */
    w[k++] = (5u << 16) | 54u; w[k++] = 1; w[k++] = 10; w[k++] = 0; w[k++] = 2; /* OpFunction */
    w[k++] = (2u << 16) | 248u; w[k++] = 11;                            /* OpLabel */
    for (uint32_t i = 0; i < n; i++) {                                  /* %3-typed results 20.. */
        w[k++] = (5u << 16) | op; w[k++] = 3; w[k++] = 20 + i; w[k++] = 4; w[k++] = 5;
    }
    w[k++] = (1u << 16) | 253u;                                         /* OpReturn */
    w[k++] = (1u << 16) | 56u;                                          /* OpFunctionEnd */
    ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV, k * 4,
                           (const uint8_t *)w, "", NULL};
    ze_module_handle_t m = NULL;
    ZE_OK(zeModuleCreate(g_ctx, dev, &md, &m, NULL));
    return m;
}

static void sync_list(ze_command_list_handle_t l)
{
    ze_event_pool_handle_t p = ts_pool(1);
    ze_event_handle_t e = event_at(p, 0);
    ZE_OK(zeCommandListAppendBarrier(l, e, 0, NULL));
    ZE_OK(zeEventHostSynchronize(e, UINT64_MAX));
    ZE_OK(zeEventDestroy(e));
    ZE_OK(zeEventPoolDestroy(p));
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    nanosleep(&ts, NULL);
}

/* Reads every report; returns the typed values (NM per report) and their count of reports. */
static zet_typed_value_t *read_all(zet_metric_streamer_handle_t s, zet_metric_group_handle_t g, uint32_t *nrep)
{
    size_t cap = 0;
    ZE_OK(zetMetricStreamerReadData(s, UINT32_MAX, &cap, NULL));
    uint8_t *raw = malloc(cap);
    size_t sz = cap;
    ZE_OK(zetMetricStreamerReadData(s, UINT32_MAX, &sz, raw));
    assert_int_equal(sz % 256, 0);
    uint32_t nv = 0;
    ZE_OK(zetMetricGroupCalculateMetricValues(g, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, sz, raw, &nv, NULL));
    assert_int_equal(nv, sz / 256 * NM);
    zet_typed_value_t *v = malloc((nv ? nv : 1) * sizeof *v);
    ZE_OK(zetMetricGroupCalculateMetricValues(g, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, sz, raw, &nv, v));
    free(raw);
    *nrep = nv / NM;
    return v;
}

static uint64_t sum_u(const zet_typed_value_t *v, uint32_t n, int m)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += v[i * NM + m].value.ui64;
    return s;
}

/* busy ns = percent x GpuTime / 100, summed over reports */
static double sum_busy_ns(const zet_typed_value_t *v, uint32_t n, int m)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += (double)v[i * NM + m].value.fp32 * (double)v[i * NM + M_GPUTIME].value.ui64 / 100.0;
    return s;
}

static void test_group(void **state)
{
    (void)state;
    zet_metric_group_handle_t g = compute_basic(g_dev[0]);
    zet_metric_group_properties_t p = {.stype = ZET_STRUCTURE_TYPE_METRIC_GROUP_PROPERTIES};
    ZE_OK(zetMetricGroupGetProperties(g, &p));
    assert_int_equal(p.samplingType, ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED);
    assert_int_equal(p.metricCount, NM);
    zet_metric_handle_t m[NM];
    uint32_t n = NM;
    ZE_OK(zetMetricGet(g, &n, m));
    assert_int_equal(n, NM);
    for (uint32_t i = 0; i < NM; i++) {
        zet_metric_properties_t mp = {.stype = ZET_STRUCTURE_TYPE_METRIC_PROPERTIES};
        ZE_OK(zetMetricGetProperties(m[i], &mp));
        assert_string_equal(mp.name, g_names[i]);
        bool pctm = i == M_GPU_BUSY || i == M_XVE_ACTIVE || i == M_XVE_STALL || i == M_OCC || i == M_CS_BUSY ||
                    i == M_COPY_BUSY;
        assert_int_equal(mp.resultType, pctm ? ZET_VALUE_TYPE_FLOAT32 : ZET_VALUE_TYPE_UINT64);
        if (pctm)
            assert_string_equal(mp.resultUnits, "percent");
        if (i >= M_GMEM_R && i <= M_SLM_W)
            assert_string_equal(mp.resultUnits, "bytes");
    }
    /* period rounding: 2^(e+1) ticks of 52.083 ns, the largest <= the request */
    zet_metric_streamer_desc_t d = {ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC, NULL, 4, 100000};
    zet_metric_streamer_handle_t s = NULL, s2 = NULL;
    assert_int_equal(zetMetricStreamerOpen(g_ctx, g_dev[0], g, &d, NULL, &s), ZE_RESULT_NOT_READY);
    ZE_OK(zetContextActivateMetricGroups(g_ctx, g_dev[0], 1, &g));
    ZE_OK(zetMetricStreamerOpen(g_ctx, g_dev[0], g, &d, NULL, &s));
    assert_int_equal(d.samplingPeriod, 53333); /* 1024 ticks */
    assert_int_equal(zetMetricStreamerOpen(g_ctx, g_dev[0], g, &d, NULL, &s2), ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
    size_t sz = 0;
    ZE_OK(zetMetricStreamerReadData(s, 3, &sz, NULL));
    assert_int_equal(sz, 768);
    ZE_OK(zetMetricStreamerClose(s));
    zet_metric_streamer_desc_t d2 = {ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC, NULL, 1, 1};
    ZE_OK(zetMetricStreamerOpen(g_ctx, g_dev[0], g, &d2, NULL, &s));
    assert_int_equal(d2.samplingPeriod, 13333); /* 256 ticks: the smallest >= 10 us */
    ZE_OK(zetMetricStreamerClose(s));
}

typedef struct sysman_snap { uint64_t cs_us, copy_us, ts_us, rd, wr, rx, tx; } sysman_snap;

static void sysman_read(ze_device_handle_t dev, sysman_snap *o)
{
    uint32_t n = 0;
    ZE_OK(zesDeviceEnumEngineGroups((zes_device_handle_t)dev, &n, NULL));
    assert_int_equal(n, 9);
    zes_engine_handle_t e[9];
    ZE_OK(zesDeviceEnumEngineGroups((zes_device_handle_t)dev, &n, e));
    for (uint32_t i = 0; i < n; i++) {
        zes_engine_properties_t p = {.stype = ZES_STRUCTURE_TYPE_ENGINE_PROPERTIES};
        ZE_OK(zesEngineGetProperties(e[i], &p));
        zes_engine_stats_t st;
        ZE_OK(zesEngineGetActivity(e[i], &st));
        if (p.type == ZES_ENGINE_GROUP_COMPUTE_ALL) {
            o->cs_us = st.activeTime;
            o->ts_us = st.timestamp;
        }
        if (p.type == ZES_ENGINE_GROUP_COPY_ALL)
            o->copy_us = st.activeTime;
    }
    uint32_t nm = 0;
    ZE_OK(zesDeviceEnumMemoryModules((zes_device_handle_t)dev, &nm, NULL));
    assert_int_equal(nm, 1);
    zes_mem_handle_t mh;
    ZE_OK(zesDeviceEnumMemoryModules((zes_device_handle_t)dev, &nm, &mh));
    zes_mem_bandwidth_t bw;
    ZE_OK(zesMemoryGetBandwidth(mh, &bw));
    assert_int_equal(bw.maxBandwidth, 102400000000ull);
    o->rd = bw.readCounter;
    o->wr = bw.writeCounter;
    zes_pci_stats_t ps;
    ZE_OK(zesDevicePciGetStats((zes_device_handle_t)dev, &ps));
    o->rx = ps.rxCounter;
    o->tx = ps.txCounter;
}

/* Known workloads: counts summed over the stream equal the hand computation exactly. */
static void test_exact_counts(void **state)
{
    (void)state;
    ze_device_handle_t dev = g_dev[0];
    zet_metric_group_handle_t g = compute_basic(dev);
    ZE_OK(zetContextActivateMetricGroups(g_ctx, dev, 1, &g));
    ze_module_handle_t m_alu = body_module(dev, 129 /* OpFAdd */, 10);
    ze_module_handle_t m_xmx = body_module(dev, 6237 /* OpSubgroupMatrixMultiplyAccumulateINTEL */, 4);
    const char *names[] = {"vector_add"};
    ze_module_handle_t m_va = module_spirv(dev, names, 1);
    ze_kernel_handle_t k_alu = kernel(m_alu, "k"), k_xmx = kernel(m_xmx, "k"), k_va = kernel(m_va, "vector_add");
    ZE_OK(zeKernelSetGroupSize(k_alu, 64, 1, 1));
    ZE_OK(zeKernelSetGroupSize(k_xmx, 64, 1, 1));
    ZE_OK(zeKernelSetGroupSize(k_va, 256, 1, 1));
    const uint32_t N = 4096;
    float *a = dev_alloc(dev, N * 4), *b = dev_alloc(dev, N * 4), *c = dev_alloc(dev, N * 4);
    ZE_OK(zeKernelSetArgumentValue(k_va, 0, 8, &a));
    ZE_OK(zeKernelSetArgumentValue(k_va, 1, 8, &b));
    ZE_OK(zeKernelSetArgumentValue(k_va, 2, 8, &c));
    ZE_OK(zeKernelSetArgumentValue(k_va, 3, 4, &N));
    const size_t MB = 1 << 20;
    uint8_t *host = malloc(MB);
    memset(host, 7, MB);
    ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
    void *dbuf = NULL;
    ZE_OK(zeMemAllocDevice(g_ctx, &dd, MB, 64, dev, &dbuf));
    sysman_snap s0, s1;
    sysman_read(dev, &s0);
    zet_metric_streamer_desc_t d = {ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC, NULL, 100000, 100000};
    zet_metric_streamer_handle_t s = NULL;
    ZE_OK(zetMetricStreamerOpen(g_ctx, dev, g, &d, NULL, &s));
    ze_command_list_handle_t lc = imm_list(dev, SIMDEV_ORDINAL_COMPUTE, 0), lb = imm_list(dev, SIMDEV_ORDINAL_COPY, 0);
    ze_group_count_t g64 = {64, 1, 1}, g16 = {16, 1, 1};
    ZE_OK(zeCommandListAppendLaunchKernel(lc, k_alu, &g64, NULL, 0, NULL)); /* 4096 items, 512 SIMD threads */
    ZE_OK(zeCommandListAppendLaunchKernel(lc, k_xmx, &g64, NULL, 0, NULL));
    ZE_OK(zeCommandListAppendLaunchKernel(lc, k_va, &g16, NULL, 0, NULL));
    for (int i = 0; i < 3; i++) /* copy train host -> device on the copy engine */
        ZE_OK(zeCommandListAppendMemoryCopy(lb, dbuf, host, MB, NULL, 0, NULL));
    ZE_OK(zeCommandListAppendMemoryCopy(lb, host, dbuf, MB / 2, NULL, 0, NULL));
    uint32_t pat = 0;
    ZE_OK(zeCommandListAppendMemoryFill(lb, dbuf, &pat, 4, 65536, NULL, 0, NULL));
    sync_list(lc);
    sync_list(lb);
    sleep_ns(3 * d.samplingPeriod);
    uint32_t nrep = 0;
    zet_typed_value_t *v = read_all(s, g, &nrep);
    sysman_read(dev, &s1);
    ZE_OK(zetMetricStreamerClose(s));
    /* hand computation: W = 64 groups x ceil(64/8) = 512 SIMD threads for k_alu/k_xmx, 16 x 32 = 512
     * for vector_add (8 instructions: ALU0 3, SEND 3 (2 loads, 1 store), CONTROL 2; 12 bytes/item) */
    uint64_t W = 512;
    uint64_t e_alu0 = 10 * W + 3 * W, e_xmx = 4 * W, e_send = 3 * W, e_ctl = W + W + 2 * W;
    uint64_t e_rd = 8ull * N + MB / 2, e_wr = 4ull * N + 3 * MB + 65536;
    printf("%u reports of %u ns: ALU0 %llu (exp %llu) XMX %llu (%llu) SEND %llu (%llu) CONTROL %llu (%llu) "
           "GMEM r %llu (%llu) w %llu (%llu) H2D %llu D2H %llu FILL %llu\n", nrep, d.samplingPeriod,
           (unsigned long long)sum_u(v, nrep, M_ALU0), (unsigned long long)e_alu0,
           (unsigned long long)sum_u(v, nrep, M_XMX), (unsigned long long)e_xmx,
           (unsigned long long)sum_u(v, nrep, M_SEND), (unsigned long long)e_send,
           (unsigned long long)sum_u(v, nrep, M_CONTROL), (unsigned long long)e_ctl,
           (unsigned long long)sum_u(v, nrep, M_GMEM_R), (unsigned long long)e_rd,
           (unsigned long long)sum_u(v, nrep, M_GMEM_W), (unsigned long long)e_wr,
           (unsigned long long)sum_u(v, nrep, M_H2D), (unsigned long long)sum_u(v, nrep, M_D2H),
           (unsigned long long)sum_u(v, nrep, M_FILL));
    assert_int_equal(sum_u(v, nrep, M_ALU0), e_alu0);
    assert_int_equal(sum_u(v, nrep, M_ALU1), 0);
    assert_int_equal(sum_u(v, nrep, M_XMX), e_xmx);
    assert_int_equal(sum_u(v, nrep, M_SEND), e_send);
    assert_int_equal(sum_u(v, nrep, M_CONTROL), e_ctl);
    assert_int_equal(sum_u(v, nrep, M_GMEM_R), e_rd);
    assert_int_equal(sum_u(v, nrep, M_GMEM_W), e_wr);
    assert_int_equal(sum_u(v, nrep, M_L3_R), 8ull * N); /* kernels only */
    assert_int_equal(sum_u(v, nrep, M_L3_W), 4ull * N);
    assert_int_equal(sum_u(v, nrep, M_H2D), 3 * MB);
    assert_int_equal(sum_u(v, nrep, M_D2H), MB / 2);
    assert_int_equal(sum_u(v, nrep, M_FILL), 65536);
    assert_int_equal(sum_u(v, nrep, M_D2D) + sum_u(v, nrep, M_PEER), 0);
    /* intervals tile the stream: each exactly one period, consecutive begin times one period apart */
    for (uint32_t i = 0; i < nrep; i++) {
        assert_int_equal(v[i * NM + M_GPUTIME].value.ui64, d.samplingPeriod);
        assert_int_equal(v[i * NM + M_CLOCKS].value.ui64 / 10, (uint64_t)d.samplingPeriod * 1600 / 1000 / 10);
        if (i) {
            int64_t step = (int64_t)(v[i * NM + M_BEGIN].value.ui64 - v[(i - 1) * NM + M_BEGIN].value.ui64);
            assert_true(llabs(step - (int64_t)d.samplingPeriod) <= 60); /* one 52 ns tick */
        }
    }
    /* sysman saw the same work: bytes exactly, busy time within the us truncation */
    assert_int_equal(s1.rd - s0.rd, e_rd);
    assert_int_equal(s1.wr - s0.wr, e_wr);
    assert_int_equal(s1.rx - s0.rx, 3 * MB);
    assert_int_equal(s1.tx - s0.tx, MB / 2);
    double cs_stream = sum_busy_ns(v, nrep, M_CS_BUSY) / 1000.0, cp_stream = sum_busy_ns(v, nrep, M_COPY_BUSY) / 1000.0;
    printf("compute busy: sysman %llu us, stream %.1f us; copy busy: sysman %llu us, stream %.1f us\n",
           (unsigned long long)(s1.cs_us - s0.cs_us), cs_stream, (unsigned long long)(s1.copy_us - s0.copy_us), cp_stream);
    assert_true(fabs((double)(s1.cs_us - s0.cs_us) - cs_stream) <= 2.0);
    assert_true(fabs((double)(s1.copy_us - s0.copy_us) - cp_stream) <= 2.0);
    /* the copy train alone: 4 copies + fill at >= 1000 ns + bytes / 16 GB/s each */
    assert_true(cp_stream >= (3.0 * (1000 + MB / 16) + (1000 + MB / 32) + (1000 + 65536 / 16)) / 1000.0 - 2.0);
    free(v);
    free(host);
    ZE_OK(zeCommandListDestroy(lc));
    ZE_OK(zeCommandListDestroy(lb));
    ZE_OK(zeKernelDestroy(k_alu));
    ZE_OK(zeKernelDestroy(k_xmx));
    ZE_OK(zeKernelDestroy(k_va));
    ZE_OK(zeModuleDestroy(m_alu));
    ZE_OK(zeModuleDestroy(m_xmx));
    ZE_OK(zeModuleDestroy(m_va));
    ZE_OK(zeMemFree(g_ctx, a));
    ZE_OK(zeMemFree(g_ctx, b));
    ZE_OK(zeMemFree(g_ctx, c));
    ZE_OK(zeMemFree(g_ctx, dbuf));
}

/* A busy kernel: GPU_BUSY and compute busy sum to its duration; one thread on one EU. */
static void test_busy_util(void **state)
{
    (void)state;
    ze_device_handle_t dev = g_dev[1];
    zet_metric_group_handle_t g = compute_basic(dev);
    ZE_OK(zetContextActivateMetricGroups(g_ctx, dev, 1, &g));
    const char *names[] = {"busy_ns"};
    ze_module_handle_t m = module_spirv(dev, names, 1);
    ze_kernel_handle_t k = kernel(m, "busy_ns");
    zet_metric_streamer_desc_t d = {ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC, NULL, 1000, 1000000};
    zet_metric_streamer_handle_t s = NULL;
    ZE_OK(zetMetricStreamerOpen(g_ctx, dev, g, &d, NULL, &s));
    ze_command_list_handle_t l = imm_list(dev, 0, 1);
    launch_busy(l, k, 5000000, NULL);
    sync_list(l);
    sleep_ns(3 * d.samplingPeriod);
    uint32_t nrep = 0;
    zet_typed_value_t *v = read_all(s, g, &nrep);
    double busy = sum_busy_ns(v, nrep, M_GPU_BUSY), cs = sum_busy_ns(v, nrep, M_CS_BUSY);
    /* busy_ns spins 4-instruction loops, one instruction per cycle: 5e6 ns x 1.6 / 4 iterations */
    uint64_t iters = 5000000ull * 1600 / 1000 / 4;
    printf("busy_ns 5 ms: GPU_BUSY %.0f ns, compute %.0f ns, ALU0 %llu (exp %llu), period %u ns, %u reports\n", busy,
           cs, (unsigned long long)sum_u(v, nrep, M_ALU0), (unsigned long long)(1 + 3 * iters), d.samplingPeriod, nrep);
    assert_true(fabs(busy - 5e6) < 5e6 * 1e-4 && fabs(cs - 5e6) < 5e6 * 1e-4);
    assert_int_equal(sum_u(v, nrep, M_ALU0), 1 + 3 * iters);
    assert_int_equal(sum_u(v, nrep, M_CONTROL), iters + 1);
    ZE_OK(zetMetricStreamerClose(s));
    free(v);
    ZE_OK(zeCommandListDestroy(l));
    ZE_OK(zeKernelDestroy(k));
    ZE_OK(zeModuleDestroy(m));
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n);
    assert_int_equal(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

/* OpenCL C kernels built with clang -g + llvm-spirv: the stream's instruction counts equal the
 * hand computation from the documented ISA encoding (class byte 2, loop depth byte 3 of each
 * 16-byte instruction of zeModuleGetNativeBinary): sum over instructions of 16^depth x W. */
static void run_cl(const char *path, const char *name, uint32_t nargs, uint64_t *got, uint64_t *want)
{
    size_t n = 0;
    uint8_t *spv = slurp(path, &n);
    ze_device_handle_t dev = g_dev[0];
    ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV, n, spv, "", NULL};
    ze_module_handle_t m = NULL;
    ZE_OK(zeModuleCreate(g_ctx, dev, &md, &m, NULL));
    free(spv);
    ze_kernel_handle_t k = kernel(m, name);
    size_t bn = 0;
    ZE_OK(zeModuleGetNativeBinary(m, &bn, NULL));
    uint8_t *bin = malloc(bn);
    ZE_OK(zeModuleGetNativeBinary(m, &bn, bin));
    const uint64_t W = 64 * 8; /* 64 groups of 64 */
    static const int pipe_of_class[11] = {M_ALU0, M_ALU1, M_XMX, M_SEND, M_SEND, M_SEND, M_SEND, M_SEND, M_SEND,
                                          M_CONTROL, -1};
    memset(want, 0, NM * sizeof *want);
    static const uint8_t zero[16] = {0};
    for (size_t o = 0; o + 16 <= bn; o += 16) {
        if (memcmp(bin + o, zero, 16) == 0)
            continue; /* padding: no instruction has opcode 0 */
        uint64_t e = 1;
        for (int d = 0; d < bin[o + 3]; d++)
            e *= 16;
        if (pipe_of_class[bin[o + 2]] >= 0)
            want[pipe_of_class[bin[o + 2]]] += e * W;
    }
    free(bin);
    void *buf = dev_alloc(dev, 1 << 20);
    uint32_t iters = 100;
    for (uint32_t a = 0; a + 1 < nargs; a++)
        ZE_OK(zeKernelSetArgumentValue(k, a, sizeof buf, &buf));
    ZE_OK(zeKernelSetArgumentValue(k, nargs - 1, sizeof iters, &iters));
    ZE_OK(zeKernelSetGroupSize(k, 64, 1, 1));
    zet_metric_group_handle_t g = compute_basic(dev);
    ZE_OK(zetContextActivateMetricGroups(g_ctx, dev, 1, &g));
    zet_metric_streamer_desc_t d = {ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC, NULL, 1000, 100000};
    zet_metric_streamer_handle_t s = NULL;
    ZE_OK(zetMetricStreamerOpen(g_ctx, dev, g, &d, NULL, &s));
    ze_command_list_handle_t l = imm_list(dev, 0, 2);
    ze_group_count_t gc = {64, 1, 1};
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &gc, NULL, 0, NULL));
    sync_list(l);
    sleep_ns(3 * d.samplingPeriod);
    uint32_t nrep = 0;
    zet_typed_value_t *v = read_all(s, g, &nrep);
    for (int mi = 0; mi < NM; mi++)
        got[mi] = v[0].type == ZET_VALUE_TYPE_UINT64 ? sum_u(v, nrep, mi) : 0;
    printf("%s: ALU0 %llu/%llu ALU1 %llu/%llu XMX %llu/%llu SEND %llu/%llu CONTROL %llu/%llu\n", name,
           (unsigned long long)got[M_ALU0], (unsigned long long)want[M_ALU0], (unsigned long long)got[M_ALU1],
           (unsigned long long)want[M_ALU1], (unsigned long long)got[M_XMX], (unsigned long long)want[M_XMX],
           (unsigned long long)got[M_SEND], (unsigned long long)want[M_SEND], (unsigned long long)got[M_CONTROL],
           (unsigned long long)want[M_CONTROL]);
    for (int mi = M_ALU0; mi <= M_CONTROL; mi++)
        assert_int_equal(got[mi], want[mi]);
    free(v);
    ZE_OK(zetMetricStreamerClose(s));
    ZE_OK(zeCommandListDestroy(l));
    ZE_OK(zeKernelDestroy(k));
    ZE_OK(zeModuleDestroy(m));
    ZE_OK(zeMemFree(g_ctx, buf));
}

static void test_cl_kernels(void **state)
{
    (void)state;
#ifndef PA_SPIRV_DIR
    skip();
#else
    uint64_t got[NM], want[NM];
    run_cl(PA_SPIRV_DIR "/alu_only.spv", "alu_only", 2, got, want);
    /* from the sources by hand, W = 512 SIMD threads, loops of 16 trips */
    assert_true(got[M_ALU0] > 4 * (got[M_SEND] + got[M_CONTROL] + got[M_XMX])); /* arithmetic dominates */
    assert_int_equal(got[M_XMX], 0);
    assert_int_equal(got[M_SEND], 1 * 512); /* out[i] = x + y */
    run_cl(PA_SPIRV_DIR "/xmx_mad.spv", "xmx_mad", 4, got, want);
    assert_int_equal(got[M_XMX], 16 * 512);    /* one matrix_mad call in the loop */
    assert_int_equal(got[M_SEND], 3 * 512);    /* a[i & 63], b[i & 63], c[i] = acc */
    run_cl(PA_SPIRV_DIR "/eustall_hot.spv", "eustall_hot", 3, got, want);
    assert_int_equal(got[M_SEND], (16 + 1) * 512); /* the load in the loop, the store after it */
#endif
}

/* A full report buffer (SIMDEV_OA_BUFFER_KB=1: 4 reports): the next read returns
 * WARNING_DROPPED_DATA once, the next report carries the flag and its calculation warns too. */
static void test_overflow(void **state)
{
    (void)state;
    ze_device_handle_t dev = g_dev[0];
    zet_metric_group_handle_t g = compute_basic(dev);
    ZE_OK(zetContextActivateMetricGroups(g_ctx, dev, 1, &g));
    zet_metric_streamer_desc_t d = {ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC, NULL, 2, 13333};
    zet_metric_streamer_handle_t s = NULL;
    ZE_OK(zetMetricStreamerOpen(g_ctx, dev, g, &d, NULL, &s));
    size_t sz = 0;
    ZE_OK(zetMetricStreamerReadData(s, UINT32_MAX, &sz, NULL));
    assert_int_equal(sz, 1024);
    sleep_ns(20 * 13333);
    uint8_t buf[1024];
    sz = sizeof buf;
    assert_int_equal(zetMetricStreamerReadData(s, UINT32_MAX, &sz, buf), ZE_RESULT_WARNING_DROPPED_DATA);
    assert_int_equal(sz, 1024);
    /* the first report stored after the loss carries the flag (the read itself may warn again if
     * the loaded host let the buffer fill once more) */
    sz = 0;
    for (int i = 0; i < 1000 && sz == 0; i++) {
        sleep_ns(13333);
        sz = sizeof buf;
        ze_result_t r = zetMetricStreamerReadData(s, UINT32_MAX, &sz, buf);
        assert_true(r == ZE_RESULT_SUCCESS || r == ZE_RESULT_WARNING_DROPPED_DATA);
    }
    assert_true(sz >= 256);
    uint32_t nv = NM * 4;
    zet_typed_value_t v[NM * 4];
    assert_int_equal(zetMetricGroupCalculateMetricValues(g, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, sz, buf, &nv, v),
                     ZE_RESULT_WARNING_DROPPED_DATA);
    ZE_OK(zetMetricStreamerClose(s));
}

/* An idle device: the buffer holds the stretch as one run and ReadData writes a report per
 * interval, read here 3 at a time (runs split across reads): consecutive reports tile (begin +
 * GpuTime = next begin, within a tick of the device clock), every counter 0, GpuTime = period. */
static void test_idle_runs(void **state)
{
    (void)state;
    ze_device_handle_t dev = g_dev[1];
    zet_metric_group_handle_t g = compute_basic(dev);
    ZE_OK(zetContextActivateMetricGroups(g_ctx, dev, 1, &g));
    zet_metric_streamer_desc_t d = {ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC, NULL, 100000, 13333};
    zet_metric_streamer_handle_t s = NULL;
    ZE_OK(zetMetricStreamerOpen(g_ctx, dev, g, &d, NULL, &s));
    sleep_ns(40 * (uint64_t)d.samplingPeriod);
    uint8_t buf[3 * 256];
    zet_typed_value_t v[3 * NM];
    uint64_t n = 0, prev_end = 0, tick = 1000000000ull / 19200000 + 1;
    for (;;) {
        size_t sz = sizeof buf;
        ZE_OK(zetMetricStreamerReadData(s, 3, &sz, buf));
        if (sz == 0)
            break;
        uint32_t nv = 3 * NM;
        ZE_OK(zetMetricGroupCalculateMetricValues(g, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, sz, buf, &nv, v));
        for (uint32_t i = 0; i < nv / NM; i++, n++) {
            const zet_typed_value_t *r = v + i * NM;
            assert_int_equal(r[M_GPUTIME].value.ui64, d.samplingPeriod);
            if (n)
                assert_true(r[M_BEGIN].value.ui64 + tick >= prev_end && r[M_BEGIN].value.ui64 <= prev_end + tick);
            prev_end = r[M_BEGIN].value.ui64 + r[M_GPUTIME].value.ui64;
            for (int m = M_ALU0; m < NM; m++)
                if (r[m].type == ZET_VALUE_TYPE_UINT64)
                    assert_int_equal(r[m].value.ui64, 0);
                else
                    assert_true(r[m].value.fp32 == 0.0f);
        }
        if (n > 10000)
            break;
    }
    assert_true(n >= 39);
    ZE_OK(zetMetricStreamerClose(s));
    ZE_OK(zetContextActivateMetricGroups(g_ctx, dev, 0, NULL));
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "overflow") == 0) {
        const struct CMUnitTest t[] = {cmocka_unit_test(test_overflow)};
        return cmocka_run_group_tests(t, setup, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group), cmocka_unit_test(test_exact_counts), cmocka_unit_test(test_busy_util),
        cmocka_unit_test(test_cl_kernels), cmocka_unit_test(test_idle_runs),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
