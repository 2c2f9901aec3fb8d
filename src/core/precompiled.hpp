// The external headers nearly every translation unit parses, compiled once per target
// (CMake's target_precompile_headers; STALE_PCH=OFF turns it off). Eigen alone is ~2 s of a
// unit's 6–12 s on the development machine, and the build is most of CI's time. Only
// external headers belong here: each file still includes what it uses itself, so that it
// compiles the same without this file.
#pragma once
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>
