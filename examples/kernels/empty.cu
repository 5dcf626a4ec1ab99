// Does nothing: for measuring launch overhead.
extern "C" __global__ void empty() {}
