/* P11: name_to_handle_at + open_by_handle_at ("shocker"): a file handle
 * opens a file with no path resolution at all. The floor kills. */
#include "escape.h"

int attack(int argc, char **argv)
{
	struct {
		unsigned int bytes;
		int type;
		unsigned char h[128];
	} fh = { 128, 0, { 0 } };
	int mnt;

	result(syscall(SYS_name_to_handle_at, AT_FDCWD, ARG("secret"), &fh,
		       &mnt, 0));
	say("AFTER");
	result(syscall(SYS_open_by_handle_at, AT_FDCWD, &fh, O_RDONLY));
	return 0;
}
