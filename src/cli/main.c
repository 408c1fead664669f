/* main.c — the curvsweep command line: dispatch to subcommands. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--version") == 0) {
    printf("curvsweep %s\n", CS_VERSION);
    return 0;
  }
  fprintf(stderr, "usage: curvsweep COMMAND ...\n");
  return 2;
}
