// Forge's hand-written Metal kernels: the ops whose access pattern a
// per-element expression cannot describe (kernels/codegen generates the
// elementwise and reduction ones). Every kernel has the same shape, which
// the backend's launch table (fixed.go) and the CPU harness of the tests
// rely on:
//
//   kernel void fk_NAME(constant fk_NAME_params& p [[buffer(0)]],
//                       uint tid [[thread_position_in_threadgroup]],
//                       uint group [[threadgroup_position_in_grid]],
//                       uint ngroups [[threadgroups_per_grid]],
//                       device T* b1 [[buffer(1)]], ...)
//
// dispatched as dispatchThreadgroups(ngroups, FK_THREADS): each kernel
// loops over its work items with group += ngroups, so any number of groups
// covers the work. Parameter blocks are little-endian longs (element
// offsets, extents, strides), then floats. Buffers are bound at their
// element 0: offsets travel in the parameters. Arithmetic is float32 with
// fast math off (NaN tests are x != x).
#include <metal_stdlib>
using namespace metal;

#define FK_THREADS 128
#define FK_NEG_INF as_type<float>(0xff800000u)

// fk_nanmax is max that propagates NaN (a NaN row stays NaN, as on the CPU).
static inline float fk_nanmax(float a, float b) { return (a != a || a > b) ? a : b; }

// FK_TREE(red, tid, v, OP, out) combines v over the threadgroup into out
// (every thread gets the result) through the threadgroup array red, with
// OP(a, b) combining two partial results. A macro, not a function: a
// pointer to threadgroup memory is a parameter type the CPU shim cannot
// spell.
#define FK_ADD(a, b) ((a) + (b))
#define FK_TREE(red, tid, v, OP, out)                         \
  do {                                                        \
    red[tid] = (v);                                           \
    threadgroup_barrier(mem_flags::mem_threadgroup);          \
    for (uint s_ = FK_THREADS / 2; s_ > 0; s_ >>= 1) {        \
      if (tid < s_) red[tid] = OP(red[tid], red[tid + s_]);   \
      threadgroup_barrier(mem_flags::mem_threadgroup);        \
    }                                                         \
    out = red[0];                                             \
    threadgroup_barrier(mem_flags::mem_threadgroup);          \
  } while (0)

// ---------------------------------------------------------------------------
// Matrix product: C[b] = A[b]·B[b] (+ bias[N]), C dense [batch, M, N]. A and
// B are any strided views (a transposed operand is a swap of its strides);
// batch axes broadcast with stride 0. A threadgroup computes a 32×32 tile of
// C with four simdgroups of 16×16 (2×2 simdgroup_float8x8 accumulators),
// staging 32×32 tiles of A and B in threadgroup memory with zero padding at
// the edges.
struct fk_matmul_params {
  long m, n, k, batch, nb;
  long bshape[4], a_bs[4], b_bs[4];
  long a_rs, a_cs, b_rs, b_cs, a_off, b_off, c_off, has_bias, bias_off;
};
kernel void fk_matmul(constant fk_matmul_params& p [[buffer(0)]],
                      uint tid [[thread_position_in_threadgroup]],
                      uint group [[threadgroup_position_in_grid]],
                      uint ngroups [[threadgroups_per_grid]],
                      device float* c [[buffer(1)]],
                      device const float* a [[buffer(2)]],
                      device const float* b [[buffer(3)]],
                      device const float* bias [[buffer(4)]]) {
  threadgroup float as[32 * 32];
  threadgroup float bs[32 * 32];
  threadgroup float cs[32 * 32];
  const uint sg = tid / 32;  // Apple GPUs run simdgroups of 32 threads
  const uint sr = (sg / 2) * 16, sc = (sg % 2) * 16;
  const long mt = (p.m + 31) / 32, nt = (p.n + 31) / 32;
  const long tiles = p.batch * mt * nt;
  for (long t = group; t < tiles; t += ngroups) {
    const long tn = t % nt, tm = (t / nt) % mt, bi = t / (nt * mt);
    long ab = p.a_off, bb = p.b_off, q = bi;
    for (long d = p.nb - 1; d >= 0; d--) {
      const long x = q % p.bshape[d];
      q /= p.bshape[d];
      ab += x * p.a_bs[d];
      bb += x * p.b_bs[d];
    }
    const long row0 = tm * 32, col0 = tn * 32;
    simdgroup_float8x8 acc00 = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_float8x8 acc01 = acc00, acc10 = acc00, acc11 = acc00;
    for (long k0 = 0; k0 < p.k; k0 += 32) {
      for (uint e = tid; e < 32 * 32; e += FK_THREADS) {
        const long r = e / 32, cc = e % 32;
        const long i = row0 + r, ka = k0 + cc;
        as[e] = (i < p.m && ka < p.k) ? a[ab + i * p.a_rs + ka * p.a_cs] : 0.0f;
        const long kb = k0 + r, j = col0 + cc;
        bs[e] = (kb < p.k && j < p.n) ? b[bb + kb * p.b_rs + j * p.b_cs] : 0.0f;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (uint kk = 0; kk < 32; kk += 8) {
        simdgroup_float8x8 a0, a1, b0, b1;
        simdgroup_load(a0, as + sr * 32 + kk, 32);
        simdgroup_load(a1, as + (sr + 8) * 32 + kk, 32);
        simdgroup_load(b0, bs + kk * 32 + sc, 32);
        simdgroup_load(b1, bs + kk * 32 + sc + 8, 32);
        simdgroup_multiply_accumulate(acc00, a0, b0, acc00);
        simdgroup_multiply_accumulate(acc01, a0, b1, acc01);
        simdgroup_multiply_accumulate(acc10, a1, b0, acc10);
        simdgroup_multiply_accumulate(acc11, a1, b1, acc11);
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    simdgroup_store(acc00, cs + sr * 32 + sc, 32);
    simdgroup_store(acc01, cs + sr * 32 + sc + 8, 32);
    simdgroup_store(acc10, cs + (sr + 8) * 32 + sc, 32);
    simdgroup_store(acc11, cs + (sr + 8) * 32 + sc + 8, 32);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint e = tid; e < 32 * 32; e += FK_THREADS) {
      const long i = row0 + e / 32, j = col0 + e % 32;
      if (i < p.m && j < p.n) {
        float v = cs[e];
        if (p.has_bias != 0) v += bias[p.bias_off + j];
        c[p.c_off + (bi * p.m + i) * p.n + j] = v;
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}

// ---------------------------------------------------------------------------
// Attention: out[b, i, :] = softmax(q[b, i]·k[b]ᵀ + mask[i]) · v[b], one query
// row per threadgroup iteration, keys in tiles of FK_THREADS (one score per
// thread), an online softmax (running maximum and sum), output dimension
// tid < dv per thread. The scores never leave the threadgroup. d, dv <= 128.
struct fk_attention_params {
  long n, s, d, dv, batch, nb;
  long bshape[4], q_bs[4], k_bs[4], v_bs[4], m_bs[4];
  long q_rs, q_cs, k_rs, k_cs, v_rs, v_cs, q_off, k_off, v_off, out_off, has_mask, mask_off;
};
kernel void fk_attention(constant fk_attention_params& p [[buffer(0)]],
                         uint tid [[thread_position_in_threadgroup]],
                         uint group [[threadgroup_position_in_grid]],
                         uint ngroups [[threadgroups_per_grid]],
                         device float* out [[buffer(1)]],
                         device const float* q [[buffer(2)]],
                         device const float* k [[buffer(3)]],
                         device const float* v [[buffer(4)]],
                         device const float* mask [[buffer(5)]]) {
  threadgroup float qs[128];
  threadgroup float ps[FK_THREADS];
  threadgroup float red[FK_THREADS];
  const long rows = p.batch * p.n;
  for (long r = group; r < rows; r += ngroups) {
    const long bi = r / p.n, i = r % p.n;
    long qo = p.q_off, ko = p.k_off, vo = p.v_off, mo = p.mask_off, x = bi;
    for (long d = p.nb - 1; d >= 0; d--) {
      const long c = x % p.bshape[d];
      x /= p.bshape[d];
      qo += c * p.q_bs[d];
      ko += c * p.k_bs[d];
      vo += c * p.v_bs[d];
      mo += c * p.m_bs[d];
    }
    for (long e = tid; e < p.d; e += FK_THREADS) qs[e] = q[qo + i * p.q_rs + e * p.q_cs];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float m = FK_NEG_INF, l = 0.0f, acc = 0.0f;
    for (long j0 = 0; j0 < p.s; j0 += FK_THREADS) {
      const long j = j0 + tid;
      float sc = FK_NEG_INF;
      if (j < p.s) {
        float dot = 0.0f;
        for (long e = 0; e < p.d; e++) dot += qs[e] * k[ko + j * p.k_rs + e * p.k_cs];
        if (p.has_mask != 0) dot += mask[mo + i * p.s + j];
        sc = dot;
      }
      float tmax;
      FK_TREE(red, tid, sc, fk_nanmax, tmax);
      const float mn = fk_nanmax(m, tmax);
      // A key scored −∞ weighs 0, even while every score so far is −∞.
      const float pj = sc == FK_NEG_INF ? 0.0f : precise::exp(sc - mn);
      ps[tid] = pj;
      const float corr = m == FK_NEG_INF ? 0.0f : precise::exp(m - mn);
      float tsum;
      FK_TREE(red, tid, pj, FK_ADD, tsum);
      l = l * corr + tsum;
      if (tid < p.dv) {
        acc *= corr;
        const long tile = p.s - j0 < FK_THREADS ? p.s - j0 : FK_THREADS;
        for (long jj = 0; jj < tile; jj++) acc += ps[jj] * v[vo + (j0 + jj) * p.v_rs + tid * p.v_cs];
      }
      m = mn;
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (tid < p.dv) out[p.out_off + r * p.dv + tid] = acc / l;
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}

// ---------------------------------------------------------------------------
// Softmax (or log-softmax) of dense rows: rows = outer·inner rows of n
// elements spaced inner apart, one row per threadgroup iteration.
struct fk_softmax_params {
  long in_off, out_off, rows, n, inner, log;
};
kernel void fk_softmax(constant fk_softmax_params& p [[buffer(0)]],
                       uint tid [[thread_position_in_threadgroup]],
                       uint group [[threadgroup_position_in_grid]],
                       uint ngroups [[threadgroups_per_grid]],
                       device float* y [[buffer(1)]],
                       device const float* x [[buffer(2)]]) {
  threadgroup float red[FK_THREADS];
  for (long r = group; r < p.rows; r += ngroups) {
    const long base = (r / p.inner) * p.n * p.inner + r % p.inner;
    float mx = FK_NEG_INF;
    for (long j = tid; j < p.n; j += FK_THREADS) mx = fk_nanmax(mx, x[p.in_off + base + j * p.inner]);
    FK_TREE(red, tid, mx, fk_nanmax, mx);
    float sum = 0.0f;
    for (long j = tid; j < p.n; j += FK_THREADS) sum += precise::exp(x[p.in_off + base + j * p.inner] - mx);
    FK_TREE(red, tid, sum, FK_ADD, sum);
    const float ls = mx + precise::log(sum), inv = 1.0f / sum;
    for (long j = tid; j < p.n; j += FK_THREADS) {
      const long ix = base + j * p.inner;
      const float v = x[p.in_off + ix];
      y[p.out_off + ix] = p.log != 0 ? v - ls : precise::exp(v - mx) * inv;
    }
  }
}

// ---------------------------------------------------------------------------
// Layer norm over dense rows of n elements: (x − mean)·rstd (·w[j] + b[j]),
// population variance from a second pass around the mean.
struct fk_layer_norm_params {
  long in_off, out_off, w_off, b_off, rows, n, has_w, has_b;
  float eps;
};
kernel void fk_layer_norm(constant fk_layer_norm_params& p [[buffer(0)]],
                          uint tid [[thread_position_in_threadgroup]],
                          uint group [[threadgroup_position_in_grid]],
                          uint ngroups [[threadgroups_per_grid]],
                          device float* y [[buffer(1)]],
                          device const float* x [[buffer(2)]],
                          device const float* w [[buffer(3)]],
                          device const float* b [[buffer(4)]]) {
  threadgroup float red[FK_THREADS];
  for (long r = group; r < p.rows; r += ngroups) {
    const long base = r * p.n;
    float s = 0.0f;
    for (long j = tid; j < p.n; j += FK_THREADS) s += x[p.in_off + base + j];
    FK_TREE(red, tid, s, FK_ADD, s);
    const float mean = s / (float)p.n;
    float ss = 0.0f;
    for (long j = tid; j < p.n; j += FK_THREADS) {
      const float dx = x[p.in_off + base + j] - mean;
      ss += dx * dx;
    }
    FK_TREE(red, tid, ss, FK_ADD, ss);
    const float rstd = 1.0f / precise::sqrt(ss / (float)p.n + p.eps);
    for (long j = tid; j < p.n; j += FK_THREADS) {
      float v = (x[p.in_off + base + j] - mean) * rstd;
      if (p.has_w != 0) v *= w[p.w_off + j];
      if (p.has_b != 0) v += b[p.b_off + j];
      y[p.out_off + base + j] = v;
    }
  }
}

// ---------------------------------------------------------------------------
// Group norm of dense [N, C, L]: statistics over each (n, group) block of
// C/G channels × L, then per channel ·w[c] + b[c].
struct fk_group_norm_params {
  long in_off, out_off, w_off, b_off, nn, c, l, g, has_w, has_b;
  float eps;
};
kernel void fk_group_norm(constant fk_group_norm_params& p [[buffer(0)]],
                          uint tid [[thread_position_in_threadgroup]],
                          uint group [[threadgroup_position_in_grid]],
                          uint ngroups [[threadgroups_per_grid]],
                          device float* y [[buffer(1)]],
                          device const float* x [[buffer(2)]],
                          device const float* w [[buffer(3)]],
                          device const float* b [[buffer(4)]]) {
  threadgroup float red[FK_THREADS];
  const long cg = p.c / p.g, cnt = cg * p.l;
  for (long r = group; r < p.nn * p.g; r += ngroups) {
    const long base = ((r / p.g) * p.c + (r % p.g) * cg) * p.l;
    float s = 0.0f;
    for (long j = tid; j < cnt; j += FK_THREADS) s += x[p.in_off + base + j];
    FK_TREE(red, tid, s, FK_ADD, s);
    const float mean = s / (float)cnt;
    float ss = 0.0f;
    for (long j = tid; j < cnt; j += FK_THREADS) {
      const float dx = x[p.in_off + base + j] - mean;
      ss += dx * dx;
    }
    FK_TREE(red, tid, ss, FK_ADD, ss);
    const float rstd = 1.0f / precise::sqrt(ss / (float)cnt + p.eps);
    for (long j = tid; j < cnt; j += FK_THREADS) {
      const long ch = (r % p.g) * cg + j / p.l;
      float v = (x[p.in_off + base + j] - mean) * rstd;
      if (p.has_w != 0) v *= w[p.w_off + ch];
      if (p.has_w != 0 && p.has_b != 0) v += b[p.b_off + ch];
      y[p.out_off + base + j] = v;
    }
  }
}

// ---------------------------------------------------------------------------
// 1-D convolution, direct: y[n, co, t] = bias[co] + Σ w[co, ci, kk] ·
// x[n, g·cig + ci, t·stride − pad + kk·dilation] over the group's input
// channels; one output element per thread, dense operands.
struct fk_conv1d_params {
  long nn, cin, l, cout, k, lout, stride, pad, dil, groups, x_off, w_off, y_off, has_bias, bias_off;
};
kernel void fk_conv1d(constant fk_conv1d_params& p [[buffer(0)]],
                      uint tid [[thread_position_in_threadgroup]],
                      uint group [[threadgroup_position_in_grid]],
                      uint ngroups [[threadgroups_per_grid]],
                      device float* y [[buffer(1)]],
                      device const float* x [[buffer(2)]],
                      device const float* w [[buffer(3)]],
                      device const float* bias [[buffer(4)]]) {
  const long total = p.nn * p.cout * p.lout;
  const long cig = p.cin / p.groups, cog = p.cout / p.groups;
  for (long o = (long)group * FK_THREADS + tid; o < total; o += (long)ngroups * FK_THREADS) {
    const long t = o % p.lout, co = (o / p.lout) % p.cout, n = o / (p.lout * p.cout);
    const long g = co / cog;
    float acc = p.has_bias != 0 ? bias[p.bias_off + co] : 0.0f;
    for (long ci = 0; ci < cig; ci++) {
      const long xrow = p.x_off + (n * p.cin + g * cig + ci) * p.l;
      const long wrow = p.w_off + (co * cig + ci) * p.k;
      for (long kk = 0; kk < p.k; kk++) {
        const long pos = t * p.stride - p.pad + kk * p.dil;
        if (pos >= 0 && pos < p.l) acc += w[wrow + kk] * x[xrow + pos];
      }
    }
    y[p.y_off + o] = acc;
  }
}

// ---------------------------------------------------------------------------
// LSTM over a whole sequence (PyTorch gate order i, f, g, o), one
// threadgroup per (direction, batch item): h and c stay in threadgroup
// memory across the steps; each step computes the 4H gates (a row of
// W_ih·x_t + W_hh·h + biases per thread), then the cell update.
// H <= 512. x [T, B, I] (or [B, T, I]), y [T, B, D·H] (or [B, T, D·H]),
// h0, c0, hN, cN [D, B, H], dense.
struct fk_lstm_params {
  long t, b, i, h, dirs, batch_first;
  long x_off, y_off, hn_off, cn_off, h0_off, c0_off;
  long wih_off[2], whh_off[2], bih_off[2], bhh_off[2];
};
static inline float fk_sigmoid(float v) { return 1.0f / (1.0f + precise::exp(-v)); }
kernel void fk_lstm(constant fk_lstm_params& p [[buffer(0)]],
                    uint tid [[thread_position_in_threadgroup]],
                    uint group [[threadgroup_position_in_grid]],
                    uint ngroups [[threadgroups_per_grid]],
                    device float* y [[buffer(1)]],
                    device float* hn [[buffer(2)]],
                    device float* cn [[buffer(3)]],
                    device const float* x [[buffer(4)]],
                    device const float* h0 [[buffer(5)]],
                    device const float* c0 [[buffer(6)]],
                    device const float* wih0 [[buffer(7)]],
                    device const float* whh0 [[buffer(8)]],
                    device const float* bih0 [[buffer(9)]],
                    device const float* bhh0 [[buffer(10)]],
                    device const float* wih1 [[buffer(11)]],
                    device const float* whh1 [[buffer(12)]],
                    device const float* bih1 [[buffer(13)]],
                    device const float* bhh1 [[buffer(14)]]) {
  threadgroup float hs[512];
  threadgroup float cs[512];
  threadgroup float gs[4 * 512];
  const long H = p.h;
  for (long r = group; r < p.dirs * p.b; r += ngroups) {
    const long d = r / p.b, bi = r % p.b;
    device const float* wih = d == 0 ? wih0 : wih1;
    device const float* whh = d == 0 ? whh0 : whh1;
    device const float* bih = d == 0 ? bih0 : bih1;
    device const float* bhh = d == 0 ? bhh0 : bhh1;
    for (long j = tid; j < H; j += FK_THREADS) {
      hs[j] = h0[p.h0_off + (d * p.b + bi) * H + j];
      cs[j] = c0[p.c0_off + (d * p.b + bi) * H + j];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (long step = 0; step < p.t; step++) {
      const long t = d == 1 ? p.t - 1 - step : step;
      const long row = p.batch_first != 0 ? bi * p.t + t : t * p.b + bi;
      for (long gi = tid; gi < 4 * H; gi += FK_THREADS) {
        float acc = bih[p.bih_off[d] + gi] + bhh[p.bhh_off[d] + gi];
        const long wi = p.wih_off[d] + gi * p.i, wh = p.whh_off[d] + gi * H;
        for (long e = 0; e < p.i; e++) acc += wih[wi + e] * x[p.x_off + row * p.i + e];
        for (long e = 0; e < H; e++) acc += whh[wh + e] * hs[e];
        gs[gi] = acc;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (long j = tid; j < H; j += FK_THREADS) {
        const float ig = fk_sigmoid(gs[j]), fg = fk_sigmoid(gs[H + j]);
        const float gg = precise::tanh(gs[2 * H + j]), og = fk_sigmoid(gs[3 * H + j]);
        const float c = fg * cs[j] + ig * gg;
        const float h = og * precise::tanh(c);
        cs[j] = c;
        hs[j] = h;
        y[p.y_off + row * p.dirs * H + d * H + j] = h;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    for (long j = tid; j < H; j += FK_THREADS) {
      hn[p.hn_off + (d * p.b + bi) * H + j] = hs[j];
      cn[p.cn_off + (d * p.b + bi) * H + j] = cs[j];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}

// ---------------------------------------------------------------------------
// Gather along an axis of dense data of any element size: out[o, j, :] =
// data[o, idx[j], :] (negative indices count from the end). Elements are
// moved as es-byte units; an index out of range writes zeros.
struct fk_gather_params {
  long outer, dim, inner, nidx, es, src_off, dst_off, idx_off, idx64;
};
kernel void fk_gather(constant fk_gather_params& p [[buffer(0)]],
                      uint tid [[thread_position_in_threadgroup]],
                      uint group [[threadgroup_position_in_grid]],
                      uint ngroups [[threadgroups_per_grid]],
                      device uchar* out [[buffer(1)]],
                      device const uchar* data [[buffer(2)]],
                      device const uchar* idx [[buffer(3)]]) {
  const long total = p.outer * p.nidx * p.inner * p.es;
  for (long o = (long)group * FK_THREADS + tid; o < total; o += (long)ngroups * FK_THREADS) {
    const long byte = o % p.es, e = o / p.es;
    const long in = e % p.inner, j = (e / p.inner) % p.nidx, ou = e / (p.inner * p.nidx);
    long ix = p.idx64 != 0 ? ((device const long*)idx)[p.idx_off + j] : (long)((device const int*)idx)[p.idx_off + j];
    if (ix < 0) ix += p.dim;
    uchar v = 0;
    if (ix >= 0 && ix < p.dim) v = data[p.src_off * p.es + ((ou * p.dim + ix) * p.inner + in) * p.es + byte];
    out[p.dst_off * p.es + o] = v;
  }
}

// ---------------------------------------------------------------------------
// Slice update of a dense state: dst[o, start + j, :] = src[o, j, :] along
// an axis, start read from device memory (an i32 or i64; one for every row
// o, or one per row when per_row); a start that does not fit writes
// nothing in its row.
struct fk_slice_update_params {
  long outer, dim, n, inner, es, src_off, dst_off, start_off, start64, per_row;
};
kernel void fk_slice_update(constant fk_slice_update_params& p [[buffer(0)]],
                            uint tid [[thread_position_in_threadgroup]],
                            uint group [[threadgroup_position_in_grid]],
                            uint ngroups [[threadgroups_per_grid]],
                            device uchar* dst [[buffer(1)]],
                            device const uchar* src [[buffer(2)]],
                            device const uchar* start [[buffer(3)]]) {
  const long run = p.n * p.inner * p.es, total = p.outer * run;
  for (long o = (long)group * FK_THREADS + tid; o < total; o += (long)ngroups * FK_THREADS) {
    const long ou = o / run, w = o % run;
    const long si = p.start_off + (p.per_row != 0 ? ou : 0);
    const long st = p.start64 != 0 ? ((device const long*)start)[si] : (long)((device const int*)start)[si];
    if (st < 0 || st + p.n > p.dim) continue;
    dst[p.dst_off * p.es + (ou * p.dim + st) * p.inner * p.es + w] = src[p.src_off * p.es + o];
  }
}

// ---------------------------------------------------------------------------
// Cumulative sum of dense f32 rows (rows = outer·inner of n elements spaced
// inner apart), inclusive or exclusive, forwards or reversed: one row per
// thread, in the CPU's order.
struct fk_cumsum_params {
  long in_off, out_off, rows, n, inner, exclusive, reverse;
};
kernel void fk_cumsum(constant fk_cumsum_params& p [[buffer(0)]],
                      uint tid [[thread_position_in_threadgroup]],
                      uint group [[threadgroup_position_in_grid]],
                      uint ngroups [[threadgroups_per_grid]],
                      device float* y [[buffer(1)]],
                      device const float* x [[buffer(2)]]) {
  for (long r = (long)group * FK_THREADS + tid; r < p.rows; r += (long)ngroups * FK_THREADS) {
    const long base = (r / p.inner) * p.n * p.inner + r % p.inner;
    float acc = 0.0f;
    for (long q = 0; q < p.n; q++) {
      const long j = p.reverse != 0 ? p.n - 1 - q : q;
      const long ix = base + j * p.inner;
      const float v = x[p.in_off + ix];
      if (p.exclusive != 0) {
        y[p.out_off + ix] = acc;
        acc += v;
      } else {
        acc += v;
        y[p.out_off + ix] = acc;
      }
    }
  }
}
