/* libFuzzer harness for the HTML report and the stats writers: arbitrary trace bytes must
 * give a page whose data is valid JSON with no "<" (no name can close the script element)
 * and exactly the template's two script elements, or a clean error. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ft_stat_job job;
  char err[640];
  if (ft_stat_job_read_mem(&job, "</script><b>x.json", (const char *)data, size, true, 8, true, err, sizeof err)) {
    if (!err[0]) abort();
    ft_stat_job_free(&job);
    return 0;
  }
  /* every report, through every writer */
  FILE *null = fopen("/dev/null", "w");
  ft_report_opts o = {.limit = 5, .by_rank = true};
  for (int r = 0; r < REP_N && null; r++) {
    ft_report rep;
    if (!ft_report_build(&rep, r, &job, &o)) {
      ft_report_table(null, &rep, 12);
      ft_report_csv(null, &rep);
      ft_report_json(null, &rep);
    }
    ft_report_free(&rep);
  }
  if (null) fclose(null);
  char *html = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&html, &len);
  if (!m) abort();
  ft_status s = ft_report_html_write(m, &job, NULL);
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
  ft_stat_job_free(&job);
  return 0;
}
