/* pa_rank.c - rank detection: one table of launcher variables in precedence order. */
#include "pa_rank.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "pa_log.h"

/* Precedence: our own override, then the MPI libraries' launchers (they set the MPI rank
 * itself), then the resource managers. A resource manager's variable describes its own task,
 * which is not the MPI rank when an MPI launcher runs inside it (mpirun in a Slurm allocation:
 * every rank inherits mpirun's SLURM_PROCID), so it comes last. RANK (torchrun, torch
 * distributed) is a generic name: it counts only next to WORLD_SIZE. */
const pa_rank_var_t pa_rank_vars[] = {
    {"PROFAGENT_RANK", "profagent, set by hand or by a wrapper script", NULL},
    {"OMPI_COMM_WORLD_RANK", "Open MPI (mpirun, prterun)", NULL},
    {"PMIX_RANK", "PMIx (Open MPI 5, PRRTE, srun --mpi=pmix)", NULL},
    {"PMI_RANK", "MPICH / Intel MPI / MVAPICH (Hydra mpiexec), srun --mpi=pmi2", NULL},
    {"MV2_COMM_WORLD_RANK", "MVAPICH2 (mpirun_rsh)", NULL},
    {"PALS_RANKID", "HPE Cray PALS (mpiexec)", NULL},
    {"ALPS_APP_PE", "Cray ALPS (aprun)", NULL},
    {"FLUX_TASK_RANK", "Flux (flux run)", NULL},
    {"JSM_NAMESPACE_RANK", "IBM Spectrum LSF (jsrun)", NULL},
    {"SLURM_PROCID", "Slurm (srun)", NULL},
    {"RANK", "torchrun / torch.distributed", "WORLD_SIZE"},
    {NULL, NULL, NULL},
};

/* Decimal digits only, 0..PA_RANK_MAX; -1 otherwise. */
static long parse_rank(const char *s)
{
    long v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
        if (v > PA_RANK_MAX)
            return -1;
    }
    return v;
}

long pa_rank_detect(const char *(*get)(const char *name), void (*warn)(const char *msg, void *ctx), void *ctx,
                    pa_rank_info_t *out)
{
    out->rank = -1;
    out->var = out->launcher = NULL;
    for (const pa_rank_var_t *v = pa_rank_vars; v->var; v++) {
        const char *s = get(v->var);
        if (!s || !*s || (v->needs && !get(v->needs))) /* empty: as unset (no launcher sets one) */
            continue;
        long r = parse_rank(s);
        if (r >= 0) {
            out->rank = r;
            out->var = v->var;
            out->launcher = v->launcher;
            return r;
        }
        if (warn) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s=\"%.64s\" (%s) is not a rank: accepted a decimal number 0..%ld; ignored%s",
                     v->var, s, v->launcher, PA_RANK_MAX, v[1].var ? ", the next launcher variable is tried" : "");
            warn(msg, ctx);
        }
    }
    return -1;
}

static pa_rank_info_t self;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static const char *env_get(const char *name) { return getenv(name); }
static void log_warn(const char *msg, void *ctx)
{
    (void)ctx;
    pa_warn("rank", "%s", msg);
}
static void self_detect(void) { pa_rank_detect(env_get, log_warn, NULL, &self); }

const pa_rank_info_t *pa_rank_self(void)
{
    pthread_once(&self_once, self_detect);
    return &self;
}
