/* intern.c - string interning: exact byte strings -> ids 1..n, bytes kept in a chunked arena. */
#include <stdlib.h>
#include <string.h>

#include "agg_internal.h"

#define ARENA_CHUNK (64u << 10)

/* Chunks are never moved, so interned pointers (result row keys) stay valid until free. */
struct pa_arena_chunk {
    struct pa_arena_chunk *next;
    char data[];
};

static char *arena_alloc(pa_intern_t *in, size_t n)
{
    if (n > in->cur_left) {
        size_t sz = n > ARENA_CHUNK / 4 ? n : ARENA_CHUNK; /* big strings get their own chunk */
        struct pa_arena_chunk *c = malloc(sizeof *c + sz);
        if (!c)
            return NULL;
        c->next = in->chunks;
        in->chunks = c;
        if (n > ARENA_CHUNK / 4) /* keep the current chunk's remainder for later small strings */
            return c->data;
        in->cur = c->data;
        in->cur_left = sz;
    }
    char *p = in->cur;
    in->cur += n;
    in->cur_left -= n;
    return p;
}

static int intern_grow(pa_intern_t *in)
{
    size_t ncap = in->cap ? in->cap * 2 : 256;
    uint32_t *nt = calloc(ncap, sizeof *nt);
    if (!nt)
        return -1;
    for (size_t id = 1; id <= in->n; id++) {
        size_t i = pa_hash_bytes(in->strs[id - 1].p, in->strs[id - 1].len) & (ncap - 1);
        while (nt[i])
            i = (i + 1) & (ncap - 1);
        nt[i] = (uint32_t)id;
    }
    free(in->table);
    in->table = nt;
    in->cap = ncap;
    return 0;
}

uint32_t pa_intern_get(pa_intern_t *in, const void *bytes, size_t len, int *is_new)
{
    *is_new = 0;
    if (len > UINT32_MAX - 1)
        return 0;
    if ((in->n + 1) * 2 > in->cap && intern_grow(in) < 0)
        return 0;
    uint64_t h = pa_hash_bytes(bytes, len);
    size_t mask = in->cap - 1;
    size_t i = h & mask;
    for (; in->table[i]; i = (i + 1) & mask) {
        const struct pa_intern_str *s = &in->strs[in->table[i] - 1];
        if (s->hash32 == (uint32_t)(h >> 32) && s->len == len && memcmp(s->p, bytes, len) == 0)
            return in->table[i];
    }
    if (in->n == in->strs_cap) {
        size_t ncap = in->strs_cap ? in->strs_cap * 2 : 256;
        struct pa_intern_str *ns = realloc(in->strs, ncap * sizeof *ns);
        if (!ns)
            return 0;
        in->strs = ns;
        in->strs_cap = ncap;
    }
    char *p = arena_alloc(in, len + 1);
    if (!p)
        return 0;
    memcpy(p, bytes, len);
    p[len] = '\0'; /* convenience for C-string users; len stays authoritative */
    in->strs[in->n] = (struct pa_intern_str){ p, (uint32_t)len, (uint32_t)(h >> 32) };
    in->n++;
    in->table[i] = (uint32_t)in->n;
    *is_new = 1;
    return (uint32_t)in->n;
}

const char *pa_intern_str(const pa_intern_t *in, uint32_t id, size_t *len)
{
    if (id == 0 || id > in->n)
        return NULL;
    if (len)
        *len = in->strs[id - 1].len;
    return in->strs[id - 1].p;
}

void pa_intern_free(pa_intern_t *in)
{
    struct pa_arena_chunk *c = in->chunks;
    while (c) {
        struct pa_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(in->table);
    free(in->strs);
    memset(in, 0, sizeof *in);
}
