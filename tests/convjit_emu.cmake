# Hand-written kernels for the emulator's public API (issue 16): every
# tests/emu/kernels/*.s is assembled at build time (llvm-mc + ld.lld) into
# ${PROJECT_BINARY_DIR}/emu-kernels/<name>.<arch>.co. A source written for
# gfx942 (its .amdgcn_target line) is built for gfx942 as is and for gfx950
# with every "gfx942" of its text replaced; a source for another arch
# (bad_arch.s: gfx90a) is built for that arch only.
# tests/host/test_emu_api.c and tests/tools/test_convjit_emu.py run them.
set(cj_emu_kdir ${PROJECT_BINARY_DIR}/emu-kernels)
file(MAKE_DIRECTORY ${cj_emu_kdir})
file(GLOB cj_emu_ksrcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/emu/kernels/*.s)
set(cj_emu_kos "")
foreach(src ${cj_emu_ksrcs})
  get_filename_component(kname ${src} NAME_WE)
  file(STRINGS ${src} ktarget REGEX "^\\.amdgcn_target" LIMIT_COUNT 1)
  if(NOT ktarget MATCHES "--(gfx[0-9a-f]+)\"")
    message(FATAL_ERROR "${src}: no .amdgcn_target \"amdgcn-amd-amdhsa--gfxNNN\" line")
  endif()
  set(karch ${CMAKE_MATCH_1})
  set(karchs ${karch})
  if(karch STREQUAL "gfx942")
    set(karchs gfx942 gfx950)
  endif()
  foreach(arch ${karchs})
    set(co ${cj_emu_kdir}/${kname}.${arch}.co)
    set(asm ${src})
    if(NOT arch STREQUAL karch)
      # the retargeted text, written at configure time (only when it changes:
      # an unchanged .s is not assembled again); editing the source re-runs it
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
      set(asm ${cj_emu_kdir}/${kname}.${arch}.s)
      file(READ ${src} ktext)
      string(REPLACE "${karch}" "${arch}" ktext "${ktext}")
      set(kold "")
      if(EXISTS ${asm})
        file(READ ${asm} kold)
      endif()
      if(NOT kold STREQUAL ktext)
        file(WRITE ${asm} "${ktext}")
      endif()
    endif()
    add_custom_command(OUTPUT ${co}
      COMMAND ${LLVM_BINDIR}/llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=${arch} -filetype=obj ${asm}
              -o ${cj_emu_kdir}/${kname}.${arch}.o
      COMMAND ${CJ_LLD} -shared ${cj_emu_kdir}/${kname}.${arch}.o -o ${co}
      DEPENDS ${asm}
      COMMENT "emu-kernels: ${kname}.${arch}.co"
      VERBATIM)
    list(APPEND cj_emu_kos ${co})
  endforeach()
endforeach()
add_custom_target(cj_emu_kernels ALL DEPENDS ${cj_emu_kos})
foreach(t test_emu_api test_perf_mechanics)
  if(TARGET ${t})
    add_dependencies(${t} cj_emu_kernels)
  endif()
endforeach()

# convjit-emu (the tool) on the same kernels, and the acceptance case: a
# transpose kernel that convjit-dump --save-dir writes, run by the tool.
if(TARGET convjit-emu)
  add_test(NAME tools/convjit_emu
           COMMAND ${CJ_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_convjit_emu.py
                   $<TARGET_FILE:convjit-emu> $<TARGET_FILE:convjit-dump> ${cj_emu_kdir})
  set_tests_properties(tools/convjit_emu PROPERTIES LABELS tools SKIP_REGULAR_EXPRESSION "${CJ_SKIP_REGEX}")
endif()
