/* The HTML report of a job (flagtrace report). */
#ifndef FLAGTRACE_CLI_REPORT_H
#define FLAGTRACE_CLI_REPORT_H

#include <stdio.h>

#include "stats.h"

/* Writes the self-contained HTML of job (read with timeline bins) to out; its
 * links to the traces are relative to out_dir (absolute; NULL: paths as given). */
ft_status ft_report_html_write(FILE *out, const ft_stat_job *job, const char *out_dir);

#endif
