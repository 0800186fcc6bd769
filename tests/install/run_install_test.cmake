# Script mode: install BUILD_DIR into PREFIX, then build the consumer project
# (find_package(wheelrpc)) and run its programs, each bounded in time.
#
# First it removes one installed library from the build (PARTIAL_LIB, the
# file of wheelrpc::fault), as a build of only some targets would have left it
# (scripts/demo.sh, `--target hello_coro`): `cmake --install` must build it
# again rather than stop with "file INSTALL cannot find".
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${PREFIX} ${CONSUMER_BUILD})
if(PARTIAL_LIB)
  file(REMOVE ${PARTIAL_LIB})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX} RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()
if(PARTIAL_LIB AND NOT EXISTS ${PARTIAL_LIB})
  message(FATAL_ERROR "cmake --install did not build ${PARTIAL_LIB}, missing from the build")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_SRC} -B ${CONSUMER_BUILD} -G ${GENERATOR}
                        -DCMAKE_PREFIX_PATH=${PREFIX} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
                        "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the consumer with find_package(wheelrpc) failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${CONSUMER_BUILD} RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the consumer failed: ${rc}")
endif()
# Each program must end by itself; execute_process kills it when the time is up.
foreach(program consumer rpc_consumer registry_consumer admin_consumer protobuf_consumer services_consumer)
  execute_process(COMMAND ${CONSUMER_BUILD}/${program} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 60)
  message(STATUS "${program}:\n${out}${err}")
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${program} failed (exit status '${rc}', expected 0 within 60 s)")
  endif()
endforeach()
