/*
 * exec_probe.c - the program the exec races of the escape corpus (R07,
 * R08) execute, 100,000 times a case: static, so that each exec is one
 * trap at ward and no loader (no opens of libraries).
 *
 *   exec_probe [ARG]
 *
 * Prints ARG (or nothing) and a newline. When its environment holds
 * LD_PRELOAD (what a dynamic program's loader would have acted on), it
 * creates ./marker first, as a preloaded object would, and says so.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv, char **envp)
{
	for (char **e = envp; *e; e++)
		if (!strncmp(*e, "LD_PRELOAD=", 11)) {
			int fd = open("marker", O_CREAT | O_WRONLY, 0644);

			if (fd >= 0)
				close(fd);
			printf("PAYLOAD RAN ");
		}
	printf("%s\n", argc > 1 ? argv[1] : "");
	return 0;
}
