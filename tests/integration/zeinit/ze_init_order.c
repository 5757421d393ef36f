/* ze_init_order.c - Level Zero initialization orders an application may use, each step's result
 * printed as "key value" lines, so a run under the agent can be compared with one without it:
 *   pre   zeDriverGet before any zeInit, then exit without initializing
 *   vpu   zeInit(ZE_INIT_FLAG_VPU_ONLY), zeDriverGet, then zeInit(ZE_INIT_FLAG_GPU_ONLY), zeDriverGet
 *   gpu   zeDriverGet before zeInit, zeInit(ZE_INIT_FLAG_GPU_ONLY), then normal use: drivers,
 *         devices, a context, a synchronous immediate list with FILLS memory fills of BYTES bytes
 *   hidden  the loader's own zeInit(ZE_INIT_FLAG_GPU_ONLY), found in its symbol table (no dynamic
 *         linking or dlsym: the agent cannot see it, as it does not see a zeInitDrivers of loader
 *         1.18+), then the same normal use
 * usage: ze_init_order pre|vpu|gpu|hidden */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILLS 3
#define BYTES 4096

/* zeDriverGet's count query: prints its result and count under `key`; returns the count. */
static uint32_t driver_count(const char *key)
{
    uint32_t n = 0;
    ze_result_t r = zeDriverGet(&n, NULL);
    printf("%s_result 0x%x\n%s_count %u\n", key, (unsigned)r, key, n);
    return r == ZE_RESULT_SUCCESS ? n : 0;
}

static int use_gpu(void)
{
    ze_driver_handle_t drv = NULL;
    uint32_t n = 1;
    if (zeDriverGet(&n, &drv) != ZE_RESULT_SUCCESS || !drv)
        return 1;
    uint32_t nd = 0;
    printf("device_get_result 0x%x\n", (unsigned)zeDeviceGet(drv, &nd, NULL));
    printf("devices %u\n", nd);
    ze_device_handle_t dev[16];
    if (nd == 0 || nd > 16 || zeDeviceGet(drv, &nd, dev) != ZE_RESULT_SUCCESS)
        return 1;
    ze_context_desc_t cd = { .stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC };
    ze_context_handle_t ctx = NULL;
    printf("context_result 0x%x\n", (unsigned)zeContextCreate(drv, &cd, &ctx));
    ze_command_queue_desc_t qd = { .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                   .mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS };
    ze_command_list_handle_t list = NULL;
    printf("list_result 0x%x\n", (unsigned)zeCommandListCreateImmediate(ctx, dev[0], &qd, &list));
    ze_host_mem_alloc_desc_t hd = { .stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC };
    void *buf = NULL;
    printf("alloc_result 0x%x\n", (unsigned)zeMemAllocHost(ctx, &hd, BYTES, 64, &buf));
    if (!ctx || !list || !buf)
        return 1;
    unsigned char pat = 0x5a;
    int fills_ok = 0;
    for (int i = 0; i < FILLS; i++)
        fills_ok += zeCommandListAppendMemoryFill(list, buf, &pat, 1, BYTES, NULL, 0, NULL) == ZE_RESULT_SUCCESS;
    printf("fills_ok %d\n", fills_ok);
    const unsigned char *b = buf;
    int same = 0;
    for (int i = 0; i < BYTES; i++)
        same += b[i] == pat;
    printf("filled_bytes %d\n", same);
    zeMemFree(ctx, buf);
    zeCommandListDestroy(list);
    zeContextDestroy(ctx);
    return 0;
}

/* The loader's zeInit: its file's .dynsym read from disk, relocated by its load address. */
static int loader_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libze_loader.so"))
        return 0;
    int fd = open(info->dlpi_name, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        return 1;
    const char *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return 1;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(m + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(m + sh[i].sh_offset);
        const char *str = m + sh[sh[i].sh_link].sh_offset;
        for (size_t k = 0; k < sh[i].sh_size / sizeof *sym; k++)
            if (sym[k].st_value && strcmp(str + sym[k].st_name, "zeInit") == 0)
                *(uintptr_t *)arg = info->dlpi_addr + sym[k].st_value;
    }
    return 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "pre") == 0) {
        driver_count("pre_get");
        return 0;
    }
    if (strcmp(mode, "vpu") == 0) {
        printf("vpu_init 0x%x\n", (unsigned)zeInit(ZE_INIT_FLAG_VPU_ONLY));
        driver_count("vpu_get");
        printf("gpu_init 0x%x\n", (unsigned)zeInit(ZE_INIT_FLAG_GPU_ONLY));
        driver_count("gpu_get");
        return 0;
    }
    if (strcmp(mode, "gpu") == 0) {
        driver_count("pre_get");
        printf("gpu_init 0x%x\n", (unsigned)zeInit(ZE_INIT_FLAG_GPU_ONLY));
        if (driver_count("gpu_get") == 0)
            return 1;
        return use_gpu();
    }
    if (strcmp(mode, "hidden") == 0) {
        uintptr_t a = 0;
        dl_iterate_phdr(loader_cb, &a);
        if (!a)
            return 1;
        ze_result_t (*loader_init)(ze_init_flags_t) = (ze_result_t (*)(ze_init_flags_t))a;
        printf("hidden_init 0x%x\n", (unsigned)loader_init(ZE_INIT_FLAG_GPU_ONLY));
        if (driver_count("gpu_get") == 0)
            return 1;
        return use_gpu();
    }
    fprintf(stderr, "usage: ze_init_order pre|vpu|gpu|hidden\n");
    return 2;
}
