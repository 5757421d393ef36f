/* pa_outname.h - output file names: placeholder expansion and never-overwrite suffixes. */
#ifndef PA_OUTNAME_H
#define PA_OUTNAME_H

#include <stddef.h>

#define PA_OUTNAME_DEFAULT "profagent-%h-%p.db"

/*! pa_outname_expand() : expands `tmpl` into out[size]: %p -> pid, %h -> hostname,
 *  %q{VAR} -> value of environment variable VAR (unset: empty, one warning), %% -> %.
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

#endif
