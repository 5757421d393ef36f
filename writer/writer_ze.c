/* writer_ze.c - TEMPORARY STUB (writer owner): the Level Zero tables; the ze owner replaces it. */
#include "writer_internal.h"

const pa_writer_source_t pa_writer_source_ze = {.name = "ze"};
