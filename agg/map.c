/* map.c - open-addressing uint64 -> uint32 hash map and the byte hash used by interning. */
#include <stdlib.h>
#include <string.h>

#include "agg_internal.h"

/* Keys are ids, tids and packed tuples: a multiplicative mix spreads their low-entropy bits. */
static inline size_t map_slot(uint64_t key, size_t mask)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & mask;
}

uint32_t *pa_map_get(const pa_map_t *m, uint64_t key)
{
    if (m->cap == 0)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = map_slot(key, mask);; i = (i + 1) & mask) {
        if (m->keys[i] == key)
            return &m->vals[i];
        if (m->keys[i] == 0)
            return NULL;
    }
}

static int map_grow(pa_map_t *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    uint64_t *nk = calloc(ncap, sizeof *nk);
    uint32_t *nv = malloc(ncap * sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -1;
    }
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->keys[j])
            continue;
        size_t i = map_slot(m->keys[j], ncap - 1);
        while (nk[i])
            i = (i + 1) & (ncap - 1);
        nk[i] = m->keys[j];
        nv[i] = m->vals[j];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return 0;
}

int pa_map_put(pa_map_t *m, uint64_t key, uint32_t val)
{
    uint32_t *v = pa_map_get(m, key);
    if (v) {
        *v = val;
        return 0;
    }
    if ((m->n + 1) * 2 > m->cap && map_grow(m) < 0)
        return -1;
    size_t mask = m->cap - 1;
    size_t i = map_slot(key, mask);
    while (m->keys[i])
        i = (i + 1) & mask;
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
    return 0;
}

int pa_map_del(pa_map_t *m, uint64_t key)
{
    if (m->cap == 0)
        return 0;
    size_t mask = m->cap - 1;
    size_t i = map_slot(key, mask);
    while (m->keys[i] != key) {
        if (m->keys[i] == 0)
            return 0;
        i = (i + 1) & mask;
    }
    /* backward-shift deletion: move later entries of the probe run into the hole so lookups
     * never need tombstones */
    size_t hole = i;
    for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        size_t home = map_slot(m->keys[j], mask);
        /* j's entry may move to hole iff hole lies cyclically in [home, j) */
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->keys[hole] = m->keys[j];
            m->vals[hole] = m->vals[j];
            hole = j;
        }
    }
    m->keys[hole] = 0;
    m->n--;
    return 1;
}

void pa_map_free(pa_map_t *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

uint64_t pa_hash_bytes(const void *p, size_t len)
{
    /* FNV-1a-style absorb of 8-byte words with a multiply-xorshift finaliser: exact length
     * (it seeds the state), any byte values. */
    const uint8_t *s = p;
    uint64_t h = 0xcbf29ce484222325ull ^ (len * 0x9e3779b97f4a7c15ull);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
        s += 8;
        len -= 8;
    }
    /* the 0..7 tail bytes without a variable-length memcpy (a libc call per hash): two
     * overlapping 4-byte loads, or first/middle/last byte */
    uint64_t w = 0;
    if (len >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + len - 4, 4);
        w = (uint64_t)a << 32 | b;
    } else if (len) {
        w = (uint64_t)s[0] << 16 | (uint64_t)s[len / 2] << 8 | s[len - 1];
    }
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return h;
}
