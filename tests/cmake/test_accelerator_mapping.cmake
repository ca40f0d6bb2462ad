# Pins FLAGOS_ACCELERATOR -> tracer file, accelerator by accelerator (run with cmake -P).
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/accelerator.cmake)

set(expected
  "cuda=cupti_tracer.c"
  "metax=cupti_tracer.c"
  "ppu=cupti_tracer.c"
  "dcu=roctracer_tracer.c"
  "ascend=mspti_tracer.c"
  "musa=mupti_tracer.c"
  "gcu=topspti_tracer.c"
  "cpu=unavailable_tracer.c")

list(LENGTH expected n_expected)
list(LENGTH FT_ACCELERATORS n_known)
if(NOT n_expected EQUAL n_known)
  message(FATAL_ERROR "FT_ACCELERATORS has ${n_known} entries but this test pins ${n_expected}: "
                      "give the new accelerator a tracer here deliberately")
endif()

foreach(pair IN LISTS expected)
  string(REPLACE "=" ";" kv "${pair}")
  list(GET kv 0 acc)
  list(GET kv 1 want)
  ft_tracer_for(${acc} got name)
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "FLAGOS_ACCELERATOR=${acc}: expected ${want}, got ${got}")
  endif()
  list(FIND FT_ACCELERATORS ${acc} idx)
  if(idx LESS 0)
    message(FATAL_ERROR "${acc} missing from FT_ACCELERATORS")
  endif()
endforeach()
message(STATUS "accelerator mapping: ${n_expected} accelerators pinned")
