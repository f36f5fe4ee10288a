/*
 * session-script.c - a one-shot script from the warm pool (ward batch
 * --pool; the API is ws_pool_script in session.h).
 *
 * A pooled session is taken (its warm-up recorded as cell 0 with its
 * hand-out time, session-pool.c), the sample's files and script are
 * written into its workdir (the script's files recorded as the run's
 * inputs, as ward run's --input are), the run's wall limit is re-armed
 * to count from now (tracer_opts.wall_fd), and the driver gets one frame:
 * run this code as `python3 NAME ARGS...` would, with this stdin, then
 * end (drivers/python.py _script). The interpreter's exit is the run's:
 * its status, exit code and signal are recorded by the session's worker
 * exactly as ward run records its own. The code is recorded as cell 1,
 * with the batch's tag in its result ({"script": {...}}). Nothing goes
 * back to the pool: the session ends with its interpreter.
 */
#include "tools/agent/session.h"
#include "tools/agent/session-int.h"
#include "tools/agent/session-server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/sha256.h"
#include "tools/run/workfiles.h"

/* One file into x's workdir, owned by the sandbox's user; recorded as
 * input n when n > 0. 0 or -errno. */
static int put_file(struct ws_server *s, struct sess *x, long long n,
		    const char *name, const char *data, size_t len)
{
	int rc = ws_put_file(s, x, name, data, len);

	if (rc < 0 || n <= 0)
		return rc;
	char hex[WARD_SHA256_HEX_LEN + 1];
	ward_sha256_hex(data, len, hex);
	struct audit_input in = {
		.run_id = x->run_id,
		.n = n,
		.name = name,
		.size = (long long)len,
		.sha256 = hex,
		.data = data,
	};
	return audit_input(s->au, &in) < 0 ? -EIO : 0;
}

/* The frame the driver runs: a header and a JSON body, "op" first (the
 * driver tells it by its first bytes). */
static int send_script(struct sess *x, const struct ws_script *sc)
{
	json_t *args = json_array(), *b;
	char head[160], nonce[33];
	int rc;

	for (size_t i = 0; args && i < sc->n_args; i++)
		json_array_append_new(args, ws_json_text(sc->args[i],
							 strlen(sc->args[i])));
	b = json_pack("{s:s, s:o, s:o, s:s%}", "op", "script", "name",
		      ws_json_text(sc->name, strlen(sc->name)), "args",
		      args ? args : json_array(), "code", sc->code,
		      sc->code_len);
	if (b && sc->has_stdin)
		json_object_set_new(b, "stdin",
				    json_stringn(sc->stdin_data,
						 sc->stdin_len));
	char *body = b ? json_dumps(b, JSON_COMPACT) : NULL;
	json_decref(b);
	if (!body)
		return -ENOMEM;
	ws_random_hex(nonce, 16);
	snprintf(head, sizeof(head),
		 "{\"n\":1,\"nonce\":\"%s\",\"timeout_s\":0,\"len\":%zu,"
		 "\"x\":1}\n",
		 nonce, strlen(body));
	rc = ws_write_all(x->cells, head, strlen(head));
	if (!rc)
		rc = ws_write_all(x->cells, body, strlen(body));
	free(body);
	ws_close_fd(&x->cells); /* the driver's last frame */
	return rc;
}

/* Until the worker says how the run ended: output and frames read (the
 * record has them), a cancel ends the run as ward run's SIGTERM does. */
static void await_end(struct sess *x, struct ws_cancel *cancel)
{
	bool stopped = false;

	while (!x->dead) {
		struct pollfd q[5] = {
			{ x->out[1], POLLIN, 0 },
			{ x->out[2], POLLIN, 0 },
			{ x->res, POLLIN, 0 },
			{ x->ctl, POLLIN, 0 },
			{ stopped || !cancel ? -1 : cancel->fd, POLLIN, 0 },
		};
		if (x->ctl < 0)
			break;
		if (poll(q, 5, 1000) < 0 && errno != EINTR)
			break;
		if (q[4].revents) {
			/* the run recorded aborted, "ward received SIGTERM",
			 * its whole tree ended (tracer_run) */
			kill(x->worker, SIGTERM);
			stopped = true;
		}
		ws_pump_sess(x);
	}
}

static int record_script(struct ws_server *s, struct sess *x,
			 const struct ws_script *sc, long long t0, long long t1)
{
	json_t *r = json_pack("{s:{s:s?, s:s, s:s, s:i, s:i}}", "script", "tag",
			      sc->tag, "name", sc->name, "status",
			      x->end_status, "exit_code", x->end_exit, "signal",
			      x->end_signal);
	char *rj = r ? json_dumps(r, JSON_COMPACT) : NULL;
	struct audit_cell ac = {
		.run_id = x->run_id,
		.n = 1,
		.code = sc->code,
		.code_len = sc->code_len,
		.started_ns = t0,
		.ended_ns = t1,
		.status = x->end_status,
		.result_json = rj ? rj : "{}",
	};
	int rc = rj ? audit_cell(s->au, &ac) : -ENOMEM;

	json_decref(r);
	free(rj);
	return rc < 0 ? -EIO : 0;
}

int ws_pool_script(struct ws_server *s, const struct ws_script *sc,
		   struct ws_script_run *out, struct ws_error *err)
{
	struct ws_start st = { .lang = "python",
			       .profile = s->cfg.profile,
			       .policy = s->cfg.policy,
			       .timeout = s->cfg.cell_timeout_s,
			       .life_s = s->cfg.max_life_s };
	struct sess *x = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (ws_pool_take_wait(s, &st, sc->cancel, &x) < 0 || !x)
		return ws_fail(err, WS_E_INTERNAL,
			       "the pool gave no sandbox (it was stopped)");
	memcpy(out->run_id, x->run_id, sizeof(out->run_id));
	out->handed_out_ns = x->created_ns;
	rc = 0;
	for (size_t i = 0; !rc && i < sc->n_files; i++)
		rc = put_file(s, x, (long long)i + 1, sc->files[i].name,
			      sc->files[i].data, sc->files[i].len);
	if (!rc)
		rc = put_file(s, x, 0, sc->name, sc->code, sc->code_len);
	uint64_t ms = (uint64_t)(sc->wall_s * 1000);
	if (!rc && ms && ws_write_all(x->ctl, &ms, sizeof(ms)) < 0)
		rc = -EIO;
	if (!rc)
		rc = send_script(x, sc);
	if (rc) {
		/* nothing of the sample ran: the run ends as ward's error */
		ws_sess_finish(s, x);
		return ws_fail(err, WS_E_INTERNAL,
			       "run %s: the sample could not be handed to "
			       "its sandbox: %s",
			       out->run_id, strerror(-rc));
	}
	await_end(x, sc->cancel);
	out->ended_ns = ws_realtime_ns();
	if (record_script(s, x, sc, out->handed_out_ns, out->ended_ns) < 0)
		warn("run %s: its script's cell could not be recorded: %s",
		     x->run_id, audit_errmsg(s->au));
	ws_sess_finish(s, x);
	return 0;
}
