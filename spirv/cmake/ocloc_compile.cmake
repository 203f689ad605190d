# cmake -P: one ocloc native build of one kernel, plus its report rows.
#   -DOCLOC=... -DSPV=kernel.spv -DDEVICE=dg2 -DOPTIONS="..." -DOUT=native/dg2/kernel.bin -DWORK=dir
#   -DPACK=zp-kernel-pack -DROWS=rows.md -DFILE=stem [-DLARGE_GRF_WHEN_SPILLING=ON]
# ocloc runs in a scratch WORK dir (it names its output after the device); the one binary it
# leaves there becomes OUT. The report rows come from that binary's own metadata
# (zp-kernel-pack inspect), never from IGC's dumps, which also show attempts IGC discarded.
# LARGE_GRF_WHEN_SPILLING: when any kernel of the file spills or uses private memory with 128
# GRFs, the file is built again with -ze-opt-large-register-file (256 GRFs) and that build is kept.
get_filename_component(outDir "${OUT}" DIRECTORY)
get_filename_component(rowsDir "${ROWS}" DIRECTORY)
file(MAKE_DIRECTORY "${outDir}" "${rowsDir}")

function(zp_ocloc_build options)
  file(REMOVE_RECURSE "${WORK}")
  file(MAKE_DIRECTORY "${WORK}/out")
  set(opts "")
  if(NOT options STREQUAL "")
    set(opts -options "${options}")
  endif()
  execute_process(
    COMMAND "${OCLOC}" compile -file "${SPV}" -spirv_input -device "${DEVICE}" ${opts} -output "${FILE}"
            -out_dir "${WORK}/out" -q
    WORKING_DIRECTORY "${WORK}/out"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ocloc (${OCLOC}) failed for ${FILE} on ${DEVICE} with options '${options}' (exit ${rc}):\n${out}\n${err}")
  endif()
  file(GLOB produced LIST_DIRECTORIES false "${WORK}/out/*")
  list(FILTER produced EXCLUDE REGEX "\\.(spv|bc|ll|gen|dbg)$")
  list(LENGTH produced n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "ocloc for ${FILE} on ${DEVICE}: expected one binary in ${WORK}/out, found: ${produced}")
  endif()
  file(COPY_FILE "${produced}" "${OUT}")
  execute_process(COMMAND "${PACK}" inspect --binary "${OUT}" --file "${FILE}" --target "${DEVICE}" --out "${ROWS}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE summary ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "reading the metadata of ${OUT} failed: ${err}")
  endif()
  set(summary "${summary}" PARENT_SCOPE)
  file(REMOVE_RECURSE "${WORK}")
endfunction()

file(REMOVE "${ROWS}.rebuilt")
zp_ocloc_build("${OPTIONS}")
if(LARGE_GRF_WHEN_SPILLING AND NOT summary MATCHES "spill=0 private=0")
  string(STRIP "${summary}" first)
  zp_ocloc_build("${OPTIONS} -ze-opt-large-register-file")
  string(STRIP "${summary}" second)
  # For the report: what the 128-GRF build needed, per thread (largest over the file's kernels).
  string(REGEX REPLACE "spill=([0-9]+) private=([0-9]+)" "\\1 | \\2" first "${first}")
  string(REGEX REPLACE "spill=([0-9]+) private=([0-9]+)" "\\1 | \\2" second "${second}")
  file(WRITE "${ROWS}.rebuilt" "| ${FILE} | ${DEVICE} | ${first} | ${second} |\n")
endif()
