/* Names shared by the injection library and `record`: output-name expansion, and the
 * shared libraries that mean "this process uses the device", per accelerator. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject.h"
#include "rank.h"

/* ---- output names ---- */

size_t ft__inject_expand(const char *pattern, char *out, size_t len) {
  return ft__inject_expand_n(pattern, 0, out, len);
}

size_t ft__inject_expand_n(const char *pattern, unsigned no, char *out, size_t len) {
  size_t o = 0;
  char val[256];
  for (const char *p = pattern; *p && o + 1 < len; p++) {
    const char *v = NULL;
    if (p[0] == '%' && p[1]) {
      switch (p[1]) {
      case 'p':
        snprintf(val, sizeof val, "%ld", (long)getpid());
        v = val;
        break;
      case 'h':
        if (gethostname(val, sizeof val)) snprintf(val, sizeof val, "host");
        val[sizeof val - 1] = '\0';
        v = val;
        break;
      case 'r': { /* only a rank's digits: RANK=../x or a line break must not reach a file name */
        const char *r = ft__env_rank_text();
        snprintf(val, sizeof val, "%s", r ? r : "norank");
        v = val;
        break;
      }
      case 'n':
        if (no) snprintf(val, sizeof val, "%u", no);
        v = no ? val : NULL;
        break;
      case '%': v = "%"; break;
      }
    }
    if (v) {
      p++;
      for (; *v && o + 1 < len; v++) out[o++] = *v;
    } else {
      out[o++] = *p;
    }
  }
  out[o] = '\0';
  return o;
}

/* ---- runtime libraries ---- */

/* Keyed by FLAGOS_ACCELERATOR, not by tracer: one tracer file serves several
 * accelerators (cupti_tracer.c is CUDA's, MetaX's and PPU's) whose runtimes differ,
 * and the activity library a tracer binds (libcupti, libmspti) is not what a program
 * loads to use the device. Adding a vendor is one row. Names are matched against
 * the file name of every loaded object: exactly, or followed by a '.' (a version).
 * Verified names are marked; the others are the vendors' documented link names,
 * not checked on their hardware (README, compatibility matrix). */
static const ft__runtime_set runtime_sets[] = {
    /* libcudart is linked statically by default (nvcc), but every CUDA program
     * loads the driver, libcuda.so.1, at its first call (the H200 step of
     * scripts/gpu-check.sh records the sample this way) */
    {"cuda", {"libcuda.so", "libcudart.so"}},
    {"ppu", {"libcuda.so", "libcudart.so"}},        /* CUDA-compatible: assumed */
    {"metax", {"libmcruntime.so"}},                 /* MACA runtime: assumed */
    {"dcu", {"libamdhip64.so", "libgalaxyhip.so"}}, /* HIP runtime (ROCm, Hygon DTK): assumed */
    {"ascend", {"libascendcl.so"}},                 /* CANN's ACL runtime: assumed */
    {"musa", {"libmusart.so", "libmusa.so"}},       /* MUSA runtime and driver: assumed */
    {"gcu", {"libtopsrt.so"}},                      /* TopsRider runtime: assumed */
};

const ft__runtime_set *ft__runtime_set_for(const char *accelerator) {
  for (size_t i = 0; i < sizeof runtime_sets / sizeof runtime_sets[0]; i++)
    if (!strcmp(runtime_sets[i].accelerator, accelerator)) return &runtime_sets[i];
  return NULL;
}

bool ft__runtime_matches(const ft__runtime_set *set, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  for (size_t i = 0; i < FT__MAX_RUNTIME_NAMES && set->names[i]; i++) {
    size_t n = strlen(set->names[i]);
    if (!strncmp(base, set->names[i], n) && (base[n] == '\0' || base[n] == '.')) return true;
  }
  return false;
}

size_t ft__runtime_list(const ft__runtime_set *set, char *out, size_t len) {
  size_t o = 0;
  out[0] = '\0';
  for (size_t i = 0; i < FT__MAX_RUNTIME_NAMES && set->names[i]; i++) {
    size_t n = strlen(set->names[i]);
    if (o + n + 5 >= len) break;
    if (i) {
      memcpy(out + o, " or ", 4);
      o += 4;
    }
    memcpy(out + o, set->names[i], n + 1);
    o += n;
  }
  return o;
}
