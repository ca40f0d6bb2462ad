# `cmake --install`: the library, its headers, pkg-config and CMake packages, the CLI
# with its injection library, man page and bash completion (GNUInstallDirs layout).
include(CMakePackageConfigHelpers)

# First, before any file: every destination must be writable, so that a read-only
# prefix fails with one line and leaves nothing half-installed.
set(FT_INSTALL_DIRS ${CMAKE_INSTALL_LIBDIR} ${CMAKE_INSTALL_INCLUDEDIR} ${CMAKE_INSTALL_DOCDIR})
if(FT_BUILD_CLI)
  list(APPEND FT_INSTALL_DIRS ${CMAKE_INSTALL_BINDIR} ${CMAKE_INSTALL_MANDIR} ${CMAKE_INSTALL_DATADIR})
endif()
install(CODE "set(FT_INSTALL_DIRS \"${FT_INSTALL_DIRS}\")")
install(SCRIPT ${CMAKE_SOURCE_DIR}/cmake/install_check.cmake)

# the include directory comes from the target's INSTALL_INTERFACE alone (an INCLUDES
# DESTINATION here would list it a second time in flagtraceTargets.cmake)
install(TARGETS flagtrace EXPORT flagtraceTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/flagtrace/flagtrace.h include/flagtrace/device_tracer.h include/flagtrace/api_table.h
              ${FT_GENERATED_INCLUDE}/flagtrace/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flagtrace)

install(FILES LICENSE CHANGELOG.md README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

# pkg-config: written at install time with the prefix given then (--prefix, DESTDIR
# apart), as plain normalized paths (no ${pcfiledir}/../..); see docs/packaging.md
set(FT_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${FT_PKGCONFIG_DIR}")
  message(FATAL_ERROR "flagtrace: CMAKE_INSTALL_LIBDIR must be relative to the prefix (the CMake files are relocatable)")
endif()
install(CODE "set(FT_PC_IN \"${CMAKE_SOURCE_DIR}/cmake/flagtrace.pc.in\")
  set(FT_PC_OUT \"${CMAKE_BINARY_DIR}/flagtrace.pc\")
  set(FT_PC_DIR \"${FT_PKGCONFIG_DIR}\")
  set(FT_PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(FT_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(FT_PC_VERSION \"${PROJECT_VERSION}\")")
install(SCRIPT ${CMAKE_SOURCE_DIR}/cmake/install_pc.cmake)

# CMake: find_package(flagtrace [0.1]) -> flagtrace::flagtrace; 0.x minors are not compatible
set(FT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/flagtrace)
install(EXPORT flagtraceTargets NAMESPACE flagtrace:: DESTINATION ${FT_CMAKE_DIR})
configure_package_config_file(cmake/flagtraceConfig.cmake.in ${CMAKE_BINARY_DIR}/flagtraceConfig.cmake
                              INSTALL_DESTINATION ${FT_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/flagtraceConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/flagtraceConfig.cmake ${CMAKE_BINARY_DIR}/flagtraceConfigVersion.cmake
        DESTINATION ${FT_CMAKE_DIR})

if(FT_BUILD_CLI)
  # flagtrace(1) and flagtrace-CMD(1), one per command the main --help lists, rendered from
  # the built CLI's own --help texts and src/cli/man/PAGE.roff, so the two cannot drift
  add_executable(ft_gen_man src/cli/man/gen_man.c)
  file(GLOB FT_MAN_EXTRAS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/cli/man/*.roff)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/.stamp
    COMMAND ${CMAKE_COMMAND} -DGEN=$<TARGET_FILE:ft_gen_man> -DEXE=$<TARGET_FILE:flagtrace_cli>
            -DVERSION=${PROJECT_VERSION} -DSRC=${CMAKE_SOURCE_DIR} -DOUTDIR=${CMAKE_BINARY_DIR}/man
            -P ${CMAKE_SOURCE_DIR}/cmake/gen_man.cmake
    DEPENDS flagtrace_cli ft_gen_man ${FT_MAN_EXTRAS} ${CMAKE_SOURCE_DIR}/cmake/gen_man.cmake VERBATIM)
  add_custom_target(ft_man ALL DEPENDS ${CMAKE_BINARY_DIR}/man/.stamp)
  install(TARGETS flagtrace_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(DIRECTORY ${CMAKE_BINARY_DIR}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 FILES_MATCHING PATTERN "*.1")
  install(FILES completions/flagtrace DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
endif()
if(FT_HAVE_INJECT)
  # where `record` looks for them (FT_INJECT_RELDIR): the preload library beside the injection one
  install(TARGETS flagtrace_inject flagtrace_preload LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/flagtrace)
  if(FT_HAVE_CUDA_SHIM)
    install(TARGETS flagtrace_cuda_shim LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/flagtrace)
  endif()
endif()

# `cmake --build BUILD --target uninstall`: removes what the last `cmake --install` of
# this build directory wrote (its install_manifest.txt), then the directories only
# flagtrace uses, when empty
set(FT_OWN_DIRS ${CMAKE_INSTALL_INCLUDEDIR}/flagtrace ${FT_CMAKE_DIR} ${CMAKE_INSTALL_DOCDIR})
if(FT_HAVE_INJECT)
  list(APPEND FT_OWN_DIRS ${CMAKE_INSTALL_LIBDIR}/flagtrace)
endif()
add_custom_target(uninstall
  COMMAND ${CMAKE_COMMAND} -DMANIFEST=${CMAKE_BINARY_DIR}/install_manifest.txt "-DOWN_DIRS=${FT_OWN_DIRS}"
          -DPC_REL=${FT_PKGCONFIG_DIR}/flagtrace.pc -P ${CMAKE_SOURCE_DIR}/cmake/uninstall.cmake
  VERBATIM)
