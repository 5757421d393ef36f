/* mem_dlq1.c - library loaded, used and dlclose'd by mem_dl_main before mem_dlq2 takes its place. */
#include "mem_qa.h"
__attribute__((noinline)) void *dl_alloc_inner(size_t n) { void *p = qa_alloc(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *dl_alloc(size_t n) { void *p = dl_alloc_inner(n); __asm__ volatile("" ::: "memory"); return p; }
