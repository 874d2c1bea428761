# Precompiled headers for the test suite: its ~100 TUs each parse GoogleTest, GoogleMock, fmt,
# nlohmann/json and much of the standard library. CI builds everything from nothing twice (the
# normal build and the sanitizer build, no ccache). Measured (docs/CI.md): tests/sweep_test.cpp
# 19.5 -> 14.9 CPU s at -O1, for one 12.7 s precompile. The libraries' TUs are not precompiled:
# GCC's optimiser dominates them and a precompiled header did not pay for itself there
# (scenario/calibration.cpp 10.8 -> 11.4 s, plus 11.2 s to precompile).
#
# Off by default when a ccache launcher is set: ccache refuses to cache a TU compiled with a
# precompiled header unless its sloppiness is relaxed (pch_defines, time_macros), so every
# rebuild would recompile every test. -DOVERLAPSIM_PCH=ON/OFF overrides the default.
set(overlapsim_pch_default ON)
if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache")
  set(overlapsim_pch_default OFF)
endif()
option(OVERLAPSIM_PCH "Precompile the test suite's heavy third-party and standard headers"
       ${overlapsim_pch_default})
message(STATUS "overlapsim: precompiled headers ${OVERLAPSIM_PCH}")

# overlapsim_precompile(target [header...]): the common headers and the target's own heavy ones.
# Only headers from outside the repository: a project header in a precompiled header would hide
# a missing #include of it (and builds with OVERLAPSIM_PCH=OFF still compile every file on its own
# includes).
function(overlapsim_precompile target)
  if(OVERLAPSIM_PCH)
    target_precompile_headers(
      ${target} PRIVATE <algorithm> <cmath> <cstdint> <filesystem> <functional> <map> <memory>
      <optional> <set> <sstream> <stdexcept> <string> <unordered_map> <variant> <vector>
      <fmt/format.h> ${ARGN})
  endif()
endfunction()
