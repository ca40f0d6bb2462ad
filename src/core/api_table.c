/* ft_api_get: the session API of this copy of the core, as one table. */
#include "flagtrace/api_table.h"

/* A drifted entry (the list's parameters against the function's own) fails to build. */
#define FT__API_CHECK(ret, name, params)                                         \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params), \
                 #name " in FT_API_FUNCS does not match its prototype");
FT_API_FUNCS(FT__API_CHECK)
#undef FT__API_CHECK

static const ft_api table = {.size = sizeof(ft_api),
#define FT__API_INIT(ret, name, params) .name = name,
                             FT_API_FUNCS(FT__API_INIT)
#undef FT__API_INIT
};

const ft_api *ft_api_get(void) { return &table; }
