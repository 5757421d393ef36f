/* threadexit.c - one thread calls exit(5) while two others call Level Zero flat out; a SIGSEGV
 * says on stderr where it happened, so run_exitlife.py can tell the Level Zero loader's own exit
 * window from a fault in the agent or in the driver (simdev).
 * The loader (1.8, source/lib/linux/lib_init.cpp) deletes its context in an ELF destructor and
 * leaves the pointer dangling: a thread still calling zeX() then reads the dispatch table from
 * freed memory and tail-jumps (jmp *%rax) to whatever the heap holds there. That fault has a
 * signature: the PC is in no loaded object and is a word of the loader's (freed) context
 * (ze_lib::context, exported by the 1.8 loader): the jump target was read from the loader's
 * table. Under the agent the frame below is the agent's wrapper that called the loader's export;
 * a jump through a pointer of the agent's own would not be found in the loader's context. Any
 * other fault is reported with the objects of its PC and return address. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <level_zero/ze_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static ze_device_handle_t dev;
static atomic_int exiting; /* exit(5) has begun */
static ze_context_handle_t ctx;

static void setup(void)
{
    ze_driver_handle_t drv;
    uint32_t n = 1;
    if (zeInit(0) || zeDriverGet(&n, &drv) || !n)
        exit(90);
    n = 1;
    if (zeDeviceGet(drv, &n, &dev) || !n)
        exit(91);
    ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
    if (zeContextCreate(drv, &cd, &ctx))
        exit(92);
}

/* An immediate list, a device buffer, 8 copies, a barrier, both freed: one round. */
static void round_ze(int k)
{
    ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
                                  ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_list_handle_t cl;
    if (zeCommandListCreateImmediate(ctx, dev, &qd, &cl))
        return;
    ze_device_mem_alloc_desc_t md = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
    void *d = NULL;
    char h[4096];
    memset(h, k, sizeof h);
    if (zeMemAllocDevice(ctx, &md, sizeof h, 64, dev, &d) == ZE_RESULT_SUCCESS) {
        for (int i = 0; i < 4; i++) {
            zeCommandListAppendMemoryCopy(cl, d, h, sizeof h, NULL, 0, NULL);
            zeCommandListAppendMemoryCopy(cl, h, d, sizeof h, NULL, 0, NULL);
        }
        zeCommandListAppendBarrier(cl, NULL, 0, NULL);
        zeMemFree(ctx, d);
    }
    zeCommandListDestroy(cl);
}

static void *spin(void *a)
{
    for (;;)
        round_ze((int)(long)a);
    return NULL;
}

static void *exit_soon(void *a)
{
    (void)a;
    usleep(50000);
    atomic_store(&exiting, 1);
    exit(5);
}

/* async-signal-safe text output */
static void say(const char *s)
{
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

static const char *object_of(void *p)
{
    Dl_info di;
    return dladdr(p, &di) && di.dli_fname ? di.dli_fname : NULL;
}

/* 1: `pc` is one of the first 4 KiB of words of the loader's context (its dispatch tables) */
static int from_loader_table(void *pc)
{
    void **ctxp = dlsym(RTLD_DEFAULT, "_ZN6ze_lib7contextE");
    if (!ctxp || !*ctxp)
        return 0;
    void *const *w = *ctxp;
    for (int i = 0; i < 512; i++)
        if (w[i] == pc)
            return 1;
    return 0;
}

/* dladdr/dlsym are not on the async-signal-safe list; the process is ending by this fault
 * anyway. Both Level Zero threads usually fault at once (same freed table): the first one says
 * where, the others wait, so the default action of a second fault does not end the process
 * before the line is written. Returning re-runs the faulting instruction under SIG_DFL. */
static atomic_int faulted;

static void on_segv(int sig, siginfo_t *si, void *uc_)
{
    (void)si;
    if (atomic_exchange(&faulted, 1))
        for (;;)
            pause();
    ucontext_t *uc = uc_;
    void *pc = (void *)uc->uc_mcontext.gregs[REG_RIP];
    void *ret = *(void **)uc->uc_mcontext.gregs[REG_RSP];
    const char *in = object_of(pc), *from = object_of(ret);
    if (atomic_load(&exiting) && !in && from_loader_table(pc))
        say("threadexit: SIGSEGV in the loader's exit window (jump to a target read from its freed context)\n");
    else {
        say("threadexit: SIGSEGV pc in ");
        say(in ? in : "no object");
        say(", return address in ");
        say(from ? from : "no object");
        say("\n");
    }
    signal(sig, SIG_DFL);
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    setup();
    pthread_t t;
    pthread_create(&t, NULL, exit_soon, NULL);
    pthread_create(&t, NULL, spin, (void *)1L);
    for (;;)
        round_ze(2);
}
