# wheelrpc_protobuf_generate: protoc's C++ and protoc-gen-wheelrpc's typed
# stubs for a target's .proto files.
#
#   wheelrpc_protobuf_generate(TARGET <target> PROTOS <file.proto>...
#                              [IMPORT_DIRS <dir>...])
#
# For each .proto runs protoc with --cpp_out and --wheelrpc_out into
# ${CMAKE_CURRENT_BINARY_DIR}/wheelrpc_generated/<target>/, then adds the
# `.pb.cc` files to <target>'s sources, that directory to its (PUBLIC,
# SYSTEM) include directories, and links it (PUBLIC) with wheelrpc::protobuf.
# Sources include the results by their path relative to the import directory
# that holds the .proto, as protoc names them: `#include "greeter.wheelrpc.h"` for
# greeter.proto (a `.wheelrpc.h` is written only for a file with services).
#
# PROTOS relative to ${CMAKE_CURRENT_SOURCE_DIR}. IMPORT_DIRS (relative to the
# same) are protoc's -I, in order; a .proto that is under none of them is
# named relative to its own directory, which is then added to them. Also
# given to protoc: wheelrpc's options.proto directory (for `import
# "wheelrpc/options.proto";`) and protobuf's include directory (for
# google/protobuf/*.proto). An edit of a .proto, of a file it imports, or a new
# protoc-gen-wheelrpc regenerates.
#
# Comes with the tree (examples and tests use it) and with the installed
# package: a project with only `find_package(wheelrpc)` has it too.
function(wheelrpc_protobuf_generate)
  cmake_parse_arguments(ARG "" "TARGET" "PROTOS;IMPORT_DIRS" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS OR NOT ARG_TARGET OR NOT ARG_PROTOS)
    message(FATAL_ERROR "usage: wheelrpc_protobuf_generate(TARGET <target> PROTOS <file.proto>... "
                        "[IMPORT_DIRS <dir>...]) (got: ${ARGV})")
  endif()
  if(NOT TARGET ${ARG_TARGET})
    message(FATAL_ERROR "wheelrpc_protobuf_generate: no target ${ARG_TARGET}")
  endif()
  if(NOT TARGET wheelrpc::protoc-gen-wheelrpc OR NOT TARGET protobuf::protoc)
    message(FATAL_ERROR "wheelrpc_protobuf_generate: needs wheelrpc::protoc-gen-wheelrpc and protobuf::protoc")
  endif()

  # In the tree the plugin is an alias: depend on the target it names, so that
  # it is built first. Installed, it is imported: depend on its file.
  get_target_property(_plugin wheelrpc::protoc-gen-wheelrpc ALIASED_TARGET)
  if(NOT _plugin)
    set(_plugin $<TARGET_FILE:wheelrpc::protoc-gen-wheelrpc>)
  endif()
  get_property(_wheelrpc_dir GLOBAL PROPERTY WHEELRPC_PROTO_IMPORT_DIR)
  get_target_property(_protobuf_dirs protobuf::libprotobuf INTERFACE_INCLUDE_DIRECTORIES)

  set(_out ${CMAKE_CURRENT_BINARY_DIR}/wheelrpc_generated/${ARG_TARGET})
  file(MAKE_DIRECTORY ${_out})
  set(_import_dirs)
  foreach(_dir IN LISTS ARG_IMPORT_DIRS)
    cmake_path(ABSOLUTE_PATH _dir BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} NORMALIZE)
    list(APPEND _import_dirs ${_dir})
  endforeach()

  set(_sources)
  set(_headers)
  foreach(_proto IN LISTS ARG_PROTOS)
    cmake_path(ABSOLUTE_PATH _proto BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} NORMALIZE)
    # The import directory that holds it names it, as protoc would.
    set(_root)
    foreach(_dir IN LISTS _import_dirs)
      cmake_path(IS_PREFIX _dir ${_proto} NORMALIZE _inside)
      if(_inside)
        set(_root ${_dir})
        break()
      endif()
    endforeach()
    set(_includes)
    foreach(_dir IN LISTS _import_dirs)
      list(APPEND _includes -I ${_dir})
    endforeach()
    if(NOT _root)
      cmake_path(GET _proto PARENT_PATH _root)
      list(APPEND _includes -I ${_root})
    endif()
    list(APPEND _includes -I ${_wheelrpc_dir})
    foreach(_dir IN LISTS _protobuf_dirs)
      list(APPEND _includes -I ${_dir})
    endforeach()

    cmake_path(RELATIVE_PATH _proto BASE_DIRECTORY ${_root} OUTPUT_VARIABLE _rel)
    string(REGEX REPLACE "\\.proto$" "" _base ${_rel})
    # protoc names its outputs in the depfile in this order; ninja wants the
    # first one first.
    set(_outputs ${_out}/${_base}.pb.cc ${_out}/${_base}.pb.h)
    # protoc-gen-wheelrpc writes a header only for a file with services.
    file(STRINGS ${_proto} _services REGEX "^[ \t]*service[ \t]")
    if(_services)
      list(APPEND _outputs ${_out}/${_base}.wheelrpc.h)
    endif()
    string(MAKE_C_IDENTIFIER ${_base} _depfile)
    set(_depfile ${_out}/${_depfile}.d)
    add_custom_command(
      OUTPUT ${_outputs}
      COMMAND protobuf::protoc --plugin=protoc-gen-wheelrpc=$<TARGET_FILE:wheelrpc::protoc-gen-wheelrpc>
              ${_includes} --dependency_out=${_depfile} --cpp_out=${_out} --wheelrpc_out=${_out} ${_proto}
      DEPENDS ${_proto} ${_plugin} protobuf::protoc
      DEPFILE ${_depfile}
      COMMENT "protoc (cpp, wheelrpc): ${_rel}"
      VERBATIM)
    list(APPEND _sources ${_out}/${_base}.pb.cc)
    list(APPEND _headers ${_outputs})
    list(REMOVE_ITEM _headers ${_out}/${_base}.pb.cc)
  endforeach()

  target_sources(${ARG_TARGET} PRIVATE ${_sources} ${_headers})
  # protoc's code is not ours to warn about (nor to fail a -Werror build).
  # Each .pb.cc defines file-level statics of the same names: one unit each.
  set_source_files_properties(${_sources} PROPERTIES COMPILE_OPTIONS -w SKIP_UNITY_BUILD_INCLUSION ON)
  # SYSTEM: generated code, protoc's and ours, is kept out of the includer's
  # warnings (e.g. the callback base's default that leaves `request` unused).
  target_include_directories(${ARG_TARGET} SYSTEM PUBLIC $<BUILD_INTERFACE:${_out}>)
  target_link_libraries(${ARG_TARGET} PUBLIC wheelrpc::protobuf)
endfunction()
