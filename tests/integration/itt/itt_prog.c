/* itt_prog.c - a hand-written ITT program: every entry point the agent maps, nested tasks, tasks
 * on several threads and across threads, calls the agent does not map, and bad input. It checks
 * what it can see itself (same domain for the same name, results of legacy calls) and exits 0;
 * test_itt.py checks the ranges the agent recorded. Runs unchanged without a collector. */
#include "itt_static.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define WORKERS 3
#define WORKER_TASKS 10

static itt_domain *dom;
static itt_string *s_worker;
static int fails;

#define EXPECT(c) do { if (!(c)) { fprintf(stderr, "itt_prog: expected %s (line %d)\n", #c, __LINE__); fails++; } } while (0)

/* Named by its symbol in task_begin_fn (exported: the executable is linked with its symbols). */
void itt_prog_work(void) {}

static void clock_info(itt_clock_info *info, void *data)
{
    (void)data;
    info->clock_freq = 1000000000ull; /* 1 tick = 1 ns */
    info->clock_base = 1000;
}

static itt_id overlapped_id; /* begun on main, ended by worker 0 */

static void *worker(void *arg)
{
    long w = (long)arg;
    char name[16];
    snprintf(name, sizeof name, "itt-worker-%ld", w);
    ITT_CALL(thr_name_set, name, (int)strlen(name));
    for (int i = 0; i < WORKER_TASKS; i++) {
        ITT_CALLV(task_begin, dom, itt_null, itt_null, s_worker);
        ITT_CALLV(task_end, dom);
    }
    if (w == 0)
        ITT_CALLV(task_end_overlapped, dom, overlapped_id);
    return NULL;
}

int main(void)
{
    static itt_domain pre = {.flags = 1, .nameA = "pre.domain"}; /* "created by the static part" */
    int attached = itt_static_init(&pre);
    printf("itt_prog: collector %s\n", attached ? "attached" : "absent");
    dom = ITT_CALL(domain_create, "test.domain");
    EXPECT(!attached || dom != NULL);
    EXPECT(ITT_CALL(domain_create, "test.domain") == dom);
    EXPECT(ITT_CALL(domain_create, "pre.domain") == (attached ? &pre : NULL));
    EXPECT(ITT_CALL(domain_create, NULL) == NULL);
    EXPECT(ITT_CALL(string_handle_create, NULL) == NULL);
    itt_string *s_outer = ITT_CALL(string_handle_create, "outer"), *s_inner = ITT_CALL(string_handle_create, "inner");
    EXPECT(ITT_CALL(string_handle_create, "outer") == s_outer);
    s_worker = ITT_CALL(string_handle_create, "worker");
    ITT_CALL(thr_name_set, "itt-main", 0);
    ITT_CALLV(thread_set_name, "itt-main");

    /* nested tasks: outer > inner, twice */
    for (int i = 0; i < 2; i++) {
        ITT_CALLV(task_begin, dom, itt_null, itt_null, s_outer);
        ITT_CALLV(task_begin, dom, itt_null, itt_null, s_inner);
        ITT_CALLV(task_end, dom);
        ITT_CALLV(task_end, dom);
    }
    ITT_CALLV(task_begin, &pre, itt_null, itt_null, ITT_CALL(string_handle_create, "pre_task"));
    ITT_CALLV(task_end, &pre);
    /* _fn and _ex forms: exact durations from the given timestamps */
    ITT_CALLV(task_begin_fn, dom, itt_null, itt_null, (void *)itt_prog_work);
    ITT_CALLV(task_end, dom);
    itt_clock *clk = ITT_CALL(clock_domain_create, clock_info, NULL);
    ITT_CALLV(task_begin_ex, dom, clk, 1000 + 5000, itt_null, itt_null, ITT_CALL(string_handle_create, "ex_clock"));
    ITT_CALLV(task_end_ex, dom, clk, 1000 + 12000);
    ITT_CALLV(clock_domain_reset);
    unsigned long long t = ITT_CALL(get_timestamp);
    ITT_CALLV(task_begin_ex, dom, NULL, t, itt_null, itt_null, ITT_CALL(string_handle_create, "ex_null"));
    ITT_CALLV(task_end_ex, dom, NULL, t + 3000);
    ITT_CALLV(task_begin_fn_ex, dom, NULL, t + 4000, itt_null, itt_null, (void *)itt_prog_work);
    ITT_CALLV(task_end_ex, dom, NULL, t + 4500);
    /* overlapped tasks and regions keyed by id */
    int a, b, c;
    itt_string *s_ovl = ITT_CALL(string_handle_create, "ovl");
    ITT_CALLV(id_create, dom, itt_id_make(&a, 1));
    ITT_CALLV(task_begin_overlapped, dom, itt_id_make(&a, 1), itt_null, s_ovl);
    ITT_CALLV(task_begin_overlapped, dom, itt_id_make(&b, 1), itt_null, s_ovl);
    ITT_CALLV(task_end_overlapped, dom, itt_id_make(&a, 1));
    ITT_CALLV(task_end_overlapped, dom, itt_id_make(&b, 1));
    ITT_CALLV(id_destroy, dom, itt_id_make(&a, 1));
    ITT_CALLV(task_begin_overlapped_ex, dom, NULL, t + 10000, itt_id_make(&c, 2), itt_null, s_ovl);
    ITT_CALLV(task_end_overlapped_ex, dom, NULL, t + 16000, itt_id_make(&c, 2));
    ITT_CALLV(region_begin, dom, itt_id_make(&c, 3), itt_null, ITT_CALL(string_handle_create, "region"));
    ITT_CALLV(region_end, dom, itt_id_make(&c, 3));
    /* frames */
    ITT_CALLV(frame_begin_v3, dom, NULL);
    ITT_CALLV(frame_end_v3, dom, NULL);
    ITT_CALLV(frame_submit_v3, dom, NULL, t + 20000, t + 24000);
    /* markers, legacy marks, legacy events */
    itt_string *s_mark = ITT_CALL(string_handle_create, "marker");
    ITT_CALLV(marker, dom, itt_null, s_mark, 0);
    ITT_CALLV(marker, dom, itt_null, s_mark, 0);
    ITT_CALLV(marker_ex, dom, NULL, t + 30000, itt_null, s_mark, 0);
    int mt = ITT_CALL(mark_create, "legacy");
    EXPECT(!attached || mt > 0);
    EXPECT(ITT_CALL(mark, mt, "p1") == 0);
    EXPECT(ITT_CALL(mark_global, mt, NULL) == 0);
    int ev = ITT_CALL(event_create, "evt_ignored_tail", 3);
    EXPECT(ITT_CALL(event_start, ev) == 0);
    EXPECT(ITT_CALL(event_end, ev) == 0);
    /* threads: WORKERS x WORKER_TASKS tasks, and an overlapped task ended on worker 0 */
    overlapped_id = itt_id_make(&overlapped_id, 7);
    ITT_CALLV(task_begin_overlapped, dom, overlapped_id, itt_null, ITT_CALL(string_handle_create, "cross_thread"));
    pthread_t th[WORKERS];
    for (long w = 0; w < WORKERS; w++)
        pthread_create(&th[w], NULL, worker, (void *)w);
    for (int w = 0; w < WORKERS; w++)
        pthread_join(th[w], NULL);
    /* pause: a task begun while paused is not recorded; one begun before still ends */
    itt_string *s_pause = ITT_CALL(string_handle_create, "spans_pause");
    ITT_CALLV(task_begin, dom, itt_null, itt_null, s_pause);
    ITT_CALLV(pause);
    ITT_CALLV(task_begin, dom, itt_null, itt_null, ITT_CALL(string_handle_create, "while_paused"));
    ITT_CALLV(task_end, dom);
    ITT_CALLV(task_end, dom);
    ITT_CALLV(resume);
    /* bad input: counted, never fatal */
    ITT_CALLV(task_begin, NULL, itt_null, itt_null, ITT_CALL(string_handle_create, "null_domain"));
    ITT_CALLV(task_end, NULL);
    ITT_CALLV(task_begin, dom, itt_null, itt_null, NULL);
    ITT_CALLV(task_end, dom);
    ITT_CALLV(task_end, dom); /* no task open */
    ITT_CALLV(marker, dom, itt_null, NULL, 0);
    /* calls the agent does not map */
    int obj;
    ITT_CALLV(sync_create, &obj, "mutex", "m", 0);
    ITT_CALLV(sync_create, &obj, "mutex", "m", 0);
    for (int i = 0; i < 3; i++)
        ITT_CALLV(sync_prepare, &obj);
    void *cnt = ITT_CALL(counter_create, "c", "d");
    EXPECT(cnt == NULL);
    ITT_CALLV(counter_inc, cnt);
    unsigned long long md = 5;
    ITT_CALLV(metadata_add, dom, itt_null, s_mark, 1, 1, &md);
    EXPECT(!attached || ITT_CALL(api_version) != NULL);
    /* detach: nothing more is recorded */
    ITT_CALLV(detach);
    ITT_CALLV(task_begin, dom, itt_null, itt_null, ITT_CALL(string_handle_create, "after_detach"));
    ITT_CALLV(task_end, dom);
    printf("itt_prog: %s\n", fails ? "FAILED" : "ok");
    return fails ? 1 : 0;
}
