# ctest driver (tests/convjit_run.cmake): the acceptance job of convjit-run
# twice on a fresh cache directory. The first run must pass its check; the
# second must report every kernel as a disk-cache hit (a kernel two jobs
# share: the later job's listing may be a memory hit) and compile_ms 0.
# Inputs: -DRUN=<convjit-run> -DWORK=<scratch dir> -DARGS=<;-list of args>
file(REMOVE_RECURSE ${WORK})
foreach(round 1 2)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env CONVJIT_CACHE_DIR=${WORK} ${RUN} ${ARGS}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run ${round}: convjit-run exited ${rc}\n${out}\n${err}")
  endif()
  if(NOT out MATCHES "\"pass\":true" OR out MATCHES "\"pass\":(false|null)")
    message(FATAL_ERROR "run ${round}: not every job passed its check\n${out}")
  endif()
  string(REGEX MATCHALL "\"cache\":\"[a-z]+\"" sources "${out}")
  list(LENGTH sources nk)
  if(nk EQUAL 0)
    message(FATAL_ERROR "run ${round}: no kernels listed\n${out}")
  endif()
  if(round EQUAL 2)
    # Each kernel's first listing must be a disk hit; a later listing of
    # the same kernel (shared by two jobs, e.g. one finalize) may be a
    # memory hit: the context loaded it from disk for the earlier job.
    string(REGEX MATCHALL "\"name\":\"[A-Za-z0-9_]+\",[^}]*\"cache\":\"[a-z]+\"" listings "${out}")
    list(LENGTH listings nl)
    if(NOT nl EQUAL nk)
      message(FATAL_ERROR "run 2: ${nk} cache sources but ${nl} name/cache pairs parsed\n${out}")
    endif()
    set(seen "")
    foreach(l ${listings})
      string(REGEX REPLACE "^\"name\":\"([A-Za-z0-9_]+)\".*\"cache\":\"([a-z]+)\"$" "\\1" name "${l}")
      string(REGEX REPLACE "^.*\"cache\":\"([a-z]+)\"$" "\\1" src "${l}")
      list(FIND seen ${name} at)
      if(at EQUAL -1 AND NOT src STREQUAL "disk")
        message(FATAL_ERROR "run 2: kernel ${name} was not a disk-cache hit (${src})\n${out}")
      elseif(NOT at EQUAL -1 AND NOT src MATCHES "^(disk|memory)$")
        message(FATAL_ERROR "run 2: kernel ${name}, listed again, was ${src}\n${out}")
      endif()
      list(APPEND seen ${name})
    endforeach()
    if(NOT out MATCHES "\"compile_ms\":0\\.000,")
      message(FATAL_ERROR "run 2: compile_ms is not 0\n${out}")
    endif()
  endif()
  message(STATUS "run ${round}: ${out}")
endforeach()
file(REMOVE_RECURSE ${WORK})
