# Folders are layers (docs/architecture.md): area includes point one way, no
# header includes one that includes it back, tools include no area's
# internals, and no call loop between the files of one folder (read from
# each area's object files with nm, and between the files of each tool), and
# the Python binding's modules import one way.
add_test(NAME tools/layers
         COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-layers ${PROJECT_BINARY_DIR})
# No function over 150 lines in src/, tools/ and hipdnn/ (120 in tools/),
# outside the opcode switches scripts/check-functions allows by name.
add_test(NAME tools/functions COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-functions)
# Every file path and cj_/convjit_ name in backticks in docs/*.md and
# README.md still exists, and every "`name` in `file.c`" claim holds.
add_test(NAME tools/doc_refs COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-doc-refs)
set_tests_properties(tools/layers tools/functions tools/doc_refs PROPERTIES LABELS "tools;layers")
