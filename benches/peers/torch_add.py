# torch.add(y, x, alpha=a, out=z) over 256 M f32 on the GPU: the baseline of the DSL axpy
# (issue 12), in TB/s counting 12 bytes an element. CUDA events, mean of 50 calls after warm-up.
# Prints one line, "torch.add TB/s: <rate>", which benches/dsl_gpu.rs reads.
import os
import torch

n = int(os.environ.get("OPBOX_AXPY_ELEMS", 256 << 20))
x = torch.full((n,), 1.5, device="cuda")
y = torch.full((n,), 2.0, device="cuda")
z = torch.empty_like(x)
for _ in range(5):
    torch.add(y, x, alpha=2.0, out=z)
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
reps = 50
start.record()
for _ in range(reps):
    torch.add(y, x, alpha=2.0, out=z)
end.record()
torch.cuda.synchronize()
seconds = start.elapsed_time(end) / reps / 1e3
assert bool((z == 5.0).all()), "torch.add gave a wrong result"
print(f"torch.add TB/s: {12 * n / seconds / 1e12:.4f}")
