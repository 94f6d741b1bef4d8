# Makes the programs of worker/ into what the build uses (run as `cmake -P`
# by worker/programs.cmake; ninja inlines its browse.py so):
#   OUT/worker/NAME          each program with its pieces and tokens in place:
#                            what runs on a worker, what ctest lints and tests
#   OUT/worker_programs.cpp  the EMBED programs as string constants
#                            (include/tpurun/worker/programs.hpp declares
#                            them), full-line comments blanked: a program is
#                            sent on every use, its comments are for readers
#   OUT/include/tpurun/worker/tokens.hpp  protocol.tokens as C++ constants
#   OUT/worker/protocol_tokens.py  and as Python, for worker/tests/
#
# In a program, a line "# tpurun-embed: include FILE" becomes FILE (a path
# under worker/, itself expanded), and a line "# tpurun-embed: tokens" the
# tokens of protocol.tokens that the program uses, in its language (.sh, .py,
# .pl). A piece in another language than the file that includes it (perl in
# a heredoc of sh) has a tokens line of its own if it uses any.
#
# -D arguments: SOURCE_DIR (worker/), OUT (a dir of the build), PROGRAMS (the
# programs, as paths under worker/), EMBED (those the binary holds).
cmake_minimum_required(VERSION 3.18)
include(${CMAKE_CURRENT_LIST_DIR}/../scripts/embed_text.cmake)  # write_if_changed, camel_case, raw_literal
string(REPLACE "," ";" PROGRAMS "${PROGRAMS}")
string(REPLACE "," ";" EMBED "${EMBED}")

set(include_marker "# tpurun-embed: include ")
set(tokens_marker "# tpurun-embed: tokens\n")
set(word_edge "[^A-Za-z0-9_]")

function(language_of path out)
  get_filename_component(ext "${path}" EXT)
  string(REGEX REPLACE ".*\\." "" ext "${ext}")
  if(NOT ext MATCHES "^(sh|py|pl)$")
    message(FATAL_ERROR "worker/${path}: a program is .sh, .py or .pl")
  endif()
  set(${out} "${ext}" PARENT_SCOPE)
endfunction()

# The tokens: TOKEN_NAMES and TOKEN_VALUE_<name>; HEADER_BODY, the C++ of
# them with the file's comments. The file is split by hand: CMake's lists
# would split its comments at each semicolon.
file(READ "${SOURCE_DIR}/protocol.tokens" tokens_text)
string(REPLACE ";" "<semicolon>" tokens_text "${tokens_text}")
string(REPLACE "\n" ";" token_lines "${tokens_text}")
set(TOKEN_NAMES "")
set(HEADER_BODY "")
foreach(line IN LISTS token_lines)
  string(REPLACE "<semicolon>" ";" line "${line}")
  if(line MATCHES "^#")
    string(REGEX REPLACE "^# ?" "" line "${line}")
    string(APPEND HEADER_BODY "// ${line}\n")
  elseif(line MATCHES "^([A-Z][A-Z0-9_]*) (.+)$")
    set(name "${CMAKE_MATCH_1}")
    set(value "${CMAKE_MATCH_2}")
    if(value MATCHES "[\"'\\\\$`;]")
      message(FATAL_ERROR "worker/protocol.tokens: ${name}: no quote, backslash, $, ` or ; in a value")
    endif()
    if(DEFINED TOKEN_VALUE_${name})
      message(FATAL_ERROR "worker/protocol.tokens: ${name} twice")
    endif()
    list(APPEND TOKEN_NAMES "${name}")
    set(TOKEN_VALUE_${name} "${value}")
    camel_case("${name}" camel)
    if(value MATCHES "^[0-9]+$")
      string(APPEND HEADER_BODY "inline constexpr int k${camel} = ${value};\n")
    else()
      string(APPEND HEADER_BODY "inline constexpr const char* k${camel} = \"${value}\";\n")
    endif()
  elseif(line STREQUAL "")
    string(APPEND HEADER_BODY "\n")
  else()
    message(FATAL_ERROR "worker/protocol.tokens: not NAME VALUE: ${line}")
  endif()
endforeach()

# The definition of one token in a language.
function(token_line language name out)
  set(value "${TOKEN_VALUE_${name}}")
  if(value MATCHES "^[0-9]+$")
    set(quoted "${value}")
  elseif(language STREQUAL "py")
    set(quoted "\"${value}\"")
  else()
    set(quoted "'${value}'")
  endif()
  if(language STREQUAL "sh")
    set(${out} "${name}=${quoted}\n" PARENT_SCOPE)
  elseif(language STREQUAL "py")
    set(${out} "${name} = ${quoted}\n" PARENT_SCOPE)
  else()
    set(${out} "my \$${name} = ${quoted};\n" PARENT_SCOPE)
  endif()
endfunction()

# The tokens `text` names, as a list.
function(tokens_used text out)
  set(used "")
  foreach(name IN LISTS TOKEN_NAMES)
    if(text MATCHES "(^|${word_edge})${name}(${word_edge}|$)")
      list(APPEND used "${name}")
    endif()
  endforeach()
  set(${out} "${used}" PARENT_SCOPE)
endfunction()

# expand(PATH DEPTH TEXT_VAR SCAN_VAR): the file worker/PATH with its pieces
# and tokens in place (TEXT_VAR), and the text in which a file of its
# language that includes it looks for tokens (SCAN_VAR: its own text and its
# pieces' of its language, or nothing once it has its own tokens line).
function(expand path depth text_var scan_var)
  if(depth GREATER 8)
    message(FATAL_ERROR "worker/${path}: includes nested too deep (a loop?)")
  endif()
  language_of("${path}" language)
  file(READ "${SOURCE_DIR}/${path}" rest)
  set(text "")
  set(scan "")
  string(LENGTH "${include_marker}" marker_length)
  while(TRUE)
    string(FIND "${rest}" "${include_marker}" at)
    if(at EQUAL -1)
      break()
    endif()
    string(SUBSTRING "${rest}" 0 ${at} before)
    if(NOT before STREQUAL "" AND NOT before MATCHES "\n$")
      message(FATAL_ERROR "worker/${path}: '${include_marker}' must start its line")
    endif()
    string(SUBSTRING "${rest}" ${at} -1 rest)
    string(FIND "${rest}" "\n" nl)
    math(EXPR name_length "${nl} - ${marker_length}")
    string(SUBSTRING "${rest}" ${marker_length} ${name_length} piece)
    math(EXPR nl "${nl} + 1")
    string(SUBSTRING "${rest}" ${nl} -1 rest)
    math(EXPR next "${depth} + 1")
    expand("${piece}" ${next} piece_text piece_scan)
    language_of("${piece}" piece_language)
    string(APPEND text "${before}${piece_text}")
    string(APPEND scan "${before}")
    if(piece_language STREQUAL language)
      string(APPEND scan "${piece_scan}")
    else()
      tokens_used("${piece_scan}" stray)
      if(stray)
        message(FATAL_ERROR "worker/${piece} uses ${stray}: in ${path} it needs its own tokens line")
      endif()
    endif()
  endwhile()
  string(APPEND text "${rest}")
  string(APPEND scan "${rest}")
  string(FIND "${scan}" "${tokens_marker}" marker_at)
  if(NOT marker_at EQUAL -1)
    string(REPLACE "${tokens_marker}" "" scan "${scan}")
    tokens_used("${scan}" used)
    set(prelude "")
    foreach(name IN LISTS used)
      token_line(${language} ${name} line)
      string(APPEND prelude "${line}")
    endforeach()
    string(FIND "${text}" "${tokens_marker}" first)
    string(FIND "${text}" "${tokens_marker}" last REVERSE)
    if(NOT first EQUAL last)
      message(FATAL_ERROR "worker/${path}: two tokens lines")
    endif()
    string(REPLACE "${tokens_marker}" "${prelude}" text "${text}")
    set(scan "")
  endif()
  set(${text_var} "${text}" PARENT_SCOPE)
  set(${scan_var} "${scan}" PARENT_SCOPE)
endfunction()

# The header of the tokens.
set(header "// Generated by worker/embed.cmake from worker/protocol.tokens: edit that file.
#pragma once

namespace tpurun::worker {

${HEADER_BODY}
}  // namespace tpurun::worker
")
write_if_changed("${OUT}/include/tpurun/worker/tokens.hpp" "${header}")

# Every program, expanded; the embedded ones into the C++.
set(cpp "// Generated by worker/embed.cmake from the programs in worker/: edit those.
#include \"tpurun/worker/programs.hpp\"

namespace tpurun::worker {
")
foreach(program IN LISTS PROGRAMS)
  expand("${program}" 0 text scan)
  tokens_used("${scan}" stray)
  if(stray)
    message(FATAL_ERROR "worker/${program} uses ${stray} but has no '# tpurun-embed: tokens' line")
  endif()
  write_if_changed("${OUT}/worker/${program}" "${text}")
  if(program IN_LIST EMBED)
    # Full-line comments blanked, not removed: line numbers in a worker's
    # error messages are those of OUT/worker/NAME.
    string(REGEX REPLACE "\n[ \t]*#[^\n]*" "\n" sent "\n${text}")
    string(SUBSTRING "${sent}" 1 -1 sent)
    camel_case("${program}" camel)
    raw_literal("${sent}" tpurun_worker "worker/${program}" literal)
    string(APPEND cpp "\n// worker/${program}\nconst std::string_view k${camel} = ${literal};\n")
  endif()
endforeach()

# Every token for the Python unit tests of the programs (worker/tests/).
set(prelude "# Generated by worker/embed.cmake from worker/protocol.tokens: every token.\n")
foreach(name IN LISTS TOKEN_NAMES)
  token_line(py ${name} line)
  string(APPEND prelude "${line}")
endforeach()
write_if_changed("${OUT}/worker/protocol_tokens.py" "${prelude}")

# Every token in each language, for the protocol test.
foreach(language sh py pl)
  set(prelude "")
  foreach(name IN LISTS TOKEN_NAMES)
    token_line(${language} ${name} line)
    string(APPEND prelude "${line}")
  endforeach()
  camel_case("tokens ${language}" camel)
  raw_literal("${prelude}" tpurun_worker "the tokens" literal)
  string(APPEND cpp "\nconst std::string_view k${camel} = ${literal};\n")
endforeach()
string(APPEND cpp "\n}  // namespace tpurun::worker\n")
write_if_changed("${OUT}/worker_programs.cpp" "${cpp}")
