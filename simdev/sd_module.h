/* sd_module.h - module parsing interface used by module.c (parsers live in module_parse.c). */
#ifndef SD_MODULE_H
#define SD_MODULE_H

#include "sd_internal.h"

typedef struct sd_parsed_module {
    uint32_t nkernels;
    sd_kernel_def *kernels; /* malloc'd; names malloc'd */
} sd_parsed_module;

/*! sd_parse_spirv(data, size, m, err, errcap) : entry points (OpEntryPoint) become kernels.
 *  ZE_RESULT_ERROR_INVALID_NATIVE_BINARY on bad magic/size/instruction, err says why. */
SD_HIDDEN ze_result_t sd_parse_spirv(const uint8_t *data, size_t size, sd_parsed_module *m,
                                     char *err, size_t errcap);
/*! sd_parse_native(data, size, m, err, errcap) : "SIMDEV-MODULE 1\n" + "kernel ..." lines;
 *  INVALID_NATIVE_BINARY for a bad header, MODULE_BUILD_FAILURE for a bad line. */
SD_HIDDEN ze_result_t sd_parse_native(const uint8_t *data, size_t size, sd_parsed_module *m,
                                      char *err, size_t errcap);
/*! sd_parsed_free(m) : release kernels of a parse result. */
SD_HIDDEN void sd_parsed_free(sd_parsed_module *m);

#endif
