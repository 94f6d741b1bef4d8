# What differs between the systems tpurun builds on (Debian 12; Debian 11 and
# Ubuntu 20.04/22.04 for scripts/package and users building from source), each
# tested once here and handed to the one source file that hides it.

include(CheckSymbolExists)
include(CheckCXXSourceCompiles)

# glibc 2.34: closefrom, posix_spawn_file_actions_addclosefrom_np; 2.32: sigabbrev_np.
set(CMAKE_REQUIRED_DEFINITIONS -D_GNU_SOURCE)
check_symbol_exists(closefrom "unistd.h" TPURUN_HAVE_CLOSEFROM)
check_symbol_exists(posix_spawn_file_actions_addclosefrom_np "spawn.h" TPURUN_HAVE_SPAWN_CLOSEFROM)
check_symbol_exists(sigabbrev_np "string.h" TPURUN_HAVE_SIGABBREV_NP)
unset(CMAKE_REQUIRED_DEFINITIONS)
# GCC 11: std::from_chars for double.
check_cxx_source_compiles([[
#include <charconv>
int main() { double d = 0; const char s[] = "1.5"; return std::from_chars(s, s + 3, d).ec != std::errc(); }
]] TPURUN_HAVE_FROM_CHARS_DOUBLE)

function(tpurun_feature file)
  foreach(var ${ARGN})
    if(${var})
      set_property(SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/${file} APPEND PROPERTY COMPILE_DEFINITIONS ${var})
    endif()
  endforeach()
endfunction()
tpurun_feature(src/util/inherited_fds.cpp TPURUN_HAVE_CLOSEFROM TPURUN_HAVE_SPAWN_CLOSEFROM)
tpurun_feature(src/util/signal_name.cpp TPURUN_HAVE_SIGABBREV_NP)
tpurun_feature(src/util/parse_double.cpp TPURUN_HAVE_FROM_CHARS_DOUBLE)

# fmt, spdlog and xxhash: shared libraries in a normal build; in a portable
# one their headers only, since the libraries' sonames differ between the
# systems the package is for (libfmt7/8/9; libxxhash 0.7.3 on Ubuntu 20.04
# has other XXH3-128 values and no run-time dispatch).
# nghttp2: shared in a normal build; in a portable one its static library
# (~160 KB), one dependency fewer for the tarball (libnghttp2.so.14 is on
# every target system, but not always installed).
add_library(tpurun_nghttp2 INTERFACE)
if(TPURUN_PORTABLE)
  find_library(TPURUN_NGHTTP2_STATIC NAMES libnghttp2.a HINTS ${NGHTTP2_LIBRARY_DIRS} REQUIRED)
  target_include_directories(tpurun_nghttp2 INTERFACE ${NGHTTP2_INCLUDE_DIRS})
  target_link_libraries(tpurun_nghttp2 INTERFACE ${TPURUN_NGHTTP2_STATIC})
else()
  target_link_libraries(tpurun_nghttp2 INTERFACE PkgConfig::NGHTTP2)
endif()

add_library(tpurun_fmt INTERFACE)
add_library(tpurun_spdlog INTERFACE)
add_library(tpurun_xxhash INTERFACE)
if(TPURUN_PORTABLE)
  target_link_libraries(tpurun_fmt INTERFACE fmt::fmt-header-only)
  # spdlog's header-only target links fmt's shared library; take its headers.
  get_target_property(spdlog_includes spdlog::spdlog_header_only INTERFACE_INCLUDE_DIRECTORIES)
  target_include_directories(tpurun_spdlog INTERFACE ${spdlog_includes})
  target_compile_definitions(tpurun_spdlog INTERFACE SPDLOG_FMT_EXTERNAL)
  target_link_libraries(tpurun_spdlog INTERFACE tpurun_fmt Threads::Threads)
  target_include_directories(tpurun_xxhash INTERFACE ${XXHASH_INCLUDE_DIRS})
else()
  target_link_libraries(tpurun_fmt INTERFACE fmt::fmt)
  target_link_libraries(tpurun_spdlog INTERFACE spdlog::spdlog)
  target_link_libraries(tpurun_xxhash INTERFACE PkgConfig::XXHASH)
  # libxxhash >= 0.8.1 picks SSE2, AVX2 or AVX-512 at run time.
  set(CMAKE_REQUIRED_LIBRARIES ${XXHASH_LINK_LIBRARIES})
  set(CMAKE_REQUIRED_INCLUDES ${XXHASH_INCLUDE_DIRS})
  check_symbol_exists(XXH3_128bits_dispatch "xxh_x86dispatch.h" TPURUN_HAVE_XXHASH_DISPATCH)
  unset(CMAKE_REQUIRED_LIBRARIES)
  unset(CMAKE_REQUIRED_INCLUDES)
  tpurun_feature(src/staging/content_hash.cpp TPURUN_HAVE_XXHASH_DISPATCH)
endif()
