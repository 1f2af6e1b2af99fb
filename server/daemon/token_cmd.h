/* token_cmd: `trainyard token create|list|revoke`, on the daemon's database directly. */
#ifndef TY_TOKEN_CMD_H
#define TY_TOKEN_CMD_H

int token_main(int argc, char **argv);

#endif
