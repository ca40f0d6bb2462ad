"""Builds the flagtrace Python package from this repository (no network):
    pip install --no-build-isolation ./python      (or: pip wheel --no-build-isolation ./python)
CMake builds libflagtrace, the flagtrace command and, on CUDA, its injection library;
they ship inside the package (flagtrace/lib, flagtrace/bin; `flagtrace` runs the
command). FLAGOS_ACCELERATOR picks the tracer ([FLAGOS_ACCELERATOR=ascend] pip install ...;
unset: CMake's default). With torch installed, the kineto adaptor flagtrace._C is compiled too,
against torch's own kineto headers. The version is CMakeLists.txt's project(VERSION).
The source tree may be read-only: everything the build writes goes to FLAGTRACE_BUILD_DIR
(kept: rebuilds are incremental) or else a temporary directory removed afterwards.
The sdist carries the C sources in native/ (the sdist command copies them), so that
sdist -> wheel works without the repository (docs/packaging.md)."""
import atexit
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
# the C sources: the repository (this file's parent directory), or native/ in an sdist
NATIVE = os.path.join(HERE, "native")
ROOT = NATIVE if os.path.isfile(os.path.join(NATIVE, "CMakeLists.txt")) else os.path.dirname(HERE)
# what an sdist's native/ holds: all that CMake reads for the library and the command
NATIVE_PARTS = ["CMakeLists.txt", "cmake", "include", "src", "completions", "examples", "docs", "LICENSE", "README.md",
                "CHANGELOG.md"]
WORK = os.environ.get("FLAGTRACE_BUILD_DIR")
if not WORK:
    WORK = tempfile.mkdtemp(prefix="flagtrace-build-")
    atexit.register(shutil.rmtree, WORK, True)
CMAKE_BUILD = os.path.join(WORK, "cmake")
LIBDIR = os.path.join(WORK, "link")  # libflagtrace.so for linking the torch extension

try:
    from torch.utils.cpp_extension import BuildExtension, CppExtension, include_paths, library_paths
except ImportError:  # without torch: the library and the command, no kineto adaptor
    BuildExtension, CppExtension = build_ext, None

from setuptools import Extension


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(flagtrace VERSION ([0-9.]+)", f.read())[1]


def fail(msg):
    sys.exit(f"flagtrace: {msg}")  # one line; pip stops before installing anything


# pip builds a wheel even for `pip install`: setuptools before 70.1 needs the wheel
# package for that, and without it would stop at "invalid command 'bdist_wheel'"
if not (importlib.util.find_spec("wheel") or importlib.util.find_spec("setuptools.command.bdist_wheel")):
    fail("building the Python package needs the 'wheel' package with this setuptools "
         "(apt-get install python3-wheel, or pip install wheel)")


def need_tool(what, env, names, package):
    cands = [os.environ[env].split()[0]] if os.environ.get(env) else names
    if not any(shutil.which(c) for c in cands):
        fail(f"building the Python package needs {what}: no {' or '.join(cands)} on PATH (apt-get install {package})")


def run(cmd):
    try:
        subprocess.check_call(cmd)
    except (OSError, subprocess.CalledProcessError) as e:
        fail(f"'{' '.join(cmd)}' failed ({e}); its output is above")


class Build(BuildExtension):
    def run(self):
        need_tool("cmake", "CMAKE", ["cmake"], "cmake")
        need_tool("a C compiler", "CC", ["cc", "gcc", "clang"], "gcc")
        if CppExtension:
            need_tool("a C++ compiler", "CXX", ["c++", "g++", "clang++"], "g++")
        build = CMAKE_BUILD
        cmake = shutil.which(os.environ.get("CMAKE", "cmake"))
        # always passed, so an unset variable means CMake's default, not a cached choice
        accelerator = os.environ.get("FLAGOS_ACCELERATOR", "")
        run([cmake, "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DFT_BUILD_TESTS=OFF", "-DFT_BUILD_BENCH=OFF",
             "-DFT_BUILD_WHEEL=OFF", f"-DFLAGOS_ACCELERATOR={accelerator}"])
        run([cmake, "--build", build, "-j", str(os.cpu_count() or 2)])
        # Straight into the build tree, which becomes the wheel: the library under its
        # SONAME (what flagtrace._C loads through its rpath), the injection library,
        # and the command, where `record` finds ../lib/libflagtrace_inject.so (and the
        # preload library and, on CUDA builds, the capture range's libcuda shim beside it).
        # libflagtrace.so beside the sources is only for linking the extension.
        pkg = os.path.join(self.build_lib, "flagtrace")
        ship = {"lib": ["libflagtrace.so.0", "libflagtrace_inject.so", "libflagtrace_preload.so",
                        "libflagtrace_cuda_shim.so", "libflagtrace_cupti_guard.so"], "bin": ["flagtrace"]}
        for sub, names in ship.items():
            os.makedirs(os.path.join(pkg, sub), exist_ok=True)
            for name in names:
                if os.path.exists(os.path.join(build, name)):  # none on a cpu build
                    shutil.copy(os.path.join(build, name), os.path.join(pkg, sub, name))  # links become files
        os.makedirs(LIBDIR, exist_ok=True)
        shutil.copy(os.path.join(build, "libflagtrace.so"), os.path.join(LIBDIR, "libflagtrace.so"))
        with open(os.path.join(pkg, "_version.py"), "w") as f:
            f.write(f'"""Written by setup.py from CMakeLists.txt."""\n__version__ = "{version()}"\n')
        super().run()

    # The adaptor is a plain shared library in flagtrace/lib (record's injection
    # library loads it from beside itself), built first; flagtrace._C links it there.
    def get_ext_filename(self, fullname):
        # asked with the full name or its last part (distutils' get_ext_fullpath)
        if fullname in (ADAPTOR, ADAPTOR.rsplit(".", 1)[1]):
            return os.path.join(*fullname.split(".")[:-1], "libflagtrace_kineto.so")
        return super().get_ext_filename(fullname)

    def build_extension(self, ext):
        if ext.name == "flagtrace._C":
            ext.library_dirs.append(os.path.join(self.build_lib, "flagtrace", "lib"))
        super().build_extension(ext)


class SDist(sdist):
    """The sdist as setuptools makes it (python/), plus the C sources under native/."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        junk = shutil.ignore_patterns("__pycache__", "*.pyc", "*.o", "*.so", ".*")
        for part in NATIVE_PARTS:
            src, dst = os.path.join(ROOT, part), os.path.join(base_dir, "native", part)
            if not os.path.exists(src):
                fail(f"the sdist needs {src}, which is missing")
            if os.path.isdir(src):
                shutil.copytree(src, dst, ignore=junk, dirs_exist_ok=True)
            else:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy(src, dst)


class BinaryDistribution(Distribution):
    """The package carries native code even without the torch extension: a platform wheel."""

    def has_ext_modules(self):
        return True


ADAPTOR = "flagtrace.lib.libflagtrace_kineto"
ext_modules = []
if CppExtension:
    # torch ships kineto's headers in include/kineto; they include each other by bare
    # name, so that directory itself goes on the path. version.h is generated.
    includes = [os.path.join(ROOT, "include"), os.path.join(CMAKE_BUILD, "include")] + include_paths() \
        + [os.path.join(p, "kineto") for p in include_paths() if os.path.isdir(os.path.join(p, "kineto"))]
    # torch exports neither fmt's vformat nor the KINETO_NAMESPACE macro's users
    flags = ["-DFMT_HEADER_ONLY", "-DKINETO_NAMESPACE=libkineto", "-O2", "-std=c++17", "-fvisibility=hidden"]
    # The kineto child profiler: libtorch_cpu and c10 only (no Python), so that record
    # can load it into any torch process; it reaches the flagtrace core through the
    # table its installer hands it, so it links no libflagtrace.
    ext_modules.append(Extension(
        ADAPTOR,
        [os.path.relpath(os.path.join(ROOT, "src/kineto", f), HERE) for f in ("flagtrace_kineto.cpp", "step_watch.cpp")],
        include_dirs=includes, library_dirs=library_paths(), libraries=["c10", "torch_cpu"],
        extra_compile_args=flags, language="c++",
        extra_link_args=["-Wl,-soname,libflagtrace_kineto.so"],
    ))
    ext_modules.append(CppExtension(
        "flagtrace._C",
        [os.path.relpath(os.path.join(ROOT, "src/kineto/module.cpp"), HERE)],
        include_dirs=includes,
        library_dirs=[LIBDIR],
        libraries=["flagtrace", "flagtrace_kineto"],
        extra_compile_args=["-O2"],
        extra_link_args=["-Wl,-rpath,$ORIGIN/lib"],
    ))

setup(
    version=version(),
    ext_modules=ext_modules,
    cmdclass={"build_ext": Build, "sdist": SDist},
    distclass=BinaryDistribution,
    # nothing is written beside the sources: build/ and the egg-info go to WORK
    options={"build": {"build_base": os.path.join(WORK, "build")}, "egg_info": {"egg_base": WORK}},
)
