/* NVTX injection: NVTX ranges, marks and domains become flagtrace CPU ranges. */
#define _GNU_SOURCE
#define NVTX_NO_IMPL /* we implement the calls; we do not want the loader stubs */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "inject.h"
#include "internal.h"

#define INJECT_EXPORT __attribute__((visibility("default")))

/* Registered strings and domain names are handed out as pointers to our own
 * copies. NVTX never releases a registered string, so they are kept, listed, for
 * the life of the process. */
typedef struct kept {
  struct kept *next;
  char text[];
} kept;
static kept *kept_head;
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *keep(const char *s) {
  size_t n = strlen(s) + 1;
  kept *k = malloc(sizeof *k + n);
  if (!k) return NULL;
  memcpy(k->text, s, n);
  pthread_mutex_lock(&kept_mu);
  k->next = kept_head;
  kept_head = k;
  pthread_mutex_unlock(&kept_mu);
  return k->text;
}

static const char *registered(const void *h) { return h ? (const char *)h : "(null)"; }

/* wchar_t (UTF-32 on Linux) to UTF-8; invalid code points become U+FFFD. */
static void to_utf8(const wchar_t *w, char *out, size_t len) {
  size_t o = 0;
  for (; w && *w && o + 4 < len; w++) {
    uint32_t c = (uint32_t)*w;
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    o += ft__utf8_put(c, (unsigned char *)out + o);
  }
  out[o] = '\0';
}

/* The message of an event attribute, as text in buf (or a stable pointer). */
static const char *message(const nvtxEventAttributes_t *a, char *buf, size_t len) {
  if (!a) return "(null)";
  switch (a->messageType) {
  case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii ? a->message.ascii : "";
  case NVTX_MESSAGE_TYPE_UNICODE: to_utf8(a->message.unicode, buf, len); return buf;
  case NVTX_MESSAGE_TYPE_REGISTERED: return registered(a->message.registered);
  default: return "(unnamed)";
  }
}

static int push(const char *name) {
  ft__od_range_begins(name); /* first: a capture by steps may start or end here */
  ft_session *s = ft__inject_session();
  if (!s || ft_range_push(s, name, NULL) != FT_OK) return -1;
  return ft__range_depth(s) - 1; /* NVTX: the 0-based level of the range started */
}

static int pop(void) {
  ft_session *s = ft__inject_session();
  if (!s) return -1;
  int level = ft__range_depth(s) - 1;
  return ft_range_pop(s) == FT_OK ? level : -1;
}

static nvtxRangeId_t start(const char *name) {
  ft__od_range_begins(name);
  ft_session *s = ft__inject_session();
  uint64_t id = 0;
  return s && ft__range_start(s, name, &id) == FT_OK ? id : 0;
}

static void end(nvtxRangeId_t id) {
  ft_session *s = ft__inject_session();
  if (s && id) ft__range_end(s, id);
}

static void mark(const char *name) {
  ft_session *s = ft__inject_session();
  if (s) ft__mark(s, name);
}

/* ---- NVTX core ---- */
static int NVTX_API push_ex(const nvtxEventAttributes_t *a) {
  char buf[1024];
  return push(message(a, buf, sizeof buf));
}
static int NVTX_API push_a(const char *m) { return push(m ? m : "(null)"); }
static int NVTX_API push_w(const wchar_t *m) {
  char buf[1024];
  to_utf8(m, buf, sizeof buf);
  return push(buf);
}
static int NVTX_API pop_core(void) { return pop(); }
static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *a) {
  char buf[1024];
  return start(message(a, buf, sizeof buf));
}
static nvtxRangeId_t NVTX_API start_a(const char *m) { return start(m ? m : "(null)"); }
static nvtxRangeId_t NVTX_API start_w(const wchar_t *m) {
  char buf[1024];
  to_utf8(m, buf, sizeof buf);
  return start(buf);
}
static void NVTX_API end_core(nvtxRangeId_t id) { end(id); }
static void NVTX_API mark_ex(const nvtxEventAttributes_t *a) {
  char buf[1024];
  mark(message(a, buf, sizeof buf));
}
static void NVTX_API mark_a(const char *m) { mark(m ? m : "(null)"); }
static void NVTX_API mark_w(const wchar_t *m) {
  char buf[1024];
  to_utf8(m, buf, sizeof buf);
  mark(buf);
}

/* ---- NVTX domains (CORE2) ---- */
static int NVTX_API d_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  (void)d;
  return push_ex(a);
}
static int NVTX_API d_pop(nvtxDomainHandle_t d) {
  (void)d;
  return pop();
}
static nvtxRangeId_t NVTX_API d_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  (void)d;
  return start_ex(a);
}
static void NVTX_API d_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  (void)d;
  end(id);
}
static void NVTX_API d_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  (void)d;
  mark_ex(a);
}
static nvtxStringHandle_t NVTX_API d_register_a(nvtxDomainHandle_t d, const char *str) {
  (void)d;
  return (nvtxStringHandle_t)keep(str ? str : "");
}
static nvtxStringHandle_t NVTX_API d_register_w(nvtxDomainHandle_t d, const wchar_t *str) {
  (void)d;
  char buf[1024];
  to_utf8(str, buf, sizeof buf);
  return (nvtxStringHandle_t)keep(buf);
}
static nvtxDomainHandle_t NVTX_API d_create_a(const char *name) { return (nvtxDomainHandle_t)keep(name ? name : ""); }
static nvtxDomainHandle_t NVTX_API d_create_w(const wchar_t *name) {
  char buf[256];
  to_utf8(name, buf, sizeof buf);
  return (nvtxDomainHandle_t)keep(buf);
}

/* The slot types are NVTX's own, so a drifted signature fails to build. */
#define SET(table, size, id, fn, type)                                                    \
  do {                                                                                    \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), type), #fn " type");     \
    if ((unsigned)(id) < (size) && (table)[id]) *(table)[id] = (NvtxFunctionPointer)(fn); \
  } while (0)

/* Called by NVTX at the program's first NVTX call when NVTX_INJECTION64_PATH names
 * this library. Returns 1 on success (NVTX then routes calls here). */
INJECT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const NvtxExportTableCallbacks *cb = get_export_table ? get_export_table(NVTX_ETID_CALLBACKS) : NULL;
  if (!cb || !cb->GetModuleFunctionTable) return 0;
  NvtxFunctionTable t = NULL;
  unsigned int n = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || !t) return 0;
  SET(t, n, NVTX_CBID_CORE_MarkEx, mark_ex, nvtxMarkEx_impl_fntype);
  SET(t, n, NVTX_CBID_CORE_MarkA, mark_a, nvtxMarkA_impl_fntype);
  SET(t, n, NVTX_CBID_CORE_MarkW, mark_w, nvtxMarkW_impl_fntype);
  SET(t, n, NVTX_CBID_CORE_RangeStartEx, start_ex, nvtxRangeStartEx_impl_fntype);
  SET(t, n, NVTX_CBID_CORE_RangeStartA, start_a, nvtxRangeStartA_impl_fntype);
  SET(t, n, NVTX_CBID_CORE_RangeStartW, start_w, nvtxRangeStartW_impl_fntype);
  SET(t, n, NVTX_CBID_CORE_RangeEnd, end_core, nvtxRangeEnd_impl_fntype);
  SET(t, n, NVTX_CBID_CORE_RangePushEx, push_ex, nvtxRangePushEx_impl_fntype);
  SET(t, n, NVTX_CBID_CORE_RangePushA, push_a, nvtxRangePushA_impl_fntype);
  SET(t, n, NVTX_CBID_CORE_RangePushW, push_w, nvtxRangePushW_impl_fntype);
  SET(t, n, NVTX_CBID_CORE_RangePop, pop_core, nvtxRangePop_impl_fntype);
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) && t) {
    SET(t, n, NVTX_CBID_CORE2_DomainMarkEx, d_mark, nvtxDomainMarkEx_impl_fntype);
    SET(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, d_start, nvtxDomainRangeStartEx_impl_fntype);
    SET(t, n, NVTX_CBID_CORE2_DomainRangeEnd, d_end, nvtxDomainRangeEnd_impl_fntype);
    SET(t, n, NVTX_CBID_CORE2_DomainRangePushEx, d_push, nvtxDomainRangePushEx_impl_fntype);
    SET(t, n, NVTX_CBID_CORE2_DomainRangePop, d_pop, nvtxDomainRangePop_impl_fntype);
    SET(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, d_register_a, nvtxDomainRegisterStringA_impl_fntype);
    SET(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, d_register_w, nvtxDomainRegisterStringW_impl_fntype);
    SET(t, n, NVTX_CBID_CORE2_DomainCreateA, d_create_a, nvtxDomainCreateA_impl_fntype);
    SET(t, n, NVTX_CBID_CORE2_DomainCreateW, d_create_w, nvtxDomainCreateW_impl_fntype);
  }
  return ft__inject_session() ? 1 : 0;
}
