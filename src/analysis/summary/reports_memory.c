/* The `stats -r mem` report (issue 51): device memory per rank and device, from ft_stat_file.mem. */
#include "reports.h"
