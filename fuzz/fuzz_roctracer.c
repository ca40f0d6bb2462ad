/* libFuzzer harness for the roctracer record walker (src/tracers/roctracer_tracer.c):
 * arbitrary bytes as the [begin, end) roctracer hands its buffer callback, walked
 * with a stand-in for roctracer_next_record that the input steers (the real one
 * steps one record; a bad one may stall, go back or jump past the end). Every record
 * kept must be a whole one inside the buffer; the walk must end. The records are
 * then decoded, their kernel-name pointers made valid first (the library's are). */
#include "../src/tracers/roctracer_tracer.c"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *lo, *hi, *last;
static size_t steps;

static roctracer_status_t next_record(const roctracer_record *r, const roctracer_record **next) {
  /* the walk only ever stands on whole records inside the buffer, each after the last */
  if ((const char *)r < lo || (const char *)r + sizeof *r > hi || (last && (const char *)r <= last)) abort();
  last = (const char *)r;
  steps++;
  switch (r->pad % 8) {     /* the input picks how the "library" behaves */
  case 0: *next = r; break; /* stalls */
  case 1: *next = (const roctracer_record *)((const char *)r - 8); break;  /* goes back */
  case 2: *next = (const roctracer_record *)((const char *)r + 40); break; /* a short step */
  case 3: return (roctracer_status_t)1;                                    /* fails */
  default: *next = r + 1; break;                                           /* as roctracer does */
  }
  return ROCTRACER_STATUS_SUCCESS;
}

static const char *op_string(uint32_t domain, uint32_t op, uint32_t kind) {
  (void)domain, (void)op, (void)kind;
  return "hipLaunchKernel";
}

static ft_status on_event(void *ctx, const ft_device_event *ev) {
  (void)ctx;
  if (!ev->name || ev->end_ns < ev->start_ns) abort();
  return FT_OK;
}

static ft_status on_external(void *ctx, uint32_t corr, uint64_t ext) {
  (void)ctx, (void)corr, (void)ext;
  return FT_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 1); /* exactly the input: a read past it is ASan's */
  if (!buf) return 0;
  memcpy(buf, data, size);
  lo = buf;
  hi = buf + size;
  last = NULL;
  steps = 0;
  roc_tracer t;
  memset(&t, 0, sizeof t);
  pthread_mutex_init(&t.mu, NULL);
  t.api.roctracer_next_record = next_record;
  t.api.roctracer_op_string = op_string;
  ft_event_sink sink = {.event = on_event, .external_id = on_external};
  t.base.tracer.ops = &roctracer_ops;
  t.base.loaded = true;
  if (ft__tracer_claim(&t.base, &sink, 0)) abort();                /* the armed tracer its callback finds */
  t.clock = (ft__clock_map){0, 0, UINT64_MAX / 2, UINT64_MAX / 2}; /* identity: vendor time is realtime */
  buffer_callback(buf, buf + size, NULL);
  ft__tracer_release(&t.base);
  if (t.n_recs > steps + 1) abort(); /* one record kept per record stood on */
  for (size_t i = 0; i < t.n_recs; i++) {
    roctracer_record *r = &t.recs[i];
    if (r->domain == ACTIVITY_DOMAIN_HIP_OPS && r->kind == HIP_KIND_KERNEL)
      r->v.kernel_name = i % 2 ? "_Z6kernelPf" : "plain_kernel";
    char *demangled = NULL;
    decode(&t, r, &demangled);
    free(demangled);
  }
  free(t.recs);
  pthread_mutex_destroy(&t.mu);
  free(buf);
  return 0;
}
