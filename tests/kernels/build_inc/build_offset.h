// Found only through the group's BuildOptions include dir: the scanner leaves it to NVRTC.
#pragma once
namespace my_build {
__device__ inline float offset(float x) { return x + 1.0f; }
}  // namespace my_build
