# FLAGOS_ACCELERATOR -> the one tracer source file compiled into this build.
#
# Every accelerator is named explicitly: there is no default arm, so a new
# accelerator cannot silently get the unavailable tracer (how PPU once did, design.md §1).
# tests/cmake/test_accelerator_mapping.cmake pins this table entry by entry.

set(FT_ACCELERATORS cuda metax ppu dcu ascend musa gcu cpu)

# ft_tracer_for(<accelerator> <out-file> <out-tracer-name>)
function(ft_tracer_for acc out_file out_name)
  if(acc STREQUAL "cuda" OR acc STREQUAL "metax" OR acc STREQUAL "ppu")
    set(file cupti_tracer.c)
    set(name cupti)
  elseif(acc STREQUAL "dcu")
    set(file roctracer_tracer.c)
    set(name roctracer)
  elseif(acc STREQUAL "ascend")
    set(file mspti_tracer.c)
    set(name mspti)
  elseif(acc STREQUAL "musa")
    set(file mupti_tracer.c)
    set(name mupti)
  elseif(acc STREQUAL "gcu")
    set(file topspti_tracer.c)
    set(name topspti)
  elseif(acc STREQUAL "cpu")
    set(file unavailable_tracer.c)
    set(name unavailable)
  else()
    message(FATAL_ERROR "FLAGOS_ACCELERATOR='${acc}' is not one of: ${FT_ACCELERATORS}")
  endif()
  set(${out_file} ${file} PARENT_SCOPE)
  set(${out_name} ${name} PARENT_SCOPE)
endfunction()

# ft_default_accelerator(<out>): cuda when the CUPTI headers are found, else cpu.
function(ft_default_accelerator out)
  set(hints /usr/local/cuda/extras/CUPTI/include /usr/local/cuda/include)
  if(DEFINED ENV{CUDA_HOME})
    list(PREPEND hints $ENV{CUDA_HOME}/extras/CUPTI/include $ENV{CUDA_HOME}/include)
  endif()
  find_path(FT_CUPTI_INCLUDE_DIR cupti_activity.h HINTS ${hints} NO_DEFAULT_PATH)
  if(FT_CUPTI_INCLUDE_DIR)
    set(${out} cuda PARENT_SCOPE)
  else()
    set(${out} cpu PARENT_SCOPE)
  endif()
endfunction()
