/*
 * batch-html.c - `ward batch --report FILE.html`: the outcome distribution
 * and the samples of each behaviour category, linked to each run's own
 * report. The page is static like ward report's: inline CSS allowed by
 * its hash in a strict Content-Security-Policy, no script; every text
 * that came from a sample (ids, statuses, rule names) escaped.
 */
#include "tools/run/batch.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/review/view.h"

static const char css[] =
	"body{margin:0;font:14px/1.45 system-ui,sans-serif;color:#1b1f24}"
	"header{padding:18px 28px;border-bottom:1px solid #d0d7de;"
	"background:#f6f8fa}h1{font-size:20px;margin:0 0 6px}"
	"h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de}"
	"h3{font-size:15px;margin:16px 0 4px}main{padding:0 28px 40px}"
	"table{border-collapse:collapse;margin:6px 0 12px}"
	"th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;"
	"vertical-align:top}th{background:#f6f8fa}td.n{text-align:right}"
	"a{color:#0969da}.fail{color:#b42318;font-weight:600}"
	".pass{color:#1a7f37;font-weight:600}.note{color:#57606a}"
	"ul{margin:4px 0 10px}"
	".esc,.bad{color:#fff;background:#6e7781;border-radius:3px;"
	"padding:0 2px;font-size:11px}.bad{background:#b42318}";

/* A path segment in an href: bytes outside [A-Za-z0-9._-] %-encoded. */
static void href_part(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')
			fputc(c, f);
		else
			fprintf(f, "%%%02X", c);
	}
}

static void run_link(FILE *f, const char *dir, const struct batch_sample *s)
{
	if (!s->run_id[0]) {
		view_html_str(f, s->id);
		return;
	}
	fputs("<a href=\"", f);
	href_part(f, dir);
	fputc('/', f);
	href_part(f, s->run_id);
	fputs(".html\">", f);
	view_html_str(f, s->id);
	fputs("</a>", f);
}

static void head(FILE *f, const struct batch_samples *s, const char *db)
{
	view_html_head(f, css, "ward batch report");
	fprintf(f,
		"<header><h1>ward batch: %zu samples</h1>\n"
		"<p class=\"note\">Every outcome and category below comes from "
		"the audit record in ",
		s->n);
	view_html_str(f, db);
	fputs("; each run links to its own report.</p></header>\n<main>\n", f);
}

static void outcomes(FILE *f, const struct batch_samples *s)
{
	json_t *counts = json_object();
	const char *k;
	json_t *v;

	for (size_t i = 0; counts && i < s->n; i++) {
		const char *st = s->v[i].state == SAMPLE_DONE
					 ? s->v[i].status ?: "failed"
					 : "not run";

		json_object_set_new(
			counts, st,
			json_integer(json_integer_value(
					     json_object_get(counts, st)) +
				     1));
	}
	fputs("<h2 id=\"outcomes\">Outcomes</h2>\n<table><tr><th>status</th>"
	      "<th>samples</th><th>share</th></tr>\n",
	      f);
	json_object_foreach(counts, k, v)
	{
		fputs("<tr><td>", f);
		view_html_str(f, k);
		fprintf(f,
			"</td><td class=\"n\">%lld</td><td><meter min=\"0\" "
			"max=\"%zu\" value=\"%lld\"></meter></td></tr>\n",
			(long long)json_integer_value(v), s->n,
			(long long)json_integer_value(v));
	}
	fputs("</table>\n", f);
	json_decref(counts);
}

static void categories(FILE *f, const struct batch_samples *s, const char *dir)
{
	fputs("<h2 id=\"categories\">Behaviour categories</h2>\n"
	      "<p class=\"note\">What the record shows each sample tried or "
	      "met (docs/batch.md defines each one).</p>\n",
	      f);
	for (int c = 0; c < CAT_N; c++) {
		size_t n = 0;

		for (size_t i = 0; i < s->n; i++)
			n += !!(s->v[i].cats & 1u << c);
		fprintf(f, "<h3 id=\"cat-%s\">%s: %zu</h3>\n",
			batch_cat_name[c], batch_cat_name[c], n);
		if (!n)
			continue;
		fputs("<ul>\n", f);
		for (size_t i = 0; i < s->n; i++) {
			if (!(s->v[i].cats & 1u << c))
				continue;
			fputs("<li>", f);
			run_link(f, dir, &s->v[i]);
			fputs(" (", f);
			view_html_str(f, s->v[i].status);
			fputs(")</li>\n", f);
		}
		fputs("</ul>\n", f);
	}
}

static void sample_row(FILE *f, const struct batch_sample *b, const char *dir)
{
	json_t *d = b->denials, *v;
	const char *k;
	bool first = true;

	fputs("<tr><td>", f);
	run_link(f, dir, b);
	fputs("</td><td>", f);
	view_html_str(f, b->state == SAMPLE_DONE ? b->status : "not run");
	fputs("</td><td class=\"n\">", f);
	if (b->has_exit)
		fprintf(f, "%d", b->exit_code);
	fputs("</td><td class=\"n\">", f);
	if (b->state == SAMPLE_DONE && b->duration_ms >= 0)
		fprintf(f, "%lld ms", b->duration_ms);
	fprintf(f, "</td><td%s>%s</td><td>",
		b->pass == 1   ? " class=\"pass\""
		: b->pass == 0 ? " class=\"fail\""
			       : "",
		b->pass == 1   ? "pass"
		: b->pass == 0 ? "fail"
			       : "");
	for (int c = 0; c < CAT_N; c++)
		if (b->cats & 1u << c)
			fprintf(f, "%s%s", first ? "" : ", ",
				batch_cat_name[c]),
				first = false;
	fputs("</td><td>", f);
	first = true;
	json_object_foreach(d, k, v)
	{
		fputs(first ? "" : ", ", f);
		view_html_str(f, k);
		fprintf(f, " &times;%lld", (long long)json_integer_value(v));
		first = false;
	}
	fputs("</td></tr>\n", f);
}

static void samples(FILE *f, const struct batch_samples *s, const char *dir)
{
	fputs("<h2 id=\"samples\">Samples</h2>\n<table><tr><th>sample</th>"
	      "<th>status</th><th>exit</th><th>duration</th>"
	      "<th>expected</th><th>categories</th><th>denials by rule</th>"
	      "</tr>\n",
	      f);
	for (size_t i = 0; i < s->n; i++)
		sample_row(f, &s->v[i], dir);
	fputs("</table>\n", f);
}

int batch_html(const char *path, const char *runs_dir,
	       const struct batch_samples *s, const char *db)
{
	char *tmp;
	FILE *f;
	int rc = 0;

	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return -ENOMEM;
	f = fopen(tmp, "we");
	if (!f) {
		rc = -errno;
		free(tmp);
		return rc;
	}
	head(f, s, db);
	outcomes(f, s);
	categories(f, s, runs_dir);
	samples(f, s, runs_dir);
	fputs("</main>\n</body></html>\n", f);
	if (fflush(f) || ferror(f) || fsync(fileno(f)))
		rc = -errno ?: -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	/* the page appears whole or not at all */
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}
