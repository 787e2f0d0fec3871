# Included by tests/CMakeLists.txt: convjit-mix on the emulator (default
# shapes, default tile, both archs) with its per-K-step mix checked against
# values derived from the tile config and ISA facts (tests/tools/mix_check.cmake).
if(TARGET convjit-mix)
  add_test(NAME host/mix_default_tile
           COMMAND ${CMAKE_COMMAND} -DMIX=$<TARGET_FILE:convjit-mix> -P ${PROJECT_SOURCE_DIR}/tests/tools/mix_check.cmake)
  set_tests_properties(host/mix_default_tile PROPERTIES LABELS host
                       ENVIRONMENT "CONVJIT_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache")
endif()
if(TARGET convjit-run)
  add_test(NAME host/run_stats
           COMMAND ${CMAKE_COMMAND} -DRUN=$<TARGET_FILE:convjit-run> -P ${PROJECT_SOURCE_DIR}/tests/tools/run_stats_check.cmake)
  set_tests_properties(host/run_stats PROPERTIES LABELS host
                       ENVIRONMENT "CONVJIT_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache")
endif()
