// The kineto adaptor: flagtrace sessions as a kineto child profiler, so that
// torch.profiler gets flagtrace's device activity. No vendor type appears here:
// it sees only the public C API (flagtrace.h, device_tracer.h).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
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

// The exit path's stages, timed for P3 (bench/gpu/torch_bench.py exit-split).
static std::string ms_since(std::chrono::steady_clock::time_point t0) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  return std::to_string(us / 1000) + "." + std::to_string(us / 100 % 10);
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
// trace. Raw only when provably a JSON literal; otherwise escaped here. Appends
// `"key": value` as GenericTraceActivity::metadataJson writes an entry; *plain gets
// what its getMetadataValue returns (the value without kineto's added quotes).
static void append_entry(std::string& json, const char* key, const char* value, std::string* plain) {
  std::string esc(6 * std::max(std::strlen(key), std::strlen(value)) + 2, '\0');
  if (!json.empty()) json += ", ";
  json.append(esc.data(), ft_json_escape(&esc[0], key, std::strlen(key)));
  json += ": ";
  size_t n = std::strlen(value);
  if (ft_json_is_literal(value, n)) {
    json.append(value, n);
    if (plain) plain->assign(value, n);
    return;
  }
  size_t w = ft_json_escape(&esc[0], value, n);
  json.append(esc.data(), w);
  if (plain) plain->assign(esc.data() + 1, w - 2);
}

// What the events of one profile share, rendered once: names and metadata lists
// (by the core's keys), and the activities themselves in chunks that never move.
// kineto's loggers keep raw pointers to the activities (torch's MemoryTraceLogger
// until the profile object dies), and the session is destroyed right after
// processTrace, so the block is reference-counted: the session holds it while
// filling it, and a keeper activity in the trace buffer kineto takes over
// (getTraceBuffer) holds it as long as kineto holds that buffer.
struct Block;

// One exported event, as kineto's CUPTI path wraps a raw record: plain fields,
// the name and metadata by index into the block, metadata JSON produced only when
// asked (torch asks twice per event, kineto's writer once). 80 bytes, no heap of
// its own; a GenericTraceActivity cost a name string and a map node per entry.
class Activity final : public libkineto::ITraceActivity {
 public:
  int64_t deviceId() const override { return device; }
  int64_t resourceId() const override { return resource; }
  int32_t getThreadId() const override { return thread; }
  int64_t timestamp() const override { return start; }
  int64_t duration() const override { return end - start; }
  // kineto prints an activity's id as its "External id": the torch op id (0 =
  // none), while the vendor id goes to "correlation" and the flow (design.md §2).
  int64_t correlationId() const override { return id; }
  int flowType() const override { return flow_type; }
  int64_t flowId() const override { return flow_id; }
  bool flowStart() const override { return flow_start; }
  libkineto::ActivityType type() const override { return kind; }
  const std::string name() const override;
  const libkineto::ITraceActivity* linkedActivity() const override { return linked; }
  const libkineto::TraceSpan* traceSpan() const override;
  // Never handleGenericActivity: torch's MemoryTraceLogger copies what it gets
  // there as a GenericTraceActivity (slicing this away); handleActivity keeps the
  // pointer, which the block keeps valid.
  void log(libkineto::ActivityLogger& logger) const override { logger.handleActivity(*this); }
  const std::string metadataJson() const override;
  const std::string getMetadataValue(const std::string& key) const override;

  static constexpr uint32_t kNone = UINT32_MAX;
  const Block* block = nullptr;
  int64_t start = 0, end = 0;
  const libkineto::ITraceActivity* linked = nullptr;
  int32_t id = 0, device = 0, resource = 0, thread = 0;
  uint32_t correlation = 0, flow_id = 0;
  uint32_t name_ix = 0, meta_ix = kNone; // into Block::names, Block::metas
  libkineto::ActivityType kind = libkineto::ActivityType::ENUM_COUNT;
  uint8_t flow_type = 0;
  bool flow_start = false, on_device = false, has_correlation = false;
};

static_assert(sizeof(Activity) == 80, "an activity grew: it is allocated once per exported event");

struct Block {
  struct Meta {
    std::string json; // the list's entries, as metadataJson writes them
    std::vector<std::pair<std::string, std::string>> plain;
  };
  const libkineto::TraceSpan* span = nullptr;
  std::vector<std::string> names;
  std::vector<Meta> metas;
  static constexpr size_t kChunk = 4096;
  std::vector<std::unique_ptr<Activity[]>> chunks;
  size_t n = 0;

  Activity& add() {
    if (n % kChunk == 0) chunks.emplace_back(new Activity[kChunk]);
    Activity& a = chunks.back()[n++ % kChunk];
    a.block = this;
    return a;
  }
};

const std::string Activity::name() const { return block->names[name_ix]; }
const libkineto::TraceSpan* Activity::traceSpan() const { return block->span; }

// The order flagtrace's own trace writer uses: device, stream, correlation, then the
// vendor's list (a GenericTraceActivity wrote its hash map's order).
const std::string Activity::metadataJson() const {
  const std::string* list = meta_ix == kNone ? nullptr : &block->metas[meta_ix].json;
  std::string out;
  out.reserve(64 + (list ? list->size() : 0));
  char num[16];
  auto append_num = [&out, &num](auto v) {
    out.append(num, (size_t)(std::to_chars(num, num + sizeof num, v).ptr - num));
  };
  if (on_device) {
    out += "\"device\": ";
    append_num(device);
    out += ", \"stream\": ";
    append_num(resource);
  }
  if (has_correlation) {
    if (!out.empty()) out += ", ";
    out += "\"correlation\": ";
    append_num(correlation);
  }
  if (list && !list->empty()) {
    if (!out.empty()) out += ", ";
    out += *list;
  }
  return out;
}

const std::string Activity::getMetadataValue(const std::string& key) const {
  if (on_device && key == "device") return std::to_string(device);
  if (on_device && key == "stream") return std::to_string(resource);
  if (has_correlation && key == "correlation") return std::to_string(correlation);
  if (meta_ix != kNone)
    for (const auto& kv : block->metas[meta_ix].plain)
      if (kv.first == key) return kv.second;
  return "";
}

// Rides in the trace buffer kineto keeps; never logged (kineto logs a child's
// activities only through processTrace's logger calls).
class Keeper final : public libkineto::GenericTraceActivity {
 public:
  explicit Keeper(std::shared_ptr<Block> b) : block_(std::move(b)) {}

 private:
  std::shared_ptr<Block> block_;
};

class Session : public libkineto::IActivityProfilerSession {
 public:
  Session(ft_session* s, bool cuda_names)
      : s_(s), cuda_names_(cuda_names), owned_(std::make_unique<libkineto::CpuTraceBuffer>()), buf_(owned_.get()),
        block_(std::make_shared<Block>()) {
    buf_->gpuOpCount = 0;
    block_->span = &buf_->span;
    buf_->activities.push_back(std::make_unique<Keeper>(block_));
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
    auto t0 = std::chrono::steady_clock::now();
    ft_status st = ft_session_stop(s_);
    if (st) errors_.push_back(std::string("stop: ") + ft_strerror(st) + ": " + ft_session_last_error(s_));
    ft_session_counts c{};
    // counts walk the writer's whole plan: only when someone reads them, and after
    // the stop's own time is taken
    if (ft_diagnostics_enabled()) {
      std::string took = ms_since(t0);
      if (ft_session_counts_get(s_, &c) == FT_OK)
        diag("session stopped: " + std::to_string(c.device_events) + " events drained, " +
             std::to_string(c.dropped_records) + " dropped, in " + took + " ms");
    }
    stopped_ = true;
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
    auto t0 = std::chrono::steady_clock::now();
    linked_ = linked ? &linked : nullptr;
    logger_ = &logger;
    buf_->span = libkineto::TraceSpan(start, end, "flagtrace");
    uint64_t discarded = 0, linked_n = 0;
    visited_ = 0;
    linked_count_ = &linked_n;
    ft_session_foreach_event(s_, start > 0 ? (uint64_t)start : 0, end > 0 ? (uint64_t)end : 0, &Session::visit, this,
                             &discarded);
    // Only the activities' lookups outlive this call.
    name_ix_ = {};
    meta_ix_ = {};
    meta_other_.clear();
    annotation_ix_.clear();
    name_other_devices(logger, start);
    diag("processTrace window [" + std::to_string(start) + ", " + std::to_string(end) + "]: " +
         std::to_string(visited_) + " events, " + std::to_string(linked_n) + " linked, " +
         std::to_string(discarded) + " outside the window, in " + ms_since(t0) + " ms");
    logger_ = nullptr;
    linked_ = nullptr;
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    // In cpu-only kineto nothing else names the GPU rows: torch-cuda's labels.
    const auto& rows = streams();
    int64_t d = rows.empty() ? 0 : rows[0].first;
    return std::make_unique<libkineto::DeviceInfo>(d, 5000000 + d, process_name(), "GPU " + std::to_string(d));
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> out;
    for (const auto& r : streams())
      if (out.size() < 64) out.emplace_back(r.first, r.second, r.second, "stream " + std::to_string(r.second) + " ");
    return out;
  }

  // kineto keeps the buffer after this session is destroyed, and with it the keeper
  // of the block its loggers point into; buf_ keeps pointing at it in case it is
  // asked early (the block then lives on in block_ as well).
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(owned_); }

 private:
  // getDeviceInfo names one device; kineto asks no more, so every other device
  // with events gets torch-cuda's rows here (a one-process two-GPU trace).
  void name_other_devices(libkineto::ActivityLogger& logger, int64_t time) {
    const auto& rows = streams();
    size_t n = std::min(rows.size(), (size_t)256);
    std::set<uint32_t> seen;
    for (size_t i = 0; i < n; i++) {
      if (i == 0 || !seen.insert(rows[i].first).second || rows[i].first == rows[0].first) continue;
      int64_t d = rows[i].first;
      logger.handleDeviceInfo(libkineto::DeviceInfo{d, 5000000 + d, process_name(), "GPU " + std::to_string(d)},
                              time);
    }
  }

  // The (device, stream) rows, read once after stop: kineto asks for them three
  // times per profile exit (device info, resource info, the other devices).
  const std::vector<std::pair<uint32_t, uint32_t>>& streams() {
    if (!streams_read_ && stopped_) { // before stop the session has no rows to give
      std::vector<uint32_t> dev(256), stream(256);
      size_t n = std::min(ft_session_streams(s_, dev.data(), stream.data(), dev.size()), dev.size());
      for (size_t i = 0; i < n; i++) streams_.emplace_back(dev[i], stream[i]);
      streams_read_ = true;
    }
    return streams_;
  }

  // kineto's gpu_user_annotation: the record_function range's own name (resolved
  // like an op), on the device row; ranges kineto cannot resolve are left out, as
  // kineto itself leaves them out.
  void emit_annotation(const ft_device_event& e) {
    const libkineto::ITraceActivity* range = linked_ && *linked_ ? (*linked_)((int32_t)e.external_id) : nullptr;
    if (!range && !*e.name) return;
    std::string name = range ? range->name() : e.name;
    auto it = annotation_ix_.find(name);
    if (it == annotation_ix_.end()) {
      it = annotation_ix_.emplace(name, (uint32_t)block_->names.size()).first;
      block_->names.push_back(name);
    }
    Activity& a = block_->add();
    a.kind = ActivityType::GPU_USER_ANNOTATION;
    a.name_ix = it->second;
    a.start = (int64_t)e.start_ns;
    a.end = (int64_t)e.end_ns;
    a.id = (int32_t)e.external_id;
    a.device = (int32_t)e.device;
    a.resource = (int32_t)e.stream;
    visited_++;
    logger_->handleActivity(a);
  }

  // The core's keys are dense indices: plain vectors, kNone where not seen yet.
  static uint32_t& slot(std::vector<uint32_t>& v, size_t key) {
    if (key >= v.size()) v.resize(std::max(key + 1, 2 * v.size()), Activity::kNone);
    return v[key];
  }

  uint32_t name_of(const ft_export_event& x) {
    uint32_t& ix = slot(name_ix_, x.name_key);
    if (ix == Activity::kNone) {
      ix = (uint32_t)block_->names.size();
      block_->names.emplace_back(x.event.name);
    }
    return ix;
  }

  // The list rendered once per (key, length), as add_metadata used to per event.
  uint32_t meta_of(const ft_export_event& x) {
    if (!x.event.n_metadata) return Activity::kNone;
    // (key, length) names a list; one length per key is the rule, others go to a map
    uint32_t& ix = slot(meta_ix_, x.meta_key);
    if (ix != Activity::kNone && block_->metas[ix].plain.size() == x.event.n_metadata) return ix;
    uint64_t key = x.meta_key | (uint64_t)x.event.n_metadata << 32;
    if (ix != Activity::kNone) {
      auto it = meta_other_.find(key);
      if (it != meta_other_.end()) return it->second;
    }
    Block::Meta m;
    for (size_t i = 0; i < x.event.n_metadata; i++) {
      m.plain.emplace_back(x.event.metadata[i].key, std::string());
      append_entry(m.json, x.event.metadata[i].key, x.event.metadata[i].value, &m.plain.back().second);
    }
    block_->metas.push_back(std::move(m));
    uint32_t made = (uint32_t)block_->metas.size() - 1;
    if (ix == Activity::kNone) ix = made;
    else meta_other_[key] = made;
    return made;
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
    Activity& a = block_->add();
    a.kind = type_of(e.kind);
    a.name_ix = name_of(x);
    a.meta_ix = meta_of(x);
    if (device) buf_->gpuOpCount++;
    a.start = (int64_t)e.start_ns;
    a.end = (int64_t)e.end_ns;
    a.id = e.has_external_id ? (int32_t)e.external_id : 0;
    a.device = device ? (int32_t)e.device : (int32_t)getpid();
    a.resource = device ? (int32_t)e.stream : (int32_t)e.thread_id;
    a.thread = (int32_t)e.thread_id;
    a.on_device = device;
    a.has_correlation = true;
    a.correlation = e.correlation_id;
    // Attribution: the torch op id (External id), never the vendor id (design.md §2).
    if (e.has_external_id && linked_ && *linked_) {
      a.linked = (*linked_)((int32_t)e.external_id);
      if (a.linked) ++*linked_count_;
    }
    // Flows: the vendor correlation id on both halves; start only on the launch
    // whose device event is also emitted, so no half dangles.
    if (x.flow != FT_FLOW_NONE) {
      a.flow_id = (uint32_t)x.flow_id;
      a.flow_type = libkineto::kLinkAsyncCpuGpu;
      a.flow_start = x.flow == FT_FLOW_START;
    }
    visited_++;
    logger_->handleActivity(a);
  }

  ft_session* s_;
  bool cuda_names_;
  std::unique_ptr<libkineto::CpuTraceBuffer> owned_;
  libkineto::CpuTraceBuffer* buf_;
  std::shared_ptr<Block> block_;
  // core key -> index in the block, during processTrace only
  std::vector<uint32_t> name_ix_, meta_ix_;
  std::unordered_map<uint64_t, uint32_t> meta_other_;
  std::unordered_map<std::string, uint32_t> annotation_ix_;
  std::vector<std::string> errors_;
  std::vector<std::pair<uint32_t, uint32_t>> streams_;
  bool streams_read_ = false, stopped_ = false;
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
