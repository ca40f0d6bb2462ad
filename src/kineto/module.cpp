// Python module flagtrace._C: installs the kineto adaptor (flagtrace_kineto.cpp).
#include <torch/extension.h>

#include <string>

extern "C" {
#include "flagtrace/flagtrace.h"
}

namespace flagtrace_kineto {
int install(bool runtime_is_cuda, std::string& msg);
}

static pybind11::tuple install(bool runtime_is_cuda) {
  std::string msg;
  int rc = flagtrace_kineto::install(runtime_is_cuda, msg);
  return pybind11::make_tuple(rc == 0, msg);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "flagtrace's kineto child profiler";
  m.def("install", &install, "Register flagtrace as kineto's device profiler; returns (ok, reason)");
  m.def("version", [] { return std::string(ft_version()); });
}
