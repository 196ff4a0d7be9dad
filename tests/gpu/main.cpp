// The doctest main of the GPU tests (build/bin/gpu-tests; needs a CUDA device).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
