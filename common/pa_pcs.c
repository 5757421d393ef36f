/* pa_pcs.c - IP -> kernel lookup by (device, base) and online per-(kernel, offset, reason) counts. */
#include <stdlib.h>
#include <string.h>

#include "pa_pcs.h"

void pa_pcs_table_init(pa_pcs_table_t *t, uint32_t max_rows)
{
    memset(t, 0, sizeof *t);
    t->max_rows = max_rows ? max_rows : PA_PCS_DEFAULT_MAX_ROWS;
}

void pa_pcs_table_free(pa_pcs_table_t *t)
{
    for (uint32_t i = 0; i < t->nkernels; i++) {
        pa_pcs_kinfo_t *k = &t->kernels[i];
        free(k->name);
        for (uint32_t f = 0; f < k->nfiles; f++)
            free(k->files[f]);
        free(k->files);
        free(k->lines);
    }
    free(t->kernels);
    free(t->order);
    free(t->keys);
    free(t->vals);
    free(t->rows);
    free(t->ukeys);
    memset(t, 0, sizeof *t);
}

static int kless(const pa_pcs_kinfo_t *a, const pa_pcs_kinfo_t *b)
{
    return a->device != b->device ? a->device < b->device : a->base < b->base;
}

/* Recomputes `end` of the kernels around position p of the order (the caps by the next base). */
static void fix_ends(pa_pcs_table_t *t)
{
    for (uint32_t p = 0; p < t->nkernels; p++) {
        pa_pcs_kinfo_t *k = &t->kernels[t->order[p]];
        uint64_t end = (uint64_t)k->base + k->size;
        for (uint32_t q = p + 1; q < t->nkernels; q++) {
            pa_pcs_kinfo_t *n = &t->kernels[t->order[q]];
            if (n->device != k->device)
                break;
            if (n->base > k->base) {
                if (end > n->base)
                    end = n->base;
                break;
            }
        }
        k->end = end > UINT32_MAX ? UINT32_MAX : (uint32_t)end;
    }
}

long pa_pcs_table_add_kernel(pa_pcs_table_t *t, const pa_pcs_kernel_t *k, const char *name,
                             const char *const *files, const pa_pcs_line_t *lines)
{
    if (t->nkernels == t->kcap) {
        uint32_t cap = t->kcap ? t->kcap * 2 : 16;
        pa_pcs_kinfo_t *nk = realloc(t->kernels, cap * sizeof *nk);
        if (!nk)
            return -1;
        t->kernels = nk;
        uint32_t *no = realloc(t->order, cap * sizeof *no);
        if (!no)
            return -1;
        t->order = no;
        t->kcap = cap;
    }
    pa_pcs_kinfo_t *e = &t->kernels[t->nkernels];
    memset(e, 0, sizeof *e);
    e->id = k->id;
    e->device = k->device;
    e->base = k->base;
    e->size = k->size;
    e->name = malloc((size_t)k->name_len + 1);
    if (!e->name)
        return -1;
    memcpy(e->name, name, k->name_len);
    e->name[k->name_len] = '\0';
    if (k->nfiles) {
        e->files = calloc(k->nfiles, sizeof *e->files);
        for (uint32_t f = 0; e->files && f < k->nfiles; f++)
            e->files[f] = strdup(files[f] ? files[f] : "");
        e->nfiles = e->files ? k->nfiles : 0;
    }
    if (k->nlines && e->nfiles) {
        e->lines = malloc(k->nlines * sizeof *e->lines);
        if (e->lines) {
            uint32_t n = 0;
            for (uint32_t i = 0; i < k->nlines; i++)
                if (lines[i].file < e->nfiles)
                    e->lines[n++] = lines[i];
            e->nlines = n;
        }
    }
    /* insertion into the (device, base) order; a kernel at an existing base goes after the
     * older one, and lookup takes the newest of equal bases */
    uint32_t idx = t->nkernels++, p = idx;
    while (p > 0 && kless(e, &t->kernels[t->order[p - 1]])) {
        t->order[p] = t->order[p - 1];
        p--;
    }
    t->order[p] = idx;
    if (p > 0) { /* an older kernel at the same base of the same device is shadowed from now on */
        pa_pcs_kinfo_t *prev = &t->kernels[t->order[p - 1]];
        if (prev->device == e->device && prev->base == e->base)
            prev->shadowed = 1;
    }
    fix_ends(t);
    return (long)idx;
}

long pa_pcs_table_add_kernel_payload(pa_pcs_table_t *t, const uint8_t *payload, size_t len)
{
    pa_pcs_kernel_t k;
    if (len < sizeof k)
        return -1;
    memcpy(&k, payload, sizeof k);
    size_t off = sizeof k;
    if (k.name_len > len - off)
        return -1;
    const char *name = (const char *)payload + off;
    off += k.name_len;
    const char *files[64];
    uint32_t nf = 0;
    for (; nf < k.nfiles && nf < 64; nf++) {
        const char *s = (const char *)payload + off;
        size_t l = strnlen(s, len - off);
        if (l == len - off)
            break;
        files[nf] = s;
        off += l + 1;
    }
    pa_pcs_kernel_t kk = k;
    kk.nfiles = nf;
    kk.nlines = 0;
    pa_pcs_line_t *lines = NULL;
    if (nf == k.nfiles && k.nlines) {
        size_t avail = (len - off) / sizeof(pa_pcs_line_t);
        kk.nlines = (uint32_t)(avail < k.nlines ? avail : k.nlines);
        lines = malloc((size_t)kk.nlines * sizeof *lines + 1);
        if (lines)
            memcpy(lines, payload + off, (size_t)kk.nlines * sizeof *lines);
        else
            kk.nlines = 0;
    }
    long r = pa_pcs_table_add_kernel(t, &kk, name, files, lines);
    free(lines);
    return r;
}

size_t pa_pcs_kernel_payload(const pa_pcs_kernel_t *k, const char *name, const char *const *files,
                             const pa_pcs_line_t *lines, uint8_t *buf, size_t cap)
{
    size_t need = sizeof *k + k->name_len;
    for (uint32_t f = 0; f < k->nfiles; f++)
        need += strlen(files[f]) + 1;
    need += (size_t)k->nlines * sizeof *lines;
    if (!buf || cap < need)
        return need;
    size_t off = 0;
    memcpy(buf, k, sizeof *k);
    off += sizeof *k;
    memcpy(buf + off, name, k->name_len);
    off += k->name_len;
    for (uint32_t f = 0; f < k->nfiles; f++) {
        size_t l = strlen(files[f]) + 1;
        memcpy(buf + off, files[f], l);
        off += l;
    }
    if (k->nlines)
        memcpy(buf + off, lines, (size_t)k->nlines * sizeof *lines);
    return need;
}

long pa_pcs_table_lookup(const pa_pcs_table_t *t, uint32_t device, uint32_t ip)
{
    /* last kernel in order with (device, base) <= (device, ip) */
    uint32_t lo = 0, hi = t->nkernels;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const pa_pcs_kinfo_t *k = &t->kernels[t->order[mid]];
        if (k->device < device || (k->device == device && k->base <= ip))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    uint32_t ki = t->order[lo - 1];
    const pa_pcs_kinfo_t *k = &t->kernels[ki];
    if (k->device != device || ip < k->base || ip >= k->end)
        return -1;
    /* equal bases: the insertion order put the newest last, which is order[lo-1] */
    return (long)ki;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static int map_grow(pa_pcs_table_t *t)
{
    uint32_t cap = t->map_cap ? t->map_cap * 2 : 1024;
    uint64_t *k = calloc(cap, sizeof *k);
    uint32_t *v = calloc(cap, sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    for (uint32_t i = 0; i < t->map_cap; i++) {
        if (!t->keys[i])
            continue;
        uint32_t j = (uint32_t)mix(t->keys[i]) & (cap - 1);
        while (k[j])
            j = (j + 1) & (cap - 1);
        k[j] = t->keys[i];
        v[j] = t->vals[i];
    }
    free(t->keys);
    free(t->vals);
    t->keys = k;
    t->vals = v;
    t->map_cap = cap;
    return 0;
}

/* Row of (kernel, offset), created on first use; NULL when the row budget ran out or no memory. */
static pa_pcs_row_t *row_of(pa_pcs_table_t *t, uint32_t kernel, uint32_t offset)
{
    uint64_t key = ((uint64_t)kernel + 1) << 32 | offset;
    if (t->map_cap) {
        uint32_t j = (uint32_t)mix(key) & (t->map_cap - 1);
        while (t->keys[j]) {
            if (t->keys[j] == key)
                return &t->rows[t->vals[j] - 1];
            j = (j + 1) & (t->map_cap - 1);
        }
    }
    if (t->nrows >= t->max_rows)
        return NULL;
    if ((t->map_n + 1) * 2 > t->map_cap && map_grow(t) != 0)
        return NULL;
    if (t->nrows == t->rows_cap) {
        uint32_t cap = t->rows_cap ? t->rows_cap * 2 : 256;
        if (cap > t->max_rows)
            cap = t->max_rows;
        pa_pcs_row_t *r = realloc(t->rows, cap * sizeof *r);
        if (!r)
            return NULL;
        t->rows = r;
        t->rows_cap = cap;
    }
    uint32_t j = (uint32_t)mix(key) & (t->map_cap - 1);
    while (t->keys[j])
        j = (j + 1) & (t->map_cap - 1);
    t->keys[j] = key;
    t->vals[j] = t->nrows + 1;
    t->map_n++;
    pa_pcs_row_t *r = &t->rows[t->nrows++];
    memset(r, 0, sizeof *r);
    r->kernel = kernel;
    r->offset = offset;
    return r;
}

/* Distinct unmapped IPs, for _total_pc_count; capped at 64 Ki (beyond: not counted as new). */
static void unmapped_ip(pa_pcs_table_t *t, uint32_t device, uint32_t ip)
{
    uint64_t key = ((uint64_t)device << 32 | ip) + 1;
    if ((t->un + 1) * 2 > t->ucap) {
        if (t->ucap >= 131072)
            return;
        uint32_t cap = t->ucap ? t->ucap * 2 : 256;
        uint64_t *k = calloc(cap, sizeof *k);
        if (!k)
            return;
        for (uint32_t i = 0; i < t->ucap; i++)
            if (t->ukeys[i]) {
                uint32_t j = (uint32_t)mix(t->ukeys[i]) & (cap - 1);
                while (k[j])
                    j = (j + 1) & (cap - 1);
                k[j] = t->ukeys[i];
            }
        free(t->ukeys);
        t->ukeys = k;
        t->ucap = cap;
    }
    uint32_t j = (uint32_t)mix(key) & (t->ucap - 1);
    while (t->ukeys[j]) {
        if (t->ukeys[j] == key)
            return;
        j = (j + 1) & (t->ucap - 1);
    }
    t->ukeys[j] = key;
    t->un++;
    t->dev[device].pcs++;
}

/* 1 when a kernel added after `k` shares its base (memory reused): the lookup must choose. */
static int newer_at(const pa_pcs_table_t *t, long k)
{
    return t->kernels[k].shadowed;
}

void pa_pcs_table_add_samples(pa_pcs_table_t *t, uint32_t device, uint32_t nreasons, const uint32_t *entries,
                              size_t n)
{
    if (device >= PA_PCS_MAX_DEVICES || nreasons == 0 || nreasons > PA_PCS_MAX_REASONS)
        return;
    if (nreasons > t->nreasons[device])
        t->nreasons[device] = nreasons;
    pa_pcs_devstat_t *ds = &t->dev[device];
    long last_k = -2;
    uint32_t last_ip = 0;
    for (size_t i = 0; i < n; i++) {
        const uint32_t *e = entries + i * (1 + nreasons);
        uint32_t ip = e[0];
        uint64_t sum = 0;
        for (uint32_t r = 0; r < nreasons; r++)
            sum += e[1 + r];
        ds->samples += sum;
        /* a read's entries come in ascending IP order (one per unique IP): consecutive entries
         * mostly fall in the same kernel, whose range is checked before a search */
        long k;
        if (last_k >= 0 && ip >= t->kernels[last_k].base && ip < t->kernels[last_k].end && !newer_at(t, last_k))
            k = last_k;
        else if (last_k == -1 && ip == last_ip)
            k = -1;
        else
            k = pa_pcs_table_lookup(t, device, ip);
        last_k = k;
        last_ip = ip;
        if (k < 0) {
            ds->unmapped += sum;
            unmapped_ip(t, device, ip);
            continue;
        }
        pa_pcs_kinfo_t *ki = &t->kernels[k];
        uint32_t before = t->nrows;
        pa_pcs_row_t *row = row_of(t, (uint32_t)k, ip - ki->base);
        if (!row) {
            ds->overflow += sum;
            continue;
        }
        if (t->nrows != before)
            ds->pcs++;
        for (uint32_t r = 0; r < nreasons; r++)
            row->counts[r] += e[1 + r];
        ki->samples += sum;
    }
}

uint32_t pa_pcs_kernel_line(const pa_pcs_kinfo_t *k, uint32_t offset, const char **file)
{
    *file = NULL;
    uint32_t lo = 0, hi = k->nlines;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (k->lines[mid].offset <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    const pa_pcs_line_t *l = &k->lines[lo - 1];
    if (!l->line) /* the instruction has no source (DWARF line 0) */
        return 0;
    *file = k->files[l->file];
    return l->line;
}
