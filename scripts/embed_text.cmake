# Files made into C++ string constants at build time, so that tpurun stays
# one binary while what it holds stays a readable file of its own. Included by
# the two `cmake -P` scripts that do it: worker/embed.cmake (the programs run
# on the workers) and docs/help/embed.cmake (the commands' help texts).

# Writes only when the text changed, so that nothing rebuilds for nothing.
function(write_if_changed path text)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if("${old}" STREQUAL "${text}")
      return()
    endif()
  endif()
  file(WRITE "${path}" "${text}")
endfunction()

# CamelCase for C++: RESERVE_READY -> ReserveReady, push_have.sh -> PushHaveSh.
function(camel_case words out)
  string(REGEX REPLACE "[^A-Za-z0-9]+" ";" parts "${words}")
  set(result "")
  foreach(part IN LISTS parts)
    string(TOLOWER "${part}" part)
    string(SUBSTRING "${part}" 0 1 first)
    string(SUBSTRING "${part}" 1 -1 others)
    string(TOUPPER "${first}" first)
    string(APPEND result "${first}${others}")
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# A C++ raw string literal of `text`, R"DELIMITER(...)DELIMITER"; `where`
# names the file in the error when the text holds the literal's end.
function(raw_literal text delimiter where out)
  string(FIND "${text}" ")${delimiter}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${where} holds )${delimiter}\", the end of its C++ literal")
  endif()
  set(${out} "R\"${delimiter}(${text})${delimiter}\"" PARENT_SCOPE)
endfunction()
