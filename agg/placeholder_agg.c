/* placeholder */ typedef int pa_agg_placeholder_t;
