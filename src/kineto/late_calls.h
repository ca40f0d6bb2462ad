// Calls that reach a kineto child session while, or after, kineto destroys it: counted and waited for, or ignored.
//
// kineto calls a child session's push/pop methods from every profiled thread while it walks
// its sessions_ vector without a lock, and destroys the sessions (resetTraceData) on the
// thread that stops the profile. With torch's child-thread profiling (PyTorch's
// test_cpp_thread: 20 C++ threads running ops while another stops the profile) a thread can
// reach a session during its destruction or just after it. Found by reading kineto: that
// test's own SIGSEGV is torch's (native torch-cuda crashes as often, docs/pytorch.md).
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <new>
#include <thread>

namespace flagtrace_kineto {

// A session's calls in flight. enter() before touching the session; a false answer (the
// session is closing) means do nothing. close() marks it closing and waits for the calls
// that entered before. Sequentially consistent on both sides: a call either sees the mark
// or is counted before close() reads the count.
class LateCalls {
 public:
  bool enter() {
    calls_.fetch_add(1);
    if (!closing_.load()) return true;
    calls_.fetch_sub(1);
    return false;
  }
  void leave() { calls_.fetch_sub(1); }
  template <class F, class... T>
  void run(F f, T... a) {
    if (enter()) f(a...), leave();
  }
  void close() {
    closing_.store(true);
    while (calls_.load()) std::this_thread::yield();
  }

 private:
  std::atomic<long> calls_{0};
  std::atomic<bool> closing_{false};
};

// The memory of the sessions kineto deleted, kept for kRetired more deletions: a thread that
// read kineto's pointer to a session just before the delete still calls into valid memory,
// where the destroyed object's methods find it closed (or kineto's base class's no-ops).
class Retired {
 public:
  static void keep(void *p) {
    static std::mutex mu;
    static void *ring[kRetired];
    static size_t next;
    void *old;
    {
      std::lock_guard<std::mutex> g(mu);
      old = ring[next];
      ring[next] = p;
      next = (next + 1) % kRetired;
    }
    ::operator delete(old);
  }

 private:
  static constexpr size_t kRetired = 8;
};

// A class deriving from this has its deleted objects' memory kept so (Retired); new is the
// global one's, named here as the pair of this delete.
struct KeptOnDelete {
  static void *operator new(size_t n) { return ::operator new(n); }
  static void operator delete(void *p) { Retired::keep(p); }
};

} // namespace flagtrace_kineto
