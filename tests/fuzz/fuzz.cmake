# libFuzzer harnesses (tests/fuzz/README.md), built only with -DCS_FUZZ=ON
# (clang): tests/fuzz/fuzz_<name>.c -> fuzz_<name>, linked with libFuzzer's
# main. Not registered with ctest: scripts/test.sh runs each for a short
# while on its seed corpus tests/fuzz/corpus/<name>/.
file(GLOB CS_FUZZ_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
foreach(src ${CS_FUZZ_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  # the archive harnesses reach the module's internal header (journal scan)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src/archive)
  target_link_libraries(${name} PRIVATE curvsweep_core)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
endforeach()
