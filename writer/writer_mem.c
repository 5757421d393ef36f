/* writer_mem.c - TEMPORARY STUB (writer owner): the device-memory tables; the mem owner replaces it. */
#include "writer_internal.h"

const pa_writer_source_t pa_writer_source_mem = {.name = "mem"};
