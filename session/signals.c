/* signals.c - the agent's finalizing handlers for SIGTERM/INT/HUP/QUIT, invisible to the application. */
#define _GNU_SOURCE /* RTLD_NEXT, sysv_signal, sigset */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "../collector/collector.h"
#include "session.h"
#include "../common/pa_log.h"

/* Why interpose sigaction() and the signal() family: the agent installs its handler where the
 * disposition is SIG_DFL so that a default death by these signals still writes the DB. Programs
 * look at dispositions: CPython installs its KeyboardInterrupt handler only if SIGINT is SIG_DFL
 * and reports a foreign handler as None (multiprocessing then breaks). So the application must
 * never see the agent's handler:
 *   - a query that finds the agent's handler reports the action the application would see
 *     without the agent (SIG_DFL with the flags, mask and restorer the kernel had: the "view");
 *   - any new action of the application goes to the kernel as given and replaces the agent's
 *     handler; the old action it gets back is the view if the agent's handler was installed;
 *   - a new SIG_DFL (explicit, or restoring the default later) is installed as given, read back
 *     as the new view, and the agent's handler goes back in place while the session runs.
 * glibc's signal(), sysv_signal(), sigset() and siginterrupt() call its internal sigaction (not
 * through the PLT), so each is wrapped as well: real call first, then the same fix-ups.
 * Raw rt_sigaction syscalls cannot be seen (documented in README). */

static const int fatal_sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
#define PA_NFATAL (sizeof fatal_sigs / sizeof fatal_sigs[0])

/* The application's view of each fatal signal while the agent's handler is installed. Two
 * buffers and an atomic index: a writer fills the spare one then flips, so a query from a
 * signal handler never reads a half-written view (writers of one signal are not serialized:
 * two threads setting SIG_DFL on the same signal at once may leave either one's view). */
static struct sigaction views[PA_NFATAL][2];
static _Atomic int view_cur[PA_NFATAL];
static _Atomic int installed; /* pa_signals_install() ran in this image */

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef __sighandler_t (*signal_fn)(int, __sighandler_t);
typedef int (*siginterrupt_fn)(int, int);

/* not declared with _GNU_SOURCE (X/Open only) but exported by glibc */
__sighandler_t bsd_signal(int sig, __sighandler_t handler);
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *oact);

static _Atomic(sigaction_fn) real_sigaction;
static _Atomic(signal_fn) real_signal, real_bsd_signal, real_sysv_signal, real___sysv_signal, real_sigset;
static _Atomic(siginterrupt_fn) real_siginterrupt;
/* Set while this thread runs dlsym: a wrapper entered then uses a fallback, never dlsym again. */
static __thread int resolving __attribute__((tls_model("initial-exec")));

static void on_fatal_signal(int sig);

/* Resolves the next definitions (libc, or a sanitizer runtime preloaded before us). Returns 0
 * when re-entered from inside dlsym (callers then use their fallback). Wrappers may run before
 * the constructor (another library's constructor), so this is lazy. */
static int resolve_all(void)
{
    if (resolving)
        return 0;
    int saved = errno;
    resolving = 1;
    pa_guard_enter();
#define PA_RESOLVE(var, name, type)                                                  \
    if (!atomic_load_explicit(&var, memory_order_acquire))                             \
        atomic_store_explicit(&var, (type)dlsym(RTLD_NEXT, name), memory_order_release);
    PA_RESOLVE(real_sigaction, "sigaction", sigaction_fn)
    PA_RESOLVE(real_signal, "signal", signal_fn)
    PA_RESOLVE(real_bsd_signal, "bsd_signal", signal_fn)
    PA_RESOLVE(real_sysv_signal, "sysv_signal", signal_fn)
    PA_RESOLVE(real___sysv_signal, "__sysv_signal", signal_fn)
    PA_RESOLVE(real_sigset, "sigset", signal_fn)
    PA_RESOLVE(real_siginterrupt, "siginterrupt", siginterrupt_fn)
#undef PA_RESOLVE
    pa_guard_leave();
    resolving = 0;
    errno = saved;
    return 1;
}

/* The real function in `var`, resolved on first use; NULL only while this thread is in dlsym. */
#define PA_REAL(var) (atomic_load_explicit(&var, memory_order_acquire) ?: \
                      (resolve_all() ? atomic_load_explicit(&var, memory_order_acquire) : NULL))

/*! sig_real_action() : the real sigaction (glibc's __sigaction, same function, while this
 *  thread is inside dlsym). Same contract as sigaction(2). The agent's own calls use this one:
 *  its exported sigaction() would apply the application's fix-ups. */
static int sig_real_action(int sig, const struct sigaction *act, struct sigaction *oact)
{
    sigaction_fn f = PA_REAL(real_sigaction);
    return f ? f(sig, act, oact) : __sigaction(sig, act, oact);
}

/* Index of a fatal signal in fatal_sigs[], or -1 for any other number (valid or not). */
static int fatal_index(int sig)
{
    for (size_t i = 0; i < PA_NFATAL; i++)
        if (fatal_sigs[i] == sig)
            return (int)i;
    return -1;
}

static void view_store(int i, const struct sigaction *sa)
{
    int spare = !atomic_load(&view_cur[i]);
    views[i][spare] = *sa;
    atomic_store(&view_cur[i], spare);
}

static const struct sigaction *view_load(int i) { return &views[i][atomic_load(&view_cur[i])]; }

/* Installs the agent's handler on fatal signal i; *now is what the kernel holds (SIG_DFL). */
static void agent_take(int i, const struct sigaction *now)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    view_store(i, now);
    sig_real_action(fatal_sigs[i], &sa, NULL);
}

/* A fatal signal whose disposition was the default: finalize, then die by the same signal
 * (SIG_DFL restored and re-raised) so the exit status is what it would have been. */
void pa_signals_die_by(int sig)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sig_real_action(sig, &dfl, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    raise(sig); /* pending while the handler blocks it, delivered on unblock */
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
}

static void on_fatal_signal(int sig)
{
    if (pa_exitpaths_finish_bounded(sig))
        return; /* deferred: the interrupted exit path raises it once the DB is written */
    pa_signals_die_by(sig);
}

/* dl_iterate_phdr() callback: the 0-based load order of two objects (by base address). */
typedef struct pa_load_order {
    void *self_base, *libc_base;
    int pos, self_pos, libc_pos;
} pa_load_order_t;

static int load_order_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    pa_load_order_t *o = arg;
    if ((void *)info->dlpi_addr == o->self_base)
        o->self_pos = o->pos;
    if ((void *)info->dlpi_addr == o->libc_base)
        o->libc_pos = o->pos;
    o->pos++;
    return 0;
}

/* 1 when the application's sigaction() calls reach ours: the agent comes before the C library
 * in the global lookup order (preloaded or linked). A dlopen()ed agent comes after it, cannot
 * hide a handler, and so installs none. */
static int sig_interposing(void)
{
    Dl_info self, libc;
    void *real = (void *)PA_REAL(real_sigaction);
    if (!real || !dladdr((void *)pa_signals_install, &self) || !dladdr(real, &libc))
        return 0;
    pa_load_order_t o = {self.dli_fbase, libc.dli_fbase, 0, -1, -1};
    dl_iterate_phdr(load_order_cb, &o);
    return o.self_pos >= 0 && o.libc_pos >= 0 && o.self_pos < o.libc_pos;
}

void pa_signals_install(void)
{
    resolve_all();
    if (!sig_interposing()) {
        pa_info("agent", "not preloaded: no finalizing handlers for SIGTERM/INT/HUP/QUIT (the app "
                "would see them); a default death by these leaves the spool (profagent recover)");
        return;
    }
    for (size_t i = 0; i < PA_NFATAL; i++) {
        struct sigaction old;
        /* only where still SIG_DFL: an inherited SIG_IGN or the app's handler always wins */
        if (sig_real_action(fatal_sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
            agent_take((int)i, &old);
    }
    atomic_store(&installed, 1);
}

/* ---- the fix-ups shared by every wrapper ---- */

/* What the application is about to do to a fatal signal: set SIG_DFL while the session runs
 * (the agent takes the signal back afterwards). Blocks the signal on this thread meanwhile, so
 * one sent to this thread in the short SIG_DFL window waits for the agent's handler (not for
 * sigset(), whose result depends on the mask: there a signal in that window kills as SIG_DFL). */
typedef struct pa_sigop {
    int idx;         /* fatal_index(sig), or -1 */
    int retake;      /* new handler is SIG_DFL and the session is active */
    int unblock;     /* this wrapper blocked the signal (it was not blocked before) */
    int saved_errno;
} pa_sigop_t;

static pa_sigop_t sigop_begin(int sig, int sets, __sighandler_t handler, int may_block)
{
    pa_sigop_t op = {fatal_index(sig), 0, 0, errno};
    if (op.idx < 0 || !sets || handler != SIG_DFL || !atomic_load(&installed) || !pa_session_active())
        return op;
    op.retake = 1;
    if (!may_block)
        return op;
    sigset_t one, old;
    sigemptyset(&one);
    sigaddset(&one, sig);
    if (pthread_sigmask(SIG_BLOCK, &one, &old) == 0)
        op.unblock = !sigismember(&old, sig);
    errno = op.saved_errno;
    return op;
}

/* After the real call succeeded (ok != 0): the new SIG_DFL as the kernel holds it becomes the
 * view and the agent's handler goes back; the block is undone. errno is the real call's. */
static void sigop_end(const pa_sigop_t *op, int sig, int ok)
{
    int e = errno;
    if (ok && op->retake) {
        struct sigaction now;
        /* SIG_DFL still there (no other thread replaced it meanwhile): take it back */
        if (sig_real_action(sig, NULL, &now) == 0 && now.sa_handler == SIG_DFL)
            agent_take(op->idx, &now);
    }
    if (op->unblock) {
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    }
    errno = e;
}

/* An old handler as the application must see it: the agent's handler reads as SIG_DFL. */
static __sighandler_t sig_visible_handler(__sighandler_t h)
{
    return h == on_fatal_signal ? SIG_DFL : h;
}

/* ---- the interposers: return values and errno exactly as the real function left them ---- */

PA_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
    /* read before the call: oact may be the same memory as act */
    pa_sigop_t op = sigop_begin(sig, act != NULL, act ? act->sa_handler : SIG_DFL, 1);
    int r = sig_real_action(sig, act, oact);
    if (r == 0 && oact && op.idx >= 0 && oact->sa_handler == on_fatal_signal)
        *oact = *view_load(op.idx); /* before sigop_end() replaces the view */
    sigop_end(&op, sig, r == 0);
    return r;
}

/* The signal()-shaped wrappers: `real` NULL only inside dlsym (then `fallback`). */
static __sighandler_t wrap_signal(signal_fn real, signal_fn fallback, int sig, __sighandler_t h)
{
    /* sigset() reports SIG_HOLD when the signal is blocked: it must not see our block */
    pa_sigop_t op = sigop_begin(sig, 1, h, real != PA_REAL(real_sigset));
    __sighandler_t old = (real ? real : fallback)(sig, h);
    sigop_end(&op, sig, old != SIG_ERR);
    return old == SIG_ERR ? old : sig_visible_handler(old);
}

/* glibc's sysv_signal(): one-shot, not blocked during the handler (used only inside dlsym). */
static __sighandler_t sysv_fallback(int sig, __sighandler_t h)
{
    struct sigaction act, oact;
    memset(&act, 0, sizeof act);
    act.sa_handler = h;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_RESETHAND | SA_NODEFER;
    return __sigaction(sig, &act, &oact) < 0 ? SIG_ERR : oact.sa_handler;
}

static __sighandler_t no_sigset(int sig, __sighandler_t h)
{
    (void)sig;
    (void)h;
    errno = ENOSYS;
    return SIG_ERR;
}

PA_EXPORT __sighandler_t signal(int sig, __sighandler_t h)
{
    return wrap_signal(PA_REAL(real_signal), ssignal, sig, h);
}

PA_EXPORT __sighandler_t bsd_signal(int sig, __sighandler_t h)
{
    return wrap_signal(PA_REAL(real_bsd_signal), ssignal, sig, h);
}

PA_EXPORT __sighandler_t sysv_signal(int sig, __sighandler_t h)
{
    return wrap_signal(PA_REAL(real_sysv_signal), sysv_fallback, sig, h);
}

/* what signal() is under strict X/Open compilation (-std=c11 without _DEFAULT_SOURCE) */
PA_EXPORT __sighandler_t __sysv_signal(int sig, __sighandler_t h)
{
    return wrap_signal(PA_REAL(real___sysv_signal), sysv_fallback, sig, h);
}

/* SIG_HOLD only blocks and reports the old disposition: no retake (sigop_begin sees no SIG_DFL) */
PA_EXPORT __sighandler_t sigset(int sig, __sighandler_t h)
{
    return wrap_signal(PA_REAL(real_sigset), no_sigset, sig, h);
}

/* glibc rewrites the installed action with SA_RESTART changed: keep the view in step. */
PA_EXPORT int siginterrupt(int sig, int flag)
{
    siginterrupt_fn real = PA_REAL(real_siginterrupt);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int r = real(sig, flag);
    int i = fatal_index(sig);
    struct sigaction now;
    int e = errno;
    if (r == 0 && i >= 0 && sig_real_action(sig, NULL, &now) == 0 && now.sa_handler == on_fatal_signal) {
        struct sigaction v = *view_load(i);
        if (flag)
            v.sa_flags &= ~SA_RESTART;
        else
            v.sa_flags |= SA_RESTART;
        view_store(i, &v);
    }
    errno = e;
    return r;
}
