# The guide's examples (examples/guide/, shown in docs/writing_a_service.md),
# when the examples are built: each must exit 0 by itself, promptly; a
# non-zero exit means a check of what the guide says failed (it prints which).
if(NOT TARGET guide_reply_later)
  return()
endif()
get_property(guide_targets DIRECTORY ${PROJECT_SOURCE_DIR}/examples/guide PROPERTY BUILDSYSTEM_TARGETS)
foreach(target IN LISTS guide_targets)
  add_test(NAME ${target} COMMAND ${target})
  set_tests_properties(${target} PROPERTIES TIMEOUT 60)
endforeach()

# The guide's code blocks are verbatim excerpts of those examples.
add_test(NAME guide_excerpts COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/guide_excerpts_test.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(guide_excerpts PROPERTIES TIMEOUT 60)

# docs/typed_services.md quotes examples/greeter verbatim.
add_test(NAME typed_services_excerpts
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/guide_excerpts_test.sh ${PROJECT_SOURCE_DIR} docs/typed_services.md
          examples/greeter)
set_tests_properties(typed_services_excerpts PROPERTIES TIMEOUT 60)

# docs/streams.md quotes examples/guide/streams.cc verbatim.
add_test(NAME streams_excerpts
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/guide_excerpts_test.sh ${PROJECT_SOURCE_DIR} docs/streams.md examples/guide)
set_tests_properties(streams_excerpts PROPERTIES TIMEOUT 60)
