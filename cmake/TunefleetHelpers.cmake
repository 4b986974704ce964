# tunefleet_library(NAME SRCS a.cc b.cc DEPS x y [PUBLIC_INCLUDE dir])
# Declares a static library and its tunefleet::NAME alias. Sources include
# their headers relative to the repository root ("common/status.h"); those
# directories are the build tree's only (installed targets name their own).
function(tunefleet_library name)
  cmake_parse_arguments(ARG "" "PUBLIC_INCLUDE" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  add_library(tunefleet::${name} ALIAS ${name})
  target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
  if(ARG_PUBLIC_INCLUDE)
    target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${ARG_PUBLIC_INCLUDE}>)
  endif()
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# tunefleet_test(NAME LABEL unit|service|integration|gpu SRCS ... DEPS ...)
# One GoogleTest binary; every test in it becomes a ctest test with the label.
function(tunefleet_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  # Test files share helper names file by file: one translation unit each,
  # even where CMAKE_UNITY_BUILD batches the programs' sources.
  set_target_properties(${name} PROPERTIES UNITY_BUILD OFF)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} tunefleet::test_support
                        GTest::gmock GTest::gtest_main)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  gtest_discover_tests(${name}
    PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "TUNEFLEET_BUILD_DIR=${PROJECT_BINARY_DIR};TUNEFLEET_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
    DISCOVERY_TIMEOUT 60)
endfunction()
