// The kineto adaptor: flagtrace sessions as a kineto child profiler, so that
// torch.profiler gets flagtrace's device activity. No vendor type appears here:
// it sees only the public C API, through the table of whoever installs it
// (api_table.h): flagtrace._C's libflagtrace, or record's injection library.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <atomic>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <AbstractConfig.h>
#include <Config.h>
#include <GenericTraceActivity.h>
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>
#include <unistd.h>

extern "C" {
#include "flagtrace/api_table.h"
}
#include "late_calls.h"

// libc10's (c10/core/DeviceType.h), declared here so that the adaptor's CPU test
// builds without torch's headers
namespace c10 {
std::string get_privateuse1_backend(bool lower_case);
} // namespace c10

// What flagtrace._C (module.cpp) and record's injection library call; the rest of
// this library stays hidden (-fvisibility=hidden).
#define FTK_EXPORT __attribute__((visibility("default")))

namespace flagtrace_kineto {

using libkineto::ActivityType;

// The core this adaptor drives (install()): one table, so that under record every
// session is the injection library's, which holds the armed tracer.
static const ft_api* A = nullptr;

static void diag(const std::string& line) {
  if (A && A->ft_diagnostics_enabled()) std::fprintf(stderr, "flagtrace: kineto: %s\n", line.c_str());
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
  json.append(esc.data(), A->ft_json_escape(&esc[0], key, std::strlen(key)));
  json += ": ";
  size_t n = std::strlen(value);
  if (A->ft_json_is_literal(value, n)) {
    json.append(value, n);
    if (plain) plain->assign(value, n);
    return;
  }
  size_t w = A->ft_json_escape(&esc[0], value, n);
  json.append(esc.data(), w);
  if (plain) plain->assign(esc.data() + 1, w - 2);
}

// What the events of one profile share, rendered once: names and metadata lists (by the core's keys), and the
// activities in chunks that never move. kineto's loggers keep raw pointers to the activities (torch's
// MemoryTraceLogger until the profile object dies) and the session dies right after processTrace, so the block is
// reference-counted: the session holds it while filling it, the keeper (keep_block) as long as the logger lives. The
// keeper rides in the profile's kineto Config (the logger clones it, output_membuf.h), not in a child's trace buffer,
// whose span kineto writes as a "Trace" slice and an "Iteration Start" marker torch-cuda has not.
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
  libkineto::ActivityType type() const override { return (libkineto::ActivityType)kind; }
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
  uint8_t kind = (uint8_t)libkineto::ActivityType::ENUM_COUNT; // an ActivityType (below 256): 80 bytes
  uint8_t flow_type = 0;
  // own_list: a sync's list has its device, stream and correlation in kineto's order
  bool flow_start = false, on_device = false, has_correlation = false, own_list = false;
};

static_assert(sizeof(Activity) == 80, "an activity grew: it is allocated once per exported event");

struct Block {
  struct Meta {
    std::string json; // the list's entries, as metadataJson writes them
    std::vector<std::pair<std::string, std::string>> plain;
  };
  libkineto::TraceSpan span{0, 0, "flagtrace"}; // what traceSpan() answers; never logged
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
const libkineto::TraceSpan* Activity::traceSpan() const { return &block->span; }

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
  if (on_device && !own_list) {
    out += "\"device\": ";
    append_num(device);
    out += ", \"stream\": ";
    append_num(resource);
  }
  if (has_correlation && !own_list) {
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
  if (on_device && !own_list && key == "device") return std::to_string(device);
  if (on_device && !own_list && key == "stream") return std::to_string(resource);
  if (has_correlation && !own_list && key == "correlation") return std::to_string(correlation);
  if (meta_ix != kNone)
    for (const auto& kv : block->metas[meta_ix].plain)
      if (kv.first == key) return kv.second;
  return "";
}

// Where a profile's block is kept alive: the holder in kineto's Config of the profile
// (KeeperConfig below), or a test's own.
using KeepBlock = std::function<void(std::shared_ptr<void>)>;

// The session torch.profiler is recording with, for toggle_collection_dynamic (kineto
// 2.11 tells a child nothing of it: flagtrace.torch calls set_collecting).
static std::mutex running_mu;
static class Session* running = nullptr;

class Session : public libkineto::IActivityProfilerSession, public KeptOnDelete {
 public:
  Session(ft_session* s, bool cuda_names, KeepBlock keep)
      : s_(s), cuda_names_(cuda_names), block_(std::make_shared<Block>()) {
    if (keep) keep(block_);
    // Armed here, at configure (the schedule's warmup), as kineto arms its own CUPTI:
    // the vendor's one-time cost of instrumenting each kernel then falls in the
    // warmup, not in the first recorded step (measured on the H200: armed at start(),
    // a training step's first recorded iteration took 3x torch-cuda's GPU span).
    // What is recorded before start() lies outside kineto's window and is discarded.
    ft_status st = A->ft_session_start(s_);
    if (st) errors_.push_back(std::string("start: ") + A->ft_strerror(st) + ": " + A->ft_session_last_error(s_));
    const char* why = "";
    if (A->ft_session_device_status(s_, &why) != FT_OK)
      std::fprintf(stderr, "flagtrace: no device activity in this profile: %s\n", why);
    std::lock_guard<std::mutex> g(running_mu);
    running = this;
  }
  ~Session() override {
    {
      std::lock_guard<std::mutex> g(running_mu);
      if (running == this) running = nullptr;
    }
    late_.close(); // other threads' pushes and pops (late_calls.h)
    A->ft_session_destroy(s_);
  }

  void start() override {
    status_ = libkineto::TraceStatus::RECORDING;
    diag("session recording");
  }

  void stop() override {
    {
      std::lock_guard<std::mutex> g(running_mu);
      if (running == this) running = nullptr;
    }
    auto t0 = std::chrono::steady_clock::now();
    ft_status st = A->ft_session_stop(s_);
    if (st) errors_.push_back(std::string("stop: ") + A->ft_strerror(st) + ": " + A->ft_session_last_error(s_));
    ft_session_counts c{};
    // counts walk the writer's whole plan: only when someone reads them, and after
    // the stop's own time is taken
    if (A->ft_diagnostics_enabled()) {
      std::string took = ms_since(t0);
      if (A->ft_session_counts_get(s_, &c) == FT_OK)
        diag("session stopped: " + std::to_string(c.device_events) + " events drained, " +
             std::to_string(c.dropped_records) + " dropped, in " + took + " ms");
    }
    stopped_ = true;
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return errors_; }

  // toggle_collection_dynamic: device work launched while off is left out at stop
  void set_collecting(bool on) { A->ft_session_set_collecting(s_, on); }

  // torch's op ids drive the tracer's external correlation on the calling thread.
  void pushCorrelationId(uint64_t id) override { late_.run(A->ft_correlation_push, s_, id); }
  void popCorrelationId() override { late_.run(A->ft_correlation_pop, s_); }
  // User annotations (record_function) keep their own ids in kineto: never on the
  // op stack (that would steal the attribution from the op), but remembered by
  // thread and time, so that the core projects each onto the GPU rows as kineto's
  // gpu_user_annotation (named at processTrace through the linked-activity resolver).
  void pushUserCorrelationId(uint64_t id) override { late_.run(A->ft_user_range_push, s_, id, nullptr); }
  void popUserCorrelationId() override { late_.run(A->ft_user_range_pop, s_); }

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
    block_->span = libkineto::TraceSpan(start, end, "flagtrace");
    uint64_t discarded = 0, linked_n = 0;
    visited_ = 0;
    linked_count_ = &linked_n;
    A->ft_session_foreach_event(s_, start > 0 ? (uint64_t)start : 0, end > 0 ? (uint64_t)end : 0, &Session::visit,
                                this, &discarded);
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

  // None: kineto would write its span into the trace (a "Trace" slice torch-cuda has
  // not); the block is kept by the keeper instead.
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return nullptr; }

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
      size_t n = std::min(A->ft_session_streams(s_, dev.data(), stream.data(), dev.size()), dev.size());
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
    a.kind = (uint8_t)ActivityType::GPU_USER_ANNOTATION;
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
    case FT_EVENT_SYNC: return ActivityType::CUDA_SYNC; // kineto's only sync type, for PrivateUse1 too
    case FT_EVENT_DRIVER: return cuda_names_ ? ActivityType::CUDA_DRIVER : ActivityType::PRIVATEUSE1_DRIVER;
    default: return cuda_names_ ? ActivityType::CUDA_RUNTIME : ActivityType::PRIVATEUSE1_RUNTIME;
    }
  }

  void emit(const ft_export_event& x) {
    const ft_device_event& e = x.event;
    if (e.kind == FT_EVENT_GPU_USER_ANNOTATION) return emit_annotation(e);
    bool sync = e.kind == FT_EVENT_SYNC;
    bool device = e.kind == FT_EVENT_KERNEL || e.kind == FT_EVENT_MEMCPY || e.kind == FT_EVENT_MEMSET || sync;
    Activity& a = block_->add();
    a.kind = (uint8_t)type_of(e.kind);
    a.name_ix = name_of(x);
    a.meta_ix = meta_of(x);
    a.start = (int64_t)e.start_ns;
    a.end = (int64_t)e.end_ns;
    // kineto's CudaSyncActivity answers the vendor id (its "External id" when unlinked)
    a.id = sync ? (int32_t)e.correlation_id : e.has_external_id ? (int32_t)e.external_id : 0;
    a.device = device ? (int32_t)e.device : (int32_t)getpid();
    a.resource = device ? (int32_t)e.stream : (int32_t)e.thread_id; // a sync on no stream: -1, as kineto
    a.thread = (int32_t)e.thread_id;
    a.on_device = device;
    a.own_list = sync;
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
  LateCalls late_;
  bool cuda_names_;
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

FTK_EXPORT void set_device_choice(const std::string& unnamed, const std::string& unnamed_why,
                                  const std::string& named, const std::string& named_why) {
  std::lock_guard<std::mutex> g(choice_mu);
  choice[0] = {unnamed, unnamed_why};
  choice[1] = {named, named_why};
}

FTK_EXPORT std::string configured_device() {
  std::lock_guard<std::mutex> g(choice_mu);
  return configured;
}

static DeviceChoice choose_device() {
  bool named = privateuse1_named && privateuse1_named();
  std::lock_guard<std::mutex> g(choice_mu);
  configured = choice[named].device;
  return choice[named];
}

// _ExperimentalConfig(enable_cuda_sync_events=True) reaches kineto as CUDA_SYNC only
// with ProfilerActivity.CUDA; for [CPU, PrivateUse1] flagtrace.torch reads the option
// and says so here before the profile is prepared.
static std::atomic<bool> sync_requested{false};
FTK_EXPORT void set_sync_requested(bool on) { sync_requested = on; }

// toggle_collection_dynamic(enabled, [CUDA or PrivateUse1]) for the running profile;
// false when none runs.
FTK_EXPORT bool set_collecting(bool on) {
  std::lock_guard<std::mutex> g(running_mu);
  if (!running) return false;
  running->set_collecting(on);
  return true;
}

// The profile's block rides in its kineto Config: kineto's MemoryTraceLogger keeps a
// clone of that config (and with it the block) for as long as it keeps the pointers
// to the block's activities; kineto's own copy lets go at the next profile. A feature
// config is the plugin hook kineto offers (Config::addConfigFactory).
class KeeperConfig final : public libkineto::AbstractConfig {
 public:
  static constexpr const char* kName = "flagtrace_keeper";
  KeeperConfig() = default;
  KeeperConfig(const KeeperConfig& other) : libkineto::AbstractConfig(), kept_(other.kept_) {}
  libkineto::AbstractConfig* cloneDerived(libkineto::AbstractConfig&) const override { return new KeeperConfig(*this); }
  void keep(std::shared_ptr<void> p) { kept_.push_back(std::move(p)); }

 protected:
  bool handleOption(const std::string&, std::string&) override { return false; }
  void validate(const std::chrono::time_point<std::chrono::system_clock>&) override {}
  void printActivityProfilerConfig(std::ostream&) const override {}
  void setActivityDependentConfig() override {}

 private:
  std::vector<std::shared_ptr<void>> kept_;
};
static std::atomic<bool> keeper_registered{false};

// Options of the profile that flagtrace does not offer: one line each, never silent.
static void refuse_unsupported(const std::set<ActivityType>& types, const libkineto::Config& config) {
  if (types.count(ActivityType::CUDA_PROFILER_RANGE))
    std::fprintf(stderr, "flagtrace.torch: _ExperimentalConfig(profiler_metrics=..., profiler_measure_per_kernel=...) "
                         "is not supported (flagtrace collects no hardware counters); this profile has none\n");
  if (!config.getCustomConfig().empty())
    std::fprintf(stderr, "flagtrace.torch: _ExperimentalConfig(custom_profiler_config=...) is not read by flagtrace; "
                         "it is ignored in this profile\n");
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
                                                                 const libkineto::Config& config) override {
    ft_session_options o;
    A->ft_session_options_init(&o);
    o.activities = 0;
    bool privateuse1 = false;
    for (ActivityType t : types) {
      if (t == ActivityType::CONCURRENT_KERNEL) o.activities |= FT_ACTIVITY_KERNEL;
      if (t == ActivityType::GPU_MEMCPY) o.activities |= FT_ACTIVITY_MEMCPY;
      if (t == ActivityType::GPU_MEMSET) o.activities |= FT_ACTIVITY_MEMSET;
      if (t == ActivityType::CUDA_RUNTIME || t == ActivityType::PRIVATEUSE1_RUNTIME) o.activities |= FT_ACTIVITY_RUNTIME;
      if (t == ActivityType::CUDA_DRIVER || t == ActivityType::PRIVATEUSE1_DRIVER) o.activities |= FT_ACTIVITY_DRIVER;
      if (t == ActivityType::CUDA_SYNC) o.activities |= FT_ACTIVITY_SYNC;
      privateuse1 |= t == ActivityType::PRIVATEUSE1_RUNTIME;
    }
    if (privateuse1 && sync_requested) o.activities |= FT_ACTIVITY_SYNC;
    diag("configure: activities mask " + std::to_string(o.activities));
    refuse_unsupported(types, config); // before the return below: profiler_metrics asks for no device kind
    if (!(o.activities & (FT_ACTIVITY_KERNEL | FT_ACTIVITY_MEMCPY | FT_ACTIVITY_MEMSET))) return nullptr;
    DeviceChoice d = choose_device();
    if (d.device.empty()) {
      static std::once_flag said;
      std::call_once(said, [&d] { std::fprintf(stderr, "flagtrace.torch: %s\n", d.why.c_str()); });
      return nullptr;
    }
    diag("configure: rows named for " + d.device + " (" + d.why + ")");
    ft_session* s = nullptr;
    if (A->ft_session_create(&s, &o) != FT_OK) return nullptr;
    KeepBlock keep;
    if (keeper_registered)
      keep = [&config](std::shared_ptr<void> b) {
        static_cast<KeeperConfig&>(config.feature(KeeperConfig::kName)).keep(std::move(b));
      };
    return std::make_unique<Session>(s, d.device == "cuda", keep);
  }

 private:
  std::string name_ = "flagtrace";
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                     ActivityType::GPU_MEMSET,        ActivityType::CUDA_RUNTIME,
                                     ActivityType::CUDA_DRIVER,       ActivityType::PRIVATEUSE1_RUNTIME,
                                     ActivityType::PRIVATEUSE1_DRIVER, ActivityType::CUDA_SYNC};
};

// c10 keeps "privateuseone" until a vendor extension (or rename_privateuse1_backend)
// names the backend; reading it takes no GIL, so configure() may call this.
static bool c10_privateuse1_named() { return c10::get_privateuse1_backend(true) != "privateuseone"; }

static std::string installed_by;

// Registers flagtrace as kineto's device profiler, once per process (again: 0 and
// nothing done), driving the core of table api. Returns 0 on success; otherwise a
// one-line reason in msg and kineto left as it was.
FTK_EXPORT int install(const ft_api* api, const char* by, std::string& msg) {
  static std::mutex mu;
  std::lock_guard<std::mutex> g(mu);
  if (A) {
    if (installed_by != by) msg = "installed by " + installed_by;
    return 0;
  }
  if (!api || api->size < sizeof(ft_api)) {
    msg = "the flagtrace core handed to the kineto adaptor is older than the adaptor";
    return -1;
  }
  auto& kapi = libkineto::api();
  if (kapi.isProfilerRegistered()) {
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
  ft_status st = api->ft_session_create(&probe, nullptr);
  if (st == FT_OK && api->ft_session_device_status(probe, &why) != FT_OK) st = FT_EUNAVAILABLE;
  if (st != FT_OK) {
    msg = std::string("this build's device tracer cannot run (") + (probe ? why : api->ft_strerror(st)) +
          "): torch.profiler runs without flagtrace";
    api->ft_session_destroy(probe);
    return -1;
  }
  api->ft_session_destroy(probe);
  A = api;
  installed_by = by;
  privateuse1_named = c10_privateuse1_named;
  // before any Config exists (libkineto_init makes the first): every later one has it
  libkineto::Config::addConfigFactory(KeeperConfig::kName, [](libkineto::Config&) { return new KeeperConfig(); });
  keeper_registered = true;
  // CPU-only kineto: torch's prepareTrace then skips its own (CUPTI) init, and
  // device activity comes from the child profiler registered below.
  libkineto_init(/*cpuOnly=*/true, /*logOnError=*/true);
  kapi.suppressLogMessages();
  kapi.registerProfilerFactory([] { return std::make_unique<Profiler>(); });
  diag(std::string("registered as kineto's child profiler (") + by + ")");
  return 0;
}

} // namespace flagtrace_kineto

// record's injection library, once a torch process has loaded libtorch: the same child
// profiler as `import flagtrace.torch`, driving the injection library's core (its
// profiles attach to record's whole-run session). 0, or -1 with a reason in msg.
extern "C" FTK_EXPORT int flagtrace_kineto_install(const ft_api* api, char* msg, size_t len) {
  std::string why;
  int rc = flagtrace_kineto::install(api, "flagtrace record", why);
  if (msg && len) std::snprintf(msg, len, "%s", why.c_str());
  return rc;
}
