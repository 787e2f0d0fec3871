# The Python binding (python/convjit; docs/python.md): the Python that runs
# its tests (tests/python.cmake) and where `cmake --install` puts the
# package (cmake/install.cmake). Pure Python: nothing here is built.
set(CJ_PYTHON /usr/bin/python3 CACHE FILEPATH "the Python of the binding's tests (Debian's, with python3-torch)")
option(CJ_REQUIRE_PYTHON_TESTS "fail configure when CJ_PYTHON cannot import torch (scripts/test: scripts/setup installs it)" OFF)
set(CJ_PYTHON_INSTALL_DIR "" CACHE STRING
    "install dir of python/convjit, relative to the prefix; empty: lib/python<X.Y>/dist-packages (site-packages off Debian)")
# The interpreter's X.Y and whether it is a Debian Python (dist-packages).
execute_process(COMMAND ${CJ_PYTHON} -c
  "import sys; print('%d.%d' % sys.version_info[:2]); print(int(any(p.endswith('dist-packages') for p in sys.path)))"
  RESULT_VARIABLE cj_py_rc OUTPUT_VARIABLE cj_py_out ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
set(CJ_PYTHON_SITE ${CJ_PYTHON_INSTALL_DIR})
if(NOT CJ_PYTHON_SITE)
  if(cj_py_rc EQUAL 0)
    string(REPLACE "\n" ";" cj_py_out "${cj_py_out}")
    list(GET cj_py_out 0 cj_py_ver)
    list(GET cj_py_out 1 cj_py_debian)
  else()  # no interpreter at CJ_PYTHON: Debian 12's
    set(cj_py_ver 3.11)
    set(cj_py_debian 1)
  endif()
  if(cj_py_debian)
    set(CJ_PYTHON_SITE lib/python${cj_py_ver}/dist-packages)
  else()
    set(CJ_PYTHON_SITE lib/python${cj_py_ver}/site-packages)
  endif()
endif()

# CJ_PYTHON_TESTS: the binding's tests run in this build tree. Never in a
# sanitizer build (CJ_SANITIZE, and CJ_FUZZ, which is ASan too; scripts/tsan
# and scripts/fuzz configure their own build directories that way): python
# is not sanitizer-built, and a sanitized libconvjit.so dlopen'ed into it
# fails unless the runtime is LD_PRELOADed (gcc-12, tried: ASan aborts with
# "ASan runtime does not come first in initial library list", TSan's
# dlopen fails with "libtsan.so.2: cannot allocate memory in static TLS block").
set(CJ_PYTHON_TESTS OFF)
set(CJ_PYTHON_SKIP "")
if(CJ_SAN_LINK OR CJ_FUZZ)
  message(STATUS "convjit: Python tests not registered: sanitizer build (a sanitized libconvjit.so cannot be dlopen'ed into python)")
else()
  execute_process(COMMAND ${CJ_PYTHON} -c "import torch" RESULT_VARIABLE cj_torch_rc OUTPUT_QUIET ERROR_VARIABLE cj_torch_err)
  if(cj_torch_rc EQUAL 0)
    set(CJ_PYTHON_TESTS ON)
    message(STATUS "convjit: Python tests with ${CJ_PYTHON}; the package installs to <prefix>/${CJ_PYTHON_SITE}")
  elseif(CJ_REQUIRE_PYTHON_TESTS)
    string(REGEX MATCH "[^\n]+\n*$" cj_torch_err "${cj_torch_err}")  # the traceback's last line
    string(STRIP "${cj_torch_err}" cj_torch_err)
    if(NOT cj_torch_err)
      set(cj_torch_err "${cj_torch_rc}")  # no interpreter: "No such file or directory"
    endif()
    message(FATAL_ERROR "convjit: ${CJ_PYTHON} cannot import torch (${cj_torch_err}). The Python tests need "
      "Debian's python3-torch: run scripts/setup, or set -DCJ_PYTHON=<a python with torch>, or configure "
      "with -DCJ_REQUIRE_PYTHON_TESTS=OFF to skip them.")
  else()
    set(CJ_PYTHON_SKIP "python3-torch not importable by ${CJ_PYTHON}")
    message(STATUS "convjit: Python tests SKIPPED: ${CJ_PYTHON_SKIP}")
  endif()
endif()
