/* spine_plug.c - the plugin spine_runpath loads through its RUNPATH. */
int spine_plug(void);
int spine_plug(void)
{
    return 42;
}
