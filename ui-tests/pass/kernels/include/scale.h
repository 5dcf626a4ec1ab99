#pragma once
template <typename T> __device__ inline T scaled(T v, T s) { return v * s; }
