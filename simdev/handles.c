/* handles.c - registry of live handle addresses: a stale handle is rejected without reading freed memory. */
#include <stdlib.h>

#include "pa_sd_internal.h"

/* Magic tags alone cannot reject a handle whose object was freed: reading the tag is itself a
 * use-after-free (and freed memory may be reused by a new object). Objects that are freed by a
 * destroy call register their address here at creation and leave at destroy; the *_of() checks
 * consult the registry before dereferencing. Open addressing, linear probing, backward-shift
 * deletion (no tombstones); one lock, held only for a probe. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t *g_slots; /* 0 = empty */
static size_t g_cap;       /* power of two, or 0 before the first add */
static size_t g_used;

static size_t slot_of(uintptr_t key)
{
    uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull; /* Fibonacci hashing */
    return (size_t)(h >> 17) & (g_cap - 1);
}

/* Insert without growing; caller holds g_mu and guarantees a free slot. */
static void insert(uintptr_t key)
{
    size_t i = slot_of(key);
    while (g_slots[i] && g_slots[i] != key)
        i = (i + 1) & (g_cap - 1);
    if (!g_slots[i]) {
        g_slots[i] = key;
        g_used++;
    }
}

static uintptr_t g_retired; /* the table replaced by the last grow, until its free is done (a fork
                               child keeps it reachable; never freed there) */

/* Keep the load factor <= 1/2; caller holds g_mu. 0, or -1 when out of memory. The old table is
 * left in *old for the caller to free off the lock: it may lie in another thread's malloc arena,
 * whose lock that thread can hold for ever (a signal handler's exit() interrupted its malloc);
 * freed under g_mu, every handle check waited with it (the agent's exit flush too). */
static int grow(uintptr_t **old)
{
    *old = NULL;
    if (g_cap && (g_used + 1) * 2 <= g_cap)
        return 0;
    size_t ncap = g_cap ? g_cap * 2 : 256;
    uintptr_t *ns = calloc(ncap, sizeof *ns), *prev = g_slots;
    if (!ns)
        return -1;
    size_t ocap = g_cap;
    g_slots = ns;
    g_cap = ncap;
    g_used = 0;
    for (size_t i = 0; i < ocap; i++)
        if (prev[i])
            insert(prev[i]);
    *old = prev;
    return 0;
}

int pa_sd_handle_add(const void *h)
{
    uintptr_t *old;
    pthread_mutex_lock(&g_mu);
    int rc = grow(&old);
    if (rc == 0)
        insert((uintptr_t)h);
    uintptr_t key = (uintptr_t)old;
    if (old)
        __atomic_store_n(&g_retired, key, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_mu);
    if (old) {
        free(old);
        __atomic_compare_exchange_n(&g_retired, &key, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    }
    return rc;
}

void pa_sd_handle_remove(const void *h)
{
    uintptr_t key = (uintptr_t)h;
    pthread_mutex_lock(&g_mu);
    size_t i = g_cap ? slot_of(key) : 0;
    while (g_cap && g_slots[i] && g_slots[i] != key)
        i = (i + 1) & (g_cap - 1);
    if (g_cap && g_slots[i] == key) {
        /* backward shift: move later members of the probe run into the hole when their home
         * slot does not lie cyclically in (hole, j] */
        g_slots[i] = 0;
        g_used--;
        for (size_t j = (i + 1) & (g_cap - 1); g_slots[j]; j = (j + 1) & (g_cap - 1)) {
            size_t home = slot_of(g_slots[j]);
            if (((j - home) & (g_cap - 1)) >= ((j - i) & (g_cap - 1))) {
                g_slots[i] = g_slots[j];
                g_slots[j] = 0;
                i = j;
            }
        }
    }
    pthread_mutex_unlock(&g_mu);
}

bool pa_sd_handle_live(const void *h)
{
    uintptr_t key = (uintptr_t)h;
    bool live = false;
    if (!h)
        return false;
    pthread_mutex_lock(&g_mu);
    for (size_t i = g_cap ? slot_of(key) : 0; g_cap && g_slots[i]; i = (i + 1) & (g_cap - 1))
        if (g_slots[i] == key) {
            live = true;
            break;
        }
    pthread_mutex_unlock(&g_mu);
    return live;
}

/* Held across fork so the child never inherits it locked by a thread that does not exist there. */
void pa_sd_handle_atfork(int phase)
{
    if (phase == PA_SD_FORK_PREPARE)
        pthread_mutex_lock(&g_mu);
    else
        pthread_mutex_unlock(&g_mu);
}
