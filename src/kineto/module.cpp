// Python module flagtrace._C: installs the kineto adaptor (flagtrace_kineto.cpp).
#include <torch/extension.h>

#include <string>

extern "C" {
#include "flagtrace/flagtrace.h"
}

namespace flagtrace_kineto {
int install(bool (*privateuse1_named)(), std::string& msg);
void set_device_choice(const std::string& unnamed, const std::string& unnamed_why, const std::string& named,
                       const std::string& named_why);
std::string configured_device();
} // namespace flagtrace_kineto

// c10 keeps "privateuseone" until a vendor extension (or rename_privateuse1_backend)
// names the backend; reading it takes no GIL, so configure() may call this.
static bool privateuse1_named() { return c10::get_privateuse1_backend() != "privateuseone"; }

static pybind11::tuple install() {
  std::string msg;
  int rc = flagtrace_kineto::install(&privateuse1_named, msg);
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
  m.def("version", [] { return std::string(ft_version()); });
}
