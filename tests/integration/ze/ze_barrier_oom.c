/* ze_barrier_oom.c - a barrier with a signal event, then a host wait on that event (bounded):
 * the event must be signalled even when the driver refuses every further append on the list
 * (simdev's SIMDEV_FAULT_LIST_APPENDS), as the agent appends one of its own after the barrier.
 * usage: ze_barrier_oom immediate|regular; prints "barrier event: 0x<ze_result>" and exits 0 when
 * zeEventHostSynchronize returned ZE_RESULT_SUCCESS within 10 s, 1 otherwise. */
#include <stdio.h>
#include <string.h>

#include "common.h"

int main(int argc, char **argv)
{
    int regular = argc > 1 && strcmp(argv[1], "regular") == 0;
    sample_env_t env;
    sample_env_init(&env, 1);
    ze_event_pool_handle_t pool = sample_event_pool(&env, 1, 0);
    ze_event_handle_t ev = sample_event(pool, 0);
    ze_command_list_handle_t list;
    ze_command_queue_handle_t q = NULL;
    if (regular) {
        list = sample_list(&env, env.devices[0], 0);
        q = sample_queue(&env, env.devices[0], 0, 0);
    } else {
        list = sample_immediate(&env, env.devices[0], 0, 0);
    }
    SAMPLE_CHECK(zeCommandListAppendBarrier(list, ev, 0, NULL));
    if (regular) {
        SAMPLE_CHECK(zeCommandListClose(list));
        SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &list, NULL));
    }
    ze_result_t r = zeEventHostSynchronize(ev, 10000000000ull);
    printf("barrier event: 0x%x\n", (unsigned)r);
    if (regular)
        zeCommandQueueSynchronize(q, 10000000000ull);
    return r == ZE_RESULT_SUCCESS ? 0 : 1;
}
