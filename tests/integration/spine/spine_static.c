/* spine_static.c - a statically linked program (LD_PRELOAD cannot apply): exits 7. */
int main(void) { return 7; }
