/* pa_outplace.c - where output files go: directories, devices, long names, unwritable places,
 * absolute paths (the app may chdir), the spool's name, and claiming a free DB name atomically. */
#include "pa_outname.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pa_log.h"

/* Longest base name we give a DB: NAME_MAX minus room for a "-99999" suffix. */
#define PA_OUTNAME_BASE_MAX (NAME_MAX - 6)

/* Copies s into out[size]; -1 when it does not fit. */
static int copy(char *out, size_t size, const char *s)
{
    size_t n = strlen(s);
    if (n >= size)
        return -1;
    memcpy(out, s, n + 1);
    return 0;
}

int pa_outname_absolute(const char *path, char *out, size_t size)
{
    if (path[0] == '/')
        return copy(out, size, path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return copy(out, size, path); /* cwd unknown (removed): the best we can do */
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    if (!strcmp(path, "."))
        path = "";
    int n = snprintf(out, size, "%s%s%s", cwd, strcmp(cwd, "/") && path[0] ? "/" : "", path);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Splits `path` into its directory (dir[], "." when none) and returns its base name. */
static const char *split(const char *path, char *dir, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, size, ".");
    else
        snprintf(dir, size, "%.*s", (int)(slash == path ? 1 : slash - path), path);
    return slash ? slash + 1 : path;
}

/* 0 when a file can be created in `dir` (tried for real: access() says yes to root on a
 * read-only or special file system such as /sys), else the errno of the attempt. */
static int dir_usable(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return errno;
    if (!S_ISDIR(st.st_mode))
        return ENOTDIR;
    char probe[PATH_MAX];
    if (snprintf(probe, sizeof probe, "%s/.profagent-probe-%ld", dir, (long)getpid()) >= (int)sizeof probe)
        return ENAMETOOLONG;
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    /* ENOENT here is from a directory that exists (stat above) but where no file can be
     * created, e.g. /proc: not writable, not missing */
    if (fd < 0)
        return errno == EEXIST ? 0 : errno == ENOENT ? EACCES : errno;
    close(fd);
    unlink(probe);
    return 0;
}

static const char *dir_problem(int e)
{
    return e == ENOENT ? "does not exist" : e == ENOTDIR ? "is not a directory" : "is not writable";
}

int pa_outname_place(const char *var, const char *value, const char *path, char *out, size_t size)
{
    char dflt[NAME_MAX + 1], dir[PATH_MAX], want[PATH_MAX];
    if (pa_outname_expand(pa_outname_default(), dflt, sizeof dflt) < 0)
        return -1;
    size_t len = strlen(path);
    struct stat st;
    int is_dir = len > 0 && (path[len - 1] == '/' || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)));
    if (!len) {
        snprintf(want, sizeof want, "%s", dflt);
    } else if (is_dir) { /* a directory: the default name inside it */
        if (snprintf(want, sizeof want, "%s%s%s", path, path[len - 1] == '/' ? "" : "/", dflt) >= (int)sizeof want)
            return -1;
    } else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        pa_warn("output", "%s=\"%s\": %s is not a regular file (a device, FIFO or socket cannot hold a DB); "
                "the DB goes to %s in the current directory", var, value, path, dflt);
        snprintf(want, sizeof want, "%s", dflt);
    } else if (copy(want, sizeof want, path) < 0) {
        return -1;
    }
    const char *base = split(want, dir, sizeof dir);
    if (strlen(base) > PA_OUTNAME_BASE_MAX) {
        pa_warn("output", "%s=\"%s\": the file name is %zu bytes long (at most %d); the DB is named %s in %s",
                var, value, strlen(base), PA_OUTNAME_BASE_MAX, dflt, dir);
        char moved[PATH_MAX];
        if (snprintf(moved, sizeof moved, "%s/%s", dir, dflt) >= (int)sizeof moved)
            return -1;
        memcpy(want, moved, strlen(moved) + 1);
        base = split(want, dir, sizeof dir);
    }
    int e = dir_usable(dir);
    if (e) { /* missing or unwritable: the current directory, else /tmp */
        const char *to = dir_usable(".") == 0 ? "." : "/tmp";
        char moved[PATH_MAX];
        if (snprintf(moved, sizeof moved, "%s/%s", to, base) >= (int)sizeof moved)
            return -1;
        char abs[PATH_MAX];
        if (pa_outname_absolute(moved, abs, sizeof abs) < 0)
            return -1;
        pa_warn("output", "%s=\"%s\": directory '%s' %s; the DB goes to %s instead", var, value, dir,
                dir_problem(e), abs);
        return copy(out, size, abs);
    }
    return pa_outname_absolute(want, out, size);
}

int pa_outname_spool(const char *db, const char *spool_dir, long pid, unsigned tag, char *out, size_t size)
{
    char dir[PATH_MAX];
    const char *base = split(db, dir, sizeof dir);
    if (spool_dir && spool_dir[0]) {
        int e = dir_usable(spool_dir);
        if (e)
            pa_warn("output", "PROFAGENT_SPOOL_DIR=\"%s\": the directory %s; the spool goes to the DB's directory %s",
                    spool_dir, dir_problem(e), dir);
        else if (pa_outname_absolute(spool_dir, dir, sizeof dir) < 0)
            return -1;
    }
    char suffix[64];
    int sn = snprintf(suffix, sizeof suffix, ".%ld.%06x.spool.zst", pid, tag & 0xffffffu);
    int keep = (int)strlen(base); /* the DB's base, cut so the spool's name fits NAME_MAX */
    if (keep + sn > NAME_MAX)
        keep = NAME_MAX - sn;
    char joined[PATH_MAX + 64];
    int n = snprintf(joined, sizeof joined, "%s%s%.*s%s", dir, strcmp(dir, "/") ? "/" : "", keep, base, suffix);
    if (n < 0 || (size_t)n >= sizeof joined)
        return -1;
    return pa_outname_absolute(joined, out, size);
}

/* The stem of path (up to its file name's last dot) and, for try i, the candidate name:
 * path itself, then STEM-i.EXT. -1 with errno ENAMETOOLONG when it does not fit. */
static size_t outname_stem(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? (size_t)(dot - path) : strlen(path);
}

static int outname_candidate(const char *path, size_t stem, int i, char *out, size_t size)
{
    int n = i ? snprintf(out, size, "%.*s-%d%s", (int)stem, path, i, path + stem) : snprintf(out, size, "%s", path);
    if (n < 0 || (size_t)n >= size)
        return errno = ENAMETOOLONG, -1;
    return 0;
}

int pa_outname_claim(const char *path, int overwrite, char *out, size_t size)
{
    if (overwrite)
        unlink(path);
    size_t stem = outname_stem(path);
    for (int i = 0; i < 100000; i++) {
        if (outname_candidate(path, stem, i, out, size) < 0)
            return -1;
        int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            close(fd);
            return 0;
        }
        if (errno != EEXIST)
            return -1; /* not a name taken: the directory went away, permissions, ... */
    }
    return errno = EEXIST, -1;
}

int pa_outname_link(const char *from, const char *path, int overwrite, const char *const *sides, char *out,
                    size_t size)
{
    if (overwrite)
        unlink(path);
    size_t stem = outname_stem(path);
    char side[PATH_MAX + 16];
    for (int i = 0; i < 100000; i++) {
        if (outname_candidate(path, stem, i, out, size) < 0)
            return -1;
        if (access(out, F_OK) == 0)
            continue; /* taken (link would say EEXIST too; its side files are someone's) */
        for (const char *const *sd = sides; sd && *sd; sd++)
            if (snprintf(side, sizeof side, "%s%s", out, *sd) < (int)sizeof side)
                unlink(side); /* the name is free: side files beside it belong to no file */
        if (link(from, out) == 0)
            return 0;
        if (errno != EEXIST)
            return -1; /* no hard links here, permissions, the directory went away, ... */
    }
    return errno = EEXIST, -1;
}
