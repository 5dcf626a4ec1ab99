extern "C" __global__ void ok(float* out) { out[0] = 1.0f; }
