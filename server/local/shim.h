/* shim: the per-rank supervisor of the local executor; see shim.c. */
#ifndef TY_SHIM_H
#define TY_SHIM_H

/* Entry point of `trainyard shim --dir DIR [options] -- COMMAND...` (shim.c lists the options);
 * returns the shim's exit status (0 once the rank's end is recorded). */
int shim_main(int argc, char **argv);

#endif
