# The kineto adaptor as libflagtrace_kineto.so beside the injection library, built
# against the torch that python3 imports (FT_WITH_TORCH=ON: the GPU check's build;
# the Python package builds its own copy). record's injection library loads it into a
# torch process so that the program's own torch.profiler gets device activity.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
# one query per answer: the include and library lists are themselves ';'-lists
foreach(_q inc lib abi)
  if(_q STREQUAL "inc")
    set(_py "import torch.utils.cpp_extension as c; print(';'.join(c.include_paths()))")
  elseif(_q STREQUAL "lib")
    set(_py "import torch.utils.cpp_extension as c; print(';'.join(c.library_paths()))")
  else()
    set(_py "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))")
  endif()
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "${_py}" OUTPUT_VARIABLE _ft_torch_${_q}
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc ERROR_QUIET)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "FT_WITH_TORCH=ON needs a python3 that imports torch (${Python3_EXECUTABLE} cannot)")
  endif()
endforeach()
set(_ft_kineto_inc "")
foreach(d ${_ft_torch_inc})
  if(EXISTS ${d}/kineto)
    list(APPEND _ft_kineto_inc ${d}/kineto)
  endif()
endforeach()
enable_language(CXX)
set(CMAKE_CXX_STANDARD 17)
add_library(flagtrace_kineto SHARED src/kineto/flagtrace_kineto.cpp src/kineto/step_watch.cpp)
target_include_directories(flagtrace_kineto PRIVATE ${CMAKE_SOURCE_DIR}/include ${FT_GENERATED_INCLUDE})
target_include_directories(flagtrace_kineto SYSTEM PRIVATE ${_ft_torch_inc} ${_ft_kineto_inc})
target_compile_definitions(flagtrace_kineto PRIVATE FMT_HEADER_ONLY KINETO_NAMESPACE=libkineto
                                                    _GLIBCXX_USE_CXX11_ABI=${_ft_torch_abi})
set_target_properties(flagtrace_kineto PROPERTIES CXX_VISIBILITY_PRESET hidden)
target_link_directories(flagtrace_kineto PRIVATE ${_ft_torch_lib})
target_link_libraries(flagtrace_kineto PRIVATE c10 torch_cpu)
message(STATUS "flagtrace: the kineto adaptor (libflagtrace_kineto.so) against ${_ft_torch_lib}")
