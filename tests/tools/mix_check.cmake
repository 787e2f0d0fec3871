# cmake -DMIX=<convjit-mix> -P mix_check.cmake
# Runs convjit-mix once (T = 3, 5, 7 at 1,128,4,8,8,128,T,3,3, tile
# 128,128,2,4, split-K 1, gfx942 and gfx950) and checks the EMULATED
# per-wave-per-K-step counts against values derived here, independently of
# the plan code, from the tile config and ISA facts (docs/isa-notes.md):
#   MFMA    (TILE_M/WAVE_M/16) * (TILE_N/WAVE_N/16) * (32 / mfma_k), mfma_k =
#           16 on gfx942 (v_mfma_f32_16x16x16_bf16), 32 on gfx950 (16x16x32)
#   VMEM    A and B stages of 32 k x 2 B per row, moved by buffer_load ... lds
#           of 4 B/lane (gfx942: dword only) or 16 B/lane (gfx950: dwordx4)
#           by all TILE threads: (TILE_M + TILE_N) * 64 / (threads * bytes)
#   barrier one s_barrier per K step (the LDS stage hand-over)
# plus: every wave ran the same counts, the 3 shapes are linear in the step
# count (the same loop body: convjit-mix's check, to 0.1 instruction per step,
# which leaves room for a prologue/epilogue instruction LLVM folds per shape),
# and each shape's K steps = Cp*T*R*S/32 (Cp = C = 128).
cmake_minimum_required(VERSION 3.19)
set(tm 128)
set(tn 128)
set(wm 2)
set(wn 4)
execute_process(COMMAND ${MIX} --tile ${tm}x${tn} --waves ${wm}x${wn} --splitk 1 --json
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "convjit-mix failed (${rc}): ${err}")
endif()
string(JSON kind GET "${out}" kind)
if(NOT kind STREQUAL "emulated")
  message(FATAL_ERROR "results not labelled emulated: ${out}")
endif()
math(EXPR threads "${wm} * ${wn} * 64")
foreach(i 0 1)
  string(JSON arch GET "${out}" archs ${i} arch)
  if(arch STREQUAL "gfx942")
    set(mfma_k 16)
    set(dma 4)
  elseif(arch STREQUAL "gfx950")
    set(mfma_k 32)
    set(dma 16)
  else()
    message(FATAL_ERROR "unexpected arch ${arch}")
  endif()
  math(EXPR want_mfma "(${tm} / ${wm} / 16) * (${tn} / ${wn} / 16) * (32 / ${mfma_k})")
  math(EXPR want_vmem "(${tm} + ${tn}) * 64 / (${threads} * ${dma})")
  # counts are exact integers over whole steps: the printed ratio is exact
  foreach(pair "mfma;${want_mfma}" "vmem;${want_vmem}" "barrier;1")
    list(GET pair 0 cls)
    list(GET pair 1 want)
    string(JSON got GET "${out}" archs ${i} per_wave_per_k_step ${cls})
    if(NOT got STREQUAL "${want}")
      message(FATAL_ERROR "${arch}: ${cls} per wave per K step = ${got}, expected ${want}")
    endif()
  endforeach()
  foreach(flag uniform linear)
    string(JSON v GET "${out}" archs ${i} ${flag})
    if(NOT v STREQUAL "ON" AND NOT v STREQUAL "true")
      message(FATAL_ERROR "${arch}: ${flag} = ${v}")
    endif()
  endforeach()
  foreach(k 0 1 2)
    math(EXPR want_steps "128 * (3 + 2 * ${k}) * 9 / 32")
    string(JSON got GET "${out}" archs ${i} shapes ${k} k_steps)
    if(NOT got EQUAL want_steps)
      message(FATAL_ERROR "${arch}: shape ${k} ran ${got} K steps, expected ${want_steps}")
    endif()
  endforeach()
  message(STATUS "${arch}: MFMA ${want_mfma}, VMEM ${want_vmem}, 1 barrier per wave per K step (emulated)")
endforeach()
