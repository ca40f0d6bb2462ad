// The kineto adaptor: flagtrace sessions as a kineto child profiler, so that
// torch.profiler gets flagtrace's device activity. No vendor type appears here:
// it sees only the public C API (flagtrace.h, device_tracer.h).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <GenericTraceActivity.h>
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>
#include <unistd.h>

extern "C" {
#include "flagtrace/device_tracer.h"
#include "flagtrace/flagtrace.h"
}

namespace flagtrace_kineto {

using libkineto::ActivityType;

static void diag(const std::string& line) {
  if (ft_diagnostics_enabled()) std::fprintf(stderr, "flagtrace: kineto: %s\n", line.c_str());
}

static std::string process_name() {
  char buf[128] = "python";
  if (FILE* f = std::fopen("/proc/self/comm", "r")) {
    if (std::fgets(buf, sizeof buf, f)) buf[std::strcspn(buf, "\n")] = '\0';
    std::fclose(f);
  }
  return buf;
}

// kineto's GenericTraceActivity writes metadata values either raw or inside quotes
// without escaping them (design.md §7): one bare word or one quote invalidates the whole
// trace. Raw only when provably a JSON literal; otherwise escaped here.
static void add_metadata(libkineto::GenericTraceActivity& a, const char* key, const char* value) {
  size_t n = std::strlen(value);
  if (ft_json_is_literal(value, n)) {
    a.addMetadata(key, value);
    return;
  }
  std::string esc(6 * n + 2, '\0');
  size_t w = ft_json_escape(&esc[0], value, n);
  a.addMetadataQuoted(key, esc.substr(1, w - 2)); // kineto adds the quotes
}

class Session : public libkineto::IActivityProfilerSession {
 public:
  Session(ft_session* s, bool cuda_names)
      : s_(s), cuda_names_(cuda_names), owned_(std::make_unique<libkineto::CpuTraceBuffer>()), buf_(owned_.get()) {
    buf_->gpuOpCount = 0;
    // Armed here, at configure (the schedule's warmup), as kineto arms its own CUPTI:
    // the vendor's one-time cost of instrumenting each kernel then falls in the
    // warmup, not in the first recorded step (measured on the H200: armed at start(),
    // a training step's first recorded iteration took 3x torch-cuda's GPU span).
    // What is recorded before start() lies outside kineto's window and is discarded.
    ft_status st = ft_session_start(s_);
    if (st) errors_.push_back(std::string("start: ") + ft_strerror(st) + ": " + ft_session_last_error(s_));
    const char* why = "";
    if (ft_session_device_status(s_, &why) != FT_OK)
      std::fprintf(stderr, "flagtrace: no device activity in this profile: %s\n", why);
  }
  ~Session() override { ft_session_destroy(s_); }

  void start() override {
    status_ = libkineto::TraceStatus::RECORDING;
    diag("session recording");
  }

  void stop() override {
    ft_status st = ft_session_stop(s_);
    if (st) errors_.push_back(std::string("stop: ") + ft_strerror(st) + ": " + ft_session_last_error(s_));
    ft_session_counts c{};
    if (ft_session_counts_get(s_, &c) == FT_OK)
      diag("session stopped: " + std::to_string(c.device_events) + " events drained, " +
           std::to_string(c.dropped_records) + " dropped");
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return errors_; }

  // torch's op ids drive the tracer's external correlation on the calling thread.
  void pushCorrelationId(uint64_t id) override { ft_correlation_push(s_, id); }
  void popCorrelationId() override { ft_correlation_pop(s_); }
  // User annotations (record_function) keep their own ids in kineto: never on the
  // op stack (that would steal the attribution from the op), but remembered by
  // thread and time, so that the core projects each onto the GPU rows as kineto's
  // gpu_user_annotation (named at processTrace through the linked-activity resolver).
  void pushUserCorrelationId(uint64_t id) override { ft_user_range_push(s_, id, nullptr); }
  void popUserCorrelationId() override { ft_user_range_pop(s_); }

  // Overriding only the 1-argument form would never receive the resolver (design.md §1).
  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, nullptr, 0, INT64_MAX);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked, int64_t start,
                    int64_t end) override {
    static std::once_flag warned;
    if (!linked)
      std::call_once(warned, [] {
        // Never gated (design.md §8): without it, self device time silently reads zero.
        std::fprintf(stderr, "flagtrace: kineto handed no linked-activity resolver: device time cannot be "
                             "attributed to ops in this profile\n");
      });
    linked_ = linked ? &linked : nullptr;
    logger_ = &logger;
    buf_->span = libkineto::TraceSpan(start, end, "flagtrace");
    uint64_t discarded = 0, linked_n = 0;
    visited_ = 0;
    linked_count_ = &linked_n;
    ft_session_foreach_event(s_, start > 0 ? (uint64_t)start : 0, end > 0 ? (uint64_t)end : 0, &Session::visit, this,
                             &discarded);
    name_other_devices(logger, start);
    diag("processTrace window [" + std::to_string(start) + ", " + std::to_string(end) + "]: " +
         std::to_string(visited_) + " events, " + std::to_string(linked_n) + " linked, " +
         std::to_string(discarded) + " outside the window");
    logger_ = nullptr;
    linked_ = nullptr;
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    // In cpu-only kineto nothing else names the GPU rows: torch-cuda's labels.
    uint32_t dev[1], stream[1];
    int64_t d = ft_session_streams(s_, dev, stream, 1) ? dev[0] : 0;
    return std::make_unique<libkineto::DeviceInfo>(d, 5000000 + d, process_name(), "GPU " + std::to_string(d));
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<uint32_t> dev(64), stream(64);
    size_t n = ft_session_streams(s_, dev.data(), stream.data(), dev.size());
    std::vector<libkineto::ResourceInfo> out;
    for (size_t i = 0; i < n && i < dev.size(); i++)
      out.emplace_back(dev[i], stream[i], stream[i], "stream " + std::to_string(stream[i]) + " ");
    return out;
  }

  // kineto keeps the buffer (and the activities its loggers point at) after this
  // session is destroyed; buf_ keeps pointing at it in case it is asked early.
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(owned_); }

 private:
  // getDeviceInfo names one device; kineto asks no more, so every other device
  // with events gets torch-cuda's rows here (a one-process two-GPU trace).
  void name_other_devices(libkineto::ActivityLogger& logger, int64_t time) {
    std::vector<uint32_t> dev(256), stream(256);
    size_t n = std::min(ft_session_streams(s_, dev.data(), stream.data(), dev.size()), dev.size());
    std::set<uint32_t> seen;
    for (size_t i = 0; i < n; i++) {
      if (i == 0 || !seen.insert(dev[i]).second || dev[i] == dev[0]) continue;
      int64_t d = dev[i];
      logger.handleDeviceInfo(libkineto::DeviceInfo{d, 5000000 + d, process_name(), "GPU " + std::to_string(d)},
                              time);
    }
  }

  // kineto's gpu_user_annotation: the record_function range's own name (resolved
  // like an op), on the device row; ranges kineto cannot resolve are left out, as
  // kineto itself leaves them out.
  void emit_annotation(const ft_device_event& e) {
    const libkineto::ITraceActivity* range = linked_ && *linked_ ? (*linked_)((int32_t)e.external_id) : nullptr;
    if (!range && !*e.name) return;
    buf_->emplace_activity(buf_->span, ActivityType::GPU_USER_ANNOTATION, range ? range->name() : e.name);
    libkineto::GenericTraceActivity& a = *buf_->activities.back();
    a.startTime = (int64_t)e.start_ns;
    a.endTime = (int64_t)e.end_ns;
    a.id = (int32_t)e.external_id;
    a.device = (int32_t)e.device;
    a.resource = (int32_t)e.stream;
    visited_++;
    logger_->handleGenericActivity(a);
  }

  static int visit(void* ctx, const ft_export_event* x) {
    static_cast<Session*>(ctx)->emit(*x);
    return 0;
  }

  ActivityType type_of(ft_event_kind k) const {
    switch (k) {
    case FT_EVENT_KERNEL: return ActivityType::CONCURRENT_KERNEL;
    case FT_EVENT_MEMCPY: return ActivityType::GPU_MEMCPY;
    case FT_EVENT_MEMSET: return ActivityType::GPU_MEMSET;
    case FT_EVENT_DRIVER: return cuda_names_ ? ActivityType::CUDA_DRIVER : ActivityType::PRIVATEUSE1_DRIVER;
    default: return cuda_names_ ? ActivityType::CUDA_RUNTIME : ActivityType::PRIVATEUSE1_RUNTIME;
    }
  }

  void emit(const ft_export_event& x) {
    const ft_device_event& e = x.event;
    if (e.kind == FT_EVENT_GPU_USER_ANNOTATION) return emit_annotation(e);
    bool device = e.kind == FT_EVENT_KERNEL || e.kind == FT_EVENT_MEMCPY || e.kind == FT_EVENT_MEMSET;
    // Loggers keep pointers to activities: they live in the trace buffer kineto
    // takes over (getTraceBuffer), each one allocated once.
    buf_->emplace_activity(buf_->span, type_of(e.kind), e.name);
    libkineto::GenericTraceActivity& a = *buf_->activities.back();
    if (device) buf_->gpuOpCount++;
    a.startTime = (int64_t)e.start_ns;
    a.endTime = (int64_t)e.end_ns;
    // kineto prints an activity's id as its "External id": the torch op id (0 =
    // none), while the vendor id goes to "correlation" and the flow (design.md §2).
    a.id = e.has_external_id ? (int32_t)e.external_id : 0;
    a.device = device ? (int32_t)e.device : (int32_t)getpid();
    a.resource = device ? (int32_t)e.stream : (int32_t)e.thread_id;
    a.threadId = (int32_t)e.thread_id;
    if (device) {
      add_metadata(a, "device", std::to_string(e.device).c_str());
      add_metadata(a, "stream", std::to_string(e.stream).c_str());
    }
    add_metadata(a, "correlation", std::to_string(e.correlation_id).c_str());
    for (size_t i = 0; i < e.n_metadata; i++) add_metadata(a, e.metadata[i].key, e.metadata[i].value);
    // Attribution: the torch op id (External id), never the vendor id (design.md §2).
    if (e.has_external_id && linked_ && *linked_) {
      a.linked = (*linked_)((int32_t)e.external_id);
      if (a.linked) ++*linked_count_;
    }
    // Flows: the vendor correlation id on both halves; start only on the launch
    // whose device event is also emitted, so no half dangles.
    if (x.flow != FT_FLOW_NONE) {
      a.flow.id = (uint32_t)x.flow_id;
      a.flow.type = libkineto::kLinkAsyncCpuGpu;
      a.flow.start = x.flow == FT_FLOW_START;
    }
    visited_++;
    logger_->handleGenericActivity(a);
  }

  ft_session* s_;
  bool cuda_names_;
  std::unique_ptr<libkineto::CpuTraceBuffer> owned_;
  libkineto::CpuTraceBuffer* buf_;
  std::vector<std::string> errors_;
  libkineto::getLinkedActivityCallback* linked_ = nullptr;
  libkineto::ActivityLogger* logger_ = nullptr;
  uint64_t visited_ = 0;
  uint64_t* linked_count_ = nullptr;
};

// The device type a profile's rows are named for. The rules live in one Python
// function (python/flagtrace/_device.py), which decides for both states of torch's
// privateuse1 backend name -- the one input that changes after import, when a vendor
// extension renames the backend -- and hands both answers here; configure() reads the
// name and picks one. It does not call into Python: kineto calls configure() holding
// its profiler mutex, with the GIL released (torch's _prepare_profiler), and a thread
// holding the GIL may be waiting on that mutex (torch's _kineto_step, from every
// Optimizer.step), so acquiring the GIL there can deadlock.
struct DeviceChoice {
  std::string device; // "cuda", "privateuse1", or "" (none: why says why)
  std::string why;
};
static std::mutex choice_mu;
// [0]: the backend has no name, [1]: it has one. Until Python says otherwise, the
// automatic rule with a CUDA device.
static DeviceChoice choice[2] = {{"cuda", "default"}, {"privateuse1", "default"}};
static std::string configured; // what the last configure() chose, for tests
static bool (*privateuse1_named)() = nullptr;

void set_device_choice(const std::string& unnamed, const std::string& unnamed_why, const std::string& named,
                       const std::string& named_why) {
  std::lock_guard<std::mutex> g(choice_mu);
  choice[0] = {unnamed, unnamed_why};
  choice[1] = {named, named_why};
}

std::string configured_device() {
  std::lock_guard<std::mutex> g(choice_mu);
  return configured;
}

static DeviceChoice choose_device() {
  bool named = privateuse1_named && privateuse1_named();
  std::lock_guard<std::mutex> g(choice_mu);
  configured = choice[named].device;
  return choice[named];
}

class Profiler : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType>& types,
                                                                 const libkineto::Config& config) override {
    return configure(0, 0, types, config);
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t, int64_t,
                                                                 const std::set<ActivityType>& types,
                                                                 const libkineto::Config&) override {
    ft_session_options o;
    ft_session_options_init(&o);
    o.activities = 0;
    for (ActivityType t : types) {
      if (t == ActivityType::CONCURRENT_KERNEL) o.activities |= FT_ACTIVITY_KERNEL;
      if (t == ActivityType::GPU_MEMCPY) o.activities |= FT_ACTIVITY_MEMCPY;
      if (t == ActivityType::GPU_MEMSET) o.activities |= FT_ACTIVITY_MEMSET;
      if (t == ActivityType::CUDA_RUNTIME || t == ActivityType::PRIVATEUSE1_RUNTIME) o.activities |= FT_ACTIVITY_RUNTIME;
      if (t == ActivityType::CUDA_DRIVER || t == ActivityType::PRIVATEUSE1_DRIVER) o.activities |= FT_ACTIVITY_DRIVER;
    }
    diag("configure: activities mask " + std::to_string(o.activities));
    if (!(o.activities & (FT_ACTIVITY_KERNEL | FT_ACTIVITY_MEMCPY | FT_ACTIVITY_MEMSET))) return nullptr;
    DeviceChoice d = choose_device();
    if (d.device.empty()) {
      static std::once_flag said;
      std::call_once(said, [&d] { std::fprintf(stderr, "flagtrace.torch: %s\n", d.why.c_str()); });
      return nullptr;
    }
    diag("configure: rows named for " + d.device + " (" + d.why + ")");
    ft_session* s = nullptr;
    if (ft_session_create(&s, &o) != FT_OK) return nullptr;
    return std::make_unique<Session>(s, d.device == "cuda");
  }

 private:
  std::string name_ = "flagtrace";
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                     ActivityType::GPU_MEMSET,        ActivityType::CUDA_RUNTIME,
                                     ActivityType::CUDA_DRIVER,       ActivityType::PRIVATEUSE1_RUNTIME,
                                     ActivityType::PRIVATEUSE1_DRIVER};
};

// Registers flagtrace as kineto's device profiler, once per process (again: 0 and
// nothing done). privateuse1_named tells whether torch's privateuse1 backend has a
// name (the caller reads c10). Returns 0 on success; otherwise a one-line reason in
// msg and kineto left as it was.
int install(bool (*named)(), std::string& msg) {
  static bool installed = false;
  if (installed) return 0;
  auto& api = libkineto::api();
  if (api.isProfilerRegistered()) {
    // kineto initialized itself (with its own CUPTI in a CUDA build): two CUPTI
    // subscribers cannot share a process, so we do not take over.
    msg = "kineto is already initialized (torch.profiler ran before `import flagtrace.torch`?); "
          "flagtrace cannot take over this process's profiler";
    return -1;
  }
  // A tracer that cannot run (no vendor library, a build without one) would leave
  // kineto CPU-only for nothing: torch.profiler keeps its own device profiling.
  ft_session* probe = nullptr;
  const char* why = "";
  ft_status st = ft_session_create(&probe, nullptr);
  if (st == FT_OK && ft_session_device_status(probe, &why) != FT_OK) st = FT_EUNAVAILABLE;
  if (st != FT_OK) {
    msg = std::string("this build's device tracer cannot run (") + (probe ? why : ft_strerror(st)) +
          "): torch.profiler runs without flagtrace";
    ft_session_destroy(probe);
    return -1;
  }
  ft_session_destroy(probe);
  privateuse1_named = named;
  // CPU-only kineto: torch's prepareTrace then skips its own (CUPTI) init, and
  // device activity comes from the child profiler registered below.
  libkineto_init(/*cpuOnly=*/true, /*logOnError=*/true);
  api.suppressLogMessages();
  api.registerProfilerFactory([] { return std::make_unique<Profiler>(); });
  installed = true;
  diag("registered as kineto's child profiler");
  return 0;
}

} // namespace flagtrace_kineto
