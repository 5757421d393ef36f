/* itt_static.c - the stand-in static part (itt_static.h): the entry table and the loader. */
#include "itt_static.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITT_DEFINE(n, r, p) r(*itt_##n) p;
ITT_ENTRIES(ITT_DEFINE)
#undef ITT_DEFINE

#define ITT_ROW(n, r, p) {"__itt_" #n, (void **)&itt_##n, NULL, NULL, -1},
static pa_itt_api_info_t api_list[] = {ITT_ENTRIES(ITT_ROW){NULL, NULL, NULL, NULL, 0}};
#undef ITT_ROW

static pa_itt_global_t global = {.magic = {0xED, 0xAB, 0xAB, 0xEC, 0x0D, 0xEE, 0xDA, 0x30},
                                 .version_major = 3, .version_minor = 0, .mutex = PTHREAD_MUTEX_INITIALIZER,
                                 .api_list_ptr = api_list};

int itt_static_init(itt_domain *pre)
{
    const char *lib = getenv("INTEL_LIBITTNOTIFY64");
    if (!lib)
        return 0;
    void *h = dlopen(lib, RTLD_LAZY);
    void (*init)(pa_itt_global_t *, int) = h ? (void (*)(pa_itt_global_t *, int))dlsym(h, "__itt_api_init") : NULL;
    if (!init) {
        fprintf(stderr, "itt_static: %s: no collector (%s)\n", lib, h ? "no __itt_api_init" : dlerror());
        return 0;
    }
    global.domain_list = pre;
    pthread_mutex_lock(&global.mutex);
    init(&global, -1);
    global.api_initialized = 1;
    pthread_mutex_unlock(&global.mutex);
    return 1;
}
