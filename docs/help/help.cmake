# The long help texts of tpurun's commands (docs/help/README.md), made into a
# source of tpurun_cli at build time by embed.cmake. `tpurun COMMAND --help`
# prints them, and the man page is made from that output
# (scripts/packaging/man.sh): one text, two places. Included by the top
# CMakeLists.txt (a generated source must come from the directory of its target).
set(TPURUN_HELP_OUT ${CMAKE_BINARY_DIR}/generated)
file(GLOB TPURUN_HELP_FILES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.txt)
set(TPURUN_HELP_TEXTS "")
foreach(file ${TPURUN_HELP_FILES})
  get_filename_component(name ${file} NAME_WE)
  list(APPEND TPURUN_HELP_TEXTS ${name})
endforeach()
string(REPLACE ";" "," texts_arg "${TPURUN_HELP_TEXTS}")
add_custom_command(
  OUTPUT ${TPURUN_HELP_OUT}/help_texts.cpp ${TPURUN_HELP_OUT}/include/cli/help_texts.hpp
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_CURRENT_LIST_DIR} -DOUT=${TPURUN_HELP_OUT}
    -DTEXTS=${texts_arg} -P ${CMAKE_CURRENT_LIST_DIR}/embed.cmake
  DEPENDS ${CMAKE_CURRENT_LIST_DIR}/embed.cmake ${PROJECT_SOURCE_DIR}/scripts/embed_text.cmake ${TPURUN_HELP_FILES}
  COMMENT "Help texts into the binary (docs/help/)"
  VERBATIM)
# Its own unit: a changed text recompiles this file alone.
set_source_files_properties(${TPURUN_HELP_OUT}/help_texts.cpp PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
