/* placeholder */ typedef int pa_collector_placeholder_t;
