/* shim: the per-rank supervisor of the local executor; see shim.c. */
#ifndef TY_SHIM_H
#define TY_SHIM_H

/* Entry point of `trainyard shim --dir DIR [--max-line N] [--cgroup DIR] -- COMMAND...` (the
 * rank runs in the memory cgroup DIR when given); returns exit status. */
int shim_main(int argc, char **argv);

#endif
