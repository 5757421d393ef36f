/* spine_sig.c - what a program sees of signal dispositions; run with and without the agent, the
 * printed lines must be identical (tests/integration/spine/run_lifecycle.py, modes below). */
#define _GNU_SOURCE /* sysv_signal, sigset */
#include <dlfcn.h>
#include <errno.h>
#include <profagent/hgtx.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__sighandler_t bsd_signal(int sig, __sighandler_t handler); /* X/Open only in the headers */

static void h1(int s) { (void)s; }
static void h2(int s) { (void)s; }
static void h3(int s, siginfo_t *si, void *uc) { (void)s, (void)si, (void)uc; }

static const char *hname(__sighandler_t h)
{
    return h == SIG_DFL ? "DFL" : h == SIG_IGN ? "IGN" : h == SIG_ERR ? "ERR" : h == h1 ? "h1"
         : h == h2 ? "h2" : (void *)h == (void *)h3 ? "h3" : "OTHER";
}

/* handler, flags, blocked signals 1..64 as a bit mask, restorer set or not */
static void show(const char *what, int sig, const struct sigaction *sa)
{
    unsigned long long m = 0;
    for (int s = 1; s <= 64; s++)
        if (sigismember(&sa->sa_mask, s) == 1)
            m |= 1ull << (s - 1);
    printf("%d %-26s %-5s flags=%#x mask=%#llx restorer=%d\n", sig, what, hname(sa->sa_handler),
           (unsigned)sa->sa_flags, m, sa->sa_restorer != NULL);
}

static void query(const char *what, int sig)
{
    struct sigaction o;
    memset(&o, 0x5a, sizeof o);
    errno = 1234;
    int r = sigaction(sig, NULL, &o);
    printf("%d %-26s r=%d errno=%d\n", sig, what, r, errno);
    show(what, sig, &o);
}

static void set(const char *what, int sig, __sighandler_t h, int flags, int masked)
{
    struct sigaction a, o;
    memset(&a, 0, sizeof a);
    memset(&o, 0x5a, sizeof o);
    a.sa_handler = h;
    if (flags & SA_SIGINFO)
        a.sa_sigaction = h3;
    a.sa_flags = flags;
    sigemptyset(&a.sa_mask);
    if (masked)
        sigaddset(&a.sa_mask, masked);
    errno = 1234;
    int r = sigaction(sig, &a, &o);
    printf("%d %-26s r=%d errno=%d\n", sig, what, r, errno);
    show(what, sig, &o);
}

static void fn(const char *what, int sig, __sighandler_t old)
{
    printf("%d %-26s old=%s errno=%d\n", sig, what, hname(old), errno);
}

/* one signal through every way of querying and setting it */
static void walk(int sig)
{
    query("initial", sig);
    set("sigaction h1", sig, h1, SA_RESTART | SA_NODEFER, SIGUSR2);
    query("after h1", sig);
    errno = 1234;
    fn("signal DFL", sig, signal(sig, SIG_DFL));
    query("after signal DFL", sig);
    set("sigaction DFL resethand", sig, SIG_DFL, SA_RESETHAND, SIGUSR2);
    query("after sigaction DFL", sig);
    errno = 1234;
    fn("sysv_signal IGN", sig, sysv_signal(sig, SIG_IGN));
    query("after sysv IGN", sig);
    errno = 1234;
    fn("__sysv_signal DFL", sig, __sysv_signal(sig, SIG_DFL));
    query("after __sysv DFL", sig);
    errno = 1234;
    fn("sigset h2", sig, sigset(sig, h2));
    errno = 1234;
    fn("sigset DFL", sig, sigset(sig, SIG_DFL));
    errno = 1234;
    int r = siginterrupt(sig, 1);
    printf("%d %-26s r=%d errno=%d\n", sig, "siginterrupt 1", r, errno);
    query("after siginterrupt 1", sig);
    set("sigaction h3 siginfo", sig, NULL, SA_SIGINFO, 0);
    errno = 1234;
    fn("bsd_signal DFL", sig, bsd_signal(sig, SIG_DFL));
    errno = 1234;
    fn("signal IGN", sig, signal(sig, SIG_IGN));
    errno = 1234;
    fn("signal DFL", sig, signal(sig, SIG_DFL));
    query("final", sig);
}

/* bad calls: same return value and errno with the agent */
static void errors(void)
{
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_handler = h1;
    errno = 0;
    int r = sigaction(SIGKILL, &a, NULL);
    printf("sigaction(SIGKILL) r=%d errno=%d\n", r, errno);
    errno = 0;
    r = sigaction(0, NULL, &a);
    printf("sigaction(0) r=%d errno=%d\n", r, errno);
    errno = 0;
    r = sigaction(65, &a, NULL);
    printf("sigaction(65) r=%d errno=%d\n", r, errno);
    errno = 0;
    fn("signal(SIGSTOP)", SIGSTOP, signal(SIGSTOP, h1));
    errno = 0;
    fn("sysv_signal(-1)", -1, sysv_signal(-1, SIG_DFL));
    errno = 0;
    r = siginterrupt(99, 1);
    printf("siginterrupt(99) r=%d errno=%d\n", r, errno);
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(m, "view")) {
        int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            walk(sigs[i]);
        errors();
        return 0;
    }
    /* dlopen LIB: an agent loaded late cannot hide a handler, so it must install none */
    if (!strcmp(m, "dlopen") && argc > 2) {
        if (!dlopen(argv[2], RTLD_NOW)) {
            fprintf(stderr, "spine_sig: %s\n", dlerror());
            return 2;
        }
        query("after dlopen", SIGTERM);
        query("after dlopen", SIGINT);
        return 0;
    }
    /* restore-<how>: the app takes SIGTERM, gives it back to SIG_DFL, then is killed by it: the
     * agent must still write the DB (and the app still sees SIG_DFL) */
    if (!strncmp(m, "restore-", 8)) {
        const char *how = m + 8;
        signal(SIGTERM, h1);
        if (!strcmp(how, "sigaction"))
            set("restore", SIGTERM, SIG_DFL, 0, 0);
        else if (!strcmp(how, "signal"))
            fn("restore", SIGTERM, signal(SIGTERM, SIG_DFL));
        else if (!strcmp(how, "sysv"))
            fn("restore", SIGTERM, __sysv_signal(SIGTERM, SIG_DFL));
        else if (!strcmp(how, "sigset"))
            fn("restore", SIGTERM, sigset(SIGTERM, SIG_DFL));
        query("restored", SIGTERM);
        for (int i = 0; i < 10; i++) {
            hgtxRangePushA(m);
            usleep(200);
            hgtxRangePop();
        }
        kill(getpid(), SIGTERM);
        pause();
        return 3;
    }
    fprintf(stderr, "spine_sig: unknown mode '%s' (view, dlopen LIB, restore-sigaction|signal|sysv|sigset)\n", m);
    return 2;
}
