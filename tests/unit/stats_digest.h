/* The text of everything one `flagtrace stats` read summarized (stats_digest.c), for tests and fuzzing. */
#ifndef FT_TEST_STATS_DIGEST_H
#define FT_TEST_STATS_DIGEST_H

#include "stats.h"

/* malloc'ed text (NULL on ENOMEM); st's busy time is computed on the way. */
char *stats_digest(ft_stats *st);

#endif
