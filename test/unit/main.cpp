// The one translation unit that provides doctest's main(); the tests live in *_test.cpp.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
