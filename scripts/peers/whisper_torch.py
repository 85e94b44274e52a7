#!/usr/bin/env python3
"""PyTorch peer for Forge's GPU Whisper figures (reports/): the Whisper
tiny/base encoder and decoder step written directly in PyTorch on random
weights of the real shapes, timed on the same GPU in the same run.

Measures (median of N, CUDA events):
  encoder, one 30 s window (1500 positions), batch 1 and 32: eager fp16 and
  torch.compile(mode="reduce-overhead") fp16;
  decoder step (one token, static KV cache of 448, cross-attention over 1500)
  replayed as a CUDA graph, fp16 and fp32, for one sequence and for a batch
  of 32 at positions of their own.
Usage: whisper_torch.py [tiny|base] [--no-compile]
"""
import sys
import time

import torch
import torch.nn.functional as F

DIMS = {"tiny": (384, 6, 4, 80), "base": (512, 8, 6, 80)}


class Block(torch.nn.Module):
    def __init__(self, d, h, cross):
        super().__init__()
        self.h = h
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.o = torch.nn.Linear(d, d)
        self.cross = cross
        if cross:
            self.lnx = torch.nn.LayerNorm(d)
            self.q = torch.nn.Linear(d, d)
            self.kv = torch.nn.Linear(d, 2 * d)
            self.ox = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)

    def heads(self, x):
        b, s, d = x.shape
        return x.view(b, s, self.h, d // self.h).transpose(1, 2)

    def merge(self, x):
        b, h, s, dh = x.shape
        return x.transpose(1, 2).reshape(b, s, h * dh)

    def forward(self, x, kcache=None, vcache=None, pos=None, xk=None, xv=None):
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q, k, v = self.heads(q), self.heads(k), self.heads(v)
        if kcache is not None:
            # pos [B]: each sequence of the batch appends at its own length.
            b, n = x.shape[0], kcache.shape[2]
            rows = torch.arange(b, device=x.device)
            kcache[rows, :, pos] = k[:, :, 0]
            vcache[rows, :, pos] = v[:, :, 0]
            mask = (torch.arange(n, device=x.device).view(1, n) <= pos.view(b, 1)).view(b, 1, 1, n)
            a = F.scaled_dot_product_attention(q, kcache, vcache, attn_mask=mask)
        else:
            a = F.scaled_dot_product_attention(q, k, v)
        x = x + self.o(self.merge(a))
        if self.cross:
            qx = self.heads(self.q(self.lnx(x)))
            x = x + self.ox(self.merge(F.scaled_dot_product_attention(qx, xk, xv)))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Encoder(torch.nn.Module):
    def __init__(self, d, h, layers, mels):
        super().__init__()
        self.c1 = torch.nn.Conv1d(mels, d, 3, padding=1)
        self.c2 = torch.nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.pos = torch.nn.Parameter(torch.randn(1500, d) * 0.02)
        self.blocks = torch.nn.ModuleList(Block(d, h, False) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(d)

    def forward(self, mel):
        x = F.gelu(self.c2(F.gelu(self.c1(mel)))).transpose(1, 2) + self.pos
        for b in self.blocks:
            x = b(x)
        return self.ln(x)


class Decoder(torch.nn.Module):
    def __init__(self, d, h, layers, vocab=51865, ctx=448):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(ctx, d) * 0.02)
        self.blocks = torch.nn.ModuleList(Block(d, h, True) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(d)

    def forward(self, tok, pos, kc, vc, xk, xv):
        x = self.emb(tok) + self.pos[pos].unsqueeze(1)  # tok [B, 1], pos [B]
        for i, b in enumerate(self.blocks):
            x = b(x, kc[i], vc[i], pos, xk[i], xv[i])
        return self.ln(x) @ self.emb.weight.T


def timed(fn, n):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]


def main():
    size = sys.argv[1] if len(sys.argv) > 1 else "tiny"
    compile_ = "--no-compile" not in sys.argv
    d, h, layers, mels = DIMS[size]
    dev = "cuda"
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, whisper-{size} random weights")
    with torch.no_grad():
        enc = Encoder(d, h, layers, mels).to(dev).half().eval()
        for batch in (1, 32):
            mel = torch.randn(batch, mels, 3000, device=dev, dtype=torch.half)
            ms = timed(lambda: enc(mel), 100)
            print(f"encoder fp16 eager batch {batch}: {ms:.3f} ms ({ms / batch:.4f} ms/window)")
        if compile_:
            t0 = time.time()
            cenc = torch.compile(enc, mode="reduce-overhead")
            for batch in (1, 32):
                mel = torch.randn(batch, mels, 3000, device=dev, dtype=torch.half)
                ms = timed(lambda: cenc(mel), 100)
                print(f"encoder fp16 torch.compile(reduce-overhead) batch {batch}: {ms:.3f} ms ({ms / batch:.4f} ms/window)")
            print(f"(compile and warm-up took {time.time() - t0:.0f} s)")
        for dt, B in ((torch.half, 1), (torch.float32, 1), (torch.half, 32), (torch.float32, 32)):
            dec = Decoder(d, h, layers).to(dev).to(dt).eval()
            kc = [torch.zeros(B, h, 448, d // h, device=dev, dtype=dt) for _ in range(layers)]
            vc = [torch.zeros(B, h, 448, d // h, device=dev, dtype=dt) for _ in range(layers)]
            xk = [torch.randn(B, h, 1500, d // h, device=dev, dtype=dt) for _ in range(layers)]
            xv = [torch.randn(B, h, 1500, d // h, device=dev, dtype=dt) for _ in range(layers)]
            tok = torch.full((B, 1), 440, device=dev)
            pos = torch.arange(B, device=dev) + 20  # a position per sequence
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    dec(tok, pos, kc, vc, xk, xv)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = dec(tok, pos, kc, vc, xk, xv)
            ms = timed(g.replay, 200)
            name = str(dt).replace('torch.', '')
            if B == 1:
                host = timed(lambda: (g.replay(), out[0, 0, :8].cpu()), 200)
                print(f"decoder step {name} CUDA graph: {ms:.3f} ms on the device, {host:.3f} ms with the logits read back")
            else:
                host = timed(lambda: (g.replay(), out.float().cpu()), 200)
                print(f"decoder step {name}, batch of {B} at their own positions, CUDA graph: {ms:.3f} ms on the device, "
                      f"{host:.3f} ms with all {B} rows of logits read back ({B / host * 1000:.0f} sequence steps/s)")


if __name__ == "__main__":
    main()
