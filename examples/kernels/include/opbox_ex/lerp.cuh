// Found through the declaration's include_dirs: included as <opbox_ex/lerp.cuh>.
#ifndef OPBOX_EX_LERP_CUH
#define OPBOX_EX_LERP_CUH

template <typename T>
__device__ inline T opbox_ex_lerp(T a, T b, T t) {
    return a + t * (b - a);
}

#endif
