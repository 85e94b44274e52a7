#!/usr/bin/env python3
"""PyTorch peer for the parts of Forge's batched Whisper tiny encoder on the
GPU (reports/2026-11-25-gpu-batch-host.md): each kernel kind of a batch of
32 windows (48,000 rows of 384) timed alone, so a Forge kernel's ncu time
has a peer measured on the same GPU in the same run.

Measures (mean of 50 after 5 warm-ups, CUDA events, microseconds):
  the four products of a layer (qkv, out, fc1, fc2), fp16 operands, with
  fp16 and with fp32 results;
  GELU (erf) over fc1's output: fp16 in and out, fp32 in and out, and fp32
  in with fp16 out (two kernels in PyTorch);
  self-attention, scaled_dot_product_attention, fp16, 32 x 6 heads x 1500 x 64.
Usage: encoder_parts_torch.py
"""
import torch
import torch.nn.functional as F

ROWS, D, HEADS, S = 48000, 384, 6, 1500


def timed(fn, n=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / n * 1000


def main():
    torch.manual_seed(0)
    dev = "cuda"
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for k, n, name in [(D, 3 * D, "qkv"), (D, D, "out"), (D, 4 * D, "fc1"), (4 * D, D, "fc2")]:
        a = torch.randn(ROWS, k, device=dev, dtype=torch.half)
        w = torch.randn(n, k, device=dev, dtype=torch.half)
        b = torch.randn(n, device=dev, dtype=torch.half)
        f16 = timed(lambda: torch.addmm(b, a, w.t()))
        f32 = timed(lambda: torch.mm(a, w.t(), out_dtype=torch.float32))
        print(f"{name} [{ROWS}x{k}]x[{k}x{n}] f16 out {f16:.1f} us, f32 out {f32:.1f} us")
    x16 = torch.randn(ROWS, 4 * D, device=dev, dtype=torch.half)
    x32 = x16.float()
    print(f"gelu erf f16->f16 {timed(lambda: F.gelu(x16)):.1f} us; f32->f32 {timed(lambda: F.gelu(x32)):.1f} us; "
          f"f32->f16 {timed(lambda: F.gelu(x32).half()):.1f} us")
    q = torch.randn(ROWS // S, HEADS, S, D // HEADS, device=dev, dtype=torch.half)
    print(f"sdpa f16 {ROWS // S}x{HEADS}x{S}x{D // HEADS} {timed(lambda: F.scaled_dot_product_attention(q, q, q)):.1f} us")


if __name__ == "__main__":
    main()
