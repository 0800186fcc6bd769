# Runs one of the README's programs (examples/readme_*.cc) and checks that it
# exits 0 by itself, within 20 s, printing what the README says it prints:
#   cmake -DNAME=readme_service -DPROGRAM=build/dev/examples/readme_service \
#         -P tests/examples/run_readme_example.cmake
cmake_minimum_required(VERSION 3.25)

if(NAME STREQUAL "readme_service")
  set(expected "^echo -> hi\n$")
elseif(NAME STREQUAL "readme_timer")
  set(expected "^cancelled: it will never run\nran after 20 ms\nstopped: 1 never ran\n$")
elseif(NAME STREQUAL "readme_providers")
  set(expected "^get_user -> {\"id\":42,\"name\":\"Ada\"}\n$")
else()
  message(FATAL_ERROR "run_readme_example.cmake: unknown NAME '${NAME}'")
endif()

# execute_process kills the program when the time is up: none is left behind.
execute_process(COMMAND ${PROGRAM} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 20)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "${NAME}: exit status '${rc}', expected 0 (by itself, within 20 s)\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(NOT out MATCHES "${expected}")
  message(FATAL_ERROR "${NAME}: unexpected output:\n${out}\nstderr:\n${err}")
endif()
message(STATUS "${NAME}: ok")
