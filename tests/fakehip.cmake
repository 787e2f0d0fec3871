# Included by tests/CMakeLists.txt: the fake HIP runtime (tests/fakehip)
# that host/test_hip_fake, test_kernargs, test_lifetime, test_tune, test_emu_api and test_parse_once load through
# CONVJIT_HIP_LIBRARY.
add_library(fakehip SHARED ${CMAKE_CURRENT_SOURCE_DIR}/fakehip/fake_hip.c)
target_compile_options(fakehip PRIVATE ${CJ_WARN})
set_target_properties(fakehip PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fakehip C_VISIBILITY_PRESET hidden)
foreach(t test_hip_fake test_kernargs test_lifetime test_tune test_emu_api test_parse_once)
  if(TARGET ${t})
    add_dependencies(${t} fakehip)
    target_compile_definitions(${t} PRIVATE CJ_FAKEHIP_PATH="$<TARGET_FILE:fakehip>")
  endif()
endforeach()
