// torch's step ranges (ProfilerStep#N, any record_function) for `flagtrace capture
// --steps`: a RecordFunction callback on the user scope, added only while a capture by
// steps waits or counts and removed after it, so that a program pays nothing until asked.
// Built only against torch's headers (the adaptor's CPU test has none).
#include <ATen/record_function.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#define FTK_EXPORT __attribute__((visibility("default")))

namespace {

// What the injection library does with a range: begin 1 returns 1 when it pushed the
// range (then called with begin 0 at its end), 0 otherwise.
using range_fn = int (*)(const char* name, int begin);

std::atomic<range_fn> on_range{nullptr};
std::mutex mu;
bool added = false;
at::CallbackHandle handle = 0;

struct Pushed : at::ObserverContext {};

// RecordFunction::name() is a const char* in torch 2.x, a std::string in older ones
[[maybe_unused]] const char* c_name(const char* s) { return s; }
[[maybe_unused]] const char* c_name(const std::string& s) { return s.c_str(); }

std::unique_ptr<at::ObserverContext> begins(const at::RecordFunction& fn) {
  range_fn f = on_range.load(std::memory_order_acquire);
  if (f && f(c_name(fn.name()), 1)) return std::make_unique<Pushed>();
  return nullptr;
}

void ends(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  range_fn f = on_range.load(std::memory_order_acquire);
  if (ctx && f) f(c_name(fn.name()), 0); // only a range this watch pushed
}

} // namespace

// f: watch user-scope ranges (ProfilerStep#N is one: torch.profiler's step()), each
// handed to f; nullptr: stop watching. 0, or -1 when torch refused the callback.
extern "C" FTK_EXPORT int flagtrace_kineto_watch_steps(range_fn f) {
  std::lock_guard<std::mutex> g(mu);
  on_range.store(f, std::memory_order_release);
  try {
    if (f && !added) {
      handle = at::addGlobalCallback(at::RecordFunctionCallback(begins, ends).scopes({at::RecordScope::USER_SCOPE}));
      added = true;
    } else if (!f && added) {
      at::removeCallback(handle);
      added = false;
    }
  } catch (...) { // torch's errors are exceptions; the injection library is C
    return -1;
  }
  return 0;
}
