# Makes the interop programs' test certificates with the openssl tool:
#   cmake -DOPENSSL=/usr/bin/openssl -DDIR=<out> -P make_certs.cmake
# writes <out>/ca.pem, ca.key, server.pem, server.key (EC P-256, 10 years).
# Throw-away certificates for tests, never for production.
foreach(_var OPENSSL DIR)
  if(NOT ${_var})
    message(FATAL_ERROR "make_certs.cmake: -D${_var}=... is required")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${DIR} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                  ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "make_certs.cmake: ${ARGN} failed (${_rc}): ${_out}")
  endif()
endfunction()

run(${OPENSSL} req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem
    -days 3650 -subj "/CN=wheelrpc interop test CA")
run(${OPENSSL} req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr
    -subj "/CN=*.test.google.fr")
file(WRITE ${DIR}/server.ext
     "subjectAltName=DNS:*.test.google.fr,DNS:foo.test.google.fr,DNS:localhost,IP:127.0.0.1\n"
     "extendedKeyUsage=serverAuth\n")
run(${OPENSSL} x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650
    -extfile server.ext -out server.pem)
