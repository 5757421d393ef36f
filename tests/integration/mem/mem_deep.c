/* mem_deep.c - one allocation 12 calls deep: deep_leaf <- deep_1 <- ... <- deep_10 <- main. */
#define QA_IMPL
#include "mem_qa.h"
#define D(i, j) __attribute__((noinline)) void *deep_##i(size_t n) { void *p = deep_##j(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *deep_leaf(size_t n) { void *p = qa_alloc(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *deep_1(size_t n) { void *p = deep_leaf(n); __asm__ volatile("" ::: "memory"); return p; }
D(2, 1) D(3, 2) D(4, 3) D(5, 4) D(6, 5) D(7, 6) D(8, 7) D(9, 8) D(10, 9)
int main(void)
{
    qa_init();
    deep_10(777);
    return 0;
}
