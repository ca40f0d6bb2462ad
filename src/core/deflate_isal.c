/* ISA-L's igzip as a block backend, loaded at run time (libisal.so.2) so the library never needs it to load. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deflate.h"

#ifdef FT_HAVE_ISAL
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>

/* Debian ships no static libisal, and the GPU machines have no libisal2: so it is
 * bound with dlopen, from the system, beside this library (a wheel or an install
 * that bundles it, real name and libisal.so.2 link), or where the build found it;
 * without it gzip uses zlib. */
static struct {
  void (*deflate_init)(struct isal_zstream *);
  int (*deflate)(struct isal_zstream *);
  uint32_t (*crc)(uint32_t, const unsigned char *, uint64_t);
} api;

typedef struct isal_state {
  struct isal_zstream z;
  uint8_t level_buf[ISAL_DEF_LVL1_DEFAULT];
} isal_state;

/* zeroed: with garbage in a fresh state (reused heap memory under ASan) igzip's
 * output for the same block varied more often (see IN_TAIL in deflate.c) */
static void *isal_new(void) { return calloc(1, sizeof(isal_state)); }
static void isal_free(void *st) { free(st); }

static size_t isal_compress(void *st, const void *in, size_t n, bool final, void *out, size_t cap) {
  isal_state *s = st;
  struct isal_zstream *z = &s->z;
  api.deflate_init(z);
  z->level = 1; /* about zlib level 1's ratio at several times its speed */
  z->level_buf = s->level_buf;
  z->level_buf_size = sizeof s->level_buf;
  z->gzip_flag = IGZIP_DEFLATE;
  z->end_of_stream = final;
  z->flush = final ? NO_FLUSH : SYNC_FLUSH;
  z->next_in = (uint8_t *)(uintptr_t)in;
  z->avail_in = (uint32_t)n;
  z->next_out = out;
  z->avail_out = (uint32_t)cap;
  if (api.deflate(z) != COMP_OK || z->avail_in) return 0;
  /* done means: the stream ended (last block) or the flush written out */
  if (final ? z->internal_state.state != ZSTATE_END : z->internal_state.state != ZSTATE_NEW_HDR) return 0;
  return cap - z->avail_out;
}

static uint32_t isal_crc(uint32_t crc, const void *p, size_t n) { return api.crc(crc, p, n); }

static const ft__deflate_ops isal_ops = {"isa-l", isal_new, isal_free, isal_compress, isal_crc};
static const ft__deflate_ops *loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static ft__isal_inflate_api inflate_api;
static bool have_inflate;

static bool bind(void *h) {
  *(void **)&inflate_api.init = dlsym(h, "isal_inflate_init");
  *(void **)&inflate_api.reset = dlsym(h, "isal_inflate_reset");
  *(void **)&inflate_api.inflate = dlsym(h, "isal_inflate");
  have_inflate = inflate_api.init && inflate_api.reset && inflate_api.inflate;
  *(void **)&api.deflate_init = dlsym(h, "isal_deflate_init");
  *(void **)&api.deflate = dlsym(h, "isal_deflate");
  *(void **)&api.crc = dlsym(h, "crc32_gzip_refl");
  return api.deflate_init && api.deflate && api.crc;
}

/* The stream struct is ours to allocate and its layout has changed within
 * soname 2, so only the release whose headers this was built with is used: its
 * file's real name (libisal.so.2.0.30) is compared. */
static void *open_checked(const char *file) {
  void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!h) return NULL;
#ifdef FT_ISAL_REAL_NAME
  struct link_map *lm = NULL;
  char *real = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name ? realpath(lm->l_name, NULL) : NULL;
  const char *base = real ? strrchr(real, '/') : NULL;
  bool same = base && !strcmp(base + 1, FT_ISAL_REAL_NAME);
  free(real);
  if (!same) {
    ft__log("not using %s: not the ISA-L release this build has headers for (%s)", file, FT_ISAL_REAL_NAME);
    dlclose(h);
    return NULL;
  }
#endif
  if (bind(h)) return h;
  dlclose(h);
  return NULL;
}

static void *open_beside_us(void) {
  char path[4096];
  return ft__path_beside_us("libisal.so.2", path, sizeof path) ? open_checked(path) : NULL;
}

static void load(void) {
  void *h = open_checked("libisal.so.2");
  if (!h) h = open_beside_us();
#ifdef FT_ISAL_BUILD_PATH
  if (!h) h = open_checked(FT_ISAL_BUILD_PATH);
#endif
  if (h) loaded = &isal_ops;
}

const ft__deflate_ops *ft__deflate_isal(void) {
  pthread_once(&once, load);
  return loaded;
}

const ft__isal_inflate_api *ft__isal_inflate(void) {
  pthread_once(&once, load);
  return loaded && have_inflate ? &inflate_api : NULL;
}
#else
const ft__deflate_ops *ft__deflate_isal(void) { return NULL; }
const ft__isal_inflate_api *ft__isal_inflate(void) { return NULL; }
#endif
