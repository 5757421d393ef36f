/* mem_dl_main.c - leaks 2 x 4096 from libmem_dlq1 (then dlclose'd), 100 from libmem_dlq2 (dlclose'd
 * too when an argument is given). usage: mem_dl_main DIR_OF_LIBS [close2] */
#define QA_IMPL
#include <dlfcn.h>
#include <stdio.h>
#include "mem_qa.h"

static void *(*load(const char *dir, const char *name, void **h))(size_t)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!(*h = dlopen(path, RTLD_NOW))) {
        fprintf(stderr, "%s\n", dlerror());
        exit(1);
    }
    return (void *(*)(size_t))dlsym(*h, "dl_alloc");
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    qa_init();
    void *h1, *h2;
    void *(*f)(size_t) = load(argv[1], "libmem_dlq1.so", &h1);
    f(4096);
    f(4096);
    dlclose(h1);
    void *(*g)(size_t) = load(argv[1], "libmem_dlq2.so", &h2);
    g(100);
    if (argc > 2)
        dlclose(h2);
    return 0;
}
