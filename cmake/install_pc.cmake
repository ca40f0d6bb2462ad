# Install step: flagtrace.pc from cmake/flagtrace.pc.in with the install prefix of this
# `cmake --install` (so --prefix works), its paths normalized (no "..", no "//").
cmake_path(SET prefix NORMALIZE "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "(.)/$" "\\1" prefix "${prefix}")
foreach(d INCLUDEDIR LIBDIR)
  if(IS_ABSOLUTE "${FT_PC_${d}}")
    cmake_path(SET FT_PC_${d} NORMALIZE "${FT_PC_${d}}")
  else()
    cmake_path(SET FT_PC_${d} NORMALIZE "${FT_PC_${d}}")
    set(FT_PC_${d} "\${prefix}/${FT_PC_${d}}")
  endif()
  string(REGEX REPLACE "(.)/$" "\\1" FT_PC_${d} "${FT_PC_${d}}")
endforeach()
set(FT_PC_PREFIX "${prefix}")
configure_file("${FT_PC_IN}" "${FT_PC_OUT}" @ONLY)
# file(INSTALL) adds DESTDIR and records the file in install_manifest.txt
file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/${FT_PC_DIR}" TYPE FILE FILES "${FT_PC_OUT}")
