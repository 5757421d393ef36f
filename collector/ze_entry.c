/* ze_entry.c - the loader-entry interception path: the agent's own exported ze* entry points
 * (ze_entry_gen.c) call the prologue/epilogue around the loader's own dispatch, so no tracing
 * layer is needed; the choice between this path and the tracing layer; the dlsym hook that
 * hands the agent's entry points to an application looking them up in a dlopen'd loader. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "../common/pa_log.h"
#include "collector.h"
#include "ze_internal.h"

/*
 * Why it is equivalent. The loader's exported zeX() (libze_loader 1.8, ze_libapi.cpp) is
 *
 *     pfn = ze_lib::context->zeDdiTable.<Table>.pfnX;
 *     if (pfn) return pfn(args...);                      // tail jump
 *     return initialized ? UNSUPPORTED_FEATURE : UNINITIALIZED;
 *
 * and the tracing layer, when the loader puts it into that table, calls the callbacks only
 * when the entry below it is not NULL. Our entry point reads the same table entry at every
 * call (the code of each loader function is decoded once: the GOT slot of ze_lib::context and
 * the entry's offset); a NULL entry goes to the loader's function unrecorded (its result
 * code, no callbacks: what the tracing layer does), anything else is called with the
 * prologue/epilogue around it exactly as the tracing layer would (same params struct, the
 * prologue may rewrite arguments). The validation layer, a second driver (the loader's
 * intercepts) and an application's own tracer (when ZE_ENABLE_TRACING_LAYER=1 is forced with
 * PROFAGENT_ZE_INTERCEPT=entry) sit in that table below us and see what they saw before.
 * An entry point whose code is not the recognized shape (zeInit) is called through the
 * loader's function and always recorded: the loader requires drivers to provide it.
 *
 * The path is used only when (auto): the architecture has the dlsym/dlopen trampolines
 * (x86-64), the application's ze* references resolve to the agent (it is preloaded ahead of
 * the loader), every entry point but zeInit decodes to one context variable inside the
 * loader, and the user did not enable the tracing layer (ZE_ENABLE_TRACING_LAYER=1: then
 * the layer is there anyway and our tracer joins the application's, as before). Otherwise
 * the tracing layer is used; the summary names the path and why.
 */

pa_ze_slot_t pa_ze_slots[PA_ZE_API_COUNT];
_Atomic int pa_ze_entry_on;
int pa_ze_path, pa_ze_path_reason;

/* A loader function that cannot be found (no loader mapped at all): what the loader returns
 * before zeInit. Called with any arguments (ignored: x86-64 SysV). */
static ze_result_t ZE_APICALL entry_uninit(void)
{
    return ZE_RESULT_ERROR_UNINITIALIZED;
}

typedef void *(*pa_dlsym_fn)(void *, const char *);
static _Atomic(pa_dlsym_fn) real_dlsym_ptr;

/* Uninstrumented: the sanitizer runtime resolves its interceptors through dlsym (ours) while it
 * initializes, before its shadow memory exists, so the functions on the dlsym path must not carry
 * sanitizer checks. */
#define PA_DLSYM_PATH __attribute__((no_sanitize("address", "undefined")))

/* glibc's dlsym (the exported one is our hook), NULL if it cannot be found. */
PA_DLSYM_PATH static pa_dlsym_fn real_dlsym_get(void)
{
    pa_dlsym_fn f = atomic_load_explicit(&real_dlsym_ptr, memory_order_acquire);
    if (PA_UNLIKELY(!f)) {
        *(void **)&f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!f)
            *(void **)&f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        atomic_store_explicit(&real_dlsym_ptr, f, memory_order_release);
    }
    return f;
}

PA_DLSYM_PATH void *pa_ze_real_dlsym(void *h, const char *name)
{
    pa_dlsym_fn f = real_dlsym_get();
    return f ? f(h, name) : NULL;
}

/* The loader's exported function of `name`, NULL when the loader is not mapped. */
static pa_ze_fn_t loader_fn(const char *name)
{
    pa_ze_fn_t f = NULL;
    pa_guard_enter();
    void *lib = pa_ze_real_dlopen("libze_loader.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib) {
        *(void **)&f = pa_ze_real_dlsym(lib, name);
        dlclose(lib);
    }
    pa_guard_leave();
    return f;
}

pa_ze_fn_t pa_ze_entry_resolve(int id)
{
    pa_ze_fn_t f = loader_fn(pa_ze_api_table[id].name);
    if (!f || f == pa_ze_entry_fns[id])
        f = (pa_ze_fn_t)entry_uninit;
    __atomic_store_n(&pa_ze_slots[id].loader, f, __ATOMIC_RELEASE);
    return f;
}

/* Symbolic values of the registers while decode_entry() walks a loader function. */
enum { V_GOT = 100, V_CTX, V_ENTRY, V_LOW32 = 200 /* + r: the low half of r's entry value */ };

/*! decode_entry() : the context variable and table offset of a loader entry point whose path to
 *  its tail jump is made only of: push/pop, register-to-register moves, one GOT load
 *  (`mov ctx@GOTPCREL(%rip),%R`), `mov (%R),%S` (ze_lib::context), `mov off(%S),%T` (the
 *  entry), `test %T,%T; je` (the NULL branch, not followed) and `jmp *%T`, where at the jump
 *  every argument register in use (rdi, rsi, rdx, rcx, r8, r9: the first `nargs`; all ze
 *  arguments are integers or pointers) and callee-saved register holds its value at entry and the stack is balanced: i.e. the function is `return entry(args...)`.
 *  Returns 0, or -1 for any other code. */
static int decode_entry(const uint8_t *c, unsigned nargs, unsigned narrow, void ***ctxvar, uintptr_t *off)
{
#if defined(__x86_64__)
    static const int keep[] = {7, 6, 2, 1, 8, 9, 3, 5, 12, 13, 14, 15}; /* args, then callee-saved */
    int reg[16], stack[16], sp = 0, tested = 0;
    void ***got = NULL;
    int64_t disp = -1;
    for (int i = 0; i < 16; i++)
        reg[i] = i;
    for (int n = 0; n < 40; n++) {
        uint8_t rex = (c[0] & 0xf0) == 0x40 ? *c++ : 0;
        int w = rex & 8, rx = (rex & 4) << 1, bx = (rex & 1) << 3;
        uint8_t op = c[0], m = c[1];
        int mod = m >> 6, rg = ((m >> 3) & 7) | rx, rm = (m & 7) | bx;
        if (op >= 0x50 && op <= 0x57 && !w && sp < 16) { /* push */
            stack[sp++] = reg[(op & 7) | bx];
            c += 1;
        } else if (op >= 0x58 && op <= 0x5f && !w && sp > 0) { /* pop */
            reg[(op & 7) | bx] = stack[--sp];
            c += 1;
        } else if ((op == 0x89 || op == 0x8b) && w && mod == 3) { /* mov reg, reg */
            if (op == 0x89)
                reg[rm] = reg[rg];
            else
                reg[rg] = reg[rm];
            c += 2;
        } else if ((op == 0x89 || op == 0x8b) && !w && mod == 3) { /* mov reg32, reg32: low half */
            int src = op == 0x89 ? rg : rm, dst = op == 0x89 ? rm : rg;
            int v = reg[src];
            reg[dst] = v < 16 ? V_LOW32 + v : v >= V_LOW32 ? v : -1;
            c += 2;
        } else if (op == 0x8b && w && mod == 0 && (m & 7) == 5 && !got) { /* mov rel32(%rip), reg */
            int32_t rel;
            memcpy(&rel, c + 2, 4);
            c += 6;
            got = (void ***)(c + rel);
            reg[rg] = V_GOT;
        } else if (op == 0x8b && w && mod != 3 && (m & 7) != 4 && !(mod == 0 && (m & 7) == 5)) { /* mov d(base), reg */
            int64_t d = 0;
            int len = 2;
            if (mod == 1) {
                d = (int8_t)c[2];
                len = 3;
            } else if (mod == 2) {
                int32_t d32;
                memcpy(&d32, c + 2, 4);
                d = d32;
                len = 6;
            }
            if (reg[rm] == V_GOT && d == 0)
                reg[rg] = V_CTX;
            else if (reg[rm] == V_CTX && d >= 0 && disp < 0)
                reg[rg] = V_ENTRY, disp = d;
            else
                return -1;
            c += len;
        } else if (op == 0x85 && w && mod == 3 && rg == rm && reg[rg] == V_ENTRY) { /* test; je */
            c += 2;
            if (c[0] == 0x74)
                c += 2;
            else if (c[0] == 0x0f && c[1] == 0x84)
                c += 6;
            else
                return -1;
            tested = 1;
        } else if (op == 0xff && (m & 0xf8) == 0xe0) { /* jmp *reg */
            if (reg[(m & 7) | bx] != V_ENTRY || !tested || sp != 0)
                return -1;
            for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
                if ((i >= 6 || i < nargs) && reg[keep[i]] != keep[i] &&
                    !(i < 6 && (narrow >> i & 1) && reg[keep[i]] == V_LOW32 + keep[i]))
                    return -1;
            Dl_info a, b;
            if (!dladdr(got, &a) || !dladdr(c, &b) || a.dli_fbase != b.dli_fbase)
                return -1; /* the GOT slot must be the loader's own */
            *ctxvar = *got;
            *off = (uintptr_t)disp;
            return *ctxvar ? 0 : -1;
        } else {
            return -1;
        }
    }
    return -1;
#else
    (void)c, (void)nargs, (void)narrow, (void)ctxvar, (void)off;
    return -1;
#endif
}

static const char *const reason_text[] = {
    [PA_ZE_WHY_NONE] = "",
    [PA_ZE_WHY_FORCED] = "PROFAGENT_ZE_INTERCEPT=tracer",
    [PA_ZE_WHY_LAYER_ENV] = "ZE_ENABLE_TRACING_LAYER=1 is set in the environment",
    [PA_ZE_WHY_NOT_BOUND] = "the application's ze* calls do not resolve to the agent (not preloaded first)",
    [PA_ZE_WHY_UNKNOWN_LOADER] = "the loader's entry points are not of a recognized shape",
    [PA_ZE_WHY_ARCH] = "not available on this architecture",
    [PA_ZE_WHY_NO_GPU] = "the application initialized Level Zero without GPU drivers",
};

const char *pa_ze_path_text(int path, int reason)
{
    if (path == PA_ZE_PATH_ENTRY)
        return "loader entry points (no tracing layer)";
    if (path != PA_ZE_PATH_TRACER)
        return "none";
    return reason > 0 && reason < (int)(sizeof reason_text / sizeof *reason_text) ? reason_text[reason] : "?";
}

/* Fills the slots from loader `lib`; 0 when every entry point but zeInit decoded to one
 * context variable of the loader, -1 otherwise (slots left unused). */
static int entry_decode_all(void *lib)
{
    static pa_ze_slot_t s[PA_ZE_API_COUNT];
    void **ctx = NULL;
    for (int i = 0; i < PA_ZE_API_COUNT; i++) {
        void *f = pa_ze_real_dlsym(lib, pa_ze_api_table[i].name);
        if (!f) {
            pa_info("ze", "entry path: the loader lacks %s", pa_ze_api_table[i].name);
            return -1;
        }
        *(void **)&s[i].loader = f;
        if (i == PA_ZE_API_Init)
            continue; /* not a plain dispatch (call_once): through the loader, always recorded */
        if (decode_entry(f, pa_ze_entry_nargs[i], pa_ze_entry_narrow[i], &s[i].ctxvar, &s[i].off) != 0 || (ctx && s[i].ctxvar != ctx)) {
            pa_info("ze", "entry path: %s is not a plain dispatch", pa_ze_api_table[i].name);
            return -1;
        }
        ctx = s[i].ctxvar;
    }
    memcpy(pa_ze_slots, s, sizeof s);
    return 0;
}

int pa_ze_entry_choose(void *lib)
{
    int why = PA_ZE_WHY_NONE;
    const char *tl = getenv("ZE_ENABLE_TRACING_LAYER");
    Dl_info self, bound;
    void *sym = pa_ze_real_dlsym(RTLD_DEFAULT, "zeKernelSetArgumentValue");
#if defined(__x86_64__)
    int arch_ok = 1;
#else
    int arch_ok = 0;
#endif
    if (pa_config.ze_intercept == PA_ZE_INTERCEPT_TRACER)
        why = PA_ZE_WHY_FORCED;
    else if (!arch_ok)
        why = PA_ZE_WHY_ARCH;
    else if (pa_config.ze_intercept == PA_ZE_INTERCEPT_AUTO && tl && strcmp(tl, "1") == 0)
        why = PA_ZE_WHY_LAYER_ENV;
    else if (!sym || !dladdr(sym, &bound) || !dladdr((void *)entry_uninit, &self) ||
             bound.dli_fbase != self.dli_fbase)
        why = PA_ZE_WHY_NOT_BOUND;
    else if (entry_decode_all(lib) != 0)
        why = PA_ZE_WHY_UNKNOWN_LOADER;
    pa_ze_path = why ? PA_ZE_PATH_TRACER : PA_ZE_PATH_ENTRY;
    pa_ze_path_reason = why;
    if (why && pa_config.ze_intercept == PA_ZE_INTERCEPT_ENTRY)
        pa_warn("ze", "PROFAGENT_ZE_INTERCEPT=entry: not possible (%s); using the tracing layer",
                reason_text[why]);
    return why == PA_ZE_WHY_NONE;
}

void pa_ze_entry_enable(void)
{
    atomic_store_explicit(&pa_ze_entry_on, 1, memory_order_release);
}

/* ---- dlsym: an application (or a plugin) looking up ze* in a loader it dlopen'd gets the
 * agent's entry point for the loader's function (a program linked to the loader binds to
 * them anyway). Lookups with RTLD_DEFAULT/RTLD_NEXT, of other names, or made by the agent
 * itself reach glibc untouched, with the caller's return address (x86-64 trampoline). ---- */

/* The API id of `name`, -1 when not one of ours. */
static int api_id(const char *name)
{
    for (int i = 0; i < PA_ZE_API_COUNT; i++)
        if (strcmp(pa_ze_api_table[i].name, name) == 0)
            return i;
    return -1;
}

static void *pa_dlsym_ze(void *h, const char *name)
{
    void *p = pa_ze_real_dlsym(h, name);
    int id;
    Dl_info di;
    if (!p || (id = api_id(name)) < 0)
        return p;
    /* only the loader's own function of that name is replaced */
    if (!dladdr(p, &di) || !di.dli_fname || !strstr(di.dli_fname, "libze_loader") || !di.dli_sname ||
        strcmp(di.dli_sname, name) != 0)
        return p;
    return (void *)pa_ze_entry_fns[id];
}

/*! pa_dlsym_route() : where the exported dlsym jumps: pa_dlsym_ze for ze* names looked up in a
 *  given handle by the application, glibc's dlsym otherwise. */
PA_DLSYM_PATH __attribute__((used)) void *pa_dlsym_route(void *h, const char *name)
{
    if (h != RTLD_DEFAULT && h != RTLD_NEXT && name && name[0] == 'z' && name[1] == 'e' && !pa_tls.guard &&
        !pa_tls.agent)
        return (void *)pa_dlsym_ze;
    pa_dlsym_fn f = real_dlsym_get();
    return f ? (void *)f : (void *)pa_dlsym_ze; /* (dlvsym failed: then pa_dlsym_ze returns NULL) */
}

#if defined(__x86_64__)
/* dlsym(handle, name): as the dlopen trampoline (ze_attach.c): glibc resolves RTLD_NEXT from the
 * return address, which stays the caller's. */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "    .cfi_startproc\n"
        "    push %rdi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    push %rsi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    sub $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    call pa_dlsym_route\n"
        "    add $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    pop %rsi\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    pop %rdi\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    jmp *%rax\n"
        "    .cfi_endproc\n"
        ".size dlsym, .-dlsym\n");
#endif
