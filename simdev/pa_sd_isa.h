/* pa_sd_isa.h - the device "ISA" of every kernel: 16-byte instructions with class, loop depth,
 * source line and bytes moved; addresses, instruction mix and EU-stall weights (README "ISA"). */
#ifndef PA_SD_ISA_H
#define PA_SD_ISA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PA_SD_ISA_INSTR_BYTES 16u   /* one device instruction */
#define PA_SD_ISA_KERNEL_ALIGN 64u  /* kernels start 64-byte aligned inside a module */
#define PA_SD_ISA_MAX_DEPTH 4u      /* loop depth beyond this counts as this */

/* Instruction classes: the pipe an instruction issues to (README "ISA model" table). */
typedef enum pa_sd_iclass {
    PA_SD_IC_ALU0 = 0,  /* int/float arithmetic, logic, compare, convert, moves, register loads */
    PA_SD_IC_ALU1,      /* extended math (OpenCL.std extended instructions) */
    PA_SD_IC_XMX,       /* matrix multiply-accumulate (systolic) */
    PA_SD_IC_LOAD,      /* global memory load (send) */
    PA_SD_IC_STORE,     /* global memory store (send) */
    PA_SD_IC_SLM_LOAD,  /* shared local memory load (send) */
    PA_SD_IC_SLM_STORE, /* shared local memory store (send) */
    PA_SD_IC_ATOMIC,    /* global/local atomic (send, read+write) */
    PA_SD_IC_BARRIER,   /* work-group barrier / memory fence (send to the gateway) */
    PA_SD_IC_CONTROL,   /* branch, switch, call, return */
    PA_SD_IC_OTHER,     /* declarations with no pipe work (OpVariable, OpUndef, ...) */
    PA_SD_IC_COUNT
} pa_sd_iclass;

/* EU-stall reasons in the metric order of the EuStallSampling group (after IP). */
enum {
    PA_SD_SR_ACTIVE, PA_SD_SR_CONTROL, PA_SD_SR_PIPE, PA_SD_SR_SEND, PA_SD_SR_DIST, PA_SD_SR_SBID,
    PA_SD_SR_SYNC, PA_SD_SR_INSTFETCH, PA_SD_SR_OTHER, PA_SD_SR_COUNT
};

typedef struct pa_sd_instr {
    uint16_t opcode; /* SPIR-V opcode (synthetic bodies use the SPIR-V opcode they stand for) */
    uint8_t iclass;  /* pa_sd_iclass */
    uint8_t depth;   /* loop nesting depth, <= PA_SD_ISA_MAX_DEPTH */
    uint32_t line;   /* source line, 0 = none */
    uint32_t file;   /* index into pa_sd_isa.files, UINT32_MAX = none */
    uint32_t bytes;  /* bytes moved per work item per execution (memory classes), else 0 */
} pa_sd_instr;

/* Immutable once built and shared by reference: a command in flight keeps its kernel's ISA alive
 * after zeModuleDestroy. */
typedef struct pa_sd_isa {
    _Atomic uint32_t refs;
    uint32_t ninstr;
    pa_sd_instr *instr;
    uint32_t nfiles;
    char **files;
    bool synthetic;           /* body not from SPIR-V (builtin or generic, README) */
    /* EU-stall model, filled by pa_sd_isa_finish(): cumulative weights of (instruction, reason) */
    uint64_t *cum;            /* ninstr * PA_SD_SR_COUNT + 1 entries, cum[0] = 0 */
} pa_sd_isa;

/* Executed instructions and bytes per work item (loops counted trips^depth times). */
typedef struct pa_sd_isa_mix {
    uint64_t per_class[PA_SD_IC_COUNT]; /* executed instructions per class */
    uint64_t alu0, alu1, xmx, send, control; /* pipes: send = loads+stores+slm+atomics+barriers;
                                              * OTHER counts in none of them */
    uint64_t global_read, global_write; /* bytes */
    uint64_t slm_read, slm_write;       /* bytes */
    uint64_t total;                     /* all executed instructions incl. OTHER */
} pa_sd_isa_mix;

/*! pa_sd_isa_new() : empty ISA with one reference; NULL when out of memory. */
pa_sd_isa *pa_sd_isa_new(void);
/*! pa_sd_isa_push(isa, op, cls, depth, line, file, bytes) : append an instruction; 0 or -1 (OOM). */
int pa_sd_isa_push(pa_sd_isa *isa, uint16_t op, pa_sd_iclass cls, uint32_t depth, uint32_t line,
                   uint32_t file, uint32_t bytes);
/*! pa_sd_isa_file(isa, name) : index of file name (added once); UINT32_MAX when out of memory. */
uint32_t pa_sd_isa_file(pa_sd_isa *isa, const char *name);
/*! pa_sd_isa_finish(isa) : compute the EU-stall cumulative weights; 0 or -1 (OOM). An ISA with no
 *  instruction gets one OTHER instruction so every kernel has an address range. */
int pa_sd_isa_finish(pa_sd_isa *isa);
/*! pa_sd_isa_ref(isa) / pa_sd_isa_unref(isa) : share / release (NULL accepted). */
pa_sd_isa *pa_sd_isa_ref(pa_sd_isa *isa);
void pa_sd_isa_unref(pa_sd_isa *isa);
/*! pa_sd_isa_bytes(isa) : size of the kernel's code, ninstr * 16. */
uint64_t pa_sd_isa_bytes(const pa_sd_isa *isa);
/*! pa_sd_isa_get_mix(isa, trips, out) : executed instructions and bytes per work item when every
 *  loop runs trips times (an instruction at depth d executes trips^d times). */
void pa_sd_isa_get_mix(const pa_sd_isa *isa, uint64_t trips, pa_sd_isa_mix *out);
/*! pa_sd_isa_active_share(isa, num, den) : fraction num/den of a thread's time the stall model
 *  spends in the Active state (its EU-stall samples with reason Active). */
void pa_sd_isa_active_share(const pa_sd_isa *isa, uint64_t *num, uint64_t *den);
/*! pa_sd_isa_encode(isa, out) : the 16-byte encoding of every instruction (README "Encoding"),
 *  ninstr * 16 bytes written to out. */
void pa_sd_isa_encode(const pa_sd_isa *isa, uint8_t *out);
/*! pa_sd_isa_weight(cls) : relative cost of one execution of a class (README table). */
uint32_t pa_sd_isa_weight(pa_sd_iclass cls);
/*! pa_sd_isa_reason_share(cls, reason) : sixteenths of a class's samples going to reason. */
uint32_t pa_sd_isa_reason_share(pa_sd_iclass cls, uint32_t reason);

/*! pa_sd_isa_from_spirv(words, nwords, swap, func_id, out) : build the ISA of the function with
 *  result id func_id (README "ISA model"). *out NULL when the module has no body for it.
 *  0, or -1 when out of memory. */
int pa_sd_isa_from_spirv(const uint8_t *data, size_t nwords, bool swap, uint32_t func_id, pa_sd_isa **out);
/*! pa_sd_isa_synthetic(builtin, name) : the documented synthetic body of a builtin (or the generic
 *  body when builtin is 0); NULL when out of memory. */
pa_sd_isa *pa_sd_isa_synthetic(int builtin, const char *name);

/*! pa_sd_isa_reserve(bytes) : device virtual address range for a module's code, below 4 GiB
 *  (the IP field of an EU-stall report holds 29 bits of 8-byte units). */
uint64_t pa_sd_isa_reserve(uint64_t bytes);

#endif /* PA_SD_ISA_H */
