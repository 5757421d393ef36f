/* pti/pti_pc_sampling.h - PTI's include path for programs written for PTI: profagent's PTI-compatible API. */
#include "../profagent/pti_pc_sampling.h"
