/* Each vendor's runtime and driver names of the calls advise's rules look for (docs/advise.md "## Vendors"). */
#include <ctype.h>
#include <string.h>

#include "advise_internal.h"

/* Longest first where one prefix starts another (musa before mu before mc is not
 * needed: they differ at the second letter; cuda before cu is). */
static const char *const prefixes[] = {"aclrt", "cuda", "musa", "tops", "hip", "cu", "mu", "mc"};

/* The call's name without its vendor prefix and version suffixes (_v3020, _ptsz, _ptds, _spt),
 * into buf; NULL when no vendor prefix matches. */
static const char *stem(const char *name, char *buf, size_t len, bool *acl) {
  if (!name) return NULL;
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
    size_t pl = strlen(prefixes[i]);
    if (strncmp(name, prefixes[i], pl) || !isupper((unsigned char)name[pl])) continue;
    size_t n = strlen(name + pl);
    if (n >= len) return NULL;
    memcpy(buf, name + pl, n + 1);
    for (;;) { /* strip suffixes from the end, any order */
      char *u = strrchr(buf, '_');
      if (!u) break;
      bool ver = u[1] == 'v' && isdigit((unsigned char)u[2]);
      for (const char *c = u + 2; ver && *c; c++) ver = isdigit((unsigned char)*c);
      if (!ver && strcmp(u, "_ptsz") && strcmp(u, "_ptds") && strcmp(u, "_spt")) break;
      *u = '\0';
    }
    *acl = i == 0;
    return buf;
  }
  return NULL;
}

static bool in(const char *s, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(s, *list)) return true;
  return false;
}

static const char *const sync_stems[] = {"DeviceSynchronize", "StreamSynchronize", "EventSynchronize",
                                         "CtxSynchronize",    "ThreadSynchronize", NULL};
static const char *const acl_sync_stems[] = {"SynchronizeStream",
                                             "SynchronizeDevice",
                                             "SynchronizeEvent",
                                             "SynchronizeStreamWithTimeout",
                                             "SynchronizeDeviceWithTimeout",
                                             "SynchronizeEventWithTimeout",
                                             NULL};
/* allocation and free calls that synchronize the device (cudaFree waits for the device; cudaMalloc
 * may): runtime, driver and Ascend spellings; the stream-ordered *Async ones are not among them */
static const char *const alloc_stems[] = {"Malloc",       "Free",          "MallocHost",      "FreeHost",
                                          "HostAlloc",    "MallocManaged", "MallocPitch",     "Malloc3D",
                                          "MallocArray",  "FreeArray",     "MemAlloc",        "MemFree",
                                          "MemAllocHost", "MemFreeHost",   "MemAllocManaged", "MemAllocPitch",
                                          "MemHostAlloc", "HostMalloc",    "HostFree",        NULL};
static const char *const acl_alloc_stems[] = {"Malloc", "Free", "MallocHost", "FreeHost", "MallocCached", NULL};

static const char *const memset_stems[] = {"Memset",    "Memset2D",   "Memset3D",    "MemsetD8",    "MemsetD16",
                                           "MemsetD32", "MemsetD2D8", "MemsetD2D16", "MemsetD2D32", NULL};

enum ft__call_class ft__advise_call_class(const char *name, enum ft__copy_dir *dir) {
  char buf[96];
  bool acl = false;
  const char *s = stem(name, buf, sizeof buf, &acl);
  if (dir) *dir = FT__DIR_UNKNOWN;
  if (!s) return FT__CALL_NONE;
  if (in(s, acl ? acl_sync_stems : sync_stems)) return FT__CALL_SYNC;
  if (!strncmp(s, "Memcpy", 6)) {
    if (dir) {
      *dir = strstr(s, "HtoD")                          ? FT__DIR_H2D
             : strstr(s, "DtoH")                        ? FT__DIR_D2H
             : (strstr(s, "DtoD") || strstr(s, "Peer")) ? FT__DIR_D2D
                                                        : FT__DIR_UNKNOWN;
    }
    return strstr(s, "Async") ? FT__CALL_ASYNC_COPY : FT__CALL_SYNC_COPY;
  }
  if (in(s, memset_stems)) return FT__CALL_SYNC_MEMSET;
  if (in(s, acl ? acl_alloc_stems : alloc_stems)) return FT__CALL_ALLOC;
  return FT__CALL_NONE;
}

bool ft_advise_is_sync_call(const char *name) { return ft__advise_call_class(name, NULL) == FT__CALL_SYNC; }

bool ft_advise_is_blocking_copy(const char *name) {
  enum ft__copy_dir d;
  /* a name that says another direction (cuMemcpyDtoH) is no host-to-device copy */
  return ft__advise_call_class(name, &d) == FT__CALL_SYNC_COPY && (d == FT__DIR_H2D || d == FT__DIR_UNKNOWN);
}

bool ft_advise_is_alloc_call(const char *name) { return ft__advise_call_class(name, NULL) == FT__CALL_ALLOC; }

enum ft__copy_dir ft__advise_copy_dir(const char *work_name, bool *pageable) {
  if (pageable) *pageable = work_name && strstr(work_name, "Pageable");
  if (!work_name) return FT__DIR_UNKNOWN;
  if (strstr(work_name, "HtoD")) return FT__DIR_H2D;
  if (strstr(work_name, "DtoH")) return FT__DIR_D2H;
  if (strstr(work_name, "DtoD") || strstr(work_name, "PtoP")) return FT__DIR_D2D;
  return FT__DIR_UNKNOWN;
}

const char *ft_rule_name(enum ft_rule r) {
  static const char *const names[FT_RULE_N] = {"sync",       "h2d-copy",   "step-start",    "launch-bound",
                                               "sync-memop", "gap",        "straggler",     "fuse",
                                               "low-flops",  "alloc-call", "fragmentation", "leak"};
  return (unsigned)r < FT_RULE_N ? names[r] : "unknown";
}
