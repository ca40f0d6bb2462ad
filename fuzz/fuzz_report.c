/* libFuzzer harness for the HTML report and the stats writers: arbitrary trace bytes must
 * give a page whose data is valid JSON with no "<" (no name can close the script element)
 * and exactly the template's two script elements, or a clean error; the same bytes as a
 * file name must give a link of unreserved characters and %XX only, which decodes back. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "report.h"
#include "stats_out.h"

static size_t count(const char *s, size_t n, const char *needle) {
  size_t k = 0, m = strlen(needle);
  for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), needle, m)) != NULL; p += m) k++;
  return k;
}

static int hex(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; }

/* The input up to its first NUL as a path relative to the report (issue 35's hostile names). */
static void check_href(const uint8_t *data, size_t size) {
  char *rel = strndup((const char *)data, size), *h = NULL;
  if (!rel) return;
  ft_status s = ft__report_href(rel, &h);
  if (!rel[0] || rel[0] == '/') {
    if (s != FT_EINVAL || h) abort(); /* no link to an absolute or empty path */
  } else if (s != FT_ENOMEM) {
    if (s || !h) abort();
    bool dotted = !strncmp(rel, "./", 2) || !strncmp(rel, "../", 3);
    if (!dotted && strncmp(h, "./", 2)) abort(); /* a first segment that could be a scheme is "." */
    size_t n = 0;
    for (const char *p = dotted ? h : h + 2; *p; p++, n++) {
      int c = (unsigned char)*p;
      if (c == '%') {
        if (hex(p[1]) < 0 || hex(p[2]) < 0) abort();
        c = hex(p[1]) * 16 + hex(p[2]);
        p += 2;
      } else if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/", c)) {
        abort(); /* a delimiter (: ? # \ ...) or a byte a browser would read */
      }
      if ((unsigned char)rel[n] != c) abort(); /* decodes to another name */
    }
    if (rel[n]) abort();
  }
  free(h);
  free(rel);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_href(data, size);
  ft_report_input in; /* the job and its timeline's slices, as the report reads them */
  ft_stat_job *job = &in.job;
  char err[640];
  /* every option on: the fuzzer reaches the ops' nesting and HTA's analyses too */
  ft_stat_read_opts ro = {.timeline = true, .trace_limit = 8, .by_rank = true, .hta = true, .ops = true};
  if (ft__tl_new(&in.tl, 1)) abort();
  ft__tl_opts(&in.tl, &ro);
  if (ft_stat_job_read_mem(job, "</script><b>x.json", (const char *)data, size, &ro, err, sizeof err)) {
    if (!err[0]) abort();
    ft_report_input_free(&in);
    return 0;
  }
  /* every report, through every writer */
  FILE *null = fopen("/dev/null", "w");
  ft_report_opts o = {.limit = 5, .by_rank = true};
  for (int r = 0; r < REP_N && null; r++) {
    ft_report rep;
    if (!ft_report_build(&rep, r, job, &o)) {
      ft_table_opts narrow = {.width = 40}, cut = {.name_width = 12, .unit = FT_UNIT_NS};
      ft_report_table(null, &rep, &narrow); /* columns left out, names elided */
      ft_report_table(null, &rep, &cut);
      ft_report_csv(null, &rep);
      ft_report_delim(null, &rep, '\t', FT_UNIT_NS);
      ft_report_json(null, &rep);
    }
    ft_report_free(&rep);
  }
  if (null) fclose(null);
  char *html = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&html, &len);
  if (!m) abort();
  /* A above B (the same traces), a diff document and a regression: no directory, no links */
  ft_report_input groups[2] = {in, in};
  const char *regress[] = {"</script><b>"};
  ft_status s = ft_report_html_groups(m, groups, 2, "{\"ops\": []}", regress, 1, NULL);
  fclose(m);
  if (!s) {
    const char *open = "<script id=\"ft-data\" type=\"application/json\">";
    const char *a = memmem(html, len, open, strlen(open));
    if (!a) abort();
    a += strlen(open);
    const char *z = memmem(a, len - (size_t)(a - html), "</script>", 9);
    if (!z || memchr(a, '<', (size_t)(z - a))) abort();
    if (count(html, len, "<script") != 2 || count(html, len, "</script") != 2) abort();
    yajl_handle h = yajl_alloc(NULL, NULL, NULL);
    if (!h) abort();
    if (yajl_parse(h, (const unsigned char *)a, (size_t)(z - a)) != yajl_status_ok ||
        yajl_complete_parse(h) != yajl_status_ok)
      abort(); /* the data is not JSON: a name broke out of its string */
    yajl_free(h);
  }
  free(html);
  ft_report_input_free(&in);
  return 0;
}
