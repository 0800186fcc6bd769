# Per-target settings; nothing here touches global flags.

# Warnings for a target of ours (errors when WHEELRPC_WERROR is on, as in CI).
function(wheelrpc_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                                           -Wnon-virtual-dtor -Wold-style-cast)
  if(WHEELRPC_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  # GCC 12 flags Asio's coroutine frames (allocated by awaitable_frame_base's
  # operator new from a recycled block, freed through the same path) as
  # mismatched new/free once inlined at -O2: a known false positive.
  # GCC 12 at -O3 also warns (-Wrestrict) inside std::string's copy when a
  # short string is assigned or prepended (GCC bug 105329, a false positive);
  # the release preset builds the tests with -O3.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-mismatched-new-delete)
    if(CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12 AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
      target_compile_options(${target} PRIVATE -Wno-restrict)
    endif()
  endif()
endfunction()

# A wheelrpc library module: wheelrpc_<name>, alias wheelrpc::<name>, public
# headers under <dir>/include, C++20, warnings on, exported for find_package.
function(wheelrpc_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(wheelrpc_${name} ${ARG_SOURCES})
  add_library(wheelrpc::${name} ALIAS wheelrpc_${name})
  set_target_properties(wheelrpc_${name} PROPERTIES EXPORT_NAME ${name}
                                                    OUTPUT_NAME wheelrpc_${name})
  target_compile_features(wheelrpc_${name} PUBLIC cxx_std_20)
  target_include_directories(wheelrpc_${name} PUBLIC
      $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_link_libraries(wheelrpc_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  wheelrpc_set_warnings(wheelrpc_${name})
  set_property(GLOBAL APPEND PROPERTY WHEELRPC_MODULES wheelrpc_${name})
endfunction()
