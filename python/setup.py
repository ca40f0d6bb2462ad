"""Builds the flagtrace Python package against the installed torch (no network):
    [FLAGOS_ACCELERATOR=ascend] pip install --no-build-isolation ./python
libflagtrace is built with CMake from the repository (for FLAGOS_ACCELERATOR's tracer,
else CMake's default) and shipped inside the package; the kineto adaptor is compiled
against torch's own kineto headers."""
import glob
import os
import shutil
import subprocess

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, include_paths

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIBDIR = os.path.join(HERE, "flagtrace", "lib")


class Build(BuildExtension):
    def run(self):
        build = os.path.join(ROOT, "build-python")
        # always passed, so an unset variable means CMake's default, not a cached choice
        accelerator = os.environ.get("FLAGOS_ACCELERATOR", "")
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DFT_BUILD_TESTS=OFF",
                               "-DFT_BUILD_BENCH=OFF", "-DFT_BUILD_CLI=OFF", f"-DFLAGOS_ACCELERATOR={accelerator}"])
        subprocess.check_call(["cmake", "--build", build, "--target", "flagtrace", "-j", str(os.cpu_count() or 2)])
        # beside the sources (the extension links against it) and into the build
        # tree (package data is collected before build_ext runs, so put it there too)
        for dest in (LIBDIR, os.path.join(self.build_lib, "flagtrace", "lib")):
            os.makedirs(dest, exist_ok=True)
            for lib in glob.glob(os.path.join(build, "libflagtrace.so*")):
                shutil.copy(lib, os.path.join(dest, os.path.basename(lib)))  # links become files
        super().run()


ext = CppExtension(
    "flagtrace._C",
    [os.path.relpath(os.path.join(ROOT, "src/kineto", f), HERE) for f in ("flagtrace_kineto.cpp", "module.cpp")],
    # torch ships kineto's headers in include/kineto; they include each other by
    # bare name, so that directory itself goes on the path
    include_dirs=[os.path.join(ROOT, "include")] + [os.path.join(p, "kineto") for p in include_paths()
                                                    if os.path.isdir(os.path.join(p, "kineto"))],
    library_dirs=[LIBDIR],
    libraries=["flagtrace"],
    # torch exports neither fmt's vformat nor the KINETO_NAMESPACE macro's users
    extra_compile_args=["-DFMT_HEADER_ONLY", "-DKINETO_NAMESPACE=libkineto", "-O2"],
    extra_link_args=["-Wl,-rpath,$ORIGIN/lib"],
)

setup(
    name="flagtrace",
    version="0.1.0",
    description="Vendor-neutral GPU activity profiler: torch.profiler integration",
    packages=["flagtrace"],
    package_data={"flagtrace": ["lib/libflagtrace.so*"]},
    ext_modules=[ext],
    cmdclass={"build_ext": Build},
)
