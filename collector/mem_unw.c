/* mem_unw.c - libunwind's address validation without a file descriptor (mem.h). */
#define _GNU_SOURCE
#include "mem.h"

#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

/* libunwind (1.6) validates each address it reads on a stack by write()-ing one byte from it
 * into a pipe it opens on its first walk and keeps for the process's life (the kernel answers
 * EFAULT for an unreadable address). That fd sits in the application's fd space: its open()
 * got 5 instead of 3, and an application started with fds 0/1 closed had them become the pipe
 * (writes to stdout "succeeded", read(0) returned libunwind's bytes). Refusing the pipe is no
 * answer: every validation then fails and walks come back empty. So libunwind's own calls of
 * pipe2/read/write/close/syscall (its PLT slots, nobody else's) are pointed here: the pipe is a pair of
 * fd numbers no real fd can have, a write to it checks the byte with process_vm_readv() on
 * ourselves (same EFAULT, no fd), a read finds it empty, a close does nothing; any other fd
 * goes to libc unchanged (libunwind also reads ELF files by fd). */
/* above any fd the kernel hands out (fs.nr_open is at most 1073741816); not negative: libunwind
 * takes a negative fd for a pipe that failed to open */
enum { UNW_FAKE_R = 0x7ffffffd, UNW_FAKE_W = 0x7ffffffe };

static int unw_pipe2(int fds[2], int flags)
{
    (void)flags;
    fds[0] = UNW_FAKE_R;
    fds[1] = UNW_FAKE_W;
    return 0;
}

static ssize_t unw_read(int fd, void *buf, size_t n)
{
    if (fd != UNW_FAKE_R)
        return read(fd, buf, n);
    errno = EAGAIN; /* an empty non-blocking pipe: what libunwind drains it to */
    return -1;
}

static ssize_t unw_write(int fd, const void *buf, size_t n)
{
    if (fd != UNW_FAKE_W)
        return write(fd, buf, n);
    char byte;
    struct iovec local = {&byte, 1}, remote = {(void *)buf, 1};
    (void)n; /* libunwind writes 1 byte: checking that one is its validation */
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1 ? 1 : -1; /* errno EFAULT */
}

/* libunwind 1.6 writes (and drains) through syscall(SYS_write/SYS_read, ...) */
static long unw_syscall(long nr, ...)
{
    va_list ap;
    va_start(ap, nr);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (nr == SYS_write && a[0] == UNW_FAKE_W)
        return unw_write(UNW_FAKE_W, (const void *)a[1], (size_t)a[2]);
    if (nr == SYS_read && a[0] == UNW_FAKE_R)
        return unw_read(UNW_FAKE_R, (void *)a[1], (size_t)a[2]);
    return syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static int unw_close(int fd)
{
    return fd == UNW_FAKE_R || fd == UNW_FAKE_W ? 0 : close(fd);
}

static const struct {
    const char *name;
    void *fn;
} unw_redirects[] = {
    {"pipe2", (void *)unw_pipe2}, {"read", (void *)unw_read}, {"write", (void *)unw_write}, {"close", (void *)unw_close},
    {"syscall", (void *)unw_syscall},
};

/* d_ptr of a dynamic entry as an address: ld.so relocates most of them in place, some not. */
static uintptr_t unw_dyn_addr(uintptr_t base, uintptr_t v) { return v < base ? base + v : v; }

/* Writes fn into the GOT slot at `slot` (made writable for the store if RELRO sealed it). */
static int unw_patch_slot(void **slot, void *fn)
{
    uintptr_t page = (uintptr_t)slot & ~(uintptr_t)4095;
    if (mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) != 0)
        return -1;
    __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
    return 0; /* left writable: RELRO only sealed slots bound once, ours stay ours */
}

/* Redirects the relocations of table rel[0..n) that name one of unw_redirects. */
static int unw_patch_table(uintptr_t base, const ElfW(Rela) *rel, size_t n, const ElfW(Sym) *sym,
                           const char *str)
{
    int patched = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned type = ELF64_R_TYPE(rel[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        const char *name = str + sym[ELF64_R_SYM(rel[i].r_info)].st_name;
        for (size_t k = 0; k < sizeof unw_redirects / sizeof unw_redirects[0]; k++)
            if (strcmp(name, unw_redirects[k].name) == 0 &&
                unw_patch_slot((void **)(base + rel[i].r_offset), unw_redirects[k].fn) == 0)
                patched++;
    }
    return patched;
}

struct unw_find {
    uintptr_t addr; /* an address inside libunwind */
    int patched;    /* slots redirected, -1 when the object was not found */
};

static int unw_patch_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct unw_find *f = data;
    const ElfW(Dyn) *dyn = NULL;
    int inside = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && f->addr >= s && f->addr < s + ph->p_memsz)
            inside = 1;
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)s;
    }
    if (!inside || !dyn)
        return 0;
    uintptr_t b = info->dlpi_addr, jmprel = 0, rela = 0, symtab = 0, strtab = 0;
    size_t jmpsz = 0, relasz = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_JMPREL: jmprel = unw_dyn_addr(b, dyn->d_un.d_ptr); break;
        case DT_PLTRELSZ: jmpsz = dyn->d_un.d_val; break;
        case DT_RELA: rela = unw_dyn_addr(b, dyn->d_un.d_ptr); break;
        case DT_RELASZ: relasz = dyn->d_un.d_val; break;
        case DT_SYMTAB: symtab = unw_dyn_addr(b, dyn->d_un.d_ptr); break;
        case DT_STRTAB: strtab = unw_dyn_addr(b, dyn->d_un.d_ptr); break;
        }
    }
    if (!symtab || !strtab)
        return 1;
    const ElfW(Sym) *sym = (const ElfW(Sym) *)symtab;
    const char *str = (const char *)strtab;
    f->patched = 0;
    if (jmprel)
        f->patched += unw_patch_table(b, (const ElfW(Rela) *)jmprel, jmpsz / sizeof(ElfW(Rela)), sym, str);
    if (rela)
        f->patched += unw_patch_table(b, (const ElfW(Rela) *)rela, relasz / sizeof(ElfW(Rela)), sym, str);
    return 1;
}

int pa_mem_unw_redirect(const void *inside)
{
    struct unw_find f = {(uintptr_t)inside, -1};
    dl_iterate_phdr(unw_patch_object, &f);
    return f.patched;
}
