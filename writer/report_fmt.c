/* report_fmt.c - the report table model and its formatters: csv (spec style), table, json. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "writer_internal.h"
#include "../common/pa_stddev.h"

/* ---- table building ---- */

static pa_cell_t *pa_table_next(pa_table_t *t)
{
    if (t->oom)
        return NULL;
    if (t->ncells == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        pa_cell_t *nc = realloc(t->cells, cap * sizeof *nc);
        if (!nc) {
            t->oom = 1;
            return NULL;
        }
        t->cells = nc;
        t->cap = cap;
    }
    pa_cell_t *c = &t->cells[t->ncells++];
    memset(c, 0, sizeof *c);
    return c;
}

/* After each cell: a streaming table hands its complete row to the sink and starts over. */
static void pa_table_done(pa_table_t *t)
{
    if (!t->sink || t->oom || t->ncells < (size_t)t->ncols)
        return;
    if (!t->sink_stop && t->sink(t, t->sink_arg))
        t->sink_stop = 1;
    t->sunk++;
    t->ncells = 0;
    t->arena_len = 0;
}

void pa_table_add_int(pa_table_t *t, int64_t v)
{
    pa_cell_t *c = pa_table_next(t);
    if (c) {
        c->type = PA_CELL_INT;
        c->i = v;
    }
    pa_table_done(t);
}

void pa_table_add_double(pa_table_t *t, double v, int prec)
{
    if (prec == 0 && isfinite(v)) { /* an integer statistic: the spec's truncation, one rule */
        pa_table_add_int(t, pa_stat_trunc(v));
        return;
    }
    pa_cell_t *c = pa_table_next(t);
    if (c) {
        c->type = PA_CELL_DOUBLE;
        c->d = v;
        c->prec = prec;
    }
    pa_table_done(t);
}

void pa_table_add_none(pa_table_t *t)
{
    pa_table_next(t);
    pa_table_done(t);
}

void pa_table_add_str(pa_table_t *t, const void *s, size_t len)
{
    if (t->oom)
        return;
    if (t->arena_len + len > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap : 4096;
        while (cap < t->arena_len + len)
            cap *= 2;
        char *na = realloc(t->arena, cap);
        if (!na) {
            t->oom = 1;
            return;
        }
        t->arena = na;
        t->arena_cap = cap;
    }
    pa_cell_t *c = pa_table_next(t);
    if (!c)
        return;
    c->type = PA_CELL_STR;
    c->off = t->arena_len;
    c->len = len;
    if (len)
        memcpy(t->arena + t->arena_len, s, len);
    t->arena_len += len;
    pa_table_done(t);
}

size_t pa_table_nrows(const pa_table_t *t)
{
    return t->sunk + (t->ncols ? t->ncells / (size_t)t->ncols : 0);
}

void pa_table_free(pa_table_t *t)
{
    free(t->cells);
    free(t->arena);
    t->cells = NULL;
    t->arena = NULL;
    t->ncells = t->cap = t->arena_len = t->arena_cap = 0;
}

int pa_format_double(char *buf, size_t sz, double v, int prec)
{
    if (!isfinite(v))
        return snprintf(buf, sz, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    int n = snprintf(buf, sz, "%.*f", prec, v);
    /* "-0" / "-0.0" from a tiny negative rounding: print the zero unsigned */
    if (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1))
        n = snprintf(buf, sz, "%.*f", prec, 0.0);
    return n;
}

/* --timeunit: decimal digits time columns are shifted by while one table is written (0: ns) */
static int pa_unit_shift;

/* Moves the decimal point of the number text in buf `shift` digits left ("1500" -> "1.500",
 * "-2.5" -> "-0.0025" for 3): exact, whatever the magnitude; "nan"/"inf" are left alone. */
static void pa_shift_point(char *buf, size_t sz, int shift)
{
    char digits[96], out[128];
    size_t nd = 0, nint = 0, o = 0;
    const char *p = buf;
    int neg = *p == '-';
    if (shift <= 0 || (neg ? p[1] : p[0]) < '0' || (neg ? p[1] : p[0]) > '9')
        return;
    for (p += neg; *p && nd + 1 < sizeof digits; p++) {
        if (*p == '.')
            continue;
        digits[nd++] = *p;
        nint += strchr(p, '.') != NULL || !strchr(buf, '.');
    }
    /* nint counted the digits before the point (all of them when there is none) */
    size_t pad = (size_t)shift >= nint ? (size_t)shift - nint + 1 : 0;
    size_t point = nint + pad - (size_t)shift;
    if (neg)
        out[o++] = '-';
    for (size_t i = 0; i < pad + nd && o + 2 < sizeof out; i++) {
        if (i == point)
            out[o++] = '.';
        out[o++] = i < pad ? '0' : digits[i - pad];
    }
    out[o] = '\0';
    snprintf(buf, sz, "%s", out);
}

/* 1 when column c of t holds times in ns (its title says "(ns)"). */
static int pa_is_time_col(const pa_table_t *t, int c)
{
    return c >= 0 && c < t->ncols && strstr(t->titles[c], "(ns)") != NULL;
}

/* Title of column c with "(ns)" replaced by the --timeunit unit. */
static const char *pa_col_title(const pa_table_t *t, int c, char *buf, size_t sz)
{
    static const char *const units[10] = {"ns", "", "", "us", "", "", "ms", "", "", "s"};
    const char *ti = t->titles[c], *at = strstr(ti, "(ns)");
    if (!pa_unit_shift || !at)
        return ti;
    snprintf(buf, sz, "%.*s(%s)%s", (int)(at - ti), ti, units[pa_unit_shift], at + 4);
    return buf;
}

/* Formats a numeric cell of column `col` into buf (empty for strings). */
static void pa_cell_num_col(const pa_table_t *t, int col, const pa_cell_t *c, char *buf, size_t sz)
{
    if (c->type == PA_CELL_INT)
        snprintf(buf, sz, "%lld", (long long)c->i);
    else if (c->type == PA_CELL_DOUBLE)
        pa_format_double(buf, sz, c->d, c->prec);
    else
        buf[0] = '\0';
    if (pa_unit_shift && c->type != PA_CELL_STR && c->type != PA_CELL_NONE && pa_is_time_col(t, col))
        pa_shift_point(buf, sz, pa_unit_shift);
}

/* ---- csv: header "Row#,A,B," and rows "1,x,"y"," with the spec's trailing comma; strings
 * and "-" double-quoted, '"' doubled, every other byte (newline, 0xFF, NUL) kept as is ---- */

static void pa_csv_str(FILE *out, const char *s, size_t len)
{
    fputc('"', out);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"')
            fputc('"', out);
        fputc(s[i], out);
    }
    fputc('"', out);
}

static void pa_csv_head(const pa_table_t *t, FILE *out)
{
    char tb[256];
    fputs("Row#,", out);
    for (int c = 0; c < t->ncols; c++)
        fprintf(out, "%s,", pa_col_title(t, c, tb, sizeof tb));
    fputc('\n', out);
}

static void pa_csv_row(const pa_table_t *t, const pa_cell_t *row, size_t num, FILE *out)
{
    char num_s[64];
    fprintf(out, "%zu,", num);
    for (int c = 0; c < t->ncols; c++) {
        const pa_cell_t *cell = &row[c];
        if (cell->type == PA_CELL_STR)
            pa_csv_str(out, t->arena + cell->off, cell->len);
        else if (cell->type == PA_CELL_NONE)
            fputs("\"-\"", out);
        else {
            pa_cell_num_col(t, c, cell, num_s, sizeof num_s);
            fputs(num_s, out);
        }
        fputc(',', out);
    }
    fputc('\n', out);
}

/* ---- table: aligned columns; numbers right-aligned, strings left; control bytes and bytes
 * >= 0x80 shown as \xNN so alignment holds ---- */

static size_t pa_tbl_escape(const char *s, size_t len, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch >= 0x7f) {
            if (out)
                sprintf(out + n, "\\x%02x", ch);
            n += 4;
        } else {
            if (out)
                out[n] = (char)ch;
            n++;
        }
    }
    if (out)
        out[n] = '\0';
    return n;
}

static size_t pa_tbl_width(const pa_table_t *t, int col, const pa_cell_t *cell)
{
    char num[64];
    if (cell->type == PA_CELL_STR)
        return pa_tbl_escape(t->arena + cell->off, cell->len, NULL);
    if (cell->type == PA_CELL_NONE)
        return 1;
    pa_cell_num_col(t, col, cell, num, sizeof num);
    return strlen(num);
}

static int pa_out_shift(const pa_table_out_t *o)
{
    return o->shift == 3 || o->shift == 6 || o->shift == 9 ? o->shift : 0;
}

void pa_table_out_widen(const pa_table_t *t, const pa_table_out_t *o, const pa_cell_t *row, size_t num)
{
    char tb[256], num_s[64];
    size_t *w = o->w;
    pa_unit_shift = pa_out_shift(o);
    if (!row) {
        w[0] = strlen("Row#");
        for (int c = 0; c < t->ncols; c++)
            w[c + 1] = strlen(pa_col_title(t, c, tb, sizeof tb));
        pa_unit_shift = 0;
        return;
    }
    snprintf(num_s, sizeof num_s, "%zu", num);
    if (strlen(num_s) > w[0])
        w[0] = strlen(num_s);
    for (int c = 0; c < t->ncols; c++) {
        size_t cw = pa_tbl_width(t, c, &row[c]);
        if (cw > w[c + 1])
            w[c + 1] = cw;
    }
    pa_unit_shift = 0;
}

static void pa_tbl_head(const pa_table_t *t, const size_t *w, FILE *out)
{
    size_t ncols = (size_t)t->ncols + 1;
    char tb[256];
    fprintf(out, "%*s", (int)w[0], "Row#");
    for (size_t c = 1; c < ncols; c++)
        fprintf(out, "  %-*s", c + 1 < ncols ? (int)w[c] : 0, pa_col_title(t, (int)c - 1, tb, sizeof tb));
    fputc('\n', out);
    for (size_t c = 0; c < ncols; c++) {
        fputs(c ? "  " : "", out);
        for (size_t k = 0; k < w[c]; k++)
            fputc('-', out);
    }
    fputc('\n', out);
}

static void pa_tbl_row(const pa_table_t *t, const size_t *w, const pa_cell_t *row, size_t num, FILE *out)
{
    size_t ncols = (size_t)t->ncols + 1;
    char num_s[64];
    fprintf(out, "%*zu", (int)w[0], num);
    for (size_t c = 1; c < ncols; c++) {
        const pa_cell_t *cell = &row[c - 1];
        if (cell->type == PA_CELL_STR) {
            char *buf = malloc(cell->len * 4 + 1);
            if (!buf)
                break;
            pa_tbl_escape(t->arena + cell->off, cell->len, buf);
            fprintf(out, "  %-*s", c + 1 < ncols ? (int)w[c] : 0, buf);
            free(buf);
        } else {
            if (cell->type == PA_CELL_NONE)
                snprintf(num_s, sizeof num_s, "-");
            else
                pa_cell_num_col(t, (int)c - 1, cell, num_s, sizeof num_s);
            fprintf(out, "  %*s", (int)w[c], num_s);
        }
    }
    fputc('\n', out);
}

/* ---- json: an array of objects keyed by column title; "-" cells are null; strings escaped:
 * '"', '\\', control bytes as \u00XX, bytes that are not valid UTF-8 as \u00XX (their
 * Latin-1 reading), valid UTF-8 kept ---- */

/* Length of a valid UTF-8 sequence at s (1..4), 0 when invalid. */
static size_t pa_utf8_len(const unsigned char *s, size_t n)
{
    size_t len;
    uint32_t cp;
    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xe0) == 0xc0) { len = 2; cp = s[0] & 0x1f; }
    else if ((s[0] & 0xf0) == 0xe0) { len = 3; cp = s[0] & 0x0f; }
    else if ((s[0] & 0xf8) == 0xf0) { len = 4; cp = s[0] & 0x07; }
    else return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

static void pa_json_str(FILE *out, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', out);
    for (size_t i = 0; i < len;) {
        unsigned char ch = s[i];
        size_t ul = pa_utf8_len(s + i, len - i);
        if (ch == '"' || ch == '\\') {
            fputc('\\', out);
            fputc(ch, out);
            i++;
        } else if (ch < 0x20 || ch == 0x7f || ul == 0) {
            fprintf(out, "\\u%04x", ch);
            i++;
        } else {
            fwrite(s + i, 1, ul, out);
            i += ul;
        }
    }
    fputc('"', out);
}

static void pa_json_row(const pa_table_t *t, const pa_cell_t *row, size_t num, FILE *out)
{
    char num_s[64];
    fprintf(out, "%s\n  {\"Row#\": %zu", num > 1 ? "," : "", num);
    for (int c = 0; c < t->ncols; c++) {
        const pa_cell_t *cell = &row[c];
        char tb[256];
        const char *ti = pa_col_title(t, c, tb, sizeof tb);
        fputs(", ", out);
        pa_json_str(out, ti, strlen(ti));
        fputs(": ", out);
        if (cell->type == PA_CELL_STR)
            pa_json_str(out, t->arena + cell->off, cell->len);
        else if (cell->type == PA_CELL_NONE || (cell->type == PA_CELL_DOUBLE && !isfinite(cell->d)))
            fputs("null", out);
        else {
            pa_cell_num_col(t, c, cell, num_s, sizeof num_s);
            fputs(num_s, out);
        }
    }
    fputs("}", out);
}

/* ---- tsv: header "Row#<TAB>A<TAB>B", no quoting; in strings a backslash, tab, newline and
 * carriage return are written \\, \t, \n, \r so every row stays one line of fields ---- */

static void pa_tsv_str(FILE *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (ch == '\\' || ch == '\t' || ch == '\n' || ch == '\r') {
            fputc('\\', out);
            fputc(ch == '\\' ? '\\' : ch == '\t' ? 't' : ch == '\n' ? 'n' : 'r', out);
        } else
            fputc(ch, out);
    }
}

static void pa_tsv_head(const pa_table_t *t, FILE *out)
{
    char tb[256];
    fputs("Row#", out);
    for (int c = 0; c < t->ncols; c++)
        fprintf(out, "\t%s", pa_col_title(t, c, tb, sizeof tb));
    fputc('\n', out);
}

static void pa_tsv_row(const pa_table_t *t, const pa_cell_t *row, size_t num, FILE *out)
{
    char num_s[64];
    fprintf(out, "%zu", num);
    for (int c = 0; c < t->ncols; c++) {
        const pa_cell_t *cell = &row[c];
        fputc('\t', out);
        if (cell->type == PA_CELL_STR)
            pa_tsv_str(out, t->arena + cell->off, cell->len);
        else if (cell->type == PA_CELL_NONE)
            fputc('-', out);
        else {
            pa_cell_num_col(t, c, cell, num_s, sizeof num_s);
            fputs(num_s, out);
        }
    }
    fputc('\n', out);
}

/* ---- one interface over the formats, for whole tables and streamed rows ---- */

void pa_table_out_head(const pa_table_t *t, const pa_table_out_t *o)
{
    pa_unit_shift = pa_out_shift(o);
    if (o->fmt == PA_FMT_TSV)
        pa_tsv_head(t, o->out);
    else if (o->fmt == PA_FMT_TABLE)
        pa_tbl_head(t, o->w, o->out);
    else if (o->fmt == PA_FMT_JSON)
        fputs("[", o->out);
    else
        pa_csv_head(t, o->out);
    pa_unit_shift = 0;
}

void pa_table_out_row(const pa_table_t *t, const pa_table_out_t *o, const pa_cell_t *row, size_t num)
{
    pa_unit_shift = pa_out_shift(o);
    if (o->fmt == PA_FMT_TSV)
        pa_tsv_row(t, row, num, o->out);
    else if (o->fmt == PA_FMT_TABLE)
        pa_tbl_row(t, o->w, row, num, o->out);
    else if (o->fmt == PA_FMT_JSON)
        pa_json_row(t, row, num, o->out);
    else
        pa_csv_row(t, row, num, o->out);
    pa_unit_shift = 0;
}

void pa_table_out_end(const pa_table_t *t, const pa_table_out_t *o, size_t nrows)
{
    (void)t;
    if (o->fmt == PA_FMT_JSON)
        fputs(nrows ? "\n]\n" : "]\n", o->out);
}

void pa_table_write_unit(const pa_table_t *t, int fmt, int shift, FILE *out)
{
    size_t nrows = pa_table_nrows(t), ncols = (size_t)t->ncols;
    pa_table_out_t o = {fmt, shift, NULL, out};
    if (fmt == PA_FMT_TABLE) {
        if (!(o.w = calloc(ncols + 1, sizeof *o.w)))
            return;
        pa_table_out_widen(t, &o, NULL, 0);
        for (size_t r = 0; r < nrows; r++)
            pa_table_out_widen(t, &o, &t->cells[r * ncols], r + 1);
    }
    pa_table_out_head(t, &o);
    for (size_t r = 0; r < nrows; r++)
        pa_table_out_row(t, &o, &t->cells[r * ncols], r + 1);
    pa_table_out_end(t, &o, nrows);
    free(o.w);
}

void pa_table_write(const pa_table_t *t, int fmt, FILE *out)
{
    pa_table_write_unit(t, fmt, 0, out);
}
