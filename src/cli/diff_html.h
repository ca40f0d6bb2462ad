/* flagtrace diff -f html: the diff's reports as one self-contained page of tables. */
#ifndef FLAGTRACE_CLI_DIFF_HTML_H
#define FLAGTRACE_CLI_DIFF_HTML_H

#include <stdio.h>

#include "diff.h"
#include "stats_out.h"

/* Writes the page: both sides' files, the alignment, every report as a table (rows
 * where B is slower marked); every text from a trace escaped, no script. */
void ft_diff_html(FILE *f, const ft_diff *d, const ft_stat_job *const job[2]);

#endif
