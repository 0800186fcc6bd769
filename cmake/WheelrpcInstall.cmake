# install(EXPORT ...) with a package config that finds our dependencies.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(_modules GLOBAL PROPERTY WHEELRPC_MODULES)

# `cmake --install` builds nothing (unlike `ninja install`), so after a build of
# only some targets (scripts/demo.sh, `--target hello_coro`) a library nothing
# needed yet would be missing, and the install would stop half way with
# "file INSTALL cannot find". So the install first builds the libraries it
# installs: nothing to do when they are up to date, and never stale ones.
# The protoc plugin is installed (and exported) with them.
set(_installed ${_modules} protoc-gen-wheelrpc)
list(JOIN _installed " " _module_names)
install(CODE "
  message(STATUS \"Building the installed libraries if needed: ${_module_names}\")
  execute_process(COMMAND \"${CMAKE_COMMAND}\" --build \"${PROJECT_BINARY_DIR}\"
                          --config \"\${CMAKE_INSTALL_CONFIG_NAME}\" --target ${_installed}
                  RESULT_VARIABLE _wheelrpc_rc)
  if(NOT _wheelrpc_rc EQUAL 0)
    message(FATAL_ERROR \"building the wheelrpc libraries in ${PROJECT_BINARY_DIR} failed: \${_wheelrpc_rc}\")
  endif()")
install(TARGETS ${_installed} EXPORT wheelrpcTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# wheelctl, the operator's tool (tools/wheelctl), into bin/; built first, as
# the libraries are, and not exported (a program, not a target to link).
if(TARGET wheelctl)
  install(CODE "
  execute_process(COMMAND \"${CMAKE_COMMAND}\" --build \"${PROJECT_BINARY_DIR}\"
                          --config \"\${CMAKE_INSTALL_CONFIG_NAME}\" --target wheelctl
                  RESULT_VARIABLE _wheelctl_rc)
  if(NOT _wheelctl_rc EQUAL 0)
    message(FATAL_ERROR \"building wheelctl in ${PROJECT_BINARY_DIR} failed: \${_wheelctl_rc}\")
  endif()")
  install(TARGETS wheelctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
foreach(_dir common timer transport transport/fault rpc protobuf services registry admin)
  if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${_dir}/include)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${_dir}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endforeach()
# The IDL option: `import "wheelrpc/options.proto";` and protoc's header for it,
# both under <includedir>/wheelrpc/. The .proto is also its own component
# (`cmake --install BUILD --component proto`): with `-I <prefix>/include`,
# other languages' protoc runs compile a typed service's .proto as it is
# (docs/grpc.md, "Typed services from other languages").
get_property(_options_pb_h GLOBAL PROPERTY WHEELRPC_OPTIONS_PB_H)
install(FILES ${PROJECT_SOURCE_DIR}/protobuf/proto/wheelrpc/options.proto
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/wheelrpc COMPONENT proto)
install(FILES ${_options_pb_h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/wheelrpc)
# wheelrpc::services' generated code for gRPC's health and reflection .proto
# files (protoc's .pb.h and protoc-gen-wheelrpc's .wheelrpc.h), under their
# protoc names in a directory of their own, which the exported target adds to
# its include directories (services/CMakeLists.txt).
get_property(_services_generated GLOBAL PROPERTY WHEELRPC_SERVICES_GENERATED_DIR)
if(_services_generated)
  install(DIRECTORY ${_services_generated}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/wheelrpc/services/generated
          FILES_MATCHING PATTERN "*.h")
endif()

set(_cfgdir ${CMAKE_INSTALL_LIBDIR}/cmake/wheelrpc)
install(EXPORT wheelrpcTargets NAMESPACE wheelrpc:: DESTINATION ${_cfgdir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/wheelrpcConfig.cmake.in
    ${PROJECT_BINARY_DIR}/wheelrpcConfig.cmake INSTALL_DESTINATION ${_cfgdir}
    PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/wheelrpcConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/wheelrpcConfig.cmake
              ${PROJECT_BINARY_DIR}/wheelrpcConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/WheelrpcProtobuf.cmake DESTINATION ${_cfgdir})
