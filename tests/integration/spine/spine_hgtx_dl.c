/* spine_hgtx_dl.c - HGTX through dlopen + dlsym on libhgtx.so (argv[1]), as plugins and language
 * bindings do: ranges must reach the preloaded agent. Prints the push/pop return values. */
#include <dlfcn.h>
#include <stdio.h>

#include "profagent/hgtx.h"

#define SYM(h, name) ((__typeof__(&name))dlsym(h, #name))

int main(int argc, char **argv)
{
    void *h = dlopen(argc > 1 ? argv[1] : "libhgtx.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "spine_hgtx_dl: %s\n", dlerror());
        return 2;
    }
    int a = SYM(h, hgtxRangePushA)("dl_outer");
    int b = SYM(h, hgtxRangePushA)("dl_inner");
    SYM(h, hgtxMarkA)("dl_mark");
    int c = SYM(h, hgtxRangePop)();
    int d = SYM(h, hgtxRangePop)();
    SYM(h, hgtxRangeEnd)(SYM(h, hgtxRangeStartA)("dl_startend"));
    hgtxDomainHandle_t dom = SYM(h, hgtxDomainCreateA)("dl_dom");
    SYM(h, hgtxDomainRangePushA)(dom, "dl_dpush");
    SYM(h, hgtxDomainRangePop)(dom);
    SYM(h, hgtxDomainDestroy)(dom);
    printf("push %d %d pop %d %d\n", a, b, c, d);
    dlclose(h);
    return 0;
}
