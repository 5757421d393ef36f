/* leaks_libs.h - interfaces of libfoo.so and libbar.so, the two allocation paths of the leaks sample. */
#ifndef PA_SAMPLES_LEAKS_LIBS_H
#define PA_SAMPLES_LEAKS_LIBS_H

#include <stddef.h>
#include <stdint.h>
#include <level_zero/ze_api.h>

/*! LaunchKernel() (libfoo) : allocates `bytes` of device memory on dev and appends fill_kernel
 *  (fill_u32: dst, value, n) writing `value` into it on list. The caller owns the buffer
 *  (and, in the sample, leaks it). Returns NULL when the allocation or the append fails. */
void *LaunchKernel(ze_context_handle_t ctx, ze_device_handle_t dev, ze_command_list_handle_t list,
                   ze_kernel_handle_t fill_kernel, size_t bytes, uint32_t value);

/*! bar_make_buffer() (libbar) : allocates `bytes` of device memory on dev; NULL on failure. */
void *bar_make_buffer(ze_context_handle_t ctx, ze_device_handle_t dev, size_t bytes);

/*! bar_release() (libbar) : frees a buffer of bar_make_buffer(); returns the zeMemFree result. */
ze_result_t bar_release(ze_context_handle_t ctx, void *p);

#endif
