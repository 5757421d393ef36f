/* test_pti_states.c - the PTI PC-sampling state machine, exhaustively: every function in every state
 * (not enabled, enabled, configured, started, stopped, disabled) with valid, NULL and bad
 * arguments returns exactly the code spec/pti-pc-sampling-api.txt lists. Runs on simdev. */
#include <string.h>

#include "pcs_util.h"
#include "profagent/pti_pc_sampling.h"

enum { S_NONE, S_ENABLED, S_CONFIGURED, S_STARTED, S_STOPPED, S_DISABLED, S_COUNT };
static const char *const state_names[] = {"not-enabled", "enabled", "configured", "started", "stopped", "disabled"};

static pcs_run_t run;
static ze_device_handle_t dev0;
static uint64_t kh;            /* the busy kernel's handle, observed in a stopped session */
static int bogus_storage;
static pti_pc_sampling_handle_t extra; /* a handle a case created (Enable), disabled afterwards */

/* A handle in state s (for S_NONE a pointer never returned by Enable, for S_DISABLED a disabled one). */
static pti_pc_sampling_handle_t reach(int s)
{
    pti_pc_sampling_handle_t h = NULL;
    if (s == S_NONE)
        return (pti_pc_sampling_handle_t)(void *)&bogus_storage;
    if (ptiPcSamplingEnable(&h) != PTI_SUCCESS) {
        fprintf(stderr, "cannot reach state %s: Enable failed\n", state_names[s]);
        exit(1);
    }
    if (s >= S_CONFIGURED && s != S_DISABLED && ptiPcSamplingConfigure(h, NULL, 0, 0) != PTI_SUCCESS)
        exit(1);
    if (s >= S_STARTED && s != S_DISABLED) {
        if (ptiPcSamplingStartCollection(h) != PTI_SUCCESS)
            exit(1);
        pcs_run_busy(&run, 3000000);
    }
    if (s == S_STOPPED && ptiPcSamplingStopCollection(h) != PTI_SUCCESS)
        exit(1);
    if (s == S_DISABLED && ptiPcSamplingDisable(h) != PTI_SUCCESS)
        exit(1);
    return h;
}

#define B PTI_ERROR_BAD_ARGUMENT
#define OK PTI_SUCCESS
#define NI PTI_ERROR_NOT_IMPLEMENTED
#define AE PTI_ERROR_PC_SAMPLING_ALREADY_ENABLED
#define NC PTI_ERROR_PC_SAMPLING_NOT_CONFIGURED
#define AC PTI_ERROR_PC_SAMPLING_ALREADY_CONFIGURED
#define AS PTI_ERROR_PC_SAMPLING_ALREADY_STARTED
#define NS PTI_ERROR_PC_SAMPLING_NOT_STARTED
#define AT PTI_ERROR_PC_SAMPLING_ALREADY_STOPPED
#define NT PTI_ERROR_PC_SAMPLING_NOT_STOPPED

typedef pti_result (*case_fn)(pti_pc_sampling_handle_t h);
typedef struct tcase {
    const char *name;
    case_fn fn;
    pti_result want[S_COUNT]; /* not-enabled, enabled, configured, started, stopped, disabled */
} tcase_t;

static pti_result c_enable(pti_pc_sampling_handle_t h) { (void)h; return ptiPcSamplingEnable(&extra); }
static pti_result c_enable_null(pti_pc_sampling_handle_t h) { (void)h; return ptiPcSamplingEnable(NULL); }
static pti_result c_conf(pti_pc_sampling_handle_t h) { return ptiPcSamplingConfigure(h, NULL, 0, 0); }
static pti_result c_conf_period(pti_pc_sampling_handle_t h) { return ptiPcSamplingConfigure(h, NULL, 0, 50000); }
static pti_result c_conf_null(pti_pc_sampling_handle_t h) { (void)h; return ptiPcSamplingConfigure(NULL, NULL, 0, 0); }
static pti_result c_conf_devs(pti_pc_sampling_handle_t h)
{
    pti_device_handle_t d[1] = {dev0};
    return ptiPcSamplingConfigure(h, d, 1, 0);
}
static pti_result c_qbuf(pti_pc_sampling_handle_t h) { size_t sz = 0; return ptiPcSamplingQueryCollectionBufferSize(h, &sz); }
static pti_result c_qbuf_null(pti_pc_sampling_handle_t h) { (void)h; return ptiPcSamplingQueryCollectionBufferSize(NULL, NULL); }
static pti_result c_sbuf(pti_pc_sampling_handle_t h) { return ptiPcSamplingSetCollectionBufferSize(h, 1 << 20); }
static pti_result c_sbuf_null(pti_pc_sampling_handle_t h) { (void)h; return ptiPcSamplingSetCollectionBufferSize(NULL, 0); }
static pti_result c_start(pti_pc_sampling_handle_t h) { return ptiPcSamplingStartCollection(h); }
static pti_result c_start_null(pti_pc_sampling_handle_t h) { (void)h; return ptiPcSamplingStartCollection(NULL); }
static pti_result c_stop(pti_pc_sampling_handle_t h) { return ptiPcSamplingStopCollection(h); }
static pti_result c_stop_null(pti_pc_sampling_handle_t h) { (void)h; return ptiPcSamplingStopCollection(NULL); }
static pti_result c_reasons_count(pti_pc_sampling_handle_t h)
{
    size_t n = 0;
    pti_result r = ptiPcSamplingGetStallReasons(h, NULL, &n);
    if (r == OK)
        PCS_CHECK(n == 9, "reason count %zu, want 9", n);
    return r;
}
static pti_result c_reasons_fill(pti_pc_sampling_handle_t h)
{
    pti_pc_sampling_stall_reason_info_t r[9];
    for (int i = 0; i < 9; i++)
        r[i] = (pti_pc_sampling_stall_reason_info_t){._struct_size = sizeof r[i]};
    size_t n = 9;
    pti_result rc = ptiPcSamplingGetStallReasons(h, r, &n);
    if (rc == OK) {
        PCS_CHECK(n == 9 && r[0]._name && strcmp(r[0]._name, "Active") == 0 && r[8]._name &&
                      strcmp(r[8]._name, "OtherStall") == 0 && r[5]._description,
                  "reasons: n %zu first '%s' last '%s'", n, r[0]._name ? r[0]._name : "(null)",
                  r[8]._name ? r[8]._name : "(null)");
    }
    return rc;
}
static pti_result c_reasons_null_count(pti_pc_sampling_handle_t h) { return ptiPcSamplingGetStallReasons(h, NULL, NULL); }
static pti_result c_reasons_null_h(pti_pc_sampling_handle_t h)
{
    (void)h;
    size_t n = 0;
    return ptiPcSamplingGetStallReasons(NULL, NULL, &n);
}
static pti_result c_reasons_bad_size(pti_pc_sampling_handle_t h)
{
    pti_pc_sampling_stall_reason_info_t r[9];
    memset(r, 0, sizeof r); /* _struct_size 0 */
    size_t n = 9;
    return ptiPcSamplingGetStallReasons(h, r, &n);
}
static pti_result c_devices(pti_pc_sampling_handle_t h)
{
    size_t n = 0;
    pti_result r = ptiPcSamplingGetProfiledDevices(h, NULL, &n);
    if (r == OK) {
        pti_device_handle_t d[4] = {0};
        size_t m = 4;
        PCS_CHECK(n == 1, "profiled devices %zu, want 1 (the busy kernel ran on device 0)", n);
        PCS_CHECK(ptiPcSamplingGetProfiledDevices(h, d, &m) == OK && m == 1 && d[0] == dev0, "devices call 2");
    }
    return r;
}
static pti_result c_devices_null_count(pti_pc_sampling_handle_t h) { return ptiPcSamplingGetProfiledDevices(h, NULL, NULL); }
static pti_result c_devices_null_h(pti_pc_sampling_handle_t h)
{
    (void)h;
    size_t n = 0;
    return ptiPcSamplingGetProfiledDevices(NULL, NULL, &n);
}
static pti_result c_status(pti_pc_sampling_handle_t h)
{
    pti_pc_sampling_device_status_t st = {._struct_size = sizeof st};
    pti_result r = ptiPcSamplingGetDeviceStatus(h, dev0, &st);
    if (r == OK)
        PCS_CHECK(st._device == dev0 && st._total_sample_count > 0 && st._total_pc_count > 0 && st._samples_dropped == 0,
                  "status: samples %llu pcs %llu dropped %u", (unsigned long long)st._total_sample_count,
                  (unsigned long long)st._total_pc_count, st._samples_dropped);
    return r;
}
static pti_result c_status_null_dev(pti_pc_sampling_handle_t h)
{
    pti_pc_sampling_device_status_t st = {._struct_size = sizeof st};
    return ptiPcSamplingGetDeviceStatus(h, NULL, &st);
}
static pti_result c_status_bad_dev(pti_pc_sampling_handle_t h)
{
    pti_pc_sampling_device_status_t st = {._struct_size = sizeof st};
    return ptiPcSamplingGetDeviceStatus(h, (pti_device_handle_t)(void *)&bogus_storage, &st);
}
static pti_result c_status_null_st(pti_pc_sampling_handle_t h) { return ptiPcSamplingGetDeviceStatus(h, dev0, NULL); }
static pti_result c_status_bad_size(pti_pc_sampling_handle_t h)
{
    pti_pc_sampling_device_status_t st = {._struct_size = 0};
    return ptiPcSamplingGetDeviceStatus(h, dev0, &st);
}
static pti_result c_status_null_h(pti_pc_sampling_handle_t h)
{
    (void)h;
    pti_pc_sampling_device_status_t st = {._struct_size = sizeof st};
    return ptiPcSamplingGetDeviceStatus(NULL, dev0, &st);
}
static pti_result c_kh(pti_pc_sampling_handle_t h)
{
    size_t n = 0;
    pti_result r = ptiPcSamplingGetObservedKernelHandles(h, dev0, NULL, &n);
    if (r == OK) {
        uint64_t k[4] = {0};
        size_t m = 4;
        PCS_CHECK(n == 1, "observed kernels %zu, want 1", n);
        PCS_CHECK(ptiPcSamplingGetObservedKernelHandles(h, dev0, k, &m) == OK && m == 1 && k[0] == kh,
                  "kernel handle %llu, want %llu", (unsigned long long)k[0], (unsigned long long)kh);
    }
    return r;
}
static pti_result c_kh_null_count(pti_pc_sampling_handle_t h) { return ptiPcSamplingGetObservedKernelHandles(h, dev0, NULL, NULL); }
static pti_result c_kh_bad_dev(pti_pc_sampling_handle_t h)
{
    size_t n = 0;
    return ptiPcSamplingGetObservedKernelHandles(h, (pti_device_handle_t)(void *)&bogus_storage, NULL, &n);
}
static pti_result c_kh_null_h(pti_pc_sampling_handle_t h)
{
    (void)h;
    size_t n = 0;
    return ptiPcSamplingGetObservedKernelHandles(NULL, dev0, NULL, &n);
}
static pti_result kinfo(pti_pc_sampling_handle_t h, ze_device_handle_t d, uint64_t k, size_t size, int null_info)
{
    uint64_t agg[9];
    pti_pc_sampling_kernel_info_t ki = {._struct_size = size, ._aggregated_samples = agg};
    pti_result r = ptiPcSamplingGetObservedKernelInfo(h, d, k, null_info ? NULL : &ki);
    if (r == OK) {
        uint64_t sum = 0;
        for (int i = 0; i < 9; i++)
            sum += agg[i];
        PCS_CHECK(ki._kernel_handle == k && ki._device == d && ki._reason_count == 9 &&
                      ki._instructions_with_samples_count > 0 && sum > 0 && ki._kernel_name &&
                      strcmp(ki._kernel_name, "busy_ns") == 0,
                  "kernel info: name %s reasons %zu instrs %zu", ki._kernel_name ? ki._kernel_name : "(null)",
                  ki._reason_count, ki._instructions_with_samples_count);
    }
    return r;
}
static pti_result c_kinfo(pti_pc_sampling_handle_t h) { return kinfo(h, dev0, kh, sizeof(pti_pc_sampling_kernel_info_t), 0); }
static pti_result c_kinfo_unknown(pti_pc_sampling_handle_t h) { return kinfo(h, dev0, 987654321, sizeof(pti_pc_sampling_kernel_info_t), 0); }
static pti_result c_kinfo_null(pti_pc_sampling_handle_t h) { return kinfo(h, dev0, kh, 0, 1); }
static pti_result c_kinfo_bad_size(pti_pc_sampling_handle_t h) { return kinfo(h, dev0, kh, 8, 0); }
static pti_result c_kinfo_bad_dev(pti_pc_sampling_handle_t h)
{
    return kinfo(h, (ze_device_handle_t)(void *)&bogus_storage, kh, sizeof(pti_pc_sampling_kernel_info_t), 0);
}
static pti_result c_kinfo_null_h(pti_pc_sampling_handle_t h)
{
    (void)h;
    return kinfo(NULL, dev0, kh, sizeof(pti_pc_sampling_kernel_info_t), 0);
}
static pti_result instrs(pti_pc_sampling_handle_t h, ze_device_handle_t d, uint64_t k, int null_ib, int null_sb)
{
    pti_pc_sampling_instruction_t ib[256];
    uint64_t sb[256 * 9];
    return ptiPcSamplingGetSamplesPerInstruction(h, d, k, null_ib ? NULL : ib, 256, null_sb ? NULL : sb, 256 * 9);
}
static pti_result c_instr(pti_pc_sampling_handle_t h) { return instrs(h, dev0, kh, 0, 0); }
static pti_result c_instr_unknown(pti_pc_sampling_handle_t h) { return instrs(h, dev0, 987654321, 0, 0); }
static pti_result c_instr_null_ib(pti_pc_sampling_handle_t h) { return instrs(h, dev0, kh, 1, 0); }
static pti_result c_instr_null_sb(pti_pc_sampling_handle_t h) { return instrs(h, dev0, kh, 0, 1); }
static pti_result c_instr_null_dev(pti_pc_sampling_handle_t h) { return instrs(h, NULL, kh, 0, 0); }
static pti_result c_instr_bad_dev(pti_pc_sampling_handle_t h)
{
    return instrs(h, (ze_device_handle_t)(void *)&bogus_storage, kh, 0, 0);
}
static pti_result c_instr_null_h(pti_pc_sampling_handle_t h) { (void)h; return instrs(NULL, dev0, kh, 0, 0); }
static pti_result c_disable(pti_pc_sampling_handle_t h) { return ptiPcSamplingDisable(h); }
static pti_result c_disable_null(pti_pc_sampling_handle_t h) { (void)h; return ptiPcSamplingDisable(NULL); }

/*                                    none  enabled configured started stopped disabled */
static const tcase_t cases[] = {
    {"Enable", c_enable,                     {OK, AE, AE, AE, AE, OK}},
    {"Enable(NULL)", c_enable_null,          {B, B, B, B, B, B}},
    {"Configure", c_conf,                    {B, OK, AC, AC, AC, B}},
    {"Configure(period)", c_conf_period,     {B, OK, AC, AC, AC, B}},
    {"Configure(NULL)", c_conf_null,         {B, B, B, B, B, B}},
    {"Configure(devices)", c_conf_devs,      {B, NI, AC, AC, AC, B}},
    {"QueryBufferSize", c_qbuf,              {NI, NI, NI, NI, NI, NI}},
    {"QueryBufferSize(NULL)", c_qbuf_null,   {NI, NI, NI, NI, NI, NI}},
    {"SetBufferSize", c_sbuf,                {NI, NI, NI, NI, NI, NI}},
    {"SetBufferSize(NULL)", c_sbuf_null,     {NI, NI, NI, NI, NI, NI}},
    {"Start", c_start,                       {B, NC, OK, AS, AT, B}},
    {"Start(NULL)", c_start_null,            {B, B, B, B, B, B}},
    {"Stop", c_stop,                         {B, NS, NS, OK, AT, B}},
    {"Stop(NULL)", c_stop_null,              {B, B, B, B, B, B}},
    {"GetStallReasons(count)", c_reasons_count, {B, OK, OK, OK, OK, B}},
    {"GetStallReasons(fill)", c_reasons_fill, {B, OK, OK, OK, OK, B}},
    {"GetStallReasons(NULL count)", c_reasons_null_count, {B, B, B, B, B, B}},
    {"GetStallReasons(NULL)", c_reasons_null_h, {B, B, B, B, B, B}},
    {"GetStallReasons(_struct_size 0)", c_reasons_bad_size, {B, B, B, B, B, B}},
    {"GetProfiledDevices", c_devices,        {B, NT, NT, NT, OK, B}},
    {"GetProfiledDevices(NULL count)", c_devices_null_count, {B, B, B, B, B, B}},
    {"GetProfiledDevices(NULL)", c_devices_null_h, {B, B, B, B, B, B}},
    {"GetDeviceStatus", c_status,            {B, NT, NT, NT, OK, B}},
    {"GetDeviceStatus(NULL device)", c_status_null_dev, {B, B, B, B, B, B}},
    {"GetDeviceStatus(bad device)", c_status_bad_dev, {B, B, B, B, B, B}},
    {"GetDeviceStatus(NULL status)", c_status_null_st, {B, B, B, B, B, B}},
    {"GetDeviceStatus(_struct_size 0)", c_status_bad_size, {B, B, B, B, B, B}},
    {"GetDeviceStatus(NULL)", c_status_null_h, {B, B, B, B, B, B}},
    {"GetObservedKernelHandles", c_kh,       {B, NT, NT, NT, OK, B}},
    {"GetObservedKernelHandles(NULL count)", c_kh_null_count, {B, B, B, B, B, B}},
    {"GetObservedKernelHandles(bad device)", c_kh_bad_dev, {B, B, B, B, B, B}},
    {"GetObservedKernelHandles(NULL)", c_kh_null_h, {B, B, B, B, B, B}},
    {"GetObservedKernelInfo", c_kinfo,       {B, NT, NT, NT, OK, B}},
    {"GetObservedKernelInfo(unknown kernel)", c_kinfo_unknown, {B, NT, NT, NT, B, B}},
    {"GetObservedKernelInfo(NULL info)", c_kinfo_null, {B, B, B, B, B, B}},
    {"GetObservedKernelInfo(_struct_size 8)", c_kinfo_bad_size, {B, B, B, B, B, B}},
    {"GetObservedKernelInfo(bad device)", c_kinfo_bad_dev, {B, B, B, B, B, B}},
    {"GetObservedKernelInfo(NULL)", c_kinfo_null_h, {B, B, B, B, B, B}},
    {"GetSamplesPerInstruction", c_instr,    {B, NT, NT, NT, OK, B}},
    {"GetSamplesPerInstruction(unknown kernel)", c_instr_unknown, {B, NT, NT, NT, B, B}},
    {"GetSamplesPerInstruction(NULL instructions)", c_instr_null_ib, {B, B, B, B, B, B}},
    {"GetSamplesPerInstruction(NULL samples)", c_instr_null_sb, {B, B, B, B, B, B}},
    {"GetSamplesPerInstruction(NULL device)", c_instr_null_dev, {B, B, B, B, B, B}},
    {"GetSamplesPerInstruction(bad device)", c_instr_bad_dev, {B, B, B, B, B, B}},
    {"GetSamplesPerInstruction(NULL)", c_instr_null_h, {B, B, B, B, B, B}},
    {"Disable", c_disable,                   {B, OK, OK, OK, OK, B}},
    {"Disable(NULL)", c_disable_null,        {B, B, B, B, B, B}},
};

int main(void)
{
    /* the library leaves Level Zero and the environment to the application: nothing initialized
     * before its own zeInit (the loader answers UNINITIALIZED), no tracing layer turned on; the
     * kernel created before Enable is still known (its zeKernelCreate went through the library) */
    uint32_t ndrv = 0;
    PCS_CHECK(zeDriverGet(&ndrv, NULL) == ZE_RESULT_ERROR_UNINITIALIZED, "Level Zero initialized before main's zeInit");
    PCS_CHECK(getenv("ZE_ENABLE_TRACING_LAYER") == NULL, "ZE_ENABLE_TRACING_LAYER=%s set behind the application",
              getenv("ZE_ENABLE_TRACING_LAYER"));
    PCS_CHECK(getenv("ZET_ENABLE_METRICS") && strcmp(getenv("ZET_ENABLE_METRICS"), "1") == 0,
              "ZET_ENABLE_METRICS not 1 before zeInit");
    pcs_run_init(&run);
    dev0 = run.env.devices[0];
    /* the busy kernel's handle, from a stopped session */
    pti_pc_sampling_handle_t h = reach(S_STOPPED);
    size_t n = 1;
    if (ptiPcSamplingGetObservedKernelHandles(h, dev0, &kh, &n) != OK || n != 1) {
        fprintf(stderr, "no observed kernel after a 3 ms busy_ns run (n=%zu)\n", n);
        return 1;
    }
    ptiPcSamplingDisable(h);
    size_t ncases = sizeof cases / sizeof cases[0], checked = 0;
    for (size_t c = 0; c < ncases; c++)
        for (int s = 0; s < S_COUNT; s++) {
            extra = NULL;
            h = reach(s);
            pti_result got = cases[c].fn(h);
            PCS_CHECK(got == cases[c].want[s], "%s in state %s: got %s (%d), want %s (%d)", cases[c].name,
                      state_names[s], ptiResultTypeToString(got), got, ptiResultTypeToString(cases[c].want[s]),
                      cases[c].want[s]);
            checked++;
            if (s != S_NONE && s != S_DISABLED)
                ptiPcSamplingDisable(h);
            if (extra)
                ptiPcSamplingDisable(extra);
        }
    /* Enable twice in a row; GetStallReasons right after Enable */
    pti_pc_sampling_handle_t a = NULL, b = NULL;
    PCS_CHECK(ptiPcSamplingEnable(&a) == OK, "first Enable");
    PCS_CHECK(ptiPcSamplingEnable(&b) == AE && b == NULL, "second Enable: ALREADY_ENABLED, handle untouched");
    size_t rn = 0;
    PCS_CHECK(ptiPcSamplingGetStallReasons(a, NULL, &rn) == OK && rn == 9, "reasons right after Enable: %zu", rn);
    PCS_CHECK(ptiPcSamplingDisable(a) == OK, "Disable");
    PCS_CHECK(ptiPcSamplingDisable(a) == B, "Disable twice: BAD_ARGUMENT");
    printf("%zu cases x states checked, %d failures\n", checked, pcs_failures);
    return pcs_failures ? 1 : 0;
}
