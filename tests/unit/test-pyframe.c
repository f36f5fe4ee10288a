/*
 * test-pyframe.c - tracer/pyframe: the location table decoder against
 * the lines CPython itself gives for real code objects (3.11 and 3.13,
 * tests/unit/data/pyframe/linetables.h), damaged tables, and the walk of
 * live interpreters' stacks (Debian's python3.11, pyenv's 3.11 and 3.13
 * when installed, a copy named plain "python"; 3.10 and 3.12 give
 * nothing).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "tracer/pyframe.h"
#include "tracer/tracer.h"
#include "tests/unit/tap.h"
#include "tests/unit/data/pyframe/linetables.h"

static void test_real_tables(void)
{
	for (size_t i = 0; i < sizeof(lt_cases) / sizeof(lt_cases[0]); i++) {
		const struct lt_case *c = &lt_cases[i];
		unsigned bad = 0;
		for (unsigned k = 0; k < c->nlines; k++) {
			int got = pyf_addr2line(c->table, c->len, c->first,
						2LL * c->lines[k][0]);
			if (got != c->lines[k][1]) {
				if (!bad)
					printf("# unit %d: got %d, want %d\n",
					       c->lines[k][0], got,
					       c->lines[k][1]);
				bad++;
			}
		}
		ok(bad == 0 && c->nlines > 0,
		   "%s %s: the line of each of %u code units", c->version,
		   c->name, c->nlines);
		unsigned last = c->lines[c->nlines - 1][0];
		is_int(pyf_addr2line(c->table, c->len, c->first,
				     2LL * (last + 1)),
		       -ENOENT, "... past the last unit: -ENOENT");
	}
	const struct lt_case *c = &lt_cases[1];
	is_int(pyf_addr2line(c->table, c->len, c->first, -2), c->first,
	       "a frame before its first instruction: co_firstlineno");
}

static void test_damaged_tables(void)
{
	/* a long-form entry (code 14) cut inside its varints */
	const uint8_t cut[] = { 0x80 | (14 << 3), 0x41 };
	is_int(pyf_addr2line(cut, sizeof(cut), 1, 0), -EINVAL,
	       "a varint cut by the end of the table: -EINVAL");
	/* a varint running past 32 bits */
	const uint8_t longv[] = {
		0x80 | (13 << 3), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01
	};
	is_int(pyf_addr2line(longv, sizeof(longv), 1, 0), -EINVAL,
	       "a varint over 32 bits: -EINVAL");
	/* a table that does not start an entry */
	const uint8_t nostart[] = { 0x12, 0x80 };
	is_int(pyf_addr2line(nostart, sizeof(nostart), 1, 0), -EINVAL,
	       "a first byte without the entry bit: -EINVAL");
	/* a short form whose column byte is the next entry */
	const uint8_t shortcut[] = { 0x80 | (1 << 3), 0x80 | (15 << 3) };
	is_int(pyf_addr2line(shortcut, sizeof(shortcut), 1, 0), -EINVAL,
	       "a short form without its column byte: -EINVAL");
	/* lines: no-column entries +3, -1, then no location */
	const uint8_t ok3[] = { 0x80 | (13 << 3) | 1, 6, 0x80 | (13 << 3), 3,
				0x80 | (15 << 3) };
	is_int(pyf_addr2line(ok3, sizeof(ok3), 10, 0), 13, "+3");
	is_int(pyf_addr2line(ok3, sizeof(ok3), 10, 2), 13,
	       "an entry of two units");
	is_int(pyf_addr2line(ok3, sizeof(ok3), 10, 4), 12, "-1");
	is_int(pyf_addr2line(ok3, sizeof(ok3), 10, 6), -1, "no location: -1");
	is_int(pyf_addr2line(ok3, 0, 10, 0), -ENOENT, "empty table: -ENOENT");
	/* a line pushed below zero by a forged delta */
	const uint8_t neg[] = { 0x80 | (13 << 3), 0x41, 0x03 };
	is_int(pyf_addr2line(neg, sizeof(neg), 1, 0), -EINVAL,
	       "a line below -1: -EINVAL");
}

/* ---- live interpreters ---- */

static const char script[] =
	"import sys, threading, time\n"
	"def inner(ev):\n"	   /* 2 */
	"    ev.wait()\n"	   /* 3 */
	"def outer(ev):\n"	   /* 4 */
	"    inner(ev)\n"	   /* 5 */
	"def waiter():\n"	   /* 6 */
	"    time.sleep(30)\n"	   /* 7 */
	"ev = threading.Event()\n" /* 8 */
	"t = threading.Thread(target=waiter, daemon=True)\n"
	"t.start()\n"			   /* 10 */
	"time.sleep(0.05)\n"		   /* 11 */
	"print(t.native_id, flush=True)\n" /* 12 */
	"pass\n"
	"outer(ev)\n"; /* 14 */

struct child {
	pid_t pid, thread;
	FILE *out;
};

static int start_python(const char *exe, const char *path, struct child *c)
{
	int fds[2];
	char line[64];

	if (access(exe, X_OK) != 0 || pipe(fds) < 0)
		return -1;
	c->pid = fork();
	if (c->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execl(exe, exe, path, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	c->out = fdopen(fds[0], "r");
	if (!c->out || !fgets(line, sizeof(line), c->out)) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		if (c->out)
			fclose(c->out);
		return -1;
	}
	c->thread = atoi(line);
	usleep(200 * 1000); /* into ev.wait() */
	return 0;
}

static void stop_python(struct child *c)
{
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	fclose(c->out);
}

static const char *fr(json_t *frames, size_t i, const char *key)
{
	return json_string_value(
		json_object_get(json_array_get(frames, i), key));
}

static int line_of(json_t *frames, size_t i)
{
	return (int)json_integer_value(
		json_object_get(json_array_get(frames, i), "line"));
}

static void test_live(const char *exe, const char *path, const char *minor)
{
	static char buf[16384];
	struct child c;
	json_t *j, *frames;
	size_t n;

	if (start_python(exe, path, &c) < 0) {
		skip("%s is not installed", exe);
		return;
	}
	int r = tracer_pyframes(c.pid, c.pid, c.pid, buf, sizeof(buf));
	is_int(r, 0, "main thread: a record");
	j = json_loads(buf, 0, NULL);
	ok(j != NULL, "%s: the record is JSON", exe);
	frames = json_object_get(j, "frames");
	n = json_array_size(frames);
	ok(json_is_true(json_object_get(j, "untrusted")),
	   "... marked untrusted");
	char src[64];
	snprintf(src, sizeof(src), "cpython-%s memory", minor);
	is_str(json_string_value(json_object_get(j, "source")), src,
	       "... its source");
	ok(json_is_false(json_object_get(j, "truncated")) &&
		   !json_object_get(j, "incomplete"),
	   "... complete");
	/* innermost: threading.py's Event.wait / Condition.wait */
	ok(n >= 4, "... %zu frames", n);
	if (n >= 3) {
		is_str(fr(frames, n - 3, "function"), "inner", "... inner");
		is_int(line_of(frames, n - 3), 3, "... at line 3");
		is_str(fr(frames, n - 2, "function"), "outer", "... outer");
		is_int(line_of(frames, n - 2), 5, "... at line 5");
		is_str(fr(frames, n - 1, "function"), "<module>",
		       "... the module");
		is_int(line_of(frames, n - 1), 14, "... at line 14");
		is_str(fr(frames, n - 1, "file"), path, "... the script");
		ok(strstr(fr(frames, 0, "file"), "threading.py") != NULL,
		   "... innermost in threading.py");
	}
	json_decref(j);

	r = tracer_pyframes(c.thread, c.pid, c.thread, buf, sizeof(buf));
	is_int(r, 0, "the other thread: a record");
	j = json_loads(buf, 0, NULL);
	frames = json_object_get(j, "frames");
	n = json_array_size(frames);
	ok(n >= 2 && !strcmp(fr(frames, 0, "function"), "waiter") &&
		   line_of(frames, 0) == 7,
	   "... its own stack: waiter at line 7 (%s)", buf);
	json_decref(j);

	is_int(tracer_pyframes(c.pid, c.pid, 999999, buf, sizeof(buf)), -ENOENT,
	       "a tid without a thread state: -ENOENT");
	is_str(buf, "", "... and nothing written");
	stop_python(&c);
}

static void test_unsupported(const char *exe)
{
	static char buf[16384];
	struct child c;
	char path[] = "/tmp/ward-pyf-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0 || write(fd, script, sizeof(script) - 1) < 0) {
		ok(0, "temporary script");
		return;
	}
	close(fd);
	if (start_python(exe, path, &c) < 0) {
		skip("%s is not installed", exe);
	} else {
		int r = tracer_pyframes(c.pid, c.pid, c.pid, buf, sizeof(buf));
		ok(r == -ENOTSUP && buf[0] == '\0',
		   "%s: not supported, nothing written (%d)", exe, r);
		stop_python(&c);
	}
	unlink(path);
}

static void test_not_python(void)
{
	static char buf[16384];
	pid_t p = fork();

	if (p == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	usleep(100 * 1000);
	is_int(tracer_pyframes(p, p, p, buf, sizeof(buf)), -ENOENT,
	       "sleep(1): not python, -ENOENT");
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	is_int(tracer_pyframes(p, p, p, buf, sizeof(buf)), -ESRCH,
	       "a gone process: -ESRCH");
}

/* A copy of the interpreter named plain "python" (as `python -m venv
 * --copies` makes): still found. */
static void test_copy_named_python(const char *script_path)
{
	char dir[] = "/tmp/ward-pyf-copy-XXXXXX", exe[64], cmd[256];

	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(exe, sizeof(exe), "%s/python", dir);
	snprintf(cmd, sizeof(cmd), "cp /usr/bin/python3.11 %s", exe);
	if (access("/usr/bin/python3.11", X_OK) == 0 && system(cmd) == 0)
		test_live(exe, script_path, "3.11");
	else
		skip("no /usr/bin/python3.11 to copy");
	unlink(exe);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	char path[] = "/tmp/ward-pyf-XXXXXX";
	int fd;

	/* the unwinder helper is this binary re-executed (tracer.h) */
	if (argc > 1 && !strcmp(argv[1], TRACER_UNWINDER_ARG))
		tracer_unwinder_main(argc, argv);

	test_real_tables();
	test_damaged_tables();
	fd = mkstemp(path);
	if (fd < 0 || write(fd, script, sizeof(script) - 1) < 0)
		return 1;
	close(fd);
	test_live("/usr/bin/python3.11", path, "3.11");
	test_live("/root/.pyenv/versions/3.11.7/bin/python3.11", path, "3.11");
	test_live("/root/.pyenv/versions/3.13.0/bin/python3.13", path, "3.13");
	test_copy_named_python(path);
	unlink(path);
	test_unsupported("/root/.pyenv/versions/3.12.1/bin/python3.12");
	test_unsupported("/root/.pyenv/versions/3.10.13/bin/python3.10");
	test_not_python();
	return done_testing();
}
