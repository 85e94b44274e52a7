// Forge's hand-written CUDA kernels: the fixed ops of kernels/ops.go that
// the fused-expression generator does not cover. Compiled once per process
// by NVRTC (no headers: the source stands alone, so NVRTC 11.x and 13.x
// compile it alike). Every kernel reads dense row-major operands unless its
// comment says otherwise; the backend passes pointers already advanced by
// each view's offset. Kernels that validate data (indices, positions) set
// the queue's error word instead of writing out of bounds; the backend
// reports it at the next Read or Sync.

// The helpers they share with generated kernels are in common.cuh, which
// the backend puts before this file.

// ---------------------------------------------------------------------------
// Normalisation

// forge_softmax: rows of n elements spaced inner apart, row r = (o, i) at
// o*n*inner + i. One block per row. NaN anywhere gives NaN, as the CPU.
extern "C" __global__ void forge_softmax(const float* x, float* y, i64 rows, int n, int inner, int logForm) {
	__shared__ double sd[32];
	__shared__ float sf[32];
	i64 r = blockIdx.x + (i64)blockIdx.y * gridDim.x;
	if (r >= rows) return;
	i64 o = r / inner, in = r % inner;
	const float* xr = x + o * (i64)n * inner + in;
	float* yr = y + o * (i64)n * inner + in;
	float m = -FINF;
	int nan = 0;
	for (int j = threadIdx.x; j < n; j += blockDim.x) {
		float v = xr[(i64)j * inner];
		nan |= v != v;
		m = fmaxf(m, v);
	}
	nan = __syncthreads_or(nan);
	m = block_max(m, sf);
	double s = 0;
	for (int j = threadIdx.x; j < n; j += blockDim.x) s += (double)__expf(xr[(i64)j * inner] - m);
	s = block_sum_d(s, sd);
	float nanv = __int_as_float(0x7fc00000);
	if (logForm) {
		float ls = m + (float)log(s);
		for (int j = threadIdx.x; j < n; j += blockDim.x) yr[(i64)j * inner] = nan ? nanv : xr[(i64)j * inner] - ls;
	} else {
		float inv = (float)(1.0 / s);
		for (int j = threadIdx.x; j < n; j += blockDim.x) yr[(i64)j * inner] = nan ? nanv : __expf(xr[(i64)j * inner] - m) * inv;
	}
}

// forge_layer_norm: rows of n elements; weight and bias of n (or null).
extern "C" __global__ void forge_layer_norm(const float* x, const float* w, const float* b, float* y, i64 rows, int n, float eps) {
	__shared__ double sd[32];
	i64 r = blockIdx.x + (i64)blockIdx.y * gridDim.x;
	if (r >= rows) return;
	row_norm_rows(x + r * n, w, b, y + r * n, 1, n, eps, sd);
}

// forge_layer_norm_warp is forge_layer_norm for many rows of 128·k ≤ 1,024
// values (an encoder's: 1,500 rows of 384 a window), each row 16-byte
// aligned: a warp per row, eight a block, the row held in registers as
// four-float words, so it is read once and no sum waits on a block
// barrier. forge_layer_norm's block per row left most of its 256 threads
// idle on such rows and read each three times. The sums are in double as
// there; only their order differs. With half = 1 (f16) or 2 (bf16) it
// stores each result rounded to that type instead, as forge_to_half
// would: the operand of the half-precision product that alone reads it
// (halfin.go).
template <int K>
__device__ __forceinline__ void layer_norm_warp(const float* xr, const float* w, const float* b, void* yr, int n, float eps, int lane, int half) {
	float4 v[K];
	double s = 0;
#pragma unroll
	for (int i = 0; i < K; i++) {
		v[i] = ((const float4*)xr)[lane + 32 * i];
		s += (double)v[i].x + (double)v[i].y + ((double)v[i].z + (double)v[i].w);
	}
	double mean = warp_sum_d(s) / n;
	double ss = 0;
#pragma unroll
	for (int i = 0; i < K; i++) {
		double a = v[i].x - mean, c = v[i].y - mean, d = v[i].z - mean, e = v[i].w - mean;
		ss += a * a + c * c + (d * d + e * e);
	}
	double var = warp_sum_d(ss) / n;
	float inv = (float)(1.0 / sqrt(var + (double)eps));
	float mf = (float)mean;
#pragma unroll
	for (int i = 0; i < K; i++) {
		int j = lane + 32 * i;
		float4 o = make_float4((v[i].x - mf) * inv, (v[i].y - mf) * inv, (v[i].z - mf) * inv, (v[i].w - mf) * inv);
		if (w) {
			float4 g = ((const float4*)w)[j];
			o = make_float4(o.x * g.x, o.y * g.y, o.z * g.z, o.w * g.w);
		}
		if (b) {
			float4 h = ((const float4*)b)[j];
			o = make_float4(o.x + h.x, o.y + h.y, o.z + h.z, o.w + h.w);
		}
		if (half) {
			unsigned lo = half == 2 ? f32_to_bf16(o.x) | (unsigned)f32_to_bf16(o.y) << 16 : f32_to_f16(o.x) | (unsigned)f32_to_f16(o.y) << 16;
			unsigned hi = half == 2 ? f32_to_bf16(o.z) | (unsigned)f32_to_bf16(o.w) << 16 : f32_to_f16(o.z) | (unsigned)f32_to_f16(o.w) << 16;
			((uint2*)yr)[j] = make_uint2(lo, hi);
		} else {
			((float4*)yr)[j] = o;
		}
	}
}

extern "C" __global__ void __launch_bounds__(256) forge_layer_norm_warp(const float* x, const float* w, const float* b, void* y, i64 rows, int n, float eps, int half) {
	int lane = threadIdx.x & 31;
	i64 r = (i64)blockIdx.x * 8 + (threadIdx.x >> 5);
	if (r >= rows) return; // the whole warp: its shuffles see no absent lane
	const float* xr = x + r * n;
	void* yr = (char*)y + r * n * (half ? 2 : 4);
	switch (n >> 7) {
	case 1: layer_norm_warp<1>(xr, w, b, yr, n, eps, lane, half); break;
	case 2: layer_norm_warp<2>(xr, w, b, yr, n, eps, lane, half); break;
	case 3: layer_norm_warp<3>(xr, w, b, yr, n, eps, lane, half); break;
	case 4: layer_norm_warp<4>(xr, w, b, yr, n, eps, lane, half); break;
	case 5: layer_norm_warp<5>(xr, w, b, yr, n, eps, lane, half); break;
	case 6: layer_norm_warp<6>(xr, w, b, yr, n, eps, lane, half); break;
	case 7: layer_norm_warp<7>(xr, w, b, yr, n, eps, lane, half); break;
	default: layer_norm_warp<8>(xr, w, b, yr, n, eps, lane, half); break;
	}
}

// forge_group_norm: x [N, C, L] (L the product of the trailing axes); one
// block per (n, group); weight and bias per channel (or null).
extern "C" __global__ void forge_group_norm(const float* x, const float* w, const float* b, float* y, int N, int C, i64 L, int G, float eps) {
	__shared__ double sd[32];
	int n = blockIdx.x / G, g = blockIdx.x % G;
	if (n >= N) return;
	int cg = C / G;
	i64 size = (i64)cg * L;
	i64 base = ((i64)n * C + (i64)g * cg) * L;
	double s = 0;
	for (i64 j = threadIdx.x; j < size; j += blockDim.x) s += x[base + j];
	double mean = block_sum_d(s, sd) / size;
	double ss = 0;
	for (i64 j = threadIdx.x; j < size; j += blockDim.x) {
		double d = x[base + j] - mean;
		ss += d * d;
	}
	double var = block_sum_d(ss, sd) / size;
	float inv = (float)(1.0 / sqrt(var + (double)eps));
	float mf = (float)mean;
	for (i64 j = threadIdx.x; j < size; j += blockDim.x) {
		int c = g * cg + (int)(j / L);
		float v = (x[base + j] - mf) * inv;
		if (w) v *= w[c];
		if (b) v += b[c];
		y[base + j] = v;
	}
}

// forge_group_stats and forge_group_apply are forge_group_norm for long
// groups, whose one block a group left most SMs idle (Kokoro's generator:
// 128 instance norms of 47,761 values, 145 µs each on an H100, several
// times the memory's time). Each group is cut into S chunks, a block per
// chunk: the first kernel leaves each chunk's Σx and Σx² (in double) in
// part, the second normalizes the chunk from its group's S partial sums.
// Both kernels cut a group the same way (group_chunk).
__device__ __forceinline__ void group_chunk(i64 size, int S, int s, i64* lo, i64* hi) {
	i64 per = (size + S - 1) / S;
	*lo = min((i64)s * per, size);
	*hi = min(*lo + per, size);
}

extern "C" __global__ void forge_group_stats(const float* x, double2* part, int C, i64 L, int G, int S) {
	__shared__ double sd[32];
	int ng = blockIdx.x / S, s = blockIdx.x % S;
	int n = ng / G, g = ng % G, cg = C / G;
	i64 size = (i64)cg * L, lo, hi;
	group_chunk(size, S, s, &lo, &hi);
	const float* xg = x + ((i64)n * C + (i64)g * cg) * L;
	double sum = 0, sq = 0;
	for (i64 j = lo + threadIdx.x; j < hi; j += blockDim.x) {
		double v = xg[j];
		sum += v;
		sq += v * v;
	}
	sum = block_sum_d(sum, sd);
	__syncthreads();
	sq = block_sum_d(sq, sd);
	if (threadIdx.x == 0) part[blockIdx.x] = make_double2(sum, sq);
}

extern "C" __global__ void forge_group_apply(const float* x, const double2* part, const float* w, const float* b, float* y, int C, i64 L, int G, int S, float eps) {
	__shared__ float stat[2];
	int ng = blockIdx.x / S, s = blockIdx.x % S;
	int n = ng / G, g = ng % G, cg = C / G;
	i64 size = (i64)cg * L, lo, hi;
	if (threadIdx.x == 0) {
		double sum = 0, sq = 0;
		for (int i = 0; i < S; i++) {
			double2 p = part[(i64)ng * S + i];
			sum += p.x;
			sq += p.y;
		}
		double mean = sum / size, var = max(sq / size - mean * mean, 0.0);
		stat[0] = (float)mean;
		stat[1] = (float)(1.0 / sqrt(var + (double)eps));
	}
	__syncthreads();
	float mf = stat[0], inv = stat[1];
	group_chunk(size, S, s, &lo, &hi);
	i64 base = ((i64)n * C + (i64)g * cg) * L;
	for (i64 j = lo + threadIdx.x; j < hi; j += blockDim.x) {
		int c = g * cg + (cg == 1 ? 0 : (int)(j / L));
		float v = (x[base + j] - mf) * inv;
		if (w) v *= w[c];
		if (b) v += b[c];
		y[base + j] = v;
	}
}

// ---------------------------------------------------------------------------
// Weight-only int8 products

// forge_linear_q: y [M, N] = x [M, K] · ((w [N, K] − zero)·scale)ᵀ
// (linear_q_core, in common.cuh).
extern "C" __global__ void forge_linear_q(const float* x, const void* w, const float* scale, const void* zero, float* y, int M, int N, int K, int isSigned) {
	wait_inputs();
	linear_q_core(x, w, scale, zero, M, N, K, isSigned, [&](int m, int n, float v) { y[(i64)m * N + n] = v; });
}

// ---------------------------------------------------------------------------
// Indexing

__device__ __forceinline__ void copy_elem(char* dst, const char* src, int es) {
	switch (es) {
	case 1: *(u8*)dst = *(const u8*)src; break;
	case 2: *(unsigned short*)dst = *(const unsigned short*)src; break;
	case 4: *(unsigned*)dst = *(const unsigned*)src; break;
	default: *(unsigned long long*)dst = *(const unsigned long long*)src; break;
	}
}

// forge_gather: out [outer, nIdx, inner] = data [outer, dim, inner] picked
// along the middle axis; negative indices count from the end; an index out
// of range sets error 1 and writes nothing.
extern "C" __global__ void forge_gather(const char* data, const void* idx, int idx64, char* out, i64 outer, int dim, i64 nIdx, i64 inner, int es, int* err) {
	i64 e = blockIdx.x * (i64)blockDim.x + threadIdx.x;
	i64 total = outer * nIdx * inner;
	if (e >= total) return;
	i64 in = e % inner, j = (e / inner) % nIdx, o = e / (inner * nIdx);
	i64 ix = index_at(idx, idx64, j);
	if (ix < 0) ix += dim;
	if (ix < 0 || ix >= dim) {
		fail(err, 1);
		return;
	}
	copy_elem(out + e * es, data + ((o * dim + ix) * inner + in) * es, es);
}

// forge_slice_update: dst [outer, dim, inner] gets src [outer, n, inner]
// at a start along the middle axis, one for all rows (starts = 1) or one
// per outer row; a start that does not fit sets error 2 and writes nothing
// in its row.
extern "C" __global__ void forge_slice_update(const char* src, const void* start, int start64, int starts, char* dst, i64 outer, int dim, int n, i64 inner, int es, int* err) {
	i64 e = blockIdx.x * (i64)blockDim.x + threadIdx.x;
	i64 total = outer * n * inner;
	if (e >= total) return;
	i64 in = e % inner, j = (e / inner) % n, o = e / (inner * n);
	i64 s0 = index_at(start, start64, starts == 1 ? 0 : o);
	if (s0 < 0 || s0 + n > dim) {
		fail(err, 2);
		return;
	}
	copy_elem(dst + ((o * dim + s0 + j) * inner + in) * es, src + e * es, es);
}

// forge_repeat_interleave: y [outer, total, inner] repeats slice i of x
// [outer, dim, inner] counts[i] times. One thread per output element finds
// its source by walking the counts (dims here are short: phoneme counts).
// Negative counts or a sum other than total set error 3.
extern "C" __global__ void forge_repeat_interleave(const char* x, const void* counts, int c64, char* y, i64 outer, int dim, i64 total, i64 inner, int es, int* err) {
	i64 e = blockIdx.x * (i64)blockDim.x + threadIdx.x;
	if (e == 0) {
		i64 s = 0;
		for (int i = 0; i < dim; i++) {
			i64 c = index_at(counts, c64, i);
			if (c < 0) fail(err, 3);
			s += c;
		}
		if (s != total) fail(err, 3);
	}
	if (e >= outer * total * inner) return;
	i64 in = e % inner, j = (e / inner) % total, o = e / (inner * total);
	i64 acc = 0;
	int src = -1;
	for (int i = 0; i < dim; i++) {
		i64 c = index_at(counts, c64, i);
		if (c > 0 && j < acc + c) {
			src = i;
			break;
		}
		acc += c > 0 ? c : 0;
	}
	if (src < 0) return;
	copy_elem(y + e * es, x + ((o * dim + src) * inner + in) * es, es);
}

// PadArgs: up to 8 axes, dense in and out.
struct PadArgs {
	const char* x;
	char* y;
	i64 outShape[8], inShape[8], before[8];
	int rank, mode, es, pad;
};

// forge_pad: constant (mode 0), reflect (1) or replicate (2) padding. The
// constant is written in the element's type (f32, f16/bf16 bits or
// integers are converted by the backend into valueBits).
extern "C" __global__ void forge_pad(PadArgs a, unsigned long long valueBits) {
	i64 e = blockIdx.x * (i64)blockDim.x + threadIdx.x;
	i64 total = 1;
	for (int t = 0; t < a.rank; t++) total *= a.outShape[t];
	if (e >= total) return;
	i64 rem = e, src = 0, stride = 1;
	bool inside = true;
	for (int t = a.rank - 1; t >= 0; t--) {
		i64 c = rem % a.outShape[t] - a.before[t];
		rem /= a.outShape[t];
		i64 n = a.inShape[t];
		if (c < 0 || c >= n) {
			if (a.mode == 0) inside = false;
			else if (a.mode == 1) {
				if (n == 1) c = 0;
				else {
					i64 p = 2 * (n - 1);
					c = c % p;
					if (c < 0) c += p;
					if (c >= n) c = p - c;
				}
			} else c = c < 0 ? 0 : n - 1;
		}
		src += c * stride;
		stride *= n;
	}
	char* dst = a.y + e * a.es;
	if (inside) copy_elem(dst, a.x + src * a.es, a.es);
	else copy_elem(dst, (const char*)&valueBits, a.es);
}

// forge_cumsum: running sums of f32 along the middle axis of [outer, n,
// inner], one thread per line, accumulated in double as the CPU does.
extern "C" __global__ void forge_cumsum(const float* x, float* y, i64 outer, int n, i64 inner, int exclusive, int reverse) {
	i64 e = blockIdx.x * (i64)blockDim.x + threadIdx.x;
	if (e >= outer * inner) return;
	i64 o = e / inner, in = e % inner;
	i64 base = o * n * inner + in;
	double s = 0;
	for (int k = 0; k < n; k++) {
		int j = reverse ? n - 1 - k : k;
		float v = x[base + (i64)j * inner];
		if (exclusive) {
			y[base + (i64)j * inner] = (float)s;
			s += v;
		} else {
			s += v;
			y[base + (i64)j * inner] = (float)s;
		}
	}
}

// ---------------------------------------------------------------------------
// Convolutions (float32, direct)

// ConvArgs: x [N, Cin, L], w [Cout, Cin/groups, K] (conv) or [Cin,
// Cout/groups, K] (transposed), bias [Cout] or null, y [N, Cout, Lout].
struct ConvArgs {
	const float* x;
	const float* w;
	const float* bias;
	float* y;
	int N, Cin, L, Cout, K, Lout, stride, padL, dil, groups;
};

// forge_conv1d: one thread per output element.
extern "C" __global__ void forge_conv1d(ConvArgs a) {
	i64 e = blockIdx.x * (i64)blockDim.x + threadIdx.x;
	i64 total = (i64)a.N * a.Cout * a.Lout;
	if (e >= total) return;
	int t = e % a.Lout;
	int co = (e / a.Lout) % a.Cout;
	int n = e / ((i64)a.Lout * a.Cout);
	int cig = a.Cin / a.groups, cog = a.Cout / a.groups;
	int g = co / cog;
	float acc = a.bias ? a.bias[co] : 0.f;
	const float* wr = a.w + (i64)co * cig * a.K;
	for (int ci = 0; ci < cig; ci++) {
		const float* xr = a.x + ((i64)n * a.Cin + g * cig + ci) * a.L;
		for (int k = 0; k < a.K; k++) {
			int p = t * a.stride - a.padL + k * a.dil;
			if (p >= 0 && p < a.L) acc = fmaf(xr[p], wr[ci * a.K + k], acc);
		}
	}
	a.y[e] = acc;
}

// forge_conv_transpose1d: one thread per output element; output position
// t receives input position p where p·stride − padL + k·dil = t.
extern "C" __global__ void forge_conv_transpose1d(ConvArgs a) {
	i64 e = blockIdx.x * (i64)blockDim.x + threadIdx.x;
	i64 total = (i64)a.N * a.Cout * a.Lout;
	if (e >= total) return;
	int t = e % a.Lout;
	int co = (e / a.Lout) % a.Cout;
	int n = e / ((i64)a.Lout * a.Cout);
	int cig = a.Cin / a.groups, cog = a.Cout / a.groups;
	int g = co / cog, cl = co % cog;
	float acc = a.bias ? a.bias[co] : 0.f;
	for (int k = 0; k < a.K; k++) {
		int q = t + a.padL - k * a.dil;
		if (q < 0 || q % a.stride != 0) continue;
		int p = q / a.stride;
		if (p >= a.L) continue;
		for (int ci = 0; ci < cig; ci++) {
			int c = g * cig + ci;
			acc = fmaf(a.x[((i64)n * a.Cin + c) * a.L + p], a.w[((i64)c * cog + cl) * a.K + k], acc);
		}
	}
	a.y[e] = acc;
}

// ---------------------------------------------------------------------------
// LSTM

// warp_dot is Σ w[k]·h[k] over k < n, the lanes of a warp taking every
// 32nd term in order and warp_sum adding their sums; all lanes get it.
__device__ __forceinline__ float warp_dot(const float* w, const float* h, int n, int lane) {
	float acc = 0;
	for (int k = lane; k < n; k += 32) acc = fmaf(w[k], h[k], acc);
	return warp_sum(acc);
}

// lstm_cell is one LSTM cell update from its four gate pre-activations
// (PyTorch's order i, f, g, o): it returns the new c and sets *h. Every
// LSTM kernel uses it, with c's update rounded explicitly, so that they
// agree bit for bit whatever the compiler contracts.
__device__ __forceinline__ float lstm_cell(float i, float f, float g, float o, float c, float* h) {
	float ig = 1.f / (1.f + __expf(-i));
	float fg = 1.f / (1.f + __expf(-f));
	float gg = tanhf(g);
	float og = 1.f / (1.f + __expf(-o));
	float cn = __fmaf_rn(fg, c, __fmul_rn(ig, gg));
	*h = og * tanhf(cn);
	return cn;
}

// LSTMArgs: one direction per block (blockIdx.x), PyTorch gate order i, f,
// g, o. x is [T, B, I] (or [B, T, I] when batchFirst), y [T, B, D·H] (or
// [B, T, D·H]), h0/c0/hN/cN [D, B, H]. Weights per direction.
struct LSTMArgs {
	const float* x;
	const float* wih[2];
	const float* whh[2];
	const float* bih[2];
	const float* bhh[2];
	const float* h0;
	const float* c0;
	float* y;
	float* hN;
	float* cN;
	int T, B, I, H, D, batchFirst;
};

// forge_lstm: 1024 threads; warps take gate rows in turn (lanes split the
// dot products, so weight rows are read coalesced), then threads update c
// and h. Shared memory (dynamic): h [B][H], c [B][H], gates [B][4H].
extern "C" __global__ void forge_lstm(LSTMArgs a) {
	extern __shared__ float sm[];
	int dir = blockIdx.x;
	int B = a.B, H = a.H, I = a.I;
	float* h = sm;
	float* c = h + B * H;
	float* gates = c + B * H;
	const float* wih = a.wih[dir];
	const float* whh = a.whh[dir];
	const float* bih = a.bih[dir];
	const float* bhh = a.bhh[dir];
	for (int e = threadIdx.x; e < B * H; e += blockDim.x) {
		h[e] = a.h0[(i64)dir * B * H + e];
		c[e] = a.c0[(i64)dir * B * H + e];
	}
	__syncthreads();
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
	for (int s = 0; s < a.T; s++) {
		int t = dir == 0 ? s : a.T - 1 - s;
		for (int row = warp; row < 4 * H; row += nw) {
			const float* wi = wih + (i64)row * I;
			const float* wh = whh + (i64)row * H;
			for (int b = 0; b < B; b++) {
				const float* xt = a.x + (a.batchFirst ? ((i64)b * a.T + t) * I : ((i64)t * B + b) * I);
				float acc = 0;
				for (int k = lane; k < I; k += 32) acc = fmaf(wi[k], xt[k], acc);
				for (int k = lane; k < H; k += 32) acc = fmaf(wh[k], h[b * H + k], acc);
				acc = warp_sum(acc);
				if (lane == 0) gates[b * 4 * H + row] = acc + (bih ? bih[row] : 0.f) + (bhh ? bhh[row] : 0.f);
			}
		}
		__syncthreads();
		for (int e = threadIdx.x; e < B * H; e += blockDim.x) {
			int b = e / H, j = e % H;
			const float* gr = gates + b * 4 * H;
			float hn;
			c[e] = lstm_cell(gr[j], gr[H + j], gr[2 * H + j], gr[3 * H + j], c[e], &hn);
			h[e] = hn;
			i64 yo = a.batchFirst ? (((i64)b * a.T + t) * a.D + dir) * H + j : (((i64)t * B + b) * a.D + dir) * H + j;
			a.y[yo] = hn;
		}
		__syncthreads();
	}
	for (int e = threadIdx.x; e < B * H; e += blockDim.x) {
		if (a.hN) a.hN[(i64)dir * B * H + e] = h[e];
		if (a.cN) a.cN[(i64)dir * B * H + e] = c[e];
	}
}

// ---------------------------------------------------------------------------
// Integer ops of the int8 models (ONNX semantics)

// forge_dynamic_quantize: one block; as DynamicQuantizeLinear (and the
// CPU's gemm.QuantizeU8): lo/hi the range of x widened to include 0, scale
// (hi − lo)/255 (1 when the range is empty), zero = round-half-even(−lo/scale)
// saturated, q = saturate(round-half-even(x/scale) + zero). A value that is
// not finite sets error 4.
extern "C" __global__ void forge_dynamic_quantize(const float* x, u8* q, float* scaleOut, u8* zeroOut, i64 n, int* err) {
	__shared__ float smin[32], smax[32];
	float lo = 0.f, hi = 0.f;
	int bad = 0;
	for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
		float v = x[i];
		bad |= !isfinite(v);
		lo = fminf(lo, v);
		hi = fmaxf(hi, v);
	}
	if (__syncthreads_or(bad)) {
		if (threadIdx.x == 0) fail(err, 4);
		return;
	}
	hi = block_max(hi, smax);
	lo = -block_max(-lo, smin);
	float scale = hi != lo ? (hi - lo) / 255.f : 1.f;
	float zf = fminf(fmaxf(rintf(0.f - lo / scale), 0.f), 255.f);
	if (threadIdx.x == 0) {
		scaleOut[0] = scale;
		zeroOut[0] = (u8)zf;
	}
	for (i64 i = threadIdx.x; i < n; i += blockDim.x) q[i] = (u8)fminf(fmaxf(rintf(x[i] / scale) + zf, 0.f), 255.f);
}

// forge_matmul_integer: y [M, N] (int32) = Σ_k (a[m,k] − az)·(b[k,n] −
// bz[n or 0]); a u8 dense, b u8/i8 with strides (rb, cb) so a transposed
// weight is read in place; bPerCol when b's zero point is per column.
extern "C" __global__ void forge_matmul_integer(const u8* a, const void* b, const u8* az, const void* bz, int* y, int M, int N, int K, i64 rb, i64 cb, int bSigned, int bPerCol) {
	i64 e = blockIdx.x * (i64)blockDim.x + threadIdx.x;
	if (e >= (i64)M * N) return;
	int m = e / N, nn = e % N;
	int za = az[0];
	int zb = bSigned ? ((const i8*)bz)[bPerCol ? nn : 0] : ((const u8*)bz)[bPerCol ? nn : 0];
	int acc = 0;
	for (int k = 0; k < K; k++) {
		i64 off = k * rb + nn * cb;
		int bv = bSigned ? ((const i8*)b)[off] : ((const u8*)b)[off];
		acc += ((int)a[(i64)m * K + k] - za) * (bv - zb);
	}
	y[e] = acc;
}

// forge_conv_integer1d: ConvInteger over [N, Cin, L] u8 with weight
// [Cout, Cin/groups, K] (u8/i8), zero points scalar (weight's may be per
// output channel). Padding reads the input's zero point (so it adds 0).
extern "C" __global__ void forge_conv_integer1d(const u8* x, const void* w, const u8* xz, const void* wz, int* y, int N, int Cin, int L, int Cout, int K, int Lout, int stride, int padL, int dil, int groups, int wSigned, int wPerChan) {
	i64 e = blockIdx.x * (i64)blockDim.x + threadIdx.x;
	if (e >= (i64)N * Cout * Lout) return;
	int t = e % Lout, co = (e / Lout) % Cout, n = e / ((i64)Lout * Cout);
	int cig = Cin / groups, g = co / (Cout / groups);
	int zx = xz[0];
	int zw = wSigned ? ((const i8*)wz)[wPerChan ? co : 0] : ((const u8*)wz)[wPerChan ? co : 0];
	int acc = 0;
	for (int ci = 0; ci < cig; ci++) {
		for (int k = 0; k < K; k++) {
			int p = t * stride - padL + k * dil;
			if (p < 0 || p >= L) continue;
			i64 wo = ((i64)co * cig + ci) * K + k;
			int wv = wSigned ? ((const i8*)w)[wo] : ((const u8*)w)[wo];
			acc += ((int)x[((i64)n * Cin + g * cig + ci) * L + p] - zx) * (wv - zw);
		}
	}
	y[e] = acc;
}

// ---------------------------------------------------------------------------
// Half precision for matrix products

// forge_dequantize writes (w − zero)·scale for n weight bytes (signed when
// isSigned; scale and zero one value each) as float32: the dense weight
// that a product of many rows reads through cuBLASLt (ops.go,
// linearQGEMM), written once per weight.
extern "C" __global__ void forge_dequantize(const void* w, const float* scale, const void* zero, float* y, i64 n, int isSigned) {
	float s = scale[0];
	int z = isSigned ? (int)((const i8*)zero)[0] : (int)((const u8*)zero)[0];
	for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
		int q = isSigned ? (int)((const i8*)w)[i] : (int)((const u8*)w)[i];
		y[i] = (float)(q - z) * s;
	}
}

// forge_to_half writes a dense [batch, rows, cols] half-precision copy of a
// strided float32 view (batch strides bs, row stride rs, column stride cs):
// the operand form cuBLASLt reads. bf16 selects bfloat16 over float16.
extern "C" __global__ void forge_to_half(const float* x, unsigned short* y, i64 batch, i64 rows, i64 cols, i64 bs, i64 rs, i64 cs, int bf16) {
	i64 total = batch * rows * cols;
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x, step = blockDim.x * gridDim.x;
	if (cs == 1 && rs == cols && (batch == 1 || bs == rows * cols) && total <= 0x7fffffff) {
		// Dense (every activation a product reads): four values a load where
		// aligned. Coordinates from 64-bit division per element made the
		// general loop below latency-bound (~5 µs for 1500 × 384 on an H100).
		unsigned n = (unsigned)total;
		if ((n & 3) == 0 && (((unsigned long long)x & 15) | ((unsigned long long)y & 7)) == 0) {
			for (unsigned q = i; q < n / 4; q += step) {
				float4 v = ((const float4*)x)[q];
				unsigned lo = bf16 ? f32_to_bf16(v.x) | (unsigned)f32_to_bf16(v.y) << 16 : f32_to_f16(v.x) | (unsigned)f32_to_f16(v.y) << 16;
				unsigned hi = bf16 ? f32_to_bf16(v.z) | (unsigned)f32_to_bf16(v.w) << 16 : f32_to_f16(v.z) | (unsigned)f32_to_f16(v.w) << 16;
				((uint2*)y)[q] = make_uint2(lo, hi);
			}
			return;
		}
		for (unsigned e = i; e < n; e += step) y[e] = bf16 ? f32_to_bf16(x[e]) : f32_to_f16(x[e]);
		return;
	}
	for (i64 e = i; e < total; e += step) {
		i64 c = e % cols, r = (e / cols) % rows, b = e / (cols * rows);
		float v = x[b * bs + r * rs + c * cs];
		y[e] = bf16 ? f32_to_bf16(v) : f32_to_f16(v);
	}
}

// forge_im2col writes columns t0 … t0+lc−1 of batch element n0 + blockIdx.y
// of a convolution input x [N, Cin, L] into matrix blockIdx.y of col, each
// [Cin·K, lc] with rows ld ≥ lc apart
// (cuBLASLt's fast kernels want 16-byte-aligned rows), with col[c·K + k, j] =
// x[n, c, (t0+j)·stride − padL + k·dil] (0 outside), as float32 or (half ≠
// 0) as float16/bfloat16 (half = 1 / 2), so the convolution over those
// output positions is one GEMM with the weight [Cout, Cin·K].
extern "C" __global__ void forge_im2col(const float* x, void* col, int n0, int Cin, int L, int K, int t0, int lc, int ld, int stride, int padL, int dil, int half) {
	// Cin·K·lc is under 2^31 (the Go side's maxCols): 32-bit index
	// arithmetic, where 64-bit division per element made this kernel
	// latency-bound.
	unsigned total = (unsigned)Cin * K * lc;
	const float* xn = x + ((i64)n0 + blockIdx.y) * Cin * L;
	col = (char*)col + (i64)blockIdx.y * Cin * K * ld * (half ? 2 : 4);
	for (unsigned e = blockIdx.x * blockDim.x + threadIdx.x; e < total; e += blockDim.x * gridDim.x) {
		unsigned j = e % lc, ck = e / lc;
		int k = ck % K, c = ck / K;
		int p = (t0 + (int)j) * stride - padL + k * dil;
		float v = (p >= 0 && p < L) ? xn[(i64)c * L + p] : 0.f;
		i64 o = (i64)ck * ld + j;
		if (half == 0) ((float*)col)[o] = v;
		else ((unsigned short*)col)[o] = half == 2 ? f32_to_bf16(v) : f32_to_f16(v);
	}
}

// forge_transpose copies y[r, c] = x[r + c·ldx] for r < rows, c < cols
// (y's rows ldy apart): a matrix stored column by column, written row by
// row. Grid (ceil(cols/32), ceil(rows/32)), blocks of 32 × 8: each block
// moves a 32 × 32 tile through shared memory so that both its reads and
// its writes run along memory (transpose_tile, a block's work, which
// forge_transpose_many shares; blocks past the matrix do nothing).
__device__ __forceinline__ void transpose_tile(const float* x, float* y, int rows, int cols, i64 ldx, i64 ldy) {
	__shared__ float tile[32][33]; // 33: a column of the tile spans all banks
	int r0 = blockIdx.y * 32, c0 = blockIdx.x * 32;
	for (int i = threadIdx.y; i < 32; i += 8) {
		int r = r0 + threadIdx.x, c = c0 + i;
		if (r < rows && c < cols) tile[i][threadIdx.x] = x[r + c * ldx];
	}
	__syncthreads();
	for (int i = threadIdx.y; i < 32; i += 8) {
		int r = r0 + i, c = c0 + threadIdx.x;
		if (r < rows && c < cols) y[r * ldy + c] = tile[threadIdx.x][i];
	}
}

extern "C" __global__ void forge_transpose(const float* x, float* y, int rows, int cols, i64 ldx, i64 ldy) {
	transpose_tile(x, y, rows, cols, ldx, ldy);
}

// forge_transpose_many is forge_transpose for up to TR_MANY copies in one
// launch: grid (ceil(max cols/32), ceil(max rows/32), count), block z
// copying entry z (blocks past its matrix do nothing). Whisper's encoder
// ends in eight such copies a window (each layer's cross-attention keys
// and values into the decoder's layout), 256 for 32 windows, each a launch
// of ~4 µs on an H100 for 2.3 MB.
#define TR_MANY 8
struct TransposeEntry {
	const float* x;
	float* y;
	i64 ldx, ldy;
	int rows, cols;
};
struct TransposeMany {
	TransposeEntry e[TR_MANY];
};
extern "C" __global__ void forge_transpose_many(TransposeMany m) {
	const TransposeEntry& t = m.e[blockIdx.z];
	transpose_tile(t.x, t.y, t.rows, t.cols, t.ldx, t.ldy);
}

// forge_fill_rows sets y [rows, cols] to bias[row % period] in every
// column: the starting value of a convolution's product (which then adds
// with β = 1), for several batch elements at once (period = channels).
// Four values a store where rows are whole 16-byte words (cols a multiple
// of 4); 32-bit index arithmetic below 2^31 values.
extern "C" __global__ void forge_fill_rows(float* y, const float* bias, int rows, int period, i64 cols) {
	i64 total = (i64)rows * cols;
	i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x, step = (i64)gridDim.x * blockDim.x;
	if ((cols & 3) == 0 && total < (1LL << 31) && ((unsigned long long)y & 15) == 0) {
		unsigned q4 = (unsigned)(cols >> 2), n4 = (unsigned)(total >> 2);
		for (unsigned e = (unsigned)i; e < n4; e += (unsigned)step) {
			float b = bias[(e / q4) % period];
			((float4*)y)[e] = make_float4(b, b, b, b);
		}
		return;
	}
	for (i64 e = i; e < total; e += step) y[e] = bias[(e / cols) % period];
}

// LSTMStepArgs: one time step of an LSTM whose input projections are
// already in gx (x·W_ihᵀ + b_ih for every step, from a product), for every
// direction at once. Direction d reads gx + d·gxDir, rows ordered as x's
// (t·B + b, or b·T + t when batchFirst), and its recurrent weights whh[d]
// [4H, H] and bias bhh[d]; h and c come from hin/cin [D, B, H] and go to
// hout/cout and to y at the step's time.
struct LSTMStepArgs {
	const float* gx;
	const float* whh[2];
	const float* bhh[2];
	const float* hin;
	const float* cin;
	float* hout;
	float* cout;
	float* y;
	i64 gxDir;
	int T, B, H, D, s, batchFirst;
};

#define LSTM_UNITS 8

// forge_lstm_step: grid (ceil(H / LSTM_UNITS), D), 128 threads. A block
// computes the four gate rows of LSTM_UNITS hidden units (one warp per
// eight rows, lanes splitting the dot product with h) and updates those
// units' c and h, so a step needs no second kernel; many blocks share a
// step, each reading only its rows of W_hh.
extern "C" __global__ void forge_lstm_step(LSTMStepArgs a) {
	__shared__ float gates[8][4][LSTM_UNITS]; // [b][gate][unit], B ≤ 8 per pass
	int dir = blockIdx.y;
	int u0 = blockIdx.x * LSTM_UNITS;
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int t = dir == 0 ? a.s : a.T - 1 - a.s;
	int H = a.H;
	const float* whh = a.whh[dir];
	const float* bhh = a.bhh[dir];
	for (int b0 = 0; b0 < a.B; b0 += 8) {
		int nb = min(8, a.B - b0);
		// Warp w takes rows (gate g, unit u) for 8 of the block's 32.
		for (int r = warp * 8; r < warp * 8 + 8; r++) {
			int g = r / LSTM_UNITS, u = u0 + r % LSTM_UNITS;
			if (u >= H) continue;
			int row = g * H + u;
			const float* w = whh + (i64)row * H;
			for (int bi = 0; bi < nb; bi++) {
				int b = b0 + bi;
				const float* h = a.hin + ((i64)dir * a.B + b) * H;
				float acc = warp_dot(w, h, H, lane);
				if (lane == 0) {
					i64 xr = a.batchFirst ? (i64)b * a.T + t : (i64)t * a.B + b;
					gates[bi][g][r % LSTM_UNITS] = acc + a.gx[dir * a.gxDir + xr * 4 * H + row] + (bhh ? bhh[row] : 0.f);
				}
			}
		}
		__syncthreads();
		for (int e = threadIdx.x; e < nb * LSTM_UNITS; e += blockDim.x) {
			int bi = e / LSTM_UNITS, ul = e % LSTM_UNITS, u = u0 + ul, b = b0 + bi;
			if (u >= H) continue;
			i64 hc = ((i64)dir * a.B + b) * H + u;
			float hn;
			float cn = lstm_cell(gates[bi][0][ul], gates[bi][1][ul], gates[bi][2][ul], gates[bi][3][ul], a.cin[hc], &hn);
			a.cout[hc] = cn;
			a.hout[hc] = hn;
			i64 yo = a.batchFirst ? (((i64)b * a.T + t) * a.D + dir) * H + u : (((i64)t * a.B + b) * a.D + dir) * H + u;
			a.y[yo] = hn;
		}
		__syncthreads();
	}
}

// grid_barrier waits until every block of the grid has reached barrier
// number n (1, 2, …) on *count, which is 0 at launch. The blocks must all
// be resident at once (the caller launches at most one per SM). The fences
// publish each block's global writes before its arrival and order the
// reads after it, as cooperative groups' grid sync does.
__device__ __forceinline__ void grid_barrier(unsigned* count, unsigned n) {
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned target = n * gridDim.x * gridDim.y;
		__threadfence();
		atomicAdd(count, 1u);
		while (*(volatile unsigned*)count < target) {
		}
		__threadfence();
	}
	__syncthreads();
}

// forge_lstm_loop is forge_lstm_step for every step in one launch, for a
// batch of at most 8: the same blocks and the same arithmetic in the same
// order (so the same results), with a grid barrier between steps instead
// of a kernel boundary. What a step reads is brought on chip at its start,
// all loads at once: h of the step before (through L2 with __ldcg, since
// other blocks wrote it) and the block's input projections; its 32 rows of
// W_hh and their biases stay in shared memory for the whole launch (the
// caller passes 32·H + B·H floats of dynamic shared memory), and thread
// e < 8·B keeps the cell state c of unit e % 8, batch item e / 8, in a
// register. h ping-pongs between hin (h0 at step 0) and hout: after an odd
// number of steps the last h is in hout, else in hin; the last c goes to
// cN.
extern "C" __global__ void forge_lstm_loop(LSTMStepArgs a, unsigned* count, const float* c0, float* cN) {
	extern __shared__ float wsm[]; // [32][H] W_hh rows, then hs [B][H]
	__shared__ float gates[8][4][LSTM_UNITS];
	__shared__ float gxs[8][4 * LSTM_UNITS];
	__shared__ float bhs[4 * LSTM_UNITS];
	int dir = blockIdx.y;
	int u0 = blockIdx.x * LSTM_UNITS;
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int H = a.H, B = a.B;
	float* hs = wsm + 4 * LSTM_UNITS * H;
	const float* whh = a.whh[dir];
	const float* bhh = a.bhh[dir];
	for (int e = threadIdx.x; e < 4 * LSTM_UNITS * H; e += blockDim.x) {
		int r = e / H, k = e % H;
		int g = r / LSTM_UNITS, u = u0 + r % LSTM_UNITS;
		wsm[e] = u < H ? whh[(i64)(g * H + u) * H + k] : 0.f;
	}
	if (threadIdx.x < 4 * LSTM_UNITS) {
		int r = threadIdx.x, g = r / LSTM_UNITS, u = u0 + r % LSTM_UNITS;
		bhs[r] = bhh && u < H ? bhh[g * H + u] : 0.f;
	}
	int mb = threadIdx.x / LSTM_UNITS, mu = u0 + threadIdx.x % LSTM_UNITS; // this thread's cell
	bool owner = mb < B && mu < H;
	i64 mine = ((i64)dir * B + mb) * H + mu;
	float c = owner ? c0[mine] : 0.f;
	float* hbuf[2] = {(float*)a.hin, a.hout};
	for (int s = 0; s < a.T; s++) {
		int t = dir == 0 ? s : a.T - 1 - s;
		const float* hin = hbuf[s & 1] + (i64)dir * B * H;
		for (int e = threadIdx.x; e < B * H; e += blockDim.x) hs[e] = __ldcg(hin + e);
		for (int e = threadIdx.x; e < B * 4 * LSTM_UNITS; e += blockDim.x) {
			int b = e / (4 * LSTM_UNITS), r = e % (4 * LSTM_UNITS);
			int g = r / LSTM_UNITS, u = u0 + r % LSTM_UNITS;
			i64 xr = a.batchFirst ? (i64)b * a.T + t : (i64)t * B + b;
			gxs[b][r] = u < H ? a.gx[dir * a.gxDir + xr * 4 * H + g * H + u] : 0.f;
		}
		__syncthreads();
		for (int r = warp * 8; r < warp * 8 + 8; r++) {
			int g = r / LSTM_UNITS, u = u0 + r % LSTM_UNITS;
			if (u >= H) continue;
			const float* w = wsm + r * H;
			for (int b = 0; b < B; b++) {
				const float* h = hs + b * H;
				float acc = warp_dot(w, h, H, lane);
				if (lane == 0) gates[b][g][r % LSTM_UNITS] = acc + gxs[b][r] + (bhh ? bhs[r] : 0.f);
			}
		}
		__syncthreads();
		if (owner) {
			int ul = threadIdx.x % LSTM_UNITS;
			float hn;
			c = lstm_cell(gates[mb][0][ul], gates[mb][1][ul], gates[mb][2][ul], gates[mb][3][ul], c, &hn);
			hbuf[(s + 1) & 1][mine] = hn;
			i64 yo = a.batchFirst ? (((i64)mb * a.T + t) * a.D + dir) * H + mu : (((i64)t * B + mb) * a.D + dir) * H + mu;
			a.y[yo] = hn;
		}
		grid_barrier(count, s + 1);
	}
	if (owner && cN) cN[mine] = c;
}

// forge_col2im_t finishes a transposed convolution computed as one product
// cols [Cout·K, L] = Wᵀ·x[n]: output position t of channel co gathers
// cols[co·K + k, p] for every tap k with p·stride − padL + k·dil = t (so no
// two threads write one element), plus the bias.
extern "C" __global__ void forge_col2im_t(const float* cols, const float* bias, float* y, int Cout, int K, int L, int Lout, int stride, int padL, int dil) {
	i64 total = (i64)Cout * Lout;
	for (i64 e = blockIdx.x * (i64)blockDim.x + threadIdx.x; e < total; e += (i64)gridDim.x * blockDim.x) {
		int t = e % Lout, co = e / Lout;
		float acc = bias ? bias[co] : 0.f;
		for (int k = 0; k < K; k++) {
			int q = t + padL - k * dil;
			if (q < 0 || q % stride != 0) continue;
			int p = q / stride;
			if (p < L) acc += cols[((i64)co * K + k) * L + p];
		}
		y[e] = acc;
	}
}
