# The programs tpurun runs on the workers (docs/protocols.md), made into a
# source of tpurun_core at build time by embed.cmake: tpurun stays one binary
# that needs nothing installed on a worker. Included by the top CMakeLists.txt
# (a generated source must come from the directory of its target).
#
# The programs the binary holds (include/tpurun/worker/programs.hpp names them):
set(TPURUN_WORKER_EMBED scan.sh kill.sh clean.sh reserve.sh launch.sh push_have.sh
  doctor_probe.sh profile_listener.sh push.py worker_gc.py log_mirror.py stacks.py)
# Programs that another one carries in a heredoc: linted and tested as what
# they are, embedded inside that one.
set(TPURUN_WORKER_INNER fd_walk.pl job_wrapper.pl job_wrapper.sh doctor_versions.py sitecustomize.py)
set(TPURUN_WORKER_PROGRAMS ${TPURUN_WORKER_EMBED} ${TPURUN_WORKER_INNER})

set(TPURUN_WORKER_OUT ${CMAKE_BINARY_DIR}/generated)
file(GLOB TPURUN_WORKER_FILES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.sh ${CMAKE_CURRENT_LIST_DIR}/*.py
  ${CMAKE_CURRENT_LIST_DIR}/*.pl ${CMAKE_CURRENT_LIST_DIR}/lib/*)
set(TPURUN_WORKER_EXPANDED "")
foreach(program ${TPURUN_WORKER_PROGRAMS})
  list(APPEND TPURUN_WORKER_EXPANDED ${TPURUN_WORKER_OUT}/worker/${program})
endforeach()
string(REPLACE ";" "," programs_arg "${TPURUN_WORKER_PROGRAMS}")
string(REPLACE ";" "," embed_arg "${TPURUN_WORKER_EMBED}")
add_custom_command(
  OUTPUT ${TPURUN_WORKER_OUT}/worker_programs.cpp ${TPURUN_WORKER_OUT}/include/tpurun/worker/tokens.hpp
    ${TPURUN_WORKER_EXPANDED} ${TPURUN_WORKER_OUT}/worker/protocol_tokens.py
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_CURRENT_LIST_DIR} -DOUT=${TPURUN_WORKER_OUT}
    -DPROGRAMS=${programs_arg} -DEMBED=${embed_arg} -P ${CMAKE_CURRENT_LIST_DIR}/embed.cmake
  DEPENDS ${CMAKE_CURRENT_LIST_DIR}/embed.cmake ${PROJECT_SOURCE_DIR}/scripts/embed_text.cmake
    ${CMAKE_CURRENT_LIST_DIR}/protocol.tokens ${TPURUN_WORKER_FILES}
  COMMENT "Worker programs into the binary (worker/)"
  VERBATIM)
# Its own unit: a changed program recompiles this file alone.
set_source_files_properties(${TPURUN_WORKER_OUT}/worker_programs.cpp PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
