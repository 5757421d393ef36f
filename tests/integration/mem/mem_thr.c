/* mem_thr.c - 8 threads churn 20000 allocations each through a shared queue (freed, often by
 * another thread) and each leaks one 1000 + t byte block from leak_site: 8 unreleased = 8028 B. */
#define QA_IMPL
#include <pthread.h>
#include "mem_qa.h"

#define NT 8
#define K 20000
#define QN 64
static void *q[QN];
static int qh, qt, qc;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void push(void *p)
{
    for (;;) {
        pthread_mutex_lock(&mu);
        if (qc < QN) {
            q[qt] = p; qt = (qt + 1) % QN; qc++;
            pthread_mutex_unlock(&mu);
            return;
        }
        pthread_mutex_unlock(&mu);
    }
}

static void *pop(void)
{
    void *p = NULL;
    pthread_mutex_lock(&mu);
    if (qc) { p = q[qh]; qh = (qh + 1) % QN; qc--; }
    pthread_mutex_unlock(&mu);
    return p;
}

__attribute__((noinline)) void *churn_site(size_t n) { void *p = qa_alloc(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *leak_site(size_t n) { void *p = qa_alloc(n); __asm__ volatile("" ::: "memory"); return p; }

static void *worker(void *arg)
{
    long t = (long)arg;
    for (int i = 0; i < K; i++) {
        push(churn_site(64 + (size_t)((t * 7 + i) % 5) * 64));
        void *p = pop();
        if (p)
            QA_CHECK(zeMemFree(qa_ctx, p));
    }
    leak_site(1000 + (size_t)t);
    return NULL;
}

int main(void)
{
    qa_init();
    pthread_t th[NT];
    for (long t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    void *p;
    while ((p = pop()))
        QA_CHECK(zeMemFree(qa_ctx, p));
    return 0;
}
