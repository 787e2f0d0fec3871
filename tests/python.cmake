# Included by tests/CMakeLists.txt: the Python binding's tests. Every
# tests/python/test_*.py is one ctest test, python/<name>, run by CJ_PYTHON
# (cmake/python.cmake) with unittest from the source root, importing the
# package from the source tree (PYTHONPATH) and loading this build's
# library (CONVJIT_LIBRARY). The test cache env of tests/CMakeLists.txt
# (CONVJIT_CACHE_DIR, the key file) is added to these too: they are tests
# of this directory. Without torch one skipped test says why; in a
# sanitizer build there are none (cmake/python.cmake says why).
if(NOT TARGET convjit)
  return()
endif()
if(CJ_PYTHON_SKIP)
  add_test(NAME python/skipped COMMAND ${CMAKE_COMMAND} -E echo "SKIP: ${CJ_PYTHON_SKIP}")
  set_tests_properties(python/skipped PROPERTIES LABELS python SKIP_REGULAR_EXPRESSION "${CJ_SKIP_REGEX}")
endif()
if(NOT CJ_PYTHON_TESTS)
  return()
endif()
# the C compiler's layout of the public structs, for test_abi.py
add_executable(abi_layout ${CMAKE_CURRENT_SOURCE_DIR}/python/abi_layout.c)
target_compile_options(abi_layout PRIVATE ${CJ_WARN})
target_include_directories(abi_layout PRIVATE ${PROJECT_SOURCE_DIR}/include)
file(GLOB cj_py_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/python/test_*.py)
foreach(src ${cj_py_tests})
  get_filename_component(t ${src} NAME_WE)
  # the test is the module of that name (tests/python is on PYTHONPATH, so a
  # test may import a helper module beside it), not a path: `-m unittest
  # tests/python/x.py` would import it as tests.python.x, which any installed
  # top-level package named "tests" would shadow. PYTHONDONTWRITEBYTECODE:
  # the tests write nothing into the source tree.
  add_test(NAME python/${t} COMMAND ${CJ_PYTHON} -m unittest -v ${t} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(python/${t} PROPERTIES LABELS python SKIP_REGULAR_EXPRESSION "${CJ_SKIP_REGEX}"
    ENVIRONMENT "PYTHONPATH=${PROJECT_SOURCE_DIR}/python:${CMAKE_CURRENT_SOURCE_DIR}/python;CONVJIT_LIBRARY=$<TARGET_FILE:convjit>;CJ_ABI_LAYOUT=$<TARGET_FILE:abi_layout>;CJ_SOURCE_DIR=${PROJECT_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1")
endforeach()
