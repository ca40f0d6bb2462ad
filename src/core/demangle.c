/* C++ kernel names demangled without linking libstdc++: __cxa_demangle found at run time. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "tracer_support.h"

typedef char *(*cxa_demangle_fn)(const char *mangled, char *out, size_t *len, int *status);

static cxa_demangle_fn cxa_demangle;
static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;

/* A C++ program (torch) already has libstdc++ loaded: use its copy. A C program
 * loads it on first need; without it, names stay mangled rather than failing.
 * The handle is kept for the process's life: the function is used until exit. */
static void resolve(void) {
  void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
  void *h = NULL;
  if (!f) h = dlopen("libstdc++.so.6", RTLD_NOLOAD | RTLD_LAZY);
  if (!f && !h) h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
  if (!f && h) f = dlsym(h, "__cxa_demangle");
  if (!f) {
    ft__log("demangle: __cxa_demangle not found (libstdc++.so.6: %s); kernel names stay mangled",
            h ? "no such symbol" : "not loadable");
    return;
  }
  *(void **)&cxa_demangle = f; /* POSIX: dlsym's object pointer converts to a function pointer */
}

char *ft__demangle(const char *name) {
  if (!name || name[0] != '_' || name[1] != 'Z') return NULL;
  pthread_once(&resolve_once, resolve);
  if (!cxa_demangle) return NULL;
  int status = 0;
  char *out = cxa_demangle(name, NULL, NULL, &status);
  if (status) {
    free(out);
    return NULL;
  }
  /* cppcheck-suppress returnDanglingLifetime ; out is malloc()ed by __cxa_demangle, not &status */
  return out;
}
