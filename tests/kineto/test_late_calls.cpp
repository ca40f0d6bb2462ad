// The kineto adaptor's guard for calls that reach a session while kineto destroys it (src/kineto/late_calls.h).
//
// kineto walks its child sessions without a lock from every profiled thread and deletes them
// on the thread that stops the profile. Here threads call through a pointer they read before
// the delete, as kineto's do, while the main thread closes and deletes the object: no call may
// reach the closed session's work, close() must wait for the calls already in, and the memory
// must stay valid (ASan: no use after free; TSan: no race). No kineto needed.
#include "../../src/kineto/late_calls.h"

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

using flagtrace_kineto::KeptOnDelete;
using flagtrace_kineto::LateCalls;

static int failures;
#define CHECK(c)                                                                                     \
  do {                                                                                               \
    if (!(c)) std::fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c), failures++; \
  } while (0)

// A stand-in for the adaptor's Session: its work (the core's push) counted, and what the
// destructor frees (the core's session) checked by every call that gets through.
struct Session : KeptOnDelete {
  LateCalls late;
  std::atomic<bool> destroyed{false};
  std::atomic<long> *work, *after;
  Session(std::atomic<long> *w, std::atomic<long> *a) : work(w), after(a) {}
  ~Session() {
    late.close();
    destroyed = true;
  }
  void push(long n) {
    late.run(
        [](Session *s, long k) {
          if (s->destroyed) s->after->fetch_add(1); // a call past the destructor: the crash
          s->work->fetch_add(k);
        },
        this, n);
  }
};

// close() returns only once a call that entered before it has left.
static void close_waits_for_a_call_in_flight() {
  LateCalls late;
  std::atomic<int> stage{0};
  std::thread in([&] {
    late.run([&] {
      stage = 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      stage = 2;
    });
  });
  while (stage.load() == 0) std::this_thread::yield();
  late.close();
  CHECK(stage.load() == 2); // the call was over before close() returned
  in.join();
  bool ran = false;
  late.run([&] { ran = true; });
  CHECK(!ran); // closed: later calls do nothing
}

// Threads keep calling through their pointer while it is closed and deleted.
static void calls_through_a_deleted_session() {
  std::atomic<long> work{0}, after{0};
  Session *s = new Session(&work, &after);
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; i++)
    threads.emplace_back([&, s] {
      started++;
      while (!stop.load()) s->push(1);
    });
  while (started.load() < 8) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  delete s; // kineto's resetTraceData, while the threads run
  long at_delete = work.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop = true;
  for (auto &t : threads) t.join();
  CHECK(at_delete > 0);                                           // the threads did call before
  CHECK(work.load() == at_delete);                                // and nothing got through after
  CHECK(after.load() == 0);                                       // nor during the destructor
  for (int i = 0; i < 16; i++) delete new Session(&work, &after); // the kept memory is freed in turn
}

int main() {
  close_waits_for_a_call_in_flight();
  calls_through_a_deleted_session();
  if (failures) std::fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
