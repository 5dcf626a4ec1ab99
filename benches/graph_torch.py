#!/usr/bin/env python3
"""PyTorch's side of benches/graph.rs, on the same GPU: a stream-captured torch.cuda.CUDAGraph of
100 in-place `add_` calls on a small tensor, replayed, per kernel; and the same 100 `add_` calls
launched eagerly from Python, per call.

Prints markdown table rows (each starting with `|`); with `--opbox LOG` (benches/graph.rs's
output) also the ratio of opbox's replay per kernel to PyTorch's. Prints "skipped: <why>" and
exits 0 without torch or a GPU.
"""

import argparse
import re
import statistics
import sys
import time

KERNELS = 100
ELEMS = 256


def timed(rounds, per, fn, sync):
    """Median seconds of one call of fn over synchronized rounds of `per` calls."""
    for _ in range(per):
        fn()
    sync()
    samples = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(per):
            fn()
        sync()
        samples.append((time.perf_counter() - t) / per)
    return statistics.median(samples)


def opbox_replay_us(log):
    """opbox's replay per kernel (µs) from benches/graph.rs's table, or None."""
    try:
        text = open(log, encoding="utf-8").read()
    except OSError:
        return None
    m = re.search(r"dependent kernels, CUDA graph replay[^|]*\| ([0-9.]+) µs/kernel", text)
    return float(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--opbox", help="benches/graph.rs's output, for the ratio")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print(f"skipped: no torch ({e})")
        return 0
    if not torch.cuda.is_available():
        print("skipped: no GPU (torch.cuda.is_available() is False)")
        return 0
    x = torch.zeros(ELEMS, device="cuda")
    one = torch.ones(ELEMS, device="cuda")

    def chain():
        for _ in range(KERNELS):
            x.add_(one)

    # Warm up on a side stream before capture, as PyTorch's CUDA graph docs ask.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            chain()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        chain()
    sync = torch.cuda.synchronize
    x.zero_()
    g.replay()
    sync()
    if x[0].item() != KERNELS:
        print(f"| PyTorch CUDA graph result WRONG: {x[0].item()} != {KERNELS} | | | |")
        return 1
    replay = timed(15, 200, g.replay, sync) / KERNELS
    eager = timed(15, 20, chain, sync) / KERNELS
    print(f"graph peer: PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    print("| figure | value | goal | ratio |")
    print("|---|---|---|---|")
    print(f"| PyTorch {torch.__version__}: CUDA graph of {KERNELS} in-place add_ (stream capture), replay | {replay * 1e6:.3f} µs/kernel | | |")
    print(f"| PyTorch: {KERNELS} add_ launched eagerly from Python | {eager * 1e6:.3f} µs/call | | |")
    ours = opbox_replay_us(args.opbox) if args.opbox else None
    if ours is not None:
        print(f"| opbox graph replay / PyTorch graph replay, per kernel | {ours:.3f} / {replay * 1e6:.3f} µs | | {ours / (replay * 1e6):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
