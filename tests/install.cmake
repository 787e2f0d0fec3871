# Included by tests/CMakeLists.txt: packaging tests on the built library.
if(TARGET convjit)
  add_test(NAME host/exports COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:convjit> -DSRC=${PROJECT_SOURCE_DIR}
           -P ${PROJECT_SOURCE_DIR}/cmake/exports_test.cmake)
  set_tests_properties(host/exports PROPERTIES LABELS host)
  # with the Python tests on (cmake/python.cmake), it imports the installed package too
  set(cj_py_args "")
  if(CJ_PYTHON_TESTS)
    set(cj_py_args -DPYTHON=${CJ_PYTHON} -DPYSITE=${CJ_PYTHON_SITE})
  endif()
  add_test(NAME host/install_example COMMAND ${CMAKE_COMMAND} -DBIN=${PROJECT_BINARY_DIR} -DSRC=${PROJECT_SOURCE_DIR}
           -DWORK=${PROJECT_BINARY_DIR}/install-test -DSANITIZE=${CJ_SAN_LINK} ${cj_py_args}
           -P ${PROJECT_SOURCE_DIR}/cmake/install_test.cmake)
  set_tests_properties(host/install_example PROPERTIES LABELS host
    ENVIRONMENT "CONVJIT_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache")
endif()
