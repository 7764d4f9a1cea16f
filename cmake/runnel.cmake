# Helpers shared by the folder CMakeLists.

# runnel_library(NAME SRCS ... DEPS ...): a static library of our code.
function(runnel_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}
                                            ${PROJECT_BINARY_DIR}/gen)
  target_compile_options(${name} PRIVATE ${RUNNEL_WARNINGS} ${RUNNEL_ARCH_FLAGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# runnel_test(NAME SRCS ... DEPS ...): a GoogleTest binary registered with
# ctest, one ctest entry per TEST.
function(runnel_test name)
  if(NOT RUNNEL_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_compile_options(${name} PRIVATE ${RUNNEL_WARNINGS} ${RUNNEL_ARCH_FLAGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name} PRIVATE
      RUNNEL_TESTDATA_DIR="${PROJECT_SOURCE_DIR}/../shared/testdata")
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST
      PROPERTIES ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE")
endfunction()
