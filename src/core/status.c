/* ft_strerror and ft_version: the texts behind the status X-macro. */
#include "flagtrace/flagtrace.h"

const char *ft_strerror(ft_status status) {
  switch (status) {
#define FT__STATUS_CASE(name, value, text) \
  case name: return text;
    FT_STATUS_LIST(FT__STATUS_CASE)
#undef FT__STATUS_CASE
  }
  return "unknown flagtrace status";
}

const char *ft_version(void) { return FT_VERSION_STRING; }
