# Runs examples/hello_coro (-DPROGRAM=path) and checks that it exits 0 by
# itself, within 20 s, with its replies and the deadline error (and its
# timeline):
#   cmake -DPROGRAM=build/dev/examples/hello_coro -P tests/examples/run_hello_coro.cmake
execute_process(COMMAND ${PROGRAM} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 20)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "hello_coro: exit status '${rc}', expected 0\nstdout:\n${out}\nstderr:\n${err}")
endif()
set(expected
    "^echo hello -> hello\necho wheel -> wheel\necho rpc -> rpc\nslow -> timeout \\(sent, waiting for the reply(; the server timed out too)?\\) after [0-9]+ ms calling 'slow' on 127\\.0\\.0\\.1:[0-9]+; timeline: queued 0\\.0 ms, [^\n]*\nbye\n$")
if(NOT out MATCHES "${expected}")
  message(FATAL_ERROR "hello_coro: expected the three echoes, the timeout and 'bye', got:\n${out}\nstderr:\n${err}")
endif()
message(STATUS "hello_coro: ok")
