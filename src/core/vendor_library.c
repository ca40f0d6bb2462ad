/* Finding and binding libraries: a tracer's vendor library (one search rule for every
 * vendor), and our own beside this one. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer_support.h"

static void append(char *errs, size_t len, const char *fmt, ...) FT__PRINTF(3, 4);
static void append(char *errs, size_t len, const char *fmt, ...) {
  size_t used = strlen(errs);
  if (used + 2 >= len) return;
  if (used) {
    memcpy(errs + used, "; ", 3);
    used += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(errs + used, len - used, fmt, ap);
  va_end(ap);
}

static bool try_one(const char *file, ft__load_symbols_fn load, void *api, char *path, size_t path_len, char *errs,
                    size_t errs_len) {
  void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    append(errs, errs_len, "%s", e ? e : file);
    return false;
  }
  char why[256] = "";
  if (!load(api, h, why, sizeof why)) {
    append(errs, errs_len, "%s: %s", file, why);
    dlclose(h);
    return false;
  }
  /* the file the loader chose, so diagnostics name what was really bound */
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0]) file = lm->l_name;
  snprintf(path, path_len, "%s", file);
  return true;
}

bool ft__open_vendor_library(const char *const *candidates, size_t n, const char *not_found, ft__load_symbols_fn load,
                             void *api, char *path, size_t path_len, char *why, size_t why_len) {
  char errs[1024] = "";
  const char *override = getenv("FLAGOS_TRACER_LIBRARY");
  if (override && *override) {
    /* an explicit choice is honoured or reported, never silently replaced */
    if (try_one(override, load, api, path, path_len, errs, sizeof errs)) return true;
    snprintf(why, why_len, "FLAGOS_TRACER_LIBRARY=%s could not be used: %s", override, errs);
    return false;
  }
  for (size_t i = 0; i < n; i++)
    if (candidates[i] && candidates[i][0] && try_one(candidates[i], load, api, path, path_len, errs, sizeof errs))
      return true;
  snprintf(why, why_len, "%s: %s", not_found, errs);
  return false;
}

bool ft__path_beside_us(const char *name, char *out, size_t cap) {
  Dl_info info;
  if (!dladdr((void *)&ft__path_beside_us, &info) || !info.dli_fname) return false;
  const char *slash = strrchr(info.dli_fname, '/');
  if (!slash) return false;
  return snprintf(out, cap, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname, name) < (int)cap;
}
