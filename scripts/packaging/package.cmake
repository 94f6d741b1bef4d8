# What scripts/package ships: the version built in, a man page and bash/zsh
# completions made from the binary's own --help, the install layout, and the
# .deb / .tar.gz settings for CPack.

# --- the version (tpurun --version) ------------------------------------------
# scripts/package passes the commit in; elsewhere git is asked at every build,
# and only a changed commit recompiles (one small file).
set(TPURUN_GIT_SHA "" CACHE STRING "Commit being built (empty: ask git)")
set(TPURUN_GIT_COUNT "" CACHE STRING "Commits up to it (with TPURUN_GIT_SHA)")
set(TPURUN_GIT_DIRTY "" CACHE STRING "1 if the tree has uncommitted changes (with TPURUN_GIT_SHA)")
set(TPURUN_VERSION_SOURCE ${CMAKE_CURRENT_BINARY_DIR}/version_info.cpp)
add_custom_target(tpurun_version_info
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUTPUT=${TPURUN_VERSION_SOURCE}
    -DRELEASE=${PROJECT_VERSION} -DGIT_SHA=${TPURUN_GIT_SHA} -DGIT_COUNT=${TPURUN_GIT_COUNT}
    -DGIT_DIRTY=${TPURUN_GIT_DIRTY} -P ${CMAKE_CURRENT_LIST_DIR}/version.cmake
  BYPRODUCTS ${TPURUN_VERSION_SOURCE}
  COMMENT "" VERBATIM)
add_library(tpurun_version STATIC ${TPURUN_VERSION_SOURCE})
add_dependencies(tpurun_version tpurun_version_info)
target_include_directories(tpurun_version PUBLIC include)

include(${CMAKE_CURRENT_LIST_DIR}/version.cmake)
tpurun_describe("${PROJECT_SOURCE_DIR}" "${PROJECT_VERSION}" "${TPURUN_GIT_SHA}" "${TPURUN_GIT_COUNT}"
  "${TPURUN_GIT_DIRTY}" TPURUN_FULL_VERSION TPURUN_FULL_SHA TPURUN_FULL_DIRTY)

# --- man page and completions, from --help ------------------------------------
set(TPURUN_DOCS_DIR ${CMAKE_CURRENT_BINARY_DIR}/docs)
add_custom_command(
  OUTPUT ${TPURUN_DOCS_DIR}/tpurun.1.gz ${TPURUN_DOCS_DIR}/tpurun.bash ${TPURUN_DOCS_DIR}/_tpurun
  COMMAND ${CMAKE_COMMAND} -E make_directory ${TPURUN_DOCS_DIR}
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/man.sh $<TARGET_FILE:tpurun> ${TPURUN_DOCS_DIR}/tpurun.1
  COMMAND gzip -9nf ${TPURUN_DOCS_DIR}/tpurun.1
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/completions.sh $<TARGET_FILE:tpurun> ${TPURUN_DOCS_DIR}
  DEPENDS tpurun ${CMAKE_CURRENT_LIST_DIR}/man.sh ${CMAKE_CURRENT_LIST_DIR}/completions.sh
    ${CMAKE_CURRENT_LIST_DIR}/help.sh
  COMMENT "Man page and completions from tpurun --help" VERBATIM)
add_custom_target(tpurun_docs ALL DEPENDS ${TPURUN_DOCS_DIR}/tpurun.1.gz)

# --- install layout (the .deb puts it under /usr) -----------------------------
install(FILES ${TPURUN_DOCS_DIR}/tpurun.1.gz DESTINATION share/man/man1)
install(FILES ${TPURUN_DOCS_DIR}/tpurun.bash DESTINATION share/bash-completion/completions RENAME tpurun)
# zsh on Debian and Ubuntu reads /usr/share/zsh/vendor-completions (for
# packages) and /usr/local/share/zsh/site-functions: the .deb's /usr gets the
# first, any other prefix (the tarball, /usr/local) the second.
install(CODE "
  if(CMAKE_INSTALL_PREFIX MATCHES \"/usr/?$\")
    set(tpurun_zsh_dir share/zsh/vendor-completions)
  else()
    set(tpurun_zsh_dir share/zsh/site-functions)
  endif()
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/\${tpurun_zsh_dir}\" TYPE FILE FILES \"${TPURUN_DOCS_DIR}/_tpurun\")
")

# --- CPack: scripts/package runs `cpack -G "DEB;TGZ"` --------------------------
set(CPACK_PACKAGE_NAME tpurun)
set(CPACK_PACKAGE_VERSION ${TPURUN_FULL_VERSION})
set(CPACK_PACKAGE_VENDOR "tpurun")
set(CPACK_PACKAGE_CONTACT "tpurun developers <tpurun@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "launch, watch and stop jobs on Google Cloud TPU VM pods")
set(CPACK_PACKAGE_DESCRIPTION "tpurun runs a command on every worker of a TPU VM pod over SSH,
stages code snapshots to a shared mount and runs them as one gang, and shows
and stops the processes that hold the TPU (only your own).
Built from commit ${TPURUN_FULL_SHA}.")
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_FILE_NAME tpurun-${TPURUN_FULL_VERSION}-linux-${CMAKE_SYSTEM_PROCESSOR})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # tpurun_VERSION_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
# Depends comes from the binary's ELF needs (dpkg-shlibdeps): libc6, libssh-4.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# stage picks the files to snapshot with git; exec/status/kill need nothing more.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "git")
# The tarball holds one directory, tpurun-VERSION-linux-ARCH/{bin,share}.
include(CPack)
