/* mem_deep.c - one allocation of 777 B 12 calls deep: deep_leaf <- deep_1 <- ... <- deep_10 <- main;
 * with an argument, then 555 B whose zeMemFreeExt(NULL desc) fails (the allocation stays live). */
#define QA_IMPL
#include "mem_qa.h"
#define D(i, j) __attribute__((noinline)) void *deep_##i(size_t n) { void *p = deep_##j(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *deep_leaf(size_t n) { void *p = qa_alloc(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *deep_1(size_t n) { void *p = deep_leaf(n); __asm__ volatile("" ::: "memory"); return p; }
D(2, 1) D(3, 2) D(4, 3) D(5, 4) D(6, 5) D(7, 6) D(8, 7) D(9, 8) D(10, 9)
int main(int argc, char **argv)
{
    (void)argv;
    qa_init();
    deep_10(777);
    if (argc > 1) {
        void *p = qa_alloc(555);
        if (zeMemFreeExt(qa_ctx, NULL, p) == ZE_RESULT_SUCCESS)
            return 3; /* the driver must refuse a NULL descriptor */
    }
    return 0;
}
