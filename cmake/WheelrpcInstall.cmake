# install(EXPORT ...) with a package config that finds our dependencies.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(_modules GLOBAL PROPERTY WHEELRPC_MODULES)

# `cmake --install` builds nothing (unlike `ninja install`), so after a build of
# only some targets (scripts/demo.sh, `--target hello_coro`) a library nothing
# needed yet would be missing, and the install would stop half way with
# "file INSTALL cannot find". So the install first builds the libraries it
# installs: nothing to do when they are up to date, and never stale ones.
list(JOIN _modules " " _module_names)
install(CODE "
  message(STATUS \"Building the installed libraries if needed: ${_module_names}\")
  execute_process(COMMAND \"${CMAKE_COMMAND}\" --build \"${PROJECT_BINARY_DIR}\"
                          --config \"\${CMAKE_INSTALL_CONFIG_NAME}\" --target ${_modules}
                  RESULT_VARIABLE _wheelrpc_rc)
  if(NOT _wheelrpc_rc EQUAL 0)
    message(FATAL_ERROR \"building the wheelrpc libraries in ${PROJECT_BINARY_DIR} failed: \${_wheelrpc_rc}\")
  endif()")
install(TARGETS ${_modules} EXPORT wheelrpcTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(_dir common timer transport transport/fault rpc registry admin)
  if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${_dir}/include)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${_dir}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endforeach()

set(_cfgdir ${CMAKE_INSTALL_LIBDIR}/cmake/wheelrpc)
install(EXPORT wheelrpcTargets NAMESPACE wheelrpc:: DESTINATION ${_cfgdir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/wheelrpcConfig.cmake.in
    ${PROJECT_BINARY_DIR}/wheelrpcConfig.cmake INSTALL_DESTINATION ${_cfgdir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/wheelrpcConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/wheelrpcConfig.cmake
              ${PROJECT_BINARY_DIR}/wheelrpcConfigVersion.cmake DESTINATION ${_cfgdir})
