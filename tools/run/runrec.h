/*
 * runrec.h - what `ward run` and the session workers (session-worker.c)
 * both do with a run: its end row from the tracer's result, its text in
 * JSON, and removing its temporary workdir.
 */
#ifndef WARD_TOOLS_RUNREC_H
#define WARD_TOOLS_RUNREC_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

#include "audit/audit.h"
#include "tracer/tracer.h"

/* Fills *re from r (pointers borrowed from r and layers_json, which may be
 * NULL); end_ns is the run's end (CLOCK_REALTIME). */
void ward_run_end_of(const struct tracer_result *r, const char *layers_json,
		     long long end_ns, struct audit_run_end *re);

/* One row of the table phases for the phase n (name) of run_id that ran
 * from t0 to t1 with result r, its processes numbered after first; code
 * what it ran (NULL: the run's), layers_json its layers (NULL: the run's).
 * 0 or audit_phase's -errno. */
int ward_record_phase(struct audit *au, const char *run_id, int n,
		      const char *name, const struct tracer_result *r,
		      long long t0, long long t1, int first, const char *code,
		      size_t code_len, const char *layers_json);

/* The language of a code file by its name: .js/.mjs/.cjs node, .sh sh,
 * else python. */
const char *ward_lang_of_file(const char *file);
/* All of fd, NUL-terminated (malloc'd, the caller frees; *len its bytes),
 * or NULL with errno set. */
char *ward_read_all(int fd, size_t *len);
/* The same for the file at path. */
char *ward_read_path(const char *path, size_t *len);

/* A run's record being begun (tracer_opts.record): db and ri in; the rest
 * filled in by ward_record_begin. */
struct ward_record {
	const char *db;
	struct audit_run_info *ri;
	bool ran;	  /* ward_record_begin was called */
	struct audit *au; /* open, once the run row is written */
	char run_id[AUDIT_RUN_ID_LEN + 1];
	char err[700]; /* why it failed */
	/* ward_record_preopen's thread and what it opened (NULL: nothing),
	 * then the one job it may be given (ward_record_run_on): job_state
	 * 0 none yet, 1 given, -1 none will be */
	pthread_t pre_thread;
	bool pre_started;
	struct audit *pre_au;
	pthread_mutex_t pre_lock;
	pthread_cond_t pre_cond;
	int job_state;
	void *(*job)(void *);
	void *job_arg;
};

/*
 * Opens the audit database r->db on a thread of its own, from now on, when
 * it exists (a run refused before its record creates none): opening takes
 * a few ms (SQLite reads the schema and the WAL), which then pass while
 * ward loads the policy and sets the sandbox up instead of before the
 * code may start. ward_record_begin takes the handle; when this could not
 * open it, ward_record_begin opens it itself and says why it fails.
 */
void ward_record_preopen(struct ward_record *r);

/*
 * tracer_opts.record_run_on and record_join, record_arg being a struct
 * ward_record: gives ward_record_preopen's thread fn(arg) to run once its
 * open is done (the record begun there, with no thread made for it).
 * Returns 0, or -ESRCH when there is no such thread (or it was given a job
 * already). ward_record_join waits for it to end.
 */
int ward_record_run_on(void *record, void *(*fn)(void *), void *arg);
void ward_record_join(void *record);

/* Opens the audit database r->db (or takes ward_record_preopen's handle)
 * and writes the run row of r->ri (its start_ns set to now). Returns 0
 * with r->au open and r->run_id filled in, or -EIO with r->err saying what
 * failed (and nothing left open). */
int ward_record_begin(struct ward_record *r);

/* Removes a temporary workdir (/tmp/ward-*) and whatever the code left in
 * it, without following symlinks, then its lock (below). Returns 0,
 * -EINVAL (not such a path) or -errno. */
int ward_rm_workdir(const char *path);

/*
 * A temporary workdir is claimed by its lock, path + ".lock" beside it,
 * which the process that made it holds (flock) as long as it lives: a
 * SIGKILLed ward's workdirs are found free by the next sweep. The lock
 * file appears already locked (O_TMPFILE, then linkat). Returns the lock's
 * fd (CLOEXEC; the caller keeps it open) or -errno.
 */
int ward_workdir_lock(const char *path);
/* A workdir that outlives ward (--keep): its lock goes, and lock_fd. */
void ward_workdir_keep(const char *path, int lock_fd);
/* Removes every /tmp/ward-* workdir whose lock is ours (made by this uid)
 * and free (its ward died). Returns how many, or -errno. */
int ward_sweep_workdirs(void);

/*
 * The workdir's total size (limits.disk_bytes): a tmpfs of that size
 * mounted on the temporary workdir path (empty, just made; /tmp/ward-*),
 * owned by uid:gid, mode 0700, nosuid, nodev. Without it the code could
 * write file after file (each under the file size limit) until the file
 * system holding /tmp is full. Its pages count against the memory cgroup
 * of whoever writes them (the code's). Root only. The calling thread
 * first gets a mount namespace of its own, a slave of the host's (mounts
 * made there still show here), and the tmpfs is mounted there, not on the
 * host: it goes when the last process in it (ward, its run) is gone, even
 * if ward is SIGKILLed, and so do the files; the threads and children
 * started after (ward's tracer, the run's init) are in it too. ward
 * serve's server reaches a session's through /proc/WORKER/root
 * (session.c). ward_rm_workdir unmounts it. Returns 0, or -errno with
 * detail saying why there is no quota; detail says what there is
 * either way (the run's "workdir-quota" layer).
 */
int ward_workdir_quota(const char *path, long long bytes, uid_t uid, gid_t gid,
		       char *detail, size_t n);

/* The run's "workdir" layer: the host's directory, and where the code saw
 * it (home: TRACER_HOME in the run's own file tree, or the same path
 * without one). The record's runs.workdir is home (what the rules mean);
 * this says which host directory that was. */
struct tracer_result;
void ward_workdir_layer(struct tracer_result *r, const char *workdir,
			const char *home);

/* A new JSON string for arbitrary bytes: invalid UTF-8 becomes U+FFFD
 * (output and paths are bytes; JSON wants text). */
json_t *ward_json_text(const char *s, size_t len);
/*
 * Sets o[key] to the bytes s[0..len) as text (ward_json_text: invalid
 * UTF-8 becomes U+FFFD) and, exactly when they are not valid UTF-8 (the
 * text is then not the bytes), o[key + "_base64"] to their base64: a
 * client that wants the bytes takes key_base64 when it is there, else
 * key. Returns 0 or -ENOMEM.
 */
int ward_json_set_bytes(json_t *o, const char *key, const char *s, size_t len);
/* The run row's limits as JSON text into buf (512 bytes are enough). */
void ward_limits_json(const struct ward_limits *l, char *buf, size_t n);
/* The run row's host name and kernel ("sysname release version"); empty
 * strings when uname fails. */
void ward_host_kernel(char *host, size_t hn, char *kernel, size_t kn);

#endif
