// Helpers shared by the hand-written kernels (kernels.cu, attention.cu) and the kernels
// the backend generates around them (fused products, fuse.go): typedefs,
// reductions, error reporting, and the cores of the weight-only int8
// product and of the row norm, written as device functions so that a
// generated kernel can put its own prologue and store around them.

typedef long long i64;
typedef unsigned char u8;
typedef signed char i8;

#define FINF __int_as_float(0x7f800000)

// wait_inputs waits until the kernels before this one on its stream have
// finished and their writes are visible, then lets the next kernel start.
// Only a kernel the backend launches early (driver.LaunchEarly: it may
// start while the kernel before it runs, on compute capability 9.0) needs
// it, before its first access to anything an earlier kernel reads or
// writes; elsewhere, and on older devices, a kernel starts after the one
// before it has finished and this does nothing. Letting the next kernel
// start only after the wait keeps at most two kernels resident at a time.
__device__ __forceinline__ void wait_inputs() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;" ::: "memory");
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// fail records the first error code of a queue.
__device__ __forceinline__ void fail(int* err, int code) { atomicCAS(err, 0, code); }

// f32_to_f16 and f32_to_bf16 round to nearest even (as the CPU's
// conversions), by bit manipulation so no header is needed.
__device__ __forceinline__ unsigned short f32_to_f16(float f) {
	unsigned short h;
	asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
	return h;
}

__device__ __forceinline__ unsigned short f32_to_bf16(float f) {
	unsigned u = __float_as_uint(f);
	if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40); // NaN stays NaN
	u += 0x7fffu + ((u >> 16) & 1u);
	return (unsigned short)(u >> 16);
}

__device__ __forceinline__ i64 index_at(const void* p, int is64, i64 i) {
	return is64 ? ((const i64*)p)[i] : (i64)((const int*)p)[i];
}

__device__ __forceinline__ float warp_sum(float v) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ double warp_sum_d(double v) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ float warp_max(float v) {
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

// block_sum_d sums v over the block (blockDim.x a multiple of 32, ≤ 1024);
// every thread gets the total. scratch holds 32 doubles.
__device__ double block_sum_d(double v, double* scratch) {
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_sum_d(v);
	__syncthreads();
	if (lane == 0) scratch[warp] = v;
	__syncthreads();
	double t = lane < nw ? scratch[lane] : 0.0;
	t = warp_sum_d(t);
	return t;
}

__device__ float block_max(float v, float* scratch) {
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_max(v);
	__syncthreads();
	if (lane == 0) scratch[warp] = v;
	__syncthreads();
	float t = lane < nw ? scratch[lane] : -FINF;
	return warp_max(t);
}

// ATT_MAX_SPLITS is the most partial results combine_row reduces: two per
// lane.
#define ATT_MAX_SPLITS 64

// combine_row is one warp's reduction of a split attention row: the
// splits' partial results part[z] (dv values, then their maximum score
// and their sum of exponentials, dv + 2 floats each) into the row's dv
// outputs at out; wz is the warp's ATT_MAX_SPLITS floats of shared memory.
// Each lane takes the maximum and sum of a split or two, the warp agrees
// on the row's maximum and total, the splits' weights go through shared
// memory, and every partial value is then read with no load waiting on
// another. forge_attention_combine runs it as a kernel; a fused product
// after the attention runs it as its prologue (fuse.go).
__device__ __forceinline__ void combine_row(const float* part, int splits, int dv, float* out, float* wz) {
	int lane = threadIdx.x & 31;
	float mz[2], lz[2];
	float mx = -FINF;
	for (int t = 0; t < 2; t++) {
		int z = lane + 32 * t;
		mz[t] = z < splits ? part[z * (dv + 2) + dv] : -FINF;
		lz[t] = z < splits ? part[z * (dv + 2) + dv + 1] : 0.f;
		mx = fmaxf(mx, mz[t]);
	}
	mx = warp_max(mx);
	float tot = 0;
	for (int t = 0; t < 2; t++) {
		int z = lane + 32 * t;
		float f = mz[t] == -FINF ? 0.f : __expf(mz[t] - mx);
		tot += lz[t] * f;
		if (z < splits) wz[z] = f;
	}
	tot = warp_sum(tot);
	__syncwarp();
	for (int c = lane; c < dv; c += 32) {
		float v = 0;
		// Sixteen splits at a time with a fixed trip count, so that their
		// loads are all in flight: a loop over splits ran its remainder
		// one load after another.
		for (int z0 = 0; z0 < splits; z0 += 16) {
			float pv[16];
#pragma unroll
			for (int t = 0; t < 16; t++) pv[t] = z0 + t < splits ? part[(z0 + t) * (dv + 2) + c] : 0.f;
#pragma unroll
			for (int t = 0; t < 16; t++)
				if (z0 + t < splits) v = fmaf(pv[t], wz[z0 + t], v);
		}
		out[c] = v / tot;
	}
	__syncwarp(); // wz is the warp's again
}

// ---------------------------------------------------------------------------
// Weight-only int8 products

// byte_diff is byte i (0–3) of the word v as a number (signed or not)
// minus zero, exactly: the byte goes into the mantissa of 2^23 (one byte
// permute, with the sign bits of signed bytes flipped in the word
// beforehand, which the compiler does once for the word's four bytes) and
// one subtraction removes 2^23 and the zero point together. An
// integer-to-float conversion is a quarter-rate instruction; shifting and
// masking the byte into place took three more than the permute.
__device__ __forceinline__ float byte_diff(unsigned v, int i, int isSigned, float bias) {
	unsigned w = v ^ (isSigned ? 0x80808080u : 0u);
	return __uint_as_float(__byte_perm(w, 0x4b000000u, 0x7540u | (unsigned)i)) - bias;
}

// linear_q_core: y [M, N] = x [M, K] · ((w [N, K] − zero)·scale)ᵀ, w bytes
// (signed when isSigned), scale and zero one value each. One warp per
// output column at a time, the warps of the grid striding over the
// columns (a grid as large as the columns spent longer scheduling blocks
// than reading weights: 6,484 blocks for Whisper's vocabulary); each
// weight row streams once for up to 8 rows of x. A decoder step is a
// product with one row of x, bound by streaming the weights: where rows
// are whole 16-byte words, each lane loads 16 weight bytes at once (one
// byte per lane left most of each memory transaction unused).
//
// The core hands each output to st(m, n, value) on lane 0 of the warp that
// computed it: forge_linear_q stores it, a generated kernel may transform
// it or store it elsewhere. linear_q_column is one column's work, for
// generated kernels that compute several products in one grid.
struct linear_q_weights {
	const u8* w;
	float sc, z, bias;
	int isSigned;
	bool vec;
};

__device__ __forceinline__ linear_q_weights linear_q_prepare(const float* x, const void* w, const float* scale, const void* zero, int K, int isSigned) {
	linear_q_weights q;
	q.w = (const u8*)w;
	q.sc = scale[0];
	q.z = isSigned ? (float)((const i8*)zero)[0] : (float)((const u8*)zero)[0];
	q.bias = 8388608.f + q.z + (isSigned ? 128.f : 0.f);
	q.isSigned = isSigned;
	q.vec = (K & 15) == 0 && (((unsigned long long)x | (unsigned long long)w) & 15) == 0;
	return q;
}

// A wide product (LINQ_TILE_COLS columns or more: the logits) of
// LINQ_TILE_ROWS rows or more (a batch of sequences' step) runs as tiles
// of 32 rows × 64 columns per block (linear_q_tile): a warp per column, as
// for a few rows, reads every row of x once per column, and for 32 rows
// that re-reading, not the weights, is what such a product costs
// (Whisper tiny's logits for 32 rows: 398 µs a warp per column, 113 µs in
// tiles, on an H100). Narrower products have too few tiles to fill the
// GPU and keep a warp per column.
#define LINQ_TILE_ROWS 16
#define LINQ_TILE_COLS 4096
#define LINQ_TM 32
#define LINQ_TN 64
#define LINQ_TK 32

// linear_q_unpack turns 16 weight bytes into their values minus the zero
// point (byte_diff).
__device__ __forceinline__ void linear_q_unpack(uint4 wv, const linear_q_weights& q, float wf[16]) {
	unsigned words[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
	for (int e = 0; e < 16; e++) wf[e] = byte_diff(words[e >> 2], e & 3, q.isSigned, q.bias);
}

// linear_q_dot16 adds the products of 16 values of x (16-byte aligned)
// and wf to acc, in order.
__device__ __forceinline__ float linear_q_dot16(const float* x, const float wf[16], float acc) {
	const float4* xr = (const float4*)x;
#pragma unroll
	for (int j = 0; j < 4; j++) {
		float4 f = xr[j];
		acc = fmaf(f.x, wf[4 * j], acc);
		acc = fmaf(f.y, wf[4 * j + 1], acc);
		acc = fmaf(f.z, wf[4 * j + 2], acc);
		acc = fmaf(f.w, wf[4 * j + 3], acc);
	}
	return acc;
}

// pre, where ahead is set, is the lane's 16 weight bytes of column n,
// loaded by linear_q_fetch (only for rows of K ≤ 512, a single word a lane).
template <class Store>
__device__ __forceinline__ void linear_q_column(const float* x, const linear_q_weights& q, int M, int K, int n, uint4 pre, bool ahead, Store st) {
	int lane = threadIdx.x & 31;
	const u8* wu = q.w + (i64)n * K;
	const i8* ws = (const i8*)q.w + (i64)n * K;
	if (M == 1 && q.vec) {
		// One row (a decoder step of one sequence): the sums below for
		// i = 0, without the other rows' tests, which made half of the
		// instructions a column took.
		float acc = 0;
		for (int k = 16 * lane; k < K; k += 512) {
			float wf[16];
			linear_q_unpack(ahead ? pre : *(const uint4*)(wu + k), q, wf);
			acc = linear_q_dot16(x + k, wf, acc);
		}
		float v = warp_sum(acc);
		if (lane == 0) st(0, n, v * q.sc);
		return;
	}
	for (int m0 = 0; m0 < M; m0 += 8) {
		int mc = min(8, M - m0);
		float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
		if (q.vec) {
			for (int k = 16 * lane; k < K; k += 512) {
				float wf[16];
				linear_q_unpack(ahead ? pre : *(const uint4*)(wu + k), q, wf);
#pragma unroll
				for (int i = 0; i < 8; i++) {
					if (i >= mc) continue;
					acc[i] = linear_q_dot16(x + (i64)(m0 + i) * K + k, wf, acc[i]);
				}
			}
		} else {
			for (int k = lane; k < K; k += 32) {
				float wv = (q.isSigned ? (float)ws[k] : (float)wu[k]) - q.z;
#pragma unroll
				for (int i = 0; i < 8; i++)
					if (i < mc) acc[i] = fmaf(x[(i64)(m0 + i) * K + k], wv, acc[i]);
			}
		}
#pragma unroll
		for (int i = 0; i < 8; i++) {
			if (i >= mc) continue;
			float v = warp_sum(acc[i]);
			if (lane == 0) st(m0 + i, n, v * q.sc);
		}
	}
}

// linear_q_tile computes tile t of y = x·wᵀ (tiles: ceil(M/LINQ_TM)
// row blocks × ceil(N/LINQ_TN) column blocks, row blocks first) with the
// whole block of 256 threads, every one of which must call it: chunks of
// LINQ_TK of x's rows and of the dequantized weights go through shared
// memory, and each thread sums 2 rows × 4 columns in registers, in order
// of k. The sums run in another order than linear_q_column's.
template <class Store>
__device__ __forceinline__ void linear_q_tile(const float* x, const linear_q_weights& q, int M, int N, int K, int t, Store st) {
	__shared__ float xs[LINQ_TM][LINQ_TK + 1];
	__shared__ float wsm[LINQ_TN][LINQ_TK + 1];
	int rbs = (M + LINQ_TM - 1) / LINQ_TM;
	int m0 = (t % rbs) * LINQ_TM, n0 = (t / rbs) * LINQ_TN;
	int tid = threadIdx.x, tr = tid >> 4, tc = tid & 15;
	float acc[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
	for (int k0 = 0; k0 < K; k0 += LINQ_TK) {
		__syncthreads();
		for (int e = tid; e < LINQ_TM * LINQ_TK; e += 256) {
			int r = e / LINQ_TK, c = e % LINQ_TK;
			xs[r][c] = (m0 + r < M && k0 + c < K) ? x[(i64)(m0 + r) * K + k0 + c] : 0.f;
		}
		for (int e = tid; e < LINQ_TN * LINQ_TK; e += 256) {
			int r = e / LINQ_TK, c = e % LINQ_TK;
			float v = 0.f;
			if (n0 + r < N && k0 + c < K) {
				i64 at = (i64)(n0 + r) * K + k0 + c;
				v = (q.isSigned ? (float)((const i8*)q.w)[at] : (float)q.w[at]) - q.z;
			}
			wsm[r][c] = v;
		}
		__syncthreads();
#pragma unroll 8
		for (int k = 0; k < LINQ_TK; k++) {
			float a0 = xs[2 * tr][k], a1 = xs[2 * tr + 1][k];
#pragma unroll
			for (int j = 0; j < 4; j++) {
				float b = wsm[tc + 16 * j][k];
				acc[0][j] = fmaf(a0, b, acc[0][j]);
				acc[1][j] = fmaf(a1, b, acc[1][j]);
			}
		}
	}
#pragma unroll
	for (int i = 0; i < 2; i++)
#pragma unroll
		for (int j = 0; j < 4; j++) {
			int m = m0 + 2 * tr + i, n = n0 + tc + 16 * j;
			if (m < M && n < N) st(m, n, acc[i][j] * q.sc);
		}
}

// linear_q_tiles is the number of linear_q_tile tiles of an M×N product.
__device__ __forceinline__ int linear_q_tiles(int M, int N) {
	return (M + LINQ_TM - 1) / LINQ_TM * ((N + LINQ_TN - 1) / LINQ_TN);
}

// LINQ_AHEAD is how many columns a warp's weights are loaded for before
// the first of them is summed (linear_q_sweep).
#define LINQ_AHEAD 4

// linear_q_fetch loads the lane's 16 weight bytes of column n for
// linear_q_column's pre (rows of K ≤ 512 whole 16-byte words: q.vec).
__device__ __forceinline__ uint4 linear_q_fetch(const linear_q_weights& q, int K, int n) {
	int k = 16 * (threadIdx.x & 31);
	return k < K ? *(const uint4*)(q.w + (i64)n * K + k) : make_uint4(0, 0, 0, 0);
}

// linear_q_sweep calls column(c, pre, ahead) for the warp's columns c of
// total (c = first warp, then every warps-th). A column's sum waits on
// its weights' load, one memory round trip, and the warp's next load was
// only issued after that sum's shuffles: a vocabulary's 51,865 columns ran
// at 13 % of DRAM bandwidth. Where ahead is set (rows of K ≤ 512 whole
// words, a word a lane), fetch(c) loads LINQ_AHEAD columns' weights before
// the first is summed, so their round trips overlap. The sums are the same.
//
// Every thread of the block calls ready() once, after the first columns'
// weights are requested and before any column is summed; false ends the
// kernel. A kernel whose weights are constants waits for its inputs there
// (wait_inputs), so that those loads overlap the kernel before it.
template <class Fetch, class Column, class Ready>
__device__ __forceinline__ void linear_q_sweep(int total, bool ahead, Fetch fetch, Column column, Ready ready) {
	const int warps = (gridDim.x * blockDim.x) >> 5;
	const int first = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	const int batch = ahead ? LINQ_AHEAD : 1;
	uint4 wv[LINQ_AHEAD];
	for (int c0 = first;; c0 += batch * warps) {
		if (ahead) {
#pragma unroll
			for (int u = 0; u < LINQ_AHEAD; u++) {
				int c = c0 + u * warps;
				wv[u] = c < total ? fetch(c) : make_uint4(0, 0, 0, 0);
			}
		}
		if (c0 == first && !ready()) return;
		if (c0 >= total) return;
		// One call site, not unrolled: column is inlined once (four
		// copies of every product of a group made NVRTC and the driver's
		// compiler take three times as long); the batch's words move down
		// to wv[0] instead of being indexed, which would put them in local
		// memory.
#pragma unroll 1
		for (int u = 0; u < batch; u++) {
			int c = c0 + u * warps;
			if (c < total) column(c, wv[0], ahead);
#pragma unroll
			for (int t = 0; t + 1 < LINQ_AHEAD; t++) wv[t] = wv[t + 1];
		}
	}
}

template <class Store>
__device__ __forceinline__ void linear_q_core(const float* x, const void* w, const float* scale, const void* zero, int M, int N, int K, int isSigned, Store st) {
	linear_q_weights q = linear_q_prepare(x, w, scale, zero, K, isSigned);
	if (M >= LINQ_TILE_ROWS && N >= LINQ_TILE_COLS) {
		for (int t = blockIdx.x; t < linear_q_tiles(M, N); t += gridDim.x) linear_q_tile(x, q, M, N, K, t, st);
		return;
	}
	linear_q_sweep(
		N, q.vec && K <= 512, [&](int n) { return linear_q_fetch(q, K, n); },
		[&](int n, uint4 pre, bool ahead) { linear_q_column(x, q, M, K, n, pre, ahead, st); }, [] { return true; });
}

// row_norm_rows normalizes the m rows of x (n values each) into y as
// forge_layer_norm does (the same sums in the same order for a block of
// the same size, so the same values): a product's prologue when the norm
// before it is fused into it. Every thread of the block must call it.
__device__ void row_norm_rows(const float* x, const float* w, const float* b, float* y, int m, int n, float eps, double* sd) {
	for (int r = 0; r < m; r++) {
		const float* xr = x + (i64)r * n;
		float* yr = y + (i64)r * n;
		double s = 0;
		for (int j = threadIdx.x; j < n; j += blockDim.x) s += xr[j];
		double mean = block_sum_d(s, sd) / n;
		double ss = 0;
		for (int j = threadIdx.x; j < n; j += blockDim.x) {
			double d = xr[j] - mean;
			ss += d * d;
		}
		double var = block_sum_d(ss, sd) / n;
		float inv = (float)(1.0 / sqrt(var + (double)eps));
		float mf = (float)mean;
		for (int j = threadIdx.x; j < n; j += blockDim.x) {
			float v = (xr[j] - mf) * inv;
			if (w) v *= w[j];
			if (b) v += b[j];
			yr[j] = v;
		}
		__syncthreads(); // block_sum_d's scratch is reused by the next row
	}
}

