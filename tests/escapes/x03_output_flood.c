/* X03: flood stdout with 64 MiB (run with --max-output 1M): ward keeps
 * what its limit says, counts the rest, and survives. */
#include "escape.h"

int attack(int argc, char **argv)
{
	static char block[1 << 16];

	(void)argc;
	(void)argv;
	memset(block, 'y', sizeof(block));
	block[sizeof(block) - 1] = '\n';
	say("RESULT ok");
	for (int i = 0; i < 1024; i++)
		if (write(1, block, sizeof(block)) < 0)
			break;
	say("AFTER");
	return 0;
}
