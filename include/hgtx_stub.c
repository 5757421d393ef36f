/* hgtx_stub.c - placeholder until the HGTX stub lands. */
