# PyTorch's figures for issue 13's ops, on the GPU, in the same run as benches/dsl_ops_gpu.rs:
# torch.sum over 256 M f32, torch.softmax(dim=-1) over [4096, 4096] and [32768, 1024] f32, and
# torch.matmul 4096^3 f32 with TF32 off. CUDA events, mean of 50 calls after warm-up (20 for
# matmul). Prints "torch <name> ms: <time>" lines, which the bench reads.
import os
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def timed(f, reps=50):
    for _ in range(5):
        f()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        f()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


n = int(os.environ.get("OPBOX_SUM_ELEMS", 256 << 20))
x = torch.ones(n, device="cuda")
assert abs(x.sum().item() - n) / n < 1e-6, "torch.sum gave a wrong result"
print(f"torch sum ms: {timed(lambda: x.sum()):.5f}")
del x

for rows, d in [(4096, 4096), (32768, 1024)]:
    x = torch.randn(rows, d, device="cuda")
    assert torch.allclose(torch.softmax(x, dim=-1).sum(-1), torch.ones(rows, device="cuda"), atol=1e-4)
    print(f"torch softmax {rows}x{d} ms: {timed(lambda: torch.softmax(x, dim=-1)):.5f}")
    del x

side = int(os.environ.get("OPBOX_MATMUL_SIDE", 4096))
a = torch.randn(side, side, device="cuda")
b = torch.randn(side, side, device="cuda")
print(f"torch matmul ms: {timed(lambda: torch.matmul(a, b), reps=20):.5f}")
