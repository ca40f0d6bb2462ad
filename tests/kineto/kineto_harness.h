// Drives the kineto adaptor without torch: the adaptor's source compiled against
// kineto's headers and GenericTraceActivity.cpp (FT_KINETO_SRC), a logger standing
// in for torch's MemoryTraceLogger, and stubs for the libkineto and c10 entry points
// only install() reaches (never called here). The adaptor drives this build's core.
#include "../../src/kineto/flagtrace_kineto.cpp"

#include <ActivityBuffers.h>

#include <cstdlib>
#include <map>

extern "C" {
ft_status ft__session_inject(ft_session *s, const ft_device_event *ev);
ft_status ft__session_inject_external(ft_session *s, uint32_t corr, uint64_t ext);
void ft__session_set_window(ft_session *s, uint64_t lo, uint64_t hi);
}

namespace libkineto {
LibkinetoApi &api() { std::abort(); }
void Config::addConfigFactory(std::string, std::function<AbstractConfig *(Config &)>) { std::abort(); }
} // namespace libkineto
namespace c10 {
std::string get_privateuse1_backend(bool) { return "privateuseone"; }
} // namespace c10

// What the profile's kineto Config would keep (KeeperConfig): the blocks, released
// when the test says the logger is gone.
struct Kept {
  std::vector<std::shared_ptr<void>> blocks;
  flagtrace_kineto::KeepBlock keep() {
    flagtrace_kineto::A = ft_api_get();
    return [this](std::shared_ptr<void> b) { blocks.push_back(std::move(b)); };
  }
};
void libkineto_init(bool, bool) { std::abort(); }
void suppressLibkinetoLogMessages() {}

// What torch's MemoryTraceLogger does with what it is handed: pointers kept from
// handleActivity, copies (as GenericTraceActivity) from handleGenericActivity.
struct KeepingLogger : libkineto::ActivityLogger {
  std::vector<const libkineto::ITraceActivity *> activities;
  std::vector<std::unique_ptr<libkineto::GenericTraceActivity>> copies;
  size_t generic = 0;
  void handleDeviceInfo(const libkineto::DeviceInfo &, uint64_t) override {}
  void handleResourceInfo(const libkineto::ResourceInfo &, int64_t) override {}
  void handleOverheadInfo(const OverheadInfo &, int64_t) override {}
  void handleTraceSpan(const libkineto::TraceSpan &) override {}
  void handleActivity(const libkineto::ITraceActivity &a) override { activities.push_back(&a); }
  void handleGenericActivity(const libkineto::GenericTraceActivity &a) override {
    generic++;
    copies.push_back(std::make_unique<libkineto::GenericTraceActivity>(a));
    activities.push_back(copies.back().get());
  }
  void handleTraceStart(const std::unordered_map<std::string, std::string> &, const std::string &) override {}
  void finalizeMemoryTrace(const std::string &, const libkineto::Config &) override {}
  void finalizeTrace(const libkineto::Config &, std::unique_ptr<libkineto::ActivityBuffers>, int64_t,
                     std::unordered_map<std::string, std::vector<std::string>> &) override {}
};

// torch's op activities, by op id, for the linked-activity resolver.
struct Ops {
  libkineto::TraceSpan span{0, 0, "PyTorch Profiler"};
  std::map<int32_t, std::unique_ptr<libkineto::GenericTraceActivity>> by_id;
  const libkineto::ITraceActivity *add(int32_t id, const char *name) {
    auto a = std::make_unique<libkineto::GenericTraceActivity>(span, libkineto::ActivityType::CPU_OP, name);
    a->id = id;
    return (by_id[id] = std::move(a)).get();
  }
  libkineto::getLinkedActivityCallback resolver() {
    return [this](int32_t id) -> const libkineto::ITraceActivity * {
      auto it = by_id.find(id);
      return it == by_id.end() ? nullptr : it->second.get();
    };
  }
};
