// Python module flagtrace._C: installs the kineto adaptor (libflagtrace_kineto.so,
// flagtrace_kineto.cpp) with this package's libflagtrace as its core.
#include <torch/extension.h>

#include <string>

extern "C" {
#include "flagtrace/api_table.h"
}

namespace flagtrace_kineto {
int install(const ft_api* api, const char* by, std::string& msg);
void set_device_choice(const std::string& unnamed, const std::string& unnamed_why, const std::string& named,
                       const std::string& named_why);
std::string configured_device();
bool set_collecting(bool on);
void set_sync_requested(bool on);
} // namespace flagtrace_kineto

// (ok, reason): under record the injection library installed the adaptor already
// (reason then says so; flagtrace is still torch.profiler's device profiler).
static pybind11::tuple install() {
  std::string msg;
  int rc = flagtrace_kineto::install(ft_api_get(), "flagtrace.torch", msg);
  return pybind11::make_tuple(rc == 0, msg);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "flagtrace's kineto child profiler";
  m.def("install", &install, "Register flagtrace as kineto's device profiler (once); returns (ok, reason)");
  m.def("set_device_choice", &flagtrace_kineto::set_device_choice,
        "The device type ('cuda', 'privateuse1' or '' = none) and why, for when torch's privateuse1 backend has "
        "no name and for when it has one (flagtrace/_device.py decides)");
  m.def("configured_device", &flagtrace_kineto::configured_device,
        "The device type the last profile's rows were named for ('' before any)");
  m.def("set_collecting", &flagtrace_kineto::set_collecting,
        "Stop (False) or resume (True) device collection in the running profile; False when none runs");
  m.def("set_sync_requested", &flagtrace_kineto::set_sync_requested,
        "Whether the next [CPU, PrivateUse1] profile records synchronization events (enable_cuda_sync_events)");
  m.def("version", [] { return std::string(ft_api_get()->ft_version()); });
}
