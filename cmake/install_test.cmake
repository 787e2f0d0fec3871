# ctest driver (tests/install.cmake): install the build tree into a fresh
# prefix, then build examples/ against it twice — with find_package(convjit)
# and with pkg-config — and run both builds on the emulator.
# Inputs: -DBIN=<build dir> -DSRC=<source dir> -DWORK=<scratch dir>
# [-DSANITIZE=-fsanitize=...: the library is sanitizer-built, so the consumers must be too]
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
file(REMOVE_RECURSE ${WORK})
