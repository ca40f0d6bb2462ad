// The kineto adaptor's hand-over without torch: what kineto's loggers and torch's
// post-processing read from each activity (type, times, ids, rows, the linked op,
// flows, names, metadata JSON and single values), that the activities outlive the
// session, and that the metadata says what a GenericTraceActivity said (same keys,
// same values, same quoting). Built only with -DFT_KINETO_SRC (kineto's libkineto).
#include "kineto_harness.h"

#include <yajl/yajl_tree.h>

#include <cstdio>

using libkineto::ActivityType;

static int failures = 0;
#define CHECK(cond)                                                               \
  do {                                                                            \
    if (!(cond)) {                                                                \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                                 \
    }                                                                             \
  } while (0)
#define CHECK_EQ(a, b)                                                                                      \
  do {                                                                                                      \
    auto va = (a);                                                                                          \
    auto vb = (b);                                                                                          \
    if (!(va == vb)) {                                                                                      \
      std::fprintf(stderr, "%s:%d: %s != %s\n", __FILE__, __LINE__, #a, #b);                                \
      failures++;                                                                                           \
    }                                                                                                       \
  } while (0)

enum : uint64_t { LO = 1000000, HI = 2000000 };

static const ft_kv kernel_md[] = {{"grid", "[2, 1, 1]"}, {"note", "N/A"}, {"say", "say \"hi\"\n"}};
static const ft_kv api_md[] = {{"cbid", "211"}};

// The metadata a GenericTraceActivity carried before (the adaptor's old add_metadata).
static std::string generic_json(const ft_device_event& e) {
  libkineto::TraceSpan span(0, 0, "x");
  libkineto::GenericTraceActivity a(span, ActivityType::CONCURRENT_KERNEL, e.name);
  auto add = [&a](const char* key, const std::string& value) {
    if (ft_json_is_literal(value.data(), value.size())) return a.addMetadata(key, value);
    std::string esc(6 * value.size() + 2, '\0');
    size_t w = ft_json_escape(&esc[0], value.data(), value.size());
    a.addMetadataQuoted(key, esc.substr(1, w - 2));
  };
  bool device = e.kind == FT_EVENT_KERNEL || e.kind == FT_EVENT_MEMCPY || e.kind == FT_EVENT_MEMSET;
  if (device) {
    add("device", std::to_string(e.device));
    add("stream", std::to_string(e.stream));
  }
  add("correlation", std::to_string(e.correlation_id));
  for (size_t i = 0; i < e.n_metadata; i++) add(e.metadata[i].key, e.metadata[i].value);
  return a.metadataJson();
}

// {key: value} of a metadataJson text, values as yajl parsed them (type and text).
static std::map<std::string, std::string> parsed(const std::string& json) {
  std::string doc = "{" + json + "}";
  char err[256];
  yajl_val v = yajl_tree_parse(doc.c_str(), err, sizeof err);
  std::map<std::string, std::string> out;
  if (!v || !YAJL_IS_OBJECT(v)) {
    std::fprintf(stderr, "not JSON: %s (%s)\n", doc.c_str(), err);
    failures++;
    return out;
  }
  for (size_t i = 0; i < v->u.object.len; i++) {
    yajl_val x = v->u.object.values[i];
    std::string text = YAJL_IS_STRING(x) ? std::string("s:") + YAJL_GET_STRING(x)
                       : YAJL_IS_NUMBER(x) ? std::string("n:") + YAJL_GET_NUMBER(x)
                       : YAJL_IS_ARRAY(x)  ? "a:" + std::to_string(x->u.array.len)
                                           : "other";
    out[v->u.object.keys[i]] = text;
  }
  yajl_tree_free(v);
  return out;
}

int main() {
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent", 1); // CPU only: events are injected
  ft_session* s = nullptr;
  CHECK(ft_session_create(&s, nullptr) == FT_OK);
  Kept kept;
  auto session = std::make_unique<flagtrace_kineto::Session>(s, true, kept.keep()); // starts it
  static const ft_kv sync_md[] = {{"cuda_sync_kind", "Stream Sync"}, {"stream", "-1"}, {"correlation", "9"},
                                  {"device", "0"}, {"context", "1"}};
  const ft_device_event events[] = {
      {FT_EVENT_RUNTIME, LO + 10, LO + 20, 5, true, 3, 0, 0, 4242, "cudaLaunchKernel", api_md, 1},
      {FT_EVENT_KERNEL, LO + 30, LO + 40, 5, true, 3, 0, 7, 0, "k1", kernel_md, 3},
      {FT_EVENT_KERNEL, LO + 50, LO + 60, 6, false, 0, 1, 9, 0, "k1", kernel_md, 3}, // no launch: no flow
      {FT_EVENT_MEMCPY, LO + 70, LO + 80, 7, true, 77, 0, 7, 0, "Memcpy HtoD (Pageable -> Device)", nullptr, 0},
      {FT_EVENT_KERNEL, HI + 1, HI + 9, 8, false, 0, 0, 7, 0, "late", kernel_md, 3}, // outside the window
      {FT_EVENT_SYNC, LO + 90, LO + 95, 9, false, 0, 0, UINT32_MAX, 0, "Stream Sync", sync_md, 5}, // no launch
  };
  for (const auto& e : events) CHECK(ft__session_inject(s, &e) == FT_OK);
  session->stop();
  ft__session_set_window(s, LO, HI);
  Ops ops;
  const libkineto::ITraceActivity* op3 = ops.add(3, "aten::add_");
  KeepingLogger logger;
  session->processTrace(logger, ops.resolver(), LO, HI);
  // no trace buffer: kineto would write its span as a "Trace" slice torch-cuda has not
  CHECK(session->getTraceBuffer() == nullptr);
  session.reset(); // kineto destroys the session right after processTrace
  CHECK_EQ(kept.blocks.size(), (size_t)1); // the activities live on in the keeper

  CHECK_EQ(logger.generic, (size_t)0); // never copied as a GenericTraceActivity
  CHECK_EQ(logger.activities.size(), (size_t)5);
  if (logger.activities.size() != 5) return 1;
  const auto& rt = *logger.activities[0];
  const auto& k1 = *logger.activities[1];
  const auto& k2 = *logger.activities[2];
  const auto& cp = *logger.activities[3];
  const auto& sy = *logger.activities[4];

  CHECK(rt.type() == ActivityType::CUDA_RUNTIME);
  CHECK_EQ(rt.name(), std::string("cudaLaunchKernel"));
  CHECK_EQ(rt.timestamp(), (int64_t)LO + 10);
  CHECK_EQ(rt.duration(), (int64_t)10);
  CHECK_EQ(rt.deviceId(), (int64_t)getpid());
  CHECK_EQ(rt.resourceId(), (int64_t)4242);
  CHECK_EQ(rt.getThreadId(), 4242);
  CHECK_EQ(rt.correlationId(), (int64_t)3); // the op id: kineto's "External id"
  CHECK(rt.linkedActivity() == op3);
  CHECK(rt.flowStart());
  CHECK_EQ(rt.flowId(), (int64_t)5);
  CHECK_EQ(rt.flowType(), (int)libkineto::kLinkAsyncCpuGpu);
  CHECK(rt.traceSpan() && rt.traceSpan()->name == "flagtrace");
  CHECK_EQ(rt.metadataJson(), std::string("\"correlation\": 5, \"cbid\": 211"));
  CHECK_EQ(rt.getMetadataValue("cbid"), std::string("211"));
  CHECK_EQ(rt.getMetadataValue("device"), std::string(""));

  CHECK(k1.type() == ActivityType::CONCURRENT_KERNEL);
  CHECK_EQ(k1.name(), std::string("k1"));
  CHECK_EQ(k1.deviceId(), (int64_t)0);
  CHECK_EQ(k1.resourceId(), (int64_t)7);
  CHECK(k1.linkedActivity() == op3);
  CHECK(!k1.flowStart());
  CHECK_EQ(k1.flowId(), (int64_t)5);
  CHECK_EQ(k1.metadataJson(), std::string("\"device\": 0, \"stream\": 7, \"correlation\": 5, \"grid\": [2, 1, 1], "
                                          "\"note\": \"N/A\", \"say\": \"say \\\"hi\\\"\\n\""));
  CHECK_EQ(k1.getMetadataValue("grid"), std::string("[2, 1, 1]"));
  CHECK_EQ(k1.getMetadataValue("note"), std::string("N/A"));
  CHECK_EQ(k1.getMetadataValue("say"), std::string("say \\\"hi\\\"\\n")); // as kineto stored it: unquoted
  CHECK_EQ(k1.getMetadataValue("stream"), std::string("7"));

  CHECK_EQ(k2.deviceId(), (int64_t)1);
  CHECK_EQ(k2.correlationId(), (int64_t)0);
  CHECK(k2.linkedActivity() == nullptr);
  CHECK_EQ(k2.flowId(), (int64_t)0);
  CHECK_EQ(k2.flowType(), 0);
  CHECK(cp.type() == ActivityType::GPU_MEMCPY);
  CHECK_EQ(cp.correlationId(), (int64_t)77);
  CHECK(cp.linkedActivity() == nullptr); // op 77 is not torch's
  CHECK_EQ(cp.metadataJson(), std::string("\"device\": 0, \"stream\": 7, \"correlation\": 7"));

  // a sync as kineto's CudaSyncActivity: its vendor id as its own id (kineto's External
  // id when unlinked), stream -1 as the row, its list alone in kineto's order
  CHECK(sy.type() == ActivityType::CUDA_SYNC);
  CHECK_EQ(sy.name(), std::string("Stream Sync"));
  CHECK_EQ(sy.correlationId(), (int64_t)9);
  CHECK_EQ(sy.resourceId(), (int64_t)-1);
  CHECK(sy.linkedActivity() == nullptr);
  CHECK_EQ(sy.metadataJson(), std::string("\"cuda_sync_kind\": \"Stream Sync\", \"stream\": -1, \"correlation\": 9, "
                                          "\"device\": 0, \"context\": 1"));
  CHECK_EQ(sy.getMetadataValue("device"), std::string("0"));

  // The same keys, values and quoting as the GenericTraceActivity it replaces.
  CHECK(parsed(rt.metadataJson()) == parsed(generic_json(events[0])));
  CHECK(parsed(k1.metadataJson()) == parsed(generic_json(events[1])));
  CHECK(parsed(k2.metadataJson()) == parsed(generic_json(events[2])));
  CHECK(parsed(cp.metadataJson()) == parsed(generic_json(events[3])));
  CHECK_EQ(parsed(k1.metadataJson()).size(), (size_t)6);

  // Logged again (torch's export_chrome_trace replays its kept activities): by pointer.
  KeepingLogger again;
  for (const auto* a : logger.activities) a->log(again);
  CHECK_EQ(again.generic, (size_t)0);
  CHECK(again.activities == logger.activities);

  kept.blocks.clear(); // the block goes with the logger's config (ASan: nothing leaks, nothing dangles before)
  if (failures) std::fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
