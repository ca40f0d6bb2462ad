// The kineto adaptor's per-event export cost without torch (P3 end to end, the part
// flagtrace owns): N synthetic events (kernel + cudaLaunchKernel pairs, 9 kernel
// args) handed to a logger as torch's MemoryTraceLogger keeps them, then read as
// torch's post-processing reads them (metadataJson twice, name once, the linked op,
// the flow) and as export_chrome_trace writes them (metadataJson and name once).
// Against the same steps over GenericTraceActivity objects built as the adaptor
// built them before (a string map per event, copied by handleGenericActivity).
// Built only with -DFT_KINETO_SRC. Usage: bench_kineto [--quick]
#include "../tests/kineto/kineto_harness.h"

#include <chrono>
#include <cstdio>

using libkineto::ActivityType;

static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

enum : uint64_t { T0 = 1000000 };

static void fill(ft_session* s, size_t n) {
  static const char* const names[] = {
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, "
      "at::native::FillFunctor<float>, std::array<char*, 1ul>)",
      "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_"
      "cublas"};
  static const ft_kv md[] = {{"queued", "0"}, {"context", "1"}, {"registers per thread", "44"},
                             {"shared memory", "0"}, {"blocks per SM", "1.939394"}, {"warps per SM", "15.515152"},
                             {"grid", "[256, 1, 1]"}, {"block", "[256, 1, 1]"}, {"est. achieved occupancy %", "24"}};
  static const ft_kv cbid[] = {{"cbid", "211"}};
  uint64_t t = T0;
  for (size_t i = 0; i < n; i += 2) {
    uint32_t corr = (uint32_t)(i / 2 + 1);
    ft_device_event rt = {FT_EVENT_RUNTIME, t, t + 3000, corr, true, i / 2 + 1, 0, 0, 4242, "cudaLaunchKernel", cbid, 1};
    ft_device_event k = {FT_EVENT_KERNEL, t + 5000, t + 7000, corr, true, i / 2 + 1, 0, 7, 0, names[i / 2 % 2], md, 9};
    if (ft__session_inject(s, &rt) || ft__session_inject(s, &k)) std::exit(1);
    t += 8000;
  }
}

// torch's TransferEvents (metadataJson twice: reassociate and toResult, the name,
// the linked op, the flow), then export_chrome_trace's reads.
static size_t consume(const std::vector<const libkineto::ITraceActivity*>& acts, double* t_torch, double* t_export) {
  size_t sum = 0;
  double t0 = now_s();
  for (const auto* a : acts) {
    sum += a->metadataJson().find("\"Profiler Event Index\": ") == std::string::npos;
    sum += a->metadataJson().size() + a->name().size() + (a->linkedActivity() != nullptr) + (size_t)a->flowId() +
           (size_t)a->deviceId() + (size_t)a->resourceId() + (size_t)a->duration();
  }
  double t1 = now_s();
  for (const auto* a : acts) sum += a->metadataJson().size() + a->name().size() + (size_t)a->timestamp();
  *t_torch = t1 - t0;
  *t_export = now_s() - t1;
  return sum;
}

// The adaptor's former emit: a GenericTraceActivity with a metadata map per event.
struct OldEmit {
  libkineto::CpuTraceBuffer* buf;
  libkineto::ActivityLogger* logger;
  libkineto::getLinkedActivityCallback* linked;
  static void add(libkineto::GenericTraceActivity& a, const char* key, const char* value) {
    size_t n = std::strlen(value);
    if (ft_json_is_literal(value, n)) return a.addMetadata(key, value);
    std::string esc(6 * n + 2, '\0');
    size_t w = ft_json_escape(&esc[0], value, n);
    a.addMetadataQuoted(key, esc.substr(1, w - 2));
  }
  static int visit(void* ctx, const ft_export_event* x) {
    auto* o = static_cast<OldEmit*>(ctx);
    const ft_device_event& e = x->event;
    bool device = e.kind == FT_EVENT_KERNEL;
    o->buf->emplace_activity(o->buf->span, device ? ActivityType::CONCURRENT_KERNEL : ActivityType::CUDA_RUNTIME,
                             e.name);
    libkineto::GenericTraceActivity& a = *o->buf->activities.back();
    a.startTime = (int64_t)e.start_ns;
    a.endTime = (int64_t)e.end_ns;
    a.id = (int32_t)e.external_id;
    a.device = device ? (int32_t)e.device : 1;
    a.resource = device ? (int32_t)e.stream : (int32_t)e.thread_id;
    if (device) {
      add(a, "device", std::to_string(e.device).c_str());
      add(a, "stream", std::to_string(e.stream).c_str());
    }
    add(a, "correlation", std::to_string(e.correlation_id).c_str());
    for (size_t i = 0; i < e.n_metadata; i++) add(a, e.metadata[i].key, e.metadata[i].value);
    a.linked = (*o->linked)((int32_t)e.external_id);
    if (x->flow != FT_FLOW_NONE) {
      a.flow.id = (uint32_t)x->flow_id;
      a.flow.type = libkineto::kLinkAsyncCpuGpu;
      a.flow.start = x->flow == FT_FLOW_START;
    }
    o->logger->handleGenericActivity(a);
    return 0;
  }
};

struct Row {
  double hand_over, torch, exporting, release;
};

static void print(const char* what, const Row& r, size_t n) {
  auto ns = [n](double s) { return s * 1e9 / (double)n; };
  std::printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f |\n", what, ns(r.hand_over), ns(r.torch), ns(r.exporting),
              ns(r.release), ns(r.hand_over + r.torch + r.exporting + r.release));
}

int main(int argc, char** argv) {
  bool quick = argc > 1 && !std::strcmp(argv[1], "--quick");
  size_t n = quick ? 20000 : 200000;
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent", 1);
  Ops ops;
  for (size_t i = 1; i <= n / 2; i++) ops.add((int32_t)i, "aten::add_");
  size_t sum = 0;
  Row now{}, before{};
  { // the adaptor as it is
    ft_session* s = nullptr;
    if (ft_session_create(&s, nullptr)) return 1;
    Kept kept;
    auto session = std::make_unique<flagtrace_kineto::Session>(s, true, kept.keep());
    fill(s, n);
    session->stop();
    ft__session_set_window(s, 0, UINT64_MAX / 2);
    auto logger = std::make_unique<KeepingLogger>();
    double t0 = now_s();
    session->processTrace(*logger, ops.resolver(), 1, INT64_MAX / 2);
    now.hand_over = now_s() - t0;
    session.reset();
    sum += consume(logger->activities, &now.torch, &now.exporting);
    t0 = now_s();
    logger.reset();
    kept.blocks.clear();
    now.release = now_s() - t0;
  }
  { // GenericTraceActivity per event, as before
    ft_session* s = nullptr;
    if (ft_session_create(&s, nullptr) || ft_session_start(s)) return 1;
    fill(s, n);
    ft_session_stop(s);
    ft__session_set_window(s, 0, UINT64_MAX / 2);
    auto logger = std::make_unique<KeepingLogger>();
    auto buffer = std::make_unique<libkineto::CpuTraceBuffer>();
    libkineto::getLinkedActivityCallback linked = ops.resolver();
    OldEmit o{buffer.get(), logger.get(), &linked};
    double t0 = now_s();
    ft_session_foreach_event(s, 1, UINT64_MAX / 2, &OldEmit::visit, &o, nullptr);
    before.hand_over = now_s() - t0;
    ft_session_destroy(s);
    sum += consume(logger->activities, &before.torch, &before.exporting);
    t0 = now_s();
    logger.reset();
    buffer.reset();
    before.release = now_s() - t0;
  }
  std::printf("# bench_kineto: %zu events (kernel + cudaLaunchKernel pairs, 9 kernel args), ns per event%s\n", n,
              quick ? " (quick mode)" : "");
  std::printf("| adaptor | hand-over (processTrace) | torch's reads | export's reads | release | total |\n"
              "|---|---|---|---|---|---|\n");
  print("light activities (now)", now, n);
  print("GenericTraceActivity per event (before)", before, n);
  std::printf("\ntotal now / before: %.2f (checksum %zu)\n",
              (now.hand_over + now.torch + now.exporting + now.release) /
                  (before.hand_over + before.torch + before.exporting + before.release),
              sum & 0xff);
  return 0;
}
