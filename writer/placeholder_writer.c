/* placeholder */ typedef int pa_writer_placeholder_t;
