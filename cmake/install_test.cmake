# ctest driver (tests/install.cmake): install the build tree into a fresh
# prefix, then build examples/ against it twice — with find_package(convjit)
# and with pkg-config — and run both builds on the emulator.
# Inputs: -DBIN=<build dir> -DSRC=<source dir> -DWORK=<scratch dir>
# [-DSANITIZE=-fsanitize=...: the library is sanitizer-built, so the consumers must be too]
# [-DPYTHON=<python with torch> -DPYSITE=<package dir relative to the prefix>: the
#  installed Python package must import and find the installed library]
file(REMOVE_RECURSE ${WORK})
set(PREFIX ${WORK}/prefix)
set(san_flags "")
if(SANITIZE)
  set(san_flags ${SANITIZE})
endif()
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
run(${CMAKE_COMMAND} --install ${BIN} --prefix ${PREFIX})
foreach(f include/convjit/convjit.h bin/convjit-run bin/convjit-dump)
  if(NOT EXISTS ${PREFIX}/${f})
    message(FATAL_ERROR "install lacks ${f}")
  endif()
endforeach()
file(GLOB_RECURSE pcs ${PREFIX}/*/convjit.pc)
file(GLOB_RECURSE cfgs ${PREFIX}/*/convjitConfig.cmake)
if(NOT pcs OR NOT cfgs)
  message(FATAL_ERROR "install lacks convjit.pc or convjitConfig.cmake")
endif()
list(GET pcs 0 pc)
get_filename_component(pcdir ${pc} DIRECTORY)
get_filename_component(libdir ${pcdir} DIRECTORY)

# 1. find_package
run(${CMAKE_COMMAND} -S ${SRC}/examples -B ${WORK}/ex-cmake -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_BUILD_TYPE=Release
    "-DCMAKE_C_FLAGS=${san_flags}")
run(${CMAKE_COMMAND} --build ${WORK}/ex-cmake)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${WORK}/ex-cmake/convjit-embed emu gfx942)

# 2. pkg-config
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir} pkg-config --cflags --libs convjit
                OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs convjit failed")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
run(cc -std=c11 -Wall -Wextra -Werror ${san_flags} ${SRC}/examples/embed.c -o ${WORK}/embed-pc ${flags})
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${WORK}/embed-pc emu gfx950)

# 3. the Python package: found through its _install_prefix.py alone (no
# CONVJIT_LIBRARY), so library_path() must be the prefix's copy, and its
# _version.py must be the version that library reports
if(PYTHON AND NOT IS_ABSOLUTE "${PYSITE}")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=CONVJIT_LIBRARY PYTHONPATH=${PREFIX}/${PYSITE}
                  PYTHONDONTWRITEBYTECODE=1 ${PYTHON} -c
                  "import convjit, convjit._lib as l, convjit._version as v; print(l.__file__); print(l.library_path()); print(v.VERSION); print(l.version_string())"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REPLACE "\n" ";" lines "${out}")
  list(LENGTH lines n)
  if(NOT rc EQUAL 0 OR NOT n EQUAL 4)
    message(FATAL_ERROR "the installed Python package does not import (${rc}):\n${out}\n${err}")
  endif()
  list(GET lines 0 pyfile)
  list(GET lines 1 libpath)
  list(GET lines 2 pyver)
  list(GET lines 3 libver)
  file(GLOB_RECURSE libs ${PREFIX}/*/libconvjit.so)
  list(FIND libs "${libpath}" i)
  if(NOT pyfile STREQUAL "${PREFIX}/${PYSITE}/convjit/_lib.py" OR i LESS 0)
    message(FATAL_ERROR "installed package ${pyfile} loaded ${libpath}, not the prefix's ${libs}")
  endif()
  if(NOT pyver STREQUAL libver)
    message(FATAL_ERROR "installed convjit/_version.py says ${pyver}, the library ${libver}")
  endif()
  message(STATUS "python: ${pyfile} loads ${libpath}, version ${pyver}")
endif()
file(REMOVE_RECURSE ${WORK})
