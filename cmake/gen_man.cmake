# Renders the man pages (flagtrace(1), flagtrace-CMD(1)) with GEN (src/cli/man/gen_man.c)
# from EXE's --help texts and src/cli/man/*.roff, dated reproducibly: SOURCE_DATE_EPOCH
# when set, else the checkout's last commit, else CHANGELOG.md's modification time.
if(DEFINED ENV{SOURCE_DATE_EPOCH})
  string(TIMESTAMP date "%Y-%m-%d" UTC) # honours SOURCE_DATE_EPOCH
else()
  execute_process(COMMAND git -C "${SRC}" log -1 --format=%cd --date=format:%Y-%m-%d
                  OUTPUT_VARIABLE date OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT date)
    file(TIMESTAMP "${SRC}/CHANGELOG.md" date "%Y-%m-%d" UTC)
  endif()
endif()
file(REMOVE_RECURSE "${OUTDIR}")
file(MAKE_DIRECTORY "${OUTDIR}")
execute_process(COMMAND "${GEN}" "${EXE}" "${VERSION}" "${date}" "${SRC}/src/cli/man" "${OUTDIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gen_man: rendering the man pages failed (${rc})")
endif()
file(TOUCH "${OUTDIR}/.stamp")
