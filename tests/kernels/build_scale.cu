// Uses my_build::scale from the group's preamble and my_build::offset from a header that only
// the group's include dir provides.
#include <build_offset.h>

extern "C" __global__ void scaled(float* out, float x) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        out[0] = my_build::offset(my_build::scale(x));
    }
}
