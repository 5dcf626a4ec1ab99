// Deliberately broken, so `opbox aot` must report this kernel's compile error and still
// compile the others.
extern "C" __global__ void broken(float* out, long long n) {
    out[0] = this_name_is_not_declared;
}
