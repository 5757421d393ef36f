/* common.h - helpers shared by the Level Zero samples: error checks, setup, modules, SPIR-V. */
#ifndef PA_SAMPLES_COMMON_H
#define PA_SAMPLES_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <level_zero/ze_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SAMPLE_MAX_DEVICES 16

/* Every Level Zero call in the samples goes through this: a failure prints the call, the
 * result code and the location, then exits with status 1 (samples are programs, not libraries). */
#define SAMPLE_CHECK(call)                                                        \
    do {                                                                          \
        ze_result_t sample_r_ = (call);                                           \
        if (sample_r_ != ZE_RESULT_SUCCESS)                                       \
            sample_die_ze(#call, sample_r_, __FILE__, __LINE__);                  \
    } while (0)

/* The driver, its devices and one context spanning all of them. */
typedef struct sample_env {
    ze_driver_handle_t driver;
    ze_context_handle_t context;
    uint32_t num_devices;
    ze_device_handle_t devices[SAMPLE_MAX_DEVICES];
} sample_env_t;

/* One kernel in a generated SPIR-V module: its entry-point name and its parameter kinds, one
 * character each: 'p' float* (CrossWorkgroup), 'q' uint32_t*, 'f' float, 'u' uint32_t,
 * 'l' uint64_t. */
typedef struct sample_spirv_kernel {
    const char *name;
    const char *params;
} sample_spirv_kernel_t;

/*! sample_die_ze() : prints "<call> failed: <result name> (0x..) at file:line" and exits 1. */
void sample_die_ze(const char *call, ze_result_t r, const char *file, int line);

/*! sample_die() : prints the printf-style message to stderr and exits 1. */
void sample_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/*! sample_result_name() : "ZE_RESULT_SUCCESS" etc., or "ZE_RESULT_<unknown>". */
const char *sample_result_name(ze_result_t r);

/*! sample_arg_u64() : argv[idx] parsed as an unsigned decimal in [min, max], or dflt when
 *  argc <= idx. A bad value prints which argument was wrong and the accepted range, exits 2. */
uint64_t sample_arg_u64(int argc, char **argv, int idx, const char *what, uint64_t dflt,
                        uint64_t min, uint64_t max);

/*! sample_env_init() : zeInit(GPU), first driver, its devices, one context over all devices.
 *  Exits 1 (with a message) when fewer than min_devices devices exist. */
void sample_env_init(sample_env_t *env, uint32_t min_devices);

/*! sample_env_fini() : destroys the context. */
void sample_env_fini(sample_env_t *env);

/*! sample_module_native() : module from simdev's native text ("SIMDEV-MODULE 1\n..."). */
ze_module_handle_t sample_module_native(const sample_env_t *env, ze_device_handle_t dev,
                                        const char *text);

/*! sample_module_spirv_file() : module from a SPIR-V file (e.g. a samples/kernels .spv); dies with
 *  a message naming the file when it cannot be read or the driver refuses it. */
ze_module_handle_t sample_module_spirv_file(const sample_env_t *env, ze_device_handle_t dev, const char *path);
/*! sample_spirv_build() : writes a valid SPIR-V 1.0 kernel module (empty bodies) declaring
 *  n entry points into words[cap]. Returns the number of 32-bit words, 0 if cap is too small
 *  or a parameter kind is unknown. */
size_t sample_spirv_build(uint32_t *words, size_t cap, const sample_spirv_kernel_t *kernels,
                          size_t n);

/*! sample_module_spirv() : module from sample_spirv_build() output for these kernels. */
ze_module_handle_t sample_module_spirv(const sample_env_t *env, ze_device_handle_t dev,
                                       const sample_spirv_kernel_t *kernels, size_t n);

/*! sample_kernel() : zeKernelCreate(name) with group size (gx, 1, 1). */
ze_kernel_handle_t sample_kernel(ze_module_handle_t module, const char *name, uint32_t gx);

/*! sample_queue() : asynchronous command queue on (ordinal, index). */
ze_command_queue_handle_t sample_queue(const sample_env_t *env, ze_device_handle_t dev,
                                       uint32_t ordinal, uint32_t index);

/*! sample_list() : regular command list for queue group ordinal. */
ze_command_list_handle_t sample_list(const sample_env_t *env, ze_device_handle_t dev,
                                     uint32_t ordinal);

/*! sample_immediate() : asynchronous immediate command list on (ordinal, index). */
ze_command_list_handle_t sample_immediate(const sample_env_t *env, ze_device_handle_t dev,
                                          uint32_t ordinal, uint32_t index);

/*! sample_event_pool() : host-visible pool of count events; kernel_ts adds
 *  ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP. */
ze_event_pool_handle_t sample_event_pool(const sample_env_t *env, uint32_t count, int kernel_ts);

/*! sample_event() : event `index` of pool, signalled and waited with host scope. */
ze_event_handle_t sample_event(ze_event_pool_handle_t pool, uint32_t index);

/*! sample_alloc_device() / sample_alloc_host() / sample_alloc_shared() : bytes, 64-aligned. */
void *sample_alloc_device(const sample_env_t *env, ze_device_handle_t dev, size_t bytes);
void *sample_alloc_host(const sample_env_t *env, size_t bytes);
void *sample_alloc_shared(const sample_env_t *env, ze_device_handle_t dev, size_t bytes);

/*! sample_set_arg() : zeKernelSetArgumentValue(kernel, idx, size, ptr_to_value). */
void sample_set_arg(ze_kernel_handle_t k, uint32_t idx, size_t size, const void *value);

/*! sample_launch_1d() : appends kernel over `items` work items with its group size gx
 *  (group count ceil(items/gx)), signalling ev (may be NULL), waiting for nothing. */
void sample_launch_1d(ze_command_list_handle_t list, ze_kernel_handle_t k, uint32_t items,
                      uint32_t gx, ze_event_handle_t ev);

/*! sample_busy_t : simdev's busy_ns builtin (it keeps the device busy for its one argument, in
 *  ns) ready on an immediate list of device 0, with one host-visible event it signals. */
typedef struct sample_busy {
    ze_module_handle_t module;
    ze_kernel_handle_t kernel;
    ze_command_list_handle_t list;
    ze_event_pool_handle_t pool;
    ze_event_handle_t event;
} sample_busy_t;

/*! sample_busy_init() : creates b's module, kernel, immediate list and 1-event pool (kernel_ts:
 *  ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) on env's device 0; dies when the driver refuses one. */
void sample_busy_init(const sample_env_t *env, int kernel_ts, sample_busy_t *b);

/*! sample_busy_run() : one busy_ns launch of ns nanoseconds signalling b->event; with wait, it
 *  waits for the event on the host and resets it (ready for the next run). */
void sample_busy_run(const sample_busy_t *b, uint64_t ns, int wait);

/*! sample_busy_fini() : destroys what sample_busy_init() created, children first (a driver
 *  refuses to destroy a context that still holds them). */
void sample_busy_fini(sample_busy_t *b);

/*! sample_check_floats() : compares got[n] to want[n] with relative tolerance rel (absolute
 *  below 1). Prints the first mismatch (index, got, want) under `what`; returns mismatches. */
size_t sample_check_floats(const char *what, const float *got, const float *want, size_t n,
                           float rel);

/*! sample_ticks_to_ns() : device ticks -> ns, given valid bits and the timer resolution in
 *  cycles/s (ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2). end < start means one wrap. */
uint64_t sample_ticks_to_ns(uint64_t start, uint64_t end, uint32_t valid_bits, uint64_t hz);

#ifdef __cplusplus
}
#endif
#endif
