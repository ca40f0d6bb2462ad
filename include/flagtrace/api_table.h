/* The session API as one table of function pointers: for an adaptor whose process may
 * hold another copy of the flagtrace core (record's injection library). */
#ifndef FLAGTRACE_API_TABLE_H
#define FLAGTRACE_API_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "flagtrace/device_tracer.h"
#include "flagtrace/flagtrace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every function of the table: X(return type, name, (parameters)). The struct and
 * the provider's filling (ft_api_get) come from this one list, and the provider
 * checks each entry against the function's own prototype. */
#define FT_API_FUNCS(X)                                                                                              \
  X(const char *, ft_strerror, (ft_status status))                                                                   \
  X(const char *, ft_version, (void))                                                                                \
  X(void, ft_session_options_init, (ft_session_options * opts))                                                      \
  X(ft_status, ft_session_create, (ft_session * *out, const ft_session_options *opts))                               \
  X(void, ft_session_destroy, (ft_session * session))                                                                \
  X(ft_status, ft_session_start, (ft_session * session))                                                             \
  X(ft_status, ft_session_stop, (ft_session * session))                                                              \
  X(ft_status, ft_session_set_collecting, (ft_session * session, int collecting))                                    \
  X(ft_status, ft_correlation_push, (ft_session * session, uint64_t external_id))                                    \
  X(ft_status, ft_correlation_pop, (ft_session * session))                                                           \
  X(ft_status, ft_user_range_push, (ft_session * session, uint64_t id, const char *name))                            \
  X(ft_status, ft_user_range_pop, (ft_session * session))                                                            \
  X(ft_status, ft_session_counts_get, (ft_session * session, ft_session_counts * out))                               \
  X(ft_status, ft_session_device_status, (const ft_session *session, const char **why))                              \
  X(int, ft_session_device_lost, (const ft_session *session, uint64_t *at_ns, const char **why))                     \
  X(const char *, ft_session_last_error, (const ft_session *session))                                                \
  X(ft_status, ft_session_foreach_event,                                                                             \
    (ft_session * session, uint64_t lo_ns, uint64_t hi_ns, ft_export_visitor visit, void *ctx, uint64_t *discarded)) \
  X(size_t, ft_session_streams, (ft_session * session, uint32_t * devices, uint32_t * streams, size_t max))          \
  X(size_t, ft_json_escape, (char *dst, const char *s, size_t n))                                                    \
  X(int, ft_json_is_literal, (const char *s, size_t n))                                                              \
  X(int, ft_diagnostics_enabled, (void))

typedef struct ft_api {
  size_t size; /* sizeof(ft_api) as the provider built it: entries past it are absent */
#define FT__API_FIELD(ret, name, params) ret(*name) params;
  FT_API_FUNCS(FT__API_FIELD)
#undef FT__API_FIELD
} ft_api;

/* This library's table (static storage, never NULL). */
FT_EXPORT const ft_api *ft_api_get(void);

#ifdef __cplusplus
}
#endif

#endif
