# Included by tests/CMakeLists.txt: host/test_alloc_fail counts and fails
# the allocations of convjit's own (statically linked) code.
if(TARGET test_alloc_fail)
  target_link_options(test_alloc_fail PRIVATE -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc)
endif()
