# Test registration.
#   tests/test_<name>.c  -> cmocka unit test, one process
#   tests/mpi_<name>.c   -> cmocka test run under mpiexec at 1, 2, 3 and 4 ranks
#   tests/sh_<name>.sh   -> end-to-end shell test; gets the build dir and source dir
set(CS_MPIEXEC mpiexec --oversubscribe --bind-to none)
# OMPI_MCA_pml=ob1: the point-to-point layer Open MPI picks on a machine
# without InfiniBand or Omni-Path, named so that each start skips 0.2 s of
# probing the others; OMPI_MCA_mpi_yield_when_idle=1: a rank waiting for a
# message gives its core away, as the tests run up to 4 ranks on 2 cores
# beside another test (docs/DECISIONS.md, "Test time").
# OMPI_MCA_orte_tmpdir_base (set per test below): each test's Open MPI
# session directories under a root of its own, so that one test's processes
# removing /tmp/ompi.<host>.<uid> as they exit cannot take the directory
# from under another test's starting process (seen: "mkdir ... jf.0: No such
# file or directory", MPI_Init failing in an unrelated test). The root is
# short (Open MPI keeps sockets there) and keyed by the build dir, so two
# checkouts testing at once stay apart; Open MPI creates it.
string(MD5 CS_BUILD_KEY "${PROJECT_BINARY_DIR}")
string(SUBSTRING "${CS_BUILD_KEY}" 0 8 CS_BUILD_KEY)
set(CS_TEST_ENV "OMPI_MCA_pml=ob1;OMPI_MCA_mpi_yield_when_idle=1;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OPENBLAS_NUM_THREADS=1;OMPI_MCA_rmaps_base_oversubscribe=1;CS_SOURCE_DIR=${PROJECT_SOURCE_DIR};CS_BUILD_DIR=${PROJECT_BINARY_DIR};CS_BIN=${PROJECT_BINARY_DIR}/curvsweep")

# What the cmocka tests share (tests/support/fixtures.h).
add_library(cs_test_support STATIC ${PROJECT_SOURCE_DIR}/tests/support/fixtures.c
            ${PROJECT_SOURCE_DIR}/tests/support/archive_fixtures.c)
target_include_directories(cs_test_support PUBLIC ${PROJECT_SOURCE_DIR}/tests/support)
target_link_libraries(cs_test_support PUBLIC curvsweep_core PkgConfig::CMOCKA)

# A white-box test includes an internal header by its path
# ("../analysis/stats/checks.h"); the headers that one includes are found
# as the module finds them, in its folders (cmake/layering.cmake).
get_property(CS_ANALYSIS_DIRS GLOBAL PROPERTY CS_MODULE_analysis_PRIVATE_DIRS)
file(GLOB CS_UNIT_TESTS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/test_*.c)
foreach(src ${CS_UNIT_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE cs_test_support)
  if(name MATCHES "^test_analysis_")
    target_include_directories(${name} PRIVATE ${CS_ANALYSIS_DIRS})
  endif()
  add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${CS_TEST_ENV};OMPI_MCA_orte_tmpdir_base=/tmp/cs-mpi-${CS_BUILD_KEY}/${name}" TIMEOUT 600)
endforeach()

file(GLOB CS_MPI_TESTS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/mpi_*.c)
foreach(src ${CS_MPI_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE cs_test_support)
  foreach(np 1 2 3 4)
    add_test(NAME ${name}_np${np} COMMAND ${CS_MPIEXEC} -np ${np} $<TARGET_FILE:${name}>
             WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
    set_tests_properties(${name}_np${np} PROPERTIES ENVIRONMENT "${CS_TEST_ENV};OMPI_MCA_orte_tmpdir_base=/tmp/cs-mpi-${CS_BUILD_KEY}/${name}_np${np}" TIMEOUT 600)
  endforeach()
endforeach()

file(GLOB CS_SH_TESTS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/sh_*.sh)
foreach(src ${CS_SH_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME ${name} COMMAND bash ${src} WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${CS_TEST_ENV};OMPI_MCA_orte_tmpdir_base=/tmp/cs-mpi-${CS_BUILD_KEY}/${name}" TIMEOUT 900)
endforeach()
# The sweep under the sanitizers (tests/sanitize/sweep.sh): only in the
# CS_SANITIZE build, where scripts/test.sh runs it beside the other
# sanitized tests.
if(CS_SANITIZE)
  add_test(NAME sanitize_sweep COMMAND bash ${PROJECT_SOURCE_DIR}/tests/sanitize/sweep.sh
           WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  set_tests_properties(sanitize_sweep PROPERTIES ENVIRONMENT "${CS_TEST_ENV};OMPI_MCA_orte_tmpdir_base=/tmp/cs-mpi-${CS_BUILD_KEY}/sanitize_sweep" TIMEOUT 900)
endif()
# tests/sh_hostile.sh forges journal records with valid CRCs and wild
# values with this (tests/support/journal_forge.c).
add_executable(journal_forge ${PROJECT_SOURCE_DIR}/tests/support/journal_forge.c)
target_link_libraries(journal_forge PRIVATE cs_test_support)
# The hostile-archive corpus (tests/sh_hostile.sh, docs/SECURITY.md
# "Archives"): ~30 crafted archives x 6 commands, each bounded by 10 s; the
# sanitizer pass of scripts/test.sh runs it too, several times slower.
if(TEST sh_hostile)
  set_tests_properties(sh_hostile PROPERTIES TIMEOUT 2400)
endif()
# Where Slurm is not installed or cannot start, the Slurm test reports
# "skipped" (exit 77) instead of failing; scripts/test.sh installs it. So
# does the batched PyTorch peer's check where python3 has no torch.
foreach(skippable sh_slurm sh_peer_batched)
  if(TEST ${skippable})
    set_tests_properties(${skippable} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
endforeach()
# ctest -j starts tests in descending COST; a fresh clone has no measured
# costs yet (Testing/Temporary/CTestCostData.txt), so the long ones are
# named here (seconds on 2 cores, rounded) and start first instead of last.
foreach(long sh_corruption:400 sh_slurm:150 sh_sweep:125 sh_lock_race:115 sh_bad_inputs:90
             sh_team:90 sh_self_attn:85 sh_hostile:65 sh_analyze:65 sh_security_io:55
             sh_salvage:50 sh_analyze_gates:45 mpi_team_np4:45 mpi_team_np3:40)
  string(REPLACE ":" ";" pair ${long})
  list(GET pair 0 name)
  list(GET pair 1 cost)
  if(TEST ${name})
    set_tests_properties(${name} PROPERTIES COST ${cost})
  endif()
endforeach()
# The team tests keep 4 ranks exchanging messages at every product: beside
# another test they wait for the scheduler at every step (mpi_team_np4: 4 s
# alone, 45 s at -j2), so they take both cores of ctest -j2.
foreach(wide mpi_team_np3 mpi_team_np4 sh_team)
  if(TEST ${wide})
    set_tests_properties(${wide} PROPERTIES PROCESSORS 2)
  endif()
endforeach()
# Under the sanitizers the hostile corpus is the long one (its ~190 commands
# each pay a sanitized start): it starts first there.
if(CS_SANITIZE AND TEST sh_hostile)
  set_tests_properties(sh_hostile PROPERTIES COST 1000)
endif()
