# Folders are layers (docs/architecture.md): area includes point one way, no
# header includes one that includes it back, and no call loop between the
# emulator's files (read from cj_emu's object files with nm).
add_test(NAME tools/layers
         COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-layers ${PROJECT_BINARY_DIR}/CMakeFiles/cj_emu.dir/src/emu)
set_tests_properties(tools/layers PROPERTIES LABELS tools)
