# cmake -DRUN=<convjit-run> -P run_stats_check.cmake
# convjit-run --stats --json on a small conv (gfx950, tile 128,128,2,4,
# 4 stages, no split): every kernel carries a "stats" object labelled
# emulated, and the conv kernel's waves each ran
#   MFMA = K steps * (128/2/16) * (128/4/16) * (32/32)
# with K steps = ceil(64*27/32) = 54 rounded up to the 4-stage pipeline = 56
# (the steps past gemm_k run on zeros).
cmake_minimum_required(VERSION 3.19)
execute_process(COMMAND ${RUN} --device emu --arch gfx950 --shape 1,64,4,8,8,128,3,3,3 --pad 1,1,1
                        --tile 128x128 --waves 2x4 --stages 4 --splitk 1 --no-disk-cache --check --stats --json
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "convjit-run failed (${rc}): ${err}${out}")
endif()
math(EXPR want "56 * 4 * 2 * 1")
string(JSON nk LENGTH "${out}" kernels)
set(conv 0)
math(EXPR last "${nk} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${out}" kernels ${i} name)
  string(JSON kind GET "${out}" kernels ${i} stats kind)
  if(NOT kind STREQUAL "emulated")
    message(FATAL_ERROR "${name}: stats kind ${kind}")
  endif()
  if(name MATCHES "^cj_conv_bf16")
    set(conv 1)
    foreach(k per_wave_min per_wave_max per_wave_avg)
      string(JSON got GET "${out}" kernels ${i} stats ${k} mfma)
      if(NOT got STREQUAL "${want}")
        message(FATAL_ERROR "${name}: ${k}.mfma = ${got}, expected ${want}")
      endif()
    endforeach()
  endif()
endforeach()
if(NOT conv)
  message(FATAL_ERROR "no conv kernel in ${out}")
endif()
