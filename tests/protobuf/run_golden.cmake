# Script mode: one golden case of protoc-gen-wheelrpc. Runs protoc with the
# plugin on every .proto under CASE_DIR (named relative to it) into a scratch
# WORK_DIR, then compares with the case's goldens byte for byte:
# - <name>.wheelrpc.h.golden: the header expected for <name>.proto, and no
#   other header may be written;
# - <name>.proto.golden: with the parameter client_proto, the client copy
#   expected for <name>.proto;
# - protoc.stderr.golden: protoc is expected to fail with exactly this on
#   stderr (and to write nothing).
# A file protoc.parameter holds the plugin's parameter for the case
# (`--wheelrpc_out=<parameter>:OUT`), e.g. client_proto.
# A mismatch fails with a unified diff. With -DUPDATE=ON it rewrites the
# goldens from what was generated instead (scripts/update_goldens.sh).
#   cmake -DPROTOC=... -DPLUGIN=... -DWHEELRPC_PROTO_DIR=... -DPROTOBUF_PROTO_DIR=...
#         -DCASE_DIR=... -DWORK_DIR=... [-DUPDATE=ON] -P run_golden.cmake
cmake_minimum_required(VERSION 3.25)
foreach(_var PROTOC PLUGIN WHEELRPC_PROTO_DIR PROTOBUF_PROTO_DIR CASE_DIR WORK_DIR)
  if(NOT ${_var})
    message(FATAL_ERROR "run_golden.cmake: -D${_var}=... is missing")
  endif()
endforeach()

set(_out ${WORK_DIR}/out)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${_out})
file(GLOB_RECURSE _protos RELATIVE ${CASE_DIR} ${CASE_DIR}/*.proto)
list(SORT _protos)
set(_wheelrpc_out ${_out})
if(EXISTS ${CASE_DIR}/protoc.parameter)
  file(STRINGS ${CASE_DIR}/protoc.parameter _parameter LIMIT_COUNT 1)
  set(_wheelrpc_out "${_parameter}:${_out}")
endif()
execute_process(
  COMMAND ${PROTOC} --plugin=protoc-gen-wheelrpc=${PLUGIN} -I ${CASE_DIR} -I ${WHEELRPC_PROTO_DIR}
          -I ${PROTOBUF_PROTO_DIR} --wheelrpc_out=${_wheelrpc_out} ${_protos}
  WORKING_DIRECTORY ${CASE_DIR}
  RESULT_VARIABLE _rc
  OUTPUT_VARIABLE _stdout
  ERROR_VARIABLE _stderr)
file(GLOB_RECURSE _generated RELATIVE ${_out} ${_out}/*)
list(SORT _generated)

if(UPDATE)
  file(GLOB_RECURSE _old ${CASE_DIR}/*.golden)
  if(_old)
    file(REMOVE ${_old})
  endif()
  if(_rc EQUAL 0)
    foreach(_file IN LISTS _generated)
      configure_file(${_out}/${_file} ${CASE_DIR}/${_file}.golden COPYONLY)
    endforeach()
  else()
    file(WRITE ${CASE_DIR}/protoc.stderr.golden "${_stderr}")
  endif()
  message(STATUS "${CASE_DIR}: protoc exit ${_rc}; goldens: ${_generated}")
  return()
endif()

# Shows the difference between a golden file and what was made.
function(show_diff golden actual)
  find_program(_diff diff)
  if(_diff)
    execute_process(COMMAND ${_diff} -u ${golden} ${actual} OUTPUT_VARIABLE _text ERROR_VARIABLE _text)
  else()
    file(READ ${actual} _text)
    set(_text "${actual} (no diff program; its text):\n${_text}")
  endif()
  message("${_text}")
endfunction()

if(EXISTS ${CASE_DIR}/protoc.stderr.golden)
  file(WRITE ${WORK_DIR}/protoc.stderr "${_stderr}")
  if(_rc EQUAL 0)
    message(FATAL_ERROR "protoc succeeded, expected it to fail; it wrote: ${_generated}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${CASE_DIR}/protoc.stderr.golden ${WORK_DIR}/protoc.stderr
                  RESULT_VARIABLE _differ)
  if(_differ)
    show_diff(${CASE_DIR}/protoc.stderr.golden ${WORK_DIR}/protoc.stderr)
    message(FATAL_ERROR "protoc failed (exit ${_rc}) but its message differs from protoc.stderr.golden")
  endif()
  message(STATUS "protoc failed as expected: ${_stderr}")
  return()
endif()

if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "protoc failed (exit ${_rc}):\n${_stderr}")
endif()
file(GLOB_RECURSE _goldens RELATIVE ${CASE_DIR} ${CASE_DIR}/*.golden)
list(TRANSFORM _goldens REPLACE "\\.golden$" "")
list(SORT _goldens)
if(NOT _generated STREQUAL _goldens)
  message(FATAL_ERROR "protoc-gen-wheelrpc wrote [${_generated}], the goldens are [${_goldens}]")
endif()
set(_failed)
foreach(_file IN LISTS _generated)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${CASE_DIR}/${_file}.golden ${_out}/${_file}
                  RESULT_VARIABLE _differ)
  if(_differ)
    show_diff(${CASE_DIR}/${_file}.golden ${_out}/${_file})
    list(APPEND _failed ${_file})
  endif()
endforeach()
if(_failed)
  message(FATAL_ERROR "differs from its golden: ${_failed} (scripts/update_goldens.sh rewrites the goldens)")
endif()
message(STATUS "matches its goldens: ${_generated}")
