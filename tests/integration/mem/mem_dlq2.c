/* mem_dlq2.c - library loaded after mem_dlq1 was dlclose'd (usually at the same address). */
#include "mem_qa.h"
__attribute__((noinline)) void *dl2_inner_other(size_t n) { void *p = qa_alloc(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *dl_alloc(size_t n) { void *p = dl2_inner_other(n); __asm__ volatile("" ::: "memory"); return p; }
