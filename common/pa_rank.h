/* pa_rank.h - the process's rank in a parallel job, from the environment its launcher sets. */
#ifndef PA_RANK_H
#define PA_RANK_H

#define PA_RANK_MAX 2147483647L /* MPI ranks are C ints */

/* One launcher variable; pa_rank_vars[] lists them in precedence order (README "Ranks"). */
typedef struct pa_rank_var {
    const char *var;      /* the environment variable holding the rank */
    const char *launcher; /* who sets it */
    const char *needs;    /* NULL, or a variable that must be set too (RANK counts only with WORLD_SIZE) */
} pa_rank_var_t;

extern const pa_rank_var_t pa_rank_vars[]; /* terminated by {NULL} */

typedef struct pa_rank_info {
    long rank;            /* >= 0, or -1 when no launcher variable holds a valid rank */
    const char *var;      /* the variable it came from (an entry of pa_rank_vars), NULL when none */
    const char *launcher;
} pa_rank_info_t;

/*! pa_rank_detect() : the first variable of pa_rank_vars[] (precedence order) that `get` returns
 *  (getenv-like, non-NULL when set) with a valid rank: decimal digits only, 0..PA_RANK_MAX. Each
 *  variable set to anything else (empty, not a number, negative, too large) is skipped with one
 *  call of `warn` (may be NULL) naming it, its value and what is accepted. Returns out->rank. */
long pa_rank_detect(const char *(*get)(const char *name), void (*warn)(const char *msg, void *ctx), void *ctx,
                    pa_rank_info_t *out);

/*! pa_rank_self() : pa_rank_detect() on this process's environment, done once (the first call
 *  logs the warnings); later calls return the same answer. */
const pa_rank_info_t *pa_rank_self(void);

#endif
