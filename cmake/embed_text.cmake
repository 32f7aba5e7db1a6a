# Writes a C++ header holding a text file as a raw string literal:
#   cmake -DINPUT=page.html -DOUTPUT=page_html.h -DNAME=kPageHtml -P embed_text.cmake
file(READ "${INPUT}" content)
string(FIND "${content}" ")WEFTEMBED\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string's delimiter")
endif()
file(WRITE "${OUTPUT}.tmp" "// Generated from ${INPUT} by cmake/embed_text.cmake; do not edit.\n#pragma once\nstatic const char ${NAME}[] = R\"WEFTEMBED(${content})WEFTEMBED\";\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
file(REMOVE "${OUTPUT}.tmp")
