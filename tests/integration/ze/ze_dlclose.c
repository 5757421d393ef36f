/* ze_dlclose.c - an application that dlclose()s the Level Zero loader it dlopen'd: "reload N"
 * opens, initializes, enumerates and closes it N times (a framework probing for a GPU, then
 * loading it for real); "unload" appends 10 fills on an immediate list, closes the loader
 * before main returns (cleanup code) and exits while the agent still has events to read. */
#include <dlfcn.h>
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SYM(h, n) __typeof__(&n) p_##n = (__typeof__(&n))dlsym(h, #n)

static int reload(int rounds)
{
    for (int r = 0; r < rounds; r++) {
        void *h = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h)
            return printf("dlopen failed\n"), 1;
        SYM(h, zeInit);
        SYM(h, zeDriverGet);
        uint32_t n = 0;
        ze_result_t ri = p_zeInit(0), rd = p_zeDriverGet(&n, NULL);
        printf("round %d: zeInit %#x zeDriverGet %#x drivers %u dlclose %d\n", r, ri, rd, n, dlclose(h));
        usleep(10000);
    }
    return 0;
}

static int unload(void)
{
    void *h = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return printf("dlopen failed\n"), 1;
    SYM(h, zeInit); SYM(h, zeDriverGet); SYM(h, zeDeviceGet); SYM(h, zeContextCreate);
    SYM(h, zeCommandListCreateImmediate); SYM(h, zeMemAllocDevice); SYM(h, zeCommandListAppendMemoryFill);
    uint32_t n = 1;
    ze_driver_handle_t drv;
    ze_device_handle_t dev;
    ze_context_handle_t ctx;
    ze_command_list_handle_t list;
    void *buf;
    ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
    ze_device_mem_alloc_desc_t md = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    if (p_zeInit(0) || p_zeDriverGet(&n, &drv) || (n = 1, p_zeDeviceGet(drv, &n, &dev)) ||
        p_zeContextCreate(drv, &cd, &ctx) || p_zeCommandListCreateImmediate(ctx, dev, &qd, &list) ||
        p_zeMemAllocDevice(ctx, &md, 1 << 20, 64, dev, &buf))
        return printf("setup failed\n"), 1;
    int pattern = 7;
    for (int i = 0; i < 10; i++)
        printf("fill %d: %#x\n", i, p_zeCommandListAppendMemoryFill(list, buf, &pattern, sizeof pattern, 1 << 20,
                                                                    NULL, 0, NULL));
    printf("dlclose %d\n", dlclose(h));
    fflush(stdout);
    usleep(20000);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "reload"))
        return reload(atoi(argv[2]));
    if (argc == 2 && !strcmp(argv[1], "unload"))
        return unload();
    fprintf(stderr, "usage: ze_dlclose reload N | unload\n");
    return 2;
}
