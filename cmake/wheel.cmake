# The Python wheel, built with every build (`make`): flagtrace-VERSION-py3-none-linux_ARCH.whl in
# ${CMAKE_BINARY_DIR}/dist, written by scripts/build_wheel.py with Python's standard library only (no pip,
# setuptools or wheel; offline). It carries libflagtrace.so.0, the command and the injection libraries.
# Off in python/setup.py's own build (it makes the wheel its way) and where scripts/ is not there (an sdist's native/).
option(FT_BUILD_WHEEL "Build the Python wheel (dist/) with every build" ON)
if(NOT FT_BUILD_WHEEL OR NOT EXISTS ${CMAKE_SOURCE_DIR}/scripts/build_wheel.py)
  return()
endif()
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND OR NOT FT_BUILD_CLI)
  message(STATUS "flagtrace: no Python wheel (needs python3 and the flagtrace command)")
  return()
endif()
string(TOLOWER "linux_${CMAKE_SYSTEM_PROCESSOR}" FT_WHEEL_PLAT)
set(FT_WHEEL ${CMAKE_BINARY_DIR}/dist/flagtrace-${PROJECT_VERSION}-py3-none-${FT_WHEEL_PLAT}.whl)
set(FT_WHEEL_TARGETS flagtrace flagtrace_cli)
if(FT_HAVE_INJECT)
  list(APPEND FT_WHEEL_TARGETS flagtrace_inject flagtrace_preload)
endif()
if(TARGET flagtrace_cuda_shim)
  list(APPEND FT_WHEEL_TARGETS flagtrace_cuda_shim)
endif()
if(TARGET flagtrace_cupti_guard)
  list(APPEND FT_WHEEL_TARGETS flagtrace_cupti_guard)
endif()
file(GLOB FT_WHEEL_PY CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/flagtrace/*.py)
add_custom_command(
  OUTPUT ${FT_WHEEL}
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/build_wheel.py --build ${CMAKE_BINARY_DIR}
          --source ${CMAKE_SOURCE_DIR} --plat ${FT_WHEEL_PLAT} --out ${CMAKE_BINARY_DIR}/dist
  DEPENDS ${FT_WHEEL_TARGETS} ${FT_WHEEL_PY} ${CMAKE_SOURCE_DIR}/scripts/build_wheel.py
          ${CMAKE_SOURCE_DIR}/python/pyproject.toml ${CMAKE_SOURCE_DIR}/python/README.md
  COMMENT "the Python wheel: ${FT_WHEEL}"
  VERBATIM)
add_custom_target(wheel ALL DEPENDS ${FT_WHEEL})
