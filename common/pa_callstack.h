/* pa_callstack.h - call-stack payloads of memory records and call-stack group rules (spec 2.3.1). */
#ifndef PA_CALLSTACK_H
#define PA_CALLSTACK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Ring payload of a PA_REC_MEM_ALLOC record (collector -> aggregator):
 *   pa_mem_stack_hdr_t, then `nframes` uint64_t return addresses (innermost first),
 *   then `py_len` bytes of Python frames, innermost first, each "file\x1f" "func\x1f" "line\n".
 */
typedef struct pa_mem_stack_hdr {
    uint64_t device;     /* ze_device_handle_t of the allocation (0 for host memory) */
    uint32_t dev_index;  /* device index in enumeration order, UINT32_MAX = unknown */
    uint32_t py_len;     /* bytes of Python frame text after the addresses */
    uint16_t nframes;    /* native return addresses that follow */
    uint16_t py_frames;  /* Python frames in the text that follows */
    uint32_t gen;        /* module-unload generation at capture (pa_mem_dl_gen): frames are
                            resolved against the modules mapped then (PA_REC_MEM_MODULE) */
    uint32_t py_omitted; /* Python frames beyond those in the text (capture limit) */
    uint32_t flags;      /* PA_MEM_STACK_* */
} pa_mem_stack_hdr_t;

/* pa_mem_stack_hdr_t.flags */
#define PA_MEM_STACK_CUT 0x1u  /* the native walk filled its buffer: outer frames may be missing */

/* Payload of the spool records PA_SP_MEM_ALLOC / PA_SP_MEM_FREE (aggregator -> writer). */
typedef struct pa_mem_sp {
    uint64_t event_id;        /* unique per session, > 0, in drain order */
    uint64_t device_handle;   /* ze_device_handle_t (0 for host memory / unknown on a free) */
    uint64_t alloc_event_id;  /* FREE: event of the allocation it released, 0 = unknown address */
    uint32_t device;          /* device index (enumeration order), UINT32_MAX = none/unknown */
    uint32_t callchain_id;    /* ALLOC: CALLCHAINS id, 0 = no stack */
} pa_mem_sp_t;

#define PA_CALLSTACK_MAX_DEPTH 256   /* upper bound of PROFAGENT_CALLSTACK_DEPTH (config.c allows 0..256) */
/* Frames captured beyond PROFAGENT_CALLSTACK_DEPTH: the agent's own and the Level Zero
 * loader/tracing layer's frames at the innermost end, dropped at symbolization, so depth N
 * keeps N frames of the application's stack. */
#define PA_MEM_SKIP_FRAMES 16
#define PA_CALLSTACK_PY_MAX 2048     /* bytes of Python frame text kept per stack */

/* One symbolized frame, as matched by the group rules. */
typedef struct pa_cs_frame {
    const char *module;    /* library path/name, or the .py file for Python frames */
    const char *function;  /* demangled function signature (or Python function name) */
} pa_cs_frame_t;

typedef struct pa_cs_rules pa_cs_rules_t;

/*! pa_cs_rules_new() : empty rule set. NULL when out of memory. */
pa_cs_rules_t *pa_cs_rules_new(void);

/*! pa_cs_rules_add() : parses one rule "name=frame_regex1/frame_regex2/..." (PCRE2; frames
 *  ordered parent -> child). A malformed rule ("=x", "name=", no '=', a bad regex, an empty
 *  frame regex) is rejected with one message on `err` (may be NULL) naming the rule and what
 *  is accepted; returns 0 when added, -1 when rejected (the set is unchanged). */
int pa_cs_rules_add(pa_cs_rules_t *rs, const char *rule, FILE *err);

/*! pa_cs_rules_add_list() : adds every rule of `text`, rules separated by ';' or newline
 *  (PROFAGENT_CALLSTACK_GROUPS). Returns the number of rules rejected. */
int pa_cs_rules_add_list(pa_cs_rules_t *rs, const char *text, FILE *err);

/*! pa_cs_rules_add_defaults() : the built-in rules used when the user gave none (documented in
 *  docs/memory.md): level_zero, sycl, python, and application (= `exe_name`, may be NULL). */
void pa_cs_rules_add_defaults(pa_cs_rules_t *rs, const char *exe_name);

/*! pa_cs_rules_set_origin() : names where the rules come from ("PROFAGENT_CALLSTACK_GROUPS",
 *  "--callstack-group-config"; a static string) at the start of every rejection message. */
void pa_cs_rules_set_origin(pa_cs_rules_t *rs, const char *origin);

/*! pa_cs_rules_count() : number of valid rules held. */
size_t pa_cs_rules_count(const pa_cs_rules_t *rs);

void pa_cs_rules_free(pa_cs_rules_t *rs);

/*! pa_cs_group_list() : the group list of a stack of `n` frames given ROOT FIRST (parent ->
 *  child): names of every matching group joined by '/' in order of first appearance among the
 *  rules (only the first with `first_only`), or "others" when none matches. Writes a
 *  NUL-terminated string into out[outsz] (cut if too small). Returns the number of groups
 *  matched (0 = others). */
int pa_cs_group_list(const pa_cs_rules_t *rs, const pa_cs_frame_t *frames, size_t n,
                     int first_only, char *out, size_t outsz);

/* ---- symbolization (agg/agg_mem_sym.c, agent only: needs the live process and libdw) ---- */

/* One resolved frame; strings owned by the symbolizer until pa_sym_close(). */
typedef struct pa_sym_frame {
    const char *module;    /* full path of the library/executable, or the .py file */
    const char *function;  /* demangled signature, Python qualname, or "0x<addr>" */
    const char *source;    /* "file:line" when debug info has it, else "" */
} pa_sym_frame_t;

typedef struct pa_sym pa_sym_t;

/*! pa_sym_open() : a symbolizer for the calling process (elfutils libdwfl over
 *  /proc/self/maps). `system_lines` 1: source lines also for libraries under /lib, /lib64,
 *  /usr/lib (PROFAGENT_SYMBOLS_SYSTEM_DEBUGINFO), 0: their functions from symbol tables only.
 *  NULL when libdw cannot report the process (frames then print as addresses). */
pa_sym_t *pa_sym_open(int system_lines);

/*! pa_sym_add_unloaded() : a module dlclose'd at unload generation `gen` (PA_REC_MEM_MODULE):
 *  file `path` loaded at bias `bias`, mapped over [lo, hi). Addresses of a stack captured at a
 *  generation < gen inside [lo, hi) are resolved from that file, not from the exit-time map
 *  (the module with the lowest such gen wins). Returns 0, -1 when out of memory. */
int pa_sym_add_unloaded(pa_sym_t *sym, uint32_t gen, uint64_t bias, uint64_t lo, uint64_t hi,
                        const char *path);

/*! pa_sym_chain() : resolves one captured stack: `pcs` are `n` return addresses innermost
 *  first, captured at unload generation `gen`; `py` the Python frame text (pa_mem_stack_hdr_t).
 *  Drops the agent's own frames and the Level Zero loader/tracing-layer frames at the innermost
 *  end, inserts the Python frames just inside the innermost _PyEval_EvalFrameDefault frame (at
 *  the outermost end when there is none), keeps at most `depth` of the resulting frames
 *  (0 = no limit) and, when frames were cut here or at capture (`more`: frames the capture
 *  left out, < 0 when their number is unknown), appends one marker frame (module
 *  "[truncated]") "[... N frames omitted]" ("[... more frames omitted]" when N is unknown). Writes at most `max` frames INNERMOST FIRST to out; returns the count. Each
 *  distinct address is resolved once per symbolizer. `sym` may be NULL. */
size_t pa_sym_chain(pa_sym_t *sym, const uint64_t *pcs, size_t n, uint32_t gen, const char *py,
                    size_t py_len, size_t depth, int64_t more, pa_sym_frame_t *out, size_t max);

/*! pa_sym_close() : frees the symbolizer and every string it returned. */
void pa_sym_close(pa_sym_t *sym);

#endif
