# Included by tests/CMakeLists.txt: the hipDNN engine plugin (hipdnn/,
# docs/hipdnn.md), when it is built. tests/hipdnn/test_hipdnn_plugin.c is the
# harness: it dlopens libconvjit_hipdnn.so as hipDNN's loader does and runs
# the backend's call sequence on FlatBuffers graphs (graphs.cpp, from the
# plugin's own generated reader headers) on convjit's emulator behind the
# fake HIP runtime (fakehip_emu, tests/convjit_bench.cmake).
if(NOT TARGET convjit_hipdnn)
  return()
endif()
add_executable(test_hipdnn_plugin ${CMAKE_CURRENT_SOURCE_DIR}/hipdnn/test_hipdnn_plugin.c
               ${CMAKE_CURRENT_SOURCE_DIR}/hipdnn/graphs.cpp)
target_compile_options(test_hipdnn_plugin PRIVATE ${CJ_WARN})
target_include_directories(test_hipdnn_plugin PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/hipdnn)
# the references (cj_ref) only: the plugin brings libconvjit itself through dlopen
target_link_libraries(test_hipdnn_plugin PRIVATE cj_ref cj_hipdnn_fb PkgConfig::CMOCKA ${CMAKE_DL_LIBS} m)
add_dependencies(test_hipdnn_plugin convjit_hipdnn fakehip_emu)
target_compile_definitions(test_hipdnn_plugin PRIVATE CJ_HIPDNN_PLUGIN_PATH="$<TARGET_FILE:convjit_hipdnn>"
                           CJ_FAKEHIP_EMU_PATH="$<TARGET_FILE:fakehip_emu>")
add_test(NAME hipdnn/test_hipdnn_plugin COMMAND test_hipdnn_plugin)
set_tests_properties(hipdnn/test_hipdnn_plugin PROPERTIES LABELS hipdnn SKIP_REGULAR_EXPRESSION "${CJ_SKIP_REGEX}"
  ENVIRONMENT "CONVJIT_HIP_LIBRARY=$<TARGET_FILE:fakehip_emu>;CONVJIT_DISABLE_CACHE=1;CMOCKA_MESSAGE_OUTPUT=stdout")
# The plugin exports hipDNN's plugin ABI and nothing else (every defined
# dynamic symbol is hipdnnPlugin* / hipdnnEnginePlugin*), and all of the
# entry points the harness resolves.
add_test(NAME hipdnn/plugin_exports
  COMMAND bash -c "syms=$(nm -D --defined-only \"$0\" | awk '{print $3}') || exit 1; echo \"$syms\"; \
bad=$(echo \"$syms\" | grep -v -E '^(hipdnnPlugin|hipdnnEnginePlugin)[A-Za-z]+$' | grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$'); \
[ -z \"$bad\" ] || { echo \"non-ABI exports: $bad\"; exit 1; }; \
n=$(echo \"$syms\" | grep -c -E '^hipdnn'); [ \"$n\" -eq 22 ] || { echo \"$n ABI symbols, expected 22\"; exit 1; }"
  $<TARGET_FILE:convjit_hipdnn>)
set_tests_properties(hipdnn/plugin_exports PROPERTIES LABELS hipdnn)
