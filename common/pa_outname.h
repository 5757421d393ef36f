/* pa_outname.h - output file names: placeholder expansion, never-overwrite suffixes, placement. */
#ifndef PA_OUTNAME_H
#define PA_OUTNAME_H

#include <stddef.h>

#define PA_OUTNAME_DEFAULT "profagent-%h-%p.db"
#define PA_OUTNAME_DEFAULT_RANK "profagent-%h-rank%r-%p.db" /* the default inside a parallel job */

/*! pa_outname_default() : the default template: PA_OUTNAME_DEFAULT_RANK when the process has a
 *  rank (pa_rank_self()), else PA_OUTNAME_DEFAULT. */
const char *pa_outname_default(void);

/*! pa_outname_expand() : expands `tmpl` into out[size]: %p -> pid, %h -> hostname,
 *  %r -> the rank (pa_rank.h; none: one warning, and nothing with a '-', '_' or '.' right
 *  before it dropped too, "out-%r.db" -> "out.db"; "norank" at the start of a file name,
 *  "%r.db" -> "norank.db", never a hidden ".db"), %q{VAR} -> value of environment
 *  variable VAR (unset: empty, one warning), %% -> %.
 *  An unknown placeholder or an unclosed %q{ is kept literally with a warning.
 *  Returns 0, or -1 when the result does not fit (out then holds a truncated string). */
int pa_outname_expand(const char *tmpl, char *out, size_t size);

/*! pa_outname_unique() : `path` itself when no file of that name exists, else the first free
 *  name among "<stem>-1<ext>", "<stem>-2<ext>", ... where <ext> is the last ".xxx" of the
 *  base name (a leading dot is not an extension). Returns 0, or -1 when it does not fit or
 *  no free name was found below 100000. */
int pa_outname_unique(const char *path, char *out, size_t size);

/*! pa_outname_resolve() : expand, then pa_outname_unique() unless `overwrite`. 0 or -1. */
int pa_outname_resolve(const char *tmpl, int overwrite, char *out, size_t size);

/* ---- placement (pa_outplace.c) ---- */

/*! pa_outname_absolute() : `path` made absolute against the current directory (leading "./"
 *  dropped), so a later chdir() of the application does not move our files. 0, or -1 when
 *  it does not fit out[size]. */
int pa_outname_absolute(const char *path, char *out, size_t size);

/*! pa_outname_place() : the absolute DB path for the expanded template `path` (`var`="value"
 *  is what the user set, named in warnings). A directory (existing, or `path` ends in '/')
 *  gets the default name (PA_OUTNAME_DEFAULT expanded) inside it. Each of these gets one
 *  warning: an existing file that is not a regular file (device, FIFO, socket) is refused and
 *  the default name in the current directory used; a base name longer than NAME_MAX - 6
 *  (room for a "-N" suffix) becomes the default name in the same directory; a directory that
 *  is missing or where no file can be created (tried for real) moves the DB to the current
 *  directory, or /tmp when that fails too. Returns 0, or -1 when no path fits out[size]. */
int pa_outname_place(const char *var, const char *value, const char *path, char *out, size_t size);

/*! pa_outname_spool() : the absolute spool path for the DB `db`:
 *  "<dir>/<DB base>.<pid>.<tag>.spool.zst", <dir> = `spool_dir` when non-empty and usable,
 *  else the DB's directory (an unusable spool_dir: one warning naming PROFAGENT_SPOOL_DIR).
 *  The DB base is cut so the spool's file name fits NAME_MAX. 0, or -1 when it does not fit. */
int pa_outname_spool(const char *db, const char *spool_dir, long pid, unsigned tag, char *out, size_t size);

/*! pa_outname_claim() : creates, with O_EXCL, the first free name among `path`,
 *  "<stem>-1<ext>", "<stem>-2<ext>", ... (suffixes as pa_outname_unique()) and returns it in
 *  out[size]: the empty file belongs to the caller, so processes racing for one template
 *  each get their own name. `overwrite`: `path` is unlinked first. Returns 0, or -1 with
 *  errno (ENAMETOOLONG; EEXIST when 100000 names are taken; the open's errno otherwise). */
int pa_outname_claim(const char *path, int overwrite, char *out, size_t size);
/*! pa_outname_link() : like pa_outname_claim(), but the first free name becomes a hard link to
 *  the existing file `from` in one step (link(2) fails on a taken name): nobody, not even a
 *  process killed meanwhile, ever leaves the name claimed without the content. Before a free
 *  name is tried, the files named like it plus each suffix of `sides` (NULL-terminated; e.g. a
 *  removed DB's "-wal") are removed. Returns 0, or -1 with errno (EEXIST when 100000 names are
 *  taken; ENAMETOOLONG; link(2)'s: EPERM/ENOTSUP/EOPNOTSUPP/EMLINK where the file system has
 *  no hard links, then pa_outname_claim() and rename(2) remain). */
int pa_outname_link(const char *from, const char *path, int overwrite, const char *const *sides, char *out,
                    size_t size);

#endif
