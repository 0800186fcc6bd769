# Embeds admin/src/pages/*.html into a C++ source as raw string literals,
# each with common.js (the pages' shared script) put where its script says
# `// @include common.js`, and common.css (their shared style) where its
# style says `/* @include common.css */` (each line must be there, once).
#
#   cmake -DPAGES_DIR=<dir> -DTEMPLATE=<pages.cc.in> -DOUTPUT=<pages.cc> -P pages_embed.cmake
#
# The pages are inserted verbatim (configure_file with @ONLY substitutes the
# template's @VAR@ markers, never anything inside the inserted text). The raw
# string delimiter must not appear in a page as `)<delimiter>"`; a page that
# contains it, or one that is not plain ASCII (the compiler's source charset
# must not matter), is an error. configure_file only rewrites OUTPUT when it
# changed, so an unchanged page does not recompile anything.
cmake_minimum_required(VERSION 3.25)

foreach(var PAGES_DIR TEMPLATE OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "pages_embed.cmake: -D${var}=... is required")
  endif()
endforeach()

set(DELIMITER "wheelrpc_page")
file(READ "${PAGES_DIR}/common.js" common_js)
file(READ "${PAGES_DIR}/common.css" common_css)
set(INCLUDE_MARK "// @include common.js\n")
set(CSS_MARK "  /* @include common.css */\n")
foreach(page status connections timeouts config)
  set(path "${PAGES_DIR}/${page}.html")
  file(READ "${path}" html)
  string(FIND "${html}" "${INCLUDE_MARK}" mark)
  if(mark EQUAL -1)
    message(FATAL_ERROR "${path} lacks the line '// @include common.js'")
  endif()
  string(REPLACE "${INCLUDE_MARK}" "${common_js}" html "${html}")
  string(FIND "${html}" "${CSS_MARK}" css_mark)
  if(css_mark EQUAL -1)
    message(FATAL_ERROR "${path} lacks the line '  /* @include common.css */'")
  endif()
  string(REPLACE "${CSS_MARK}" "${common_css}" html "${html}")
  string(FIND "${html}" ")${DELIMITER}\"" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${path} contains the raw string delimiter ')${DELIMITER}\"'")
  endif()
  string(REGEX MATCH "[^\t\n\r -~]" other "${html}")
  if(NOT other STREQUAL "")
    message(FATAL_ERROR "${path} is not plain ASCII: use \\uXXXX escapes in scripts and entities in HTML")
  endif()
  string(TOUPPER "${page}_HTML" var)
  set(${var} "${html}")
endforeach()

configure_file("${TEMPLATE}" "${OUTPUT}" @ONLY)
