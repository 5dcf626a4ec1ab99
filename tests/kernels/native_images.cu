// Warp's test_external_build.py "native value types" kernels, ported. Color, Pixel, Image and the
// native functions come from the group's preamble (Warp's native header), and the builtins'
// generated wrappers (opbox_builtin_scale, opbox_builtin_image_handle) right after it.
// native_struct_kernel is in native_image_struct.cu: its unit has Container's generated twin,
// which this kernel's unit (referencing no Container) does not.

// Each thread builds a Pixel from a Color made in the kernel, writes it, its scaled color and
// the handle of its Image (read through the builtin, as Warp's kernel does).
extern "C" __global__ void native_array_kernel(my_addon::Pixel* pixels,
                                               const warp_test::Image* images,
                                               my_addon::Color* colors,
                                               unsigned long long* handles, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        my_addon::Color color{(float)i, warp_test::NATIVE_COLOR_CONSTANT.g, 3.0f};
        my_addon::Pixel pixel{color, (int)i};
        pixels[i] = pixel;
        colors[i] = opbox_builtin_scale(pixel.color, 2.0f);
        handles[i] = opbox_builtin_image_handle(images[i]);
    }
}
