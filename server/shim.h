/* shim: the per-rank supervisor of the local executor; see shim.c. */
#ifndef TY_SHIM_H
#define TY_SHIM_H

/* Entry point of `trainyard shim --dir DIR [--max-line N] -- COMMAND...`; returns exit status. */
int shim_main(int argc, char **argv);

#endif
