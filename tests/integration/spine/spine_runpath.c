/* spine_runpath.c - dlopen of a plugin found only through this program's RUNPATH ($ORIGIN/plug):
 * under the agent the search must still use the program's RUNPATH (glibc picks it from the
 * caller's address, so the agent's dlopen must not become the caller). Exit 0 and prints 42. */
#include <dlfcn.h>
#include <stdio.h>

int main(void)
{
    void *h = dlopen("libspine_plug.so", RTLD_NOW);
    if (!h) {
        printf("dlopen failed: %s\n", dlerror());
        return 1;
    }
    int (*f)(void) = (int (*)(void))dlsym(h, "spine_plug");
    printf("dlopen ok: %d\n", f ? f() : -1);
    return f && f() == 42 ? 0 : 1;
}
