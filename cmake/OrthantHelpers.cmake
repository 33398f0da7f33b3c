# Helpers for orthant's own build (not installed).

# orthant_skip(<what> <debian package>...): a part of the build cannot be made
# on this machine. Prints one line naming the Debian packages that enable it;
# with ORTHANT_REQUIRE_ALL (scripts/test.sh, CI) it is a configure error
# instead, so nothing goes untested without anyone noticing. Every missing part
# is reported before the configure stops. Only for what a Debian package
# enables (CI installs them all): an extra built by hand and found through a
# variable the user sets is simply left out when the variable is unset.
function(orthant_skip what)
  string(JOIN " " packages ${ARGN})
  if(ORTHANT_REQUIRE_ALL)
    message(SEND_ERROR "orthant: ${what} cannot be built: apt-get install ${packages} "
      "(ORTHANT_REQUIRE_ALL is ON; turn it off to skip this part)")
  else()
    message(STATUS "orthant: skipped ${what} (Debian: apt-get install ${packages})")
  endif()
  set_property(GLOBAL APPEND PROPERTY ORTHANT_SKIPPED_PARTS "${what}")
endfunction()

# orthant_add_test(NAME <name> LABEL quick|full COMMAND ... [add_test's other arguments]):
# add_test with the one label every orthant test carries. quick: the library's
# unit and oracle tests and the examples, seconds in all (`ctest -L quick`
# while working); full: everything slower or outside the library — soak, fuzz
# replays, installs, configure runs, the CLI, the demo, the benchmark.
function(orthant_add_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;LABEL" "")
  if(NOT arg_LABEL STREQUAL "quick" AND NOT arg_LABEL STREQUAL "full")
    message(FATAL_ERROR "orthant_add_test(${arg_NAME}): LABEL must be quick or full")
  endif()
  add_test(NAME ${arg_NAME} ${arg_UNPARSED_ARGUMENTS})
  set_tests_properties(${arg_NAME} PROPERTIES LABELS ${arg_LABEL})
endfunction()

# orthant_label_tests(quick|full): give every test this directory has added so
# far that carries neither label the given one. A part's CMakeLists.txt ends
# with it (tools/, demo/, bench/ and fuzz/ are all full), so its tests need no
# label of their own. (A directory's LABELS property would not do: ctest drops
# it from tests that have a WORKING_DIRECTORY.)
function(orthant_label_tests label)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    get_test_property(${test} LABELS labels)
    if(NOT "quick" IN_LIST labels AND NOT "full" IN_LIST labels)
      set_property(TEST ${test} APPEND PROPERTY LABELS ${label})
    endif()
  endforeach()
endfunction()
