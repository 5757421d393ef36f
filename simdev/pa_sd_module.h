/* pa_sd_module.h - module parsing interface used by module.c (parsers live in module_parse.c). */
#ifndef PA_SD_MODULE_H
#define PA_SD_MODULE_H

#include "pa_sd_internal.h"

typedef struct pa_sd_parsed_module {
    uint32_t nkernels;
    pa_sd_kernel_def *kernels; /* malloc'd; names malloc'd */
} pa_sd_parsed_module;

/*! pa_sd_parse_spirv(data, size, m, err, errcap) : entry points (OpEntryPoint) become kernels.
 *  ZE_RESULT_ERROR_INVALID_NATIVE_BINARY on bad magic/size/instruction, err says why. */
PA_SD_HIDDEN ze_result_t pa_sd_parse_spirv(const uint8_t *data, size_t size, pa_sd_parsed_module *m,
                                     char *err, size_t errcap);
/*! pa_sd_parse_native(data, size, m, err, errcap) : "SIMDEV-MODULE 1\n" + "kernel ..." lines;
 *  INVALID_NATIVE_BINARY for a bad header, MODULE_BUILD_FAILURE for a bad line. */
PA_SD_HIDDEN ze_result_t pa_sd_parse_native(const uint8_t *data, size_t size, pa_sd_parsed_module *m,
                                      char *err, size_t errcap);
/*! pa_sd_parsed_free(m) : release kernels of a parse result. */
PA_SD_HIDDEN void pa_sd_parsed_free(pa_sd_parsed_module *m);

#endif
