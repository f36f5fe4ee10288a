/*
 * maxrss.c - runs a command and prints its peak resident set size.
 *
 *   maxrss OUT CMD [ARGS...]
 *
 * CMD's stdout goes to the file OUT; on exit, prints "STATUS MAXRSS_KB
 * CPU_S" on stdout (the child's rusage through wait4: peak RSS, user +
 * system time). A small process of its
 * own: a child forked from a large one (the Python test runner) would
 * carry the parent's resident pages in its peak until its exec.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct rusage ru;
	int status, fd;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: maxrss OUT CMD [ARGS...]\n");
		return 2;
	}
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(126);
		execv(argv[2], argv + 2);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid)
		return 2;
	printf("%d %ld %.3f\n",
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
	       ru.ru_maxrss,
	       (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	return 0;
}
