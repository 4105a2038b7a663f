# Fails when a file of a layer includes a header from a folder its layer may
# not use (cmake/layers.cmake, the one place the direction is written).
#   cmake -DSOURCE_DIR=<repo> [-DROOT=<tree to check, default SOURCE_DIR>] -P check_includes.cmake
# Every folder of COLLKIT_LAYERS is checked, subfolders included; a quoted
# include "<folder>/..." whose folder is a layer (or one of the programs on
# top: cli, tests, fuzz, bench) must be the file's own folder or one its layer
# uses. Prints every offending include as "file: #include "x/y.h": <folder>
# may not use <x> (may use: ...)" and exits non-zero.
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_includes: -DSOURCE_DIR=<repository> is required")
endif()
if(NOT ROOT)
  set(ROOT ${SOURCE_DIR})
endif()
include(${SOURCE_DIR}/cmake/layers.cmake)
set(_programs cli tests fuzz bench)
set(_known ${COLLKIT_LAYERS} ${_programs})

set(_bad 0)
set(_checked 0)
foreach(_folder ${COLLKIT_LAYERS})
  file(GLOB_RECURSE _files RELATIVE ${ROOT} ${ROOT}/${_folder}/*.h ${ROOT}/${_folder}/*.cc
       ${ROOT}/${_folder}/*.cu ${ROOT}/${_folder}/*.cuh)
  set(_allowed ${_folder} ${COLLKIT_USES_${_folder}})
  foreach(_file ${_files})
    math(EXPR _checked "${_checked} + 1")
    file(STRINGS ${ROOT}/${_file} _includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]+\"")
    foreach(_line ${_includes})
      string(REGEX MATCH "\"([^\"/]+)/[^\"]*\"" _m "${_line}")
      if(NOT _m)
        continue()
      endif()
      set(_to ${CMAKE_MATCH_1})
      if(NOT _to IN_LIST _known OR _to IN_LIST _allowed)
        continue()
      endif()
      string(STRIP "${_line}" _line)
      string(REPLACE ";" " " _uses "${COLLKIT_USES_${_folder}}")
      if(_uses STREQUAL "")
        set(_uses "nothing of the project")
      endif()
      message("${_file}: ${_line}: ${_folder} may not use ${_to} (may use: ${_uses}; cmake/layers.cmake)")
      math(EXPR _bad "${_bad} + 1")
    endforeach()
  endforeach()
endforeach()
if(_bad GREATER 0)
  message(FATAL_ERROR "check_includes: ${_bad} include(s) against the layer order in ${_checked} files")
endif()
string(REPLACE ";" ", " _layers "${COLLKIT_LAYERS}")
message("check_includes: ${_checked} files of ${_layers} follow cmake/layers.cmake")
