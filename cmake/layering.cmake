# layering.cmake — one static library per module folder, and the checks that
# keep the modules layered (docs/ARCHITECTURE.md).
#
# cs_module(<name> DIR <folder> HEADERS <h>... [DEPS <module>...] [LIBS <lib>...])
#   builds cs_<name> from every .c under <folder> (its subfolders too: a
#   module groups its files by layer, e.g. analysis/sections/, and a file
#   added at the top of <folder> is built as well); the folder and each of
#   its subfolders holding a header are private include directories, so a
#   file says #include "sections.h" wherever either lives (the module's
#   base names are unique, cmake/check_cycles.cmake); HEADERS are the module's public
#   headers (include/curvsweep/<h>.h); DEPS the modules it may use (listed
#   before: modules are declared bottom to top, so a cycle cannot be written).
# cs_layering_check(ACYCLIC <module>...)
#   after the last module: adds layering_<name> (link check),
#   layering_includes (include check) and layering_cycles (no call or
#   include cycle between the files of each ACYCLIC module,
#   cmake/check_cycles.cmake), all part of every build.

set_property(GLOBAL PROPERTY CS_MODULE_NAMES "")
set_property(GLOBAL PROPERTY CS_MODULE_SOURCES "")
set_property(GLOBAL PROPERTY CS_MODULE_PRIVATE_DIRS "")

function(cs_module name)
  cmake_parse_arguments(M "" "DIR" "HEADERS;DEPS;LIBS" ${ARGN})
  get_property(known GLOBAL PROPERTY CS_MODULE_NAMES)
  set(closure ${M_DEPS})
  foreach(dep ${M_DEPS})
    if(NOT dep IN_LIST known)
      message(FATAL_ERROR "module ${name}: dependency ${dep} is not declared below it")
    endif()
    get_property(dep_closure GLOBAL PROPERTY CS_MODULE_${dep}_CLOSURE)
    list(APPEND closure ${dep_closure})
  endforeach()
  list(REMOVE_DUPLICATES closure)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${M_DIR}/*.c)
  file(GLOB_RECURSE hdrs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${M_DIR}/*.h)
  set(private_dirs ${PROJECT_SOURCE_DIR}/${M_DIR})
  foreach(h ${hdrs})
    get_filename_component(d ${h} DIRECTORY)
    list(APPEND private_dirs ${d})
  endforeach()
  list(REMOVE_DUPLICATES private_dirs)
  add_library(cs_${name} STATIC ${srcs})
  target_include_directories(cs_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_include_directories(cs_${name} PRIVATE ${private_dirs})
  set(libs "")
  foreach(dep ${M_DEPS})
    list(APPEND libs cs_${dep})
  endforeach()
  target_link_libraries(cs_${name} PUBLIC ${libs} ${M_LIBS})
  set_property(GLOBAL APPEND PROPERTY CS_MODULE_NAMES ${name})
  set_property(GLOBAL APPEND PROPERTY CS_MODULE_SOURCES ${srcs})
  set_property(GLOBAL PROPERTY CS_MODULE_${name}_DIR ${M_DIR})
  # white-box tests reach a module's internal headers (tests/tests.cmake)
  set_property(GLOBAL PROPERTY CS_MODULE_${name}_PRIVATE_DIRS ${private_dirs})
  set_property(GLOBAL APPEND PROPERTY CS_MODULE_PRIVATE_DIRS ${private_dirs})
  set_property(GLOBAL PROPERTY CS_MODULE_${name}_HEADERS ${M_HEADERS})
  set_property(GLOBAL PROPERTY CS_MODULE_${name}_CLOSURE ${closure})
endfunction()

function(cs_layering_check)
  cmake_parse_arguments(C "" "" "ACYCLIC" ${ARGN})
  get_property(names GLOBAL PROPERTY CS_MODULE_NAMES)
  set(table "")
  set(cycles "")
  set(libraries "")
  foreach(name ${names})
    # link check: every object of the module, and only its declared
    # dependencies to resolve against
    add_executable(layering_${name} ${PROJECT_SOURCE_DIR}/cmake/layering_main.c)
    target_link_libraries(layering_${name} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,cs_${name}>")
    get_property(dir GLOBAL PROPERTY CS_MODULE_${name}_DIR)
    get_property(headers GLOBAL PROPERTY CS_MODULE_${name}_HEADERS)
    get_property(closure GLOBAL PROPERTY CS_MODULE_${name}_CLOSURE)
    string(REPLACE ";" "," headers "${headers}")
    string(REPLACE ";" "," closure "${closure}")
    string(APPEND table "${name}|${dir}|${headers}|${closure}\n")
    if(name IN_LIST C_ACYCLIC)
      string(APPEND cycles "${name}|${PROJECT_SOURCE_DIR}/${dir}|$<TARGET_FILE:cs_${name}>\n")
      list(APPEND libraries $<TARGET_FILE:cs_${name}>)
    endif()
  endforeach()
  foreach(name ${C_ACYCLIC})
    if(NOT name IN_LIST names)
      message(FATAL_ERROR "cs_layering_check: ACYCLIC names ${name}, which is not a module")
    endif()
  endforeach()
  if(NOT CMAKE_NM)
    message(FATAL_ERROR "cs_layering_check: no nm found (CMAKE_NM): the cycle check reads the libraries with it")
  endif()
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/layering_cycles.txt CONTENT "${cycles}")
  # rerun when a library or the script changes; the stamp records a pass
  add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/layering_cycles.stamp
    COMMAND ${CMAKE_COMMAND} -DCS_NM=${CMAKE_NM} -DCS_TABLE=${PROJECT_BINARY_DIR}/layering_cycles.txt
            -P ${PROJECT_SOURCE_DIR}/cmake/check_cycles.cmake
    COMMAND ${CMAKE_COMMAND} -E touch ${PROJECT_BINARY_DIR}/layering_cycles.stamp
    DEPENDS ${libraries} ${PROJECT_SOURCE_DIR}/cmake/check_cycles.cmake
            ${PROJECT_BINARY_DIR}/layering_cycles.txt
    COMMENT "Checking for call and include cycles between the files of a module")
  add_custom_target(layering_cycles ALL DEPENDS ${PROJECT_BINARY_DIR}/layering_cycles.stamp)
  foreach(name ${C_ACYCLIC})
    add_dependencies(layering_cycles cs_${name})
  endforeach()
  file(WRITE ${PROJECT_BINARY_DIR}/layering.txt "${table}")
  add_custom_target(layering_includes ALL
    COMMAND ${CMAKE_COMMAND} -DCS_SOURCE_DIR=${PROJECT_SOURCE_DIR}
            -DCS_TABLE=${PROJECT_BINARY_DIR}/layering.txt
            -P ${PROJECT_SOURCE_DIR}/cmake/check_includes.cmake
    COMMENT "Checking module layering of #include lines")
endfunction()
