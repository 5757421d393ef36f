/* pti/pti.h - PTI's include path: pti_result and the handle types of profagent's PTI-compatible API. */
#include "../profagent/pti_pc_sampling.h"
