# Checks that every C++ block of README.md is a verbatim copy of a marked
# region of a file that the build compiles (and the test suite runs), so the
# code a new user reads first is code that works. A block names its source on
# the line before its fence:
#
#   <!-- snippet: examples/readme_service.cc readme:service -->
#   ```cpp
#
# and the file marks the region with a `// [readme:service]` line before it
# (anything after the mark on that line is left out too) and a
# `// [readme:service-end]` line after it. The region's common indentation is
# removed before comparing (a region may sit inside a function).
#
#   cmake -DSOURCE_DIR=. -P tests/examples/check_readme_snippets.cmake
#
# Plain CMake string operations (no lists: C++ is full of semicolons).
cmake_minimum_required(VERSION 3.25)

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<repository> -P check_readme_snippets.cmake")
endif()
file(READ "${SOURCE_DIR}/README.md" md)
set(md "\n${md}\n")

# Line number in README.md of byte offset `offset` of `md` (which starts with
# an extra newline).
function(line_of offset out)
  string(SUBSTRING "${md}" 0 ${offset} prefix)
  string(REGEX MATCHALL "\n" newlines "${prefix}")
  list(LENGTH newlines n)
  set(${out} ${n} PARENT_SCOPE)
endfunction()

# The text between the `// [name]` and `// [name-end]` lines of `file`,
# dedented; sets `error` instead when the marks are missing or repeated.
function(read_region file name out error)
  set(${error} "" PARENT_SCOPE)
  if(NOT EXISTS "${SOURCE_DIR}/${file}")
    set(${error} "${file} does not exist" PARENT_SCOPE)
    return()
  endif()
  file(READ "${SOURCE_DIR}/${file}" src)
  string(FIND "${src}" "// [${name}]" begin)
  string(FIND "${src}" "// [${name}]" last REVERSE)
  string(FIND "${src}" "// [${name}-end]" end)
  if(begin EQUAL -1 OR end EQUAL -1 OR NOT begin EQUAL last OR end LESS begin)
    set(${error} "${file} has no single region marked `// [${name}]` ... `// [${name}-end]`" PARENT_SCOPE)
    return()
  endif()
  # The region starts on the line after its mark (which may say more after it).
  string(SUBSTRING "${src}" ${begin} -1 from_mark)
  string(FIND "${from_mark}" "\n" mark_length)
  math(EXPR begin "${begin} + ${mark_length} + 1")
  string(SUBSTRING "${src}" 0 ${end} before_end)
  string(FIND "${before_end}" "\n" end REVERSE)  # the region ends with this newline
  math(EXPR length "${end} + 1 - ${begin}")
  string(SUBSTRING "${src}" ${begin} ${length} region)
  # Remove the indentation every non-empty line shares.
  set(region "\n${region}")
  while(region MATCHES "\n " AND NOT region MATCHES "\n[^ \n]")
    string(REPLACE "\n " "\n" region "${region}")
  endwhile()
  string(SUBSTRING "${region}" 1 -1 region)
  set(${out} "${region}" PARENT_SCOPE)
endfunction()

# The first line where `a` and `b` differ: "line N: <a's> / <b's>".
function(first_difference a b out)
  set(n 1)
  while(TRUE)
    string(FIND "${a}" "\n" ia)
    string(FIND "${b}" "\n" ib)
    if(ia EQUAL -1 OR ib EQUAL -1)
      set(${out} "line ${n}: one of them ends here" PARENT_SCOPE)
      return()
    endif()
    string(SUBSTRING "${a}" 0 ${ia} la)
    string(SUBSTRING "${b}" 0 ${ib} lb)
    if(NOT la STREQUAL lb)
      set(${out} "line ${n} of the block:\n  README.md: ${la}\n  the file:  ${lb}" PARENT_SCOPE)
      return()
    endif()
    math(EXPR ia "${ia} + 1")
    math(EXPR ib "${ib} + 1")
    string(SUBSTRING "${a}" ${ia} -1 a)
    string(SUBSTRING "${b}" ${ib} -1 b)
    math(EXPR n "${n} + 1")
  endwhile()
endfunction()

set(fence "\n```cpp\n")
string(LENGTH "${fence}" fence_length)
set(failures "")
set(checked 0)
set(offset 0)  # where `rest` starts in `md`
set(rest "${md}")
while(TRUE)
  string(FIND "${rest}" "${fence}" at)
  if(at EQUAL -1)
    break()
  endif()
  math(EXPR fence_offset "${offset} + ${at} + 1")
  line_of(${fence_offset} line)
  string(SUBSTRING "${rest}" 0 ${at} before)
  string(FIND "${before}" "\n" marker_start REVERSE)
  math(EXPR marker_start "${marker_start} + 1")
  string(SUBSTRING "${before}" ${marker_start} -1 marker)

  math(EXPR body "${at} + ${fence_length}")
  math(EXPR offset "${offset} + ${body}")
  string(SUBSTRING "${rest}" ${body} -1 rest)
  string(FIND "${rest}" "\n```\n" close)
  if(close EQUAL -1)
    string(APPEND failures "README.md:${line}: the C++ block is never closed\n")
    break()
  endif()
  math(EXPR block_length "${close} + 1")
  string(SUBSTRING "${rest}" 0 ${block_length} block)
  math(EXPR close "${close} + 4")
  math(EXPR offset "${offset} + ${close}")
  string(SUBSTRING "${rest}" ${close} -1 rest)

  if(NOT marker MATCHES "^<!-- snippet: ([^ ]+) ([^ ]+) -->$")
    string(APPEND failures "README.md:${line}: a C++ block that comes from no file: put it in a file the build compiles, mark the region and name it on the line before the fence (<!-- snippet: FILE REGION -->)\n")
    continue()
  endif()
  set(file "${CMAKE_MATCH_1}")
  set(name "${CMAKE_MATCH_2}")
  read_region("${file}" "${name}" region error)
  if(error)
    string(APPEND failures "README.md:${line}: ${error}\n")
  elseif(NOT block STREQUAL region)
    first_difference("${block}" "${region}" where)
    string(APPEND failures "README.md:${line}: the block differs from ${file} [${name}], first at ${where}\n")
  else()
    math(EXPR checked "${checked} + 1")
  endif()
endwhile()

if(NOT failures STREQUAL "")
  message(FATAL_ERROR "${failures}")
endif()
if(checked EQUAL 0)
  message(FATAL_ERROR "README.md: no C++ block found; is this the right SOURCE_DIR (${SOURCE_DIR})?")
endif()
message(STATUS "README.md: ${checked} C++ blocks match their files")
