# Install step 1: fail in one line, before any file is copied, when a destination
# (or, if missing, the nearest existing directory above it) is not writable.
set(_root "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
foreach(d ${FT_INSTALL_DIRS})
  if(IS_ABSOLUTE "${d}")
    set(p "$ENV{DESTDIR}${d}")
  else()
    set(p "${_root}/${d}")
  endif()
  while(NOT EXISTS "${p}")
    get_filename_component(p "${p}" DIRECTORY)
  endwhile()
  execute_process(COMMAND test -d "${p}" -a -w "${p}" RESULT_VARIABLE not_writable)
  if(not_writable)
    # NOTICE prints the line as is; FATAL_ERROR's own text is wrapped, so it stays short
    message(NOTICE "flagtrace: cannot install into ${_root}: ${p} is not a writable directory; "
                   "nothing was installed (choose another --prefix, or run as a user who may write there)")
    message(FATAL_ERROR "flagtrace: install stopped before copying any file")
  endif()
endforeach()
