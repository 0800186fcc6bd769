# install(EXPORT ...) with a package config that finds our dependencies.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(_modules GLOBAL PROPERTY WHEELRPC_MODULES)
install(TARGETS ${_modules} EXPORT wheelrpcTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(_dir common timer transport transport/fault rpc)
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
