// Forge's hand-written attention kernels: softmax(q·kᵀ + mask)·v with the
// scores kept on the chip, in float32 (forge_attention, _rows, _decode and
// _combine) and on tensor cores in half precision (forge_attention_tc,
// _kv_half, _fa, _fa_split). A program of its own beside kernels.cu, after
// common.cuh, so that the two compile at the same time: these kernels are
// most of NVRTC's and the PTX compiler's work.

// ---------------------------------------------------------------------------
// Attention

// AttnArgs describes softmax(q·kᵀ + mask)·v over batched strided matrices:
// q [n, d], k [s, d], v [s, dv] per batch element, out [n, dv] dense, mask
// [n, s] (optional; its batch strides mb are zero where the batch shares
// it). Batch coordinates come from up to four batch axes; each operand has
// its own (possibly zero) batch strides.
// Field order keeps the 8-byte fields first so the Go side lays it out
// without padding.
struct AttnArgs {
	const float* q;
	const float* k;
	const float* v;
	const float* mask;
	float* o;
	float* part; // forge_attention_rows with splits > 1: [batch·n][splits][dv + 2] partial results
	i64 qb[4], kb[4], vb[4], ob[4], mb[4];
	i64 qr, qc, kr, kc, vr, vc, mr, mc;
	int bshape[4];
	int n, s, d, dv;
	int nb, splits;
};

#define ATT_WARPS 8
#define ATT_ROWS 4
#define ATT_TILE 32
#define ATT_MAXD 128

// batch_offsets turns a block's batch index into each operand's offset
// and returns the batch element's mask (null for none).
__device__ __forceinline__ const float* batch_offsets(const AttnArgs& a, i64 bi, i64* qo, i64* ko, i64* vo, i64* oo) {
	*qo = *ko = *vo = *oo = 0;
	i64 mo = 0;
	for (int t = a.nb - 1; t >= 0; t--) {
		i64 c = bi % a.bshape[t];
		bi /= a.bshape[t];
		*qo += c * a.qb[t];
		*ko += c * a.kb[t];
		*vo += c * a.vb[t];
		*oo += c * a.ob[t];
		mo += c * a.mb[t];
	}
	return a.mask ? a.mask + mo : nullptr;
}

// split_parts returns where row's partial results begin for batch element
// blockIdx.y: a.splits of them, dv + 2 floats each (the values, then their
// maximum score and their sum of exponentials), in the layout the split
// kernels write (block z at split_parts + z·(dv + 2)) and combine_row reads.
__device__ __forceinline__ float* split_parts(const AttnArgs& a, int row) {
	return a.part + ((i64)blockIdx.y * a.n + row) * a.splits * (a.dv + 2);
}

// forge_attention: grid (ceil(n / (ATT_WARPS·ATT_ROWS)), batch), ATT_WARPS
// warps per block, ATT_ROWS query rows per warp. Keys and values stream
// through shared memory 32 at a time (one tile serves the block's 32 rows);
// each lane scores one key of the tile for each of its warp's rows, the
// warp keeps a running max and sum per row (online softmax), and lane l
// accumulates output columns l, l+32, … The score matrix never leaves the
// chip. Dynamic shared memory: K tile [32][d+1], V tile [32][dv+1], queries
// [ATT_WARPS·ATT_ROWS][d].
extern "C" __global__ void forge_attention(AttnArgs a) {
	extern __shared__ float sm[];
	int d1 = a.d + 1, dv1 = a.dv + 1;
	float* ks = sm;
	float* vs = ks + ATT_TILE * d1;
	float* qs = vs + ATT_TILE * dv1;
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int row0 = (blockIdx.x * ATT_WARPS + warp) * ATT_ROWS;
	i64 qo, ko, vo, oo;
	// The batch item's mask goes through shared memory: a pointer held in
	// registers across the loop made this kernel a third slower (Whisper's
	// f32 encoder attention 918 → 1,248 µs a layer on the H100).
	__shared__ const float* mask;
	const float* m0 = batch_offsets(a, blockIdx.y, &qo, &ko, &vo, &oo);
	if (threadIdx.x == 0) mask = m0;
	for (int r = 0; r < ATT_ROWS; r++) {
		int row = row0 + r;
		for (int c = lane; c < a.d; c += 32)
			qs[(warp * ATT_ROWS + r) * a.d + c] = row < a.n ? a.q[qo + row * a.qr + c * a.qc] : 0.f;
	}
	int nt = (a.dv + 31) / 32;
	float acc[ATT_ROWS][ATT_MAXD / 32];
	float m[ATT_ROWS], l[ATT_ROWS];
	for (int r = 0; r < ATT_ROWS; r++) {
		m[r] = -FINF;
		l[r] = 0;
		for (int t = 0; t < ATT_MAXD / 32; t++) acc[r][t] = 0;
	}
	for (int k0 = 0; k0 < a.s; k0 += ATT_TILE) {
		__syncthreads();
		int tk = min(ATT_TILE, a.s - k0);
		// Consecutive threads load along whichever axis is contiguous in
		// memory, so a key matrix stored transposed ([d, s]) still loads
		// coalesced.
		for (int e = threadIdx.x; e < ATT_TILE * a.d; e += blockDim.x) {
			int j, c;
			if (a.kc == 1) j = e / a.d, c = e % a.d;
			else j = e % ATT_TILE, c = e / ATT_TILE;
			ks[j * d1 + c] = j < tk ? a.k[ko + (i64)(k0 + j) * a.kr + (i64)c * a.kc] : 0.f;
		}
		for (int e = threadIdx.x; e < ATT_TILE * a.dv; e += blockDim.x) {
			int j, c;
			if (a.vc == 1) j = e / a.dv, c = e % a.dv;
			else j = e % ATT_TILE, c = e / ATT_TILE;
			vs[j * dv1 + c] = j < tk ? a.v[vo + (i64)(k0 + j) * a.vr + (i64)c * a.vc] : 0.f;
		}
		__syncthreads();
		if (row0 >= a.n) continue;
		float p[ATT_ROWS];
		for (int r = 0; r < ATT_ROWS; r++) {
			const float* qr = qs + (warp * ATT_ROWS + r) * a.d;
			float sc = -FINF;
			if (lane < tk) {
				float dot = 0;
				for (int c = 0; c < a.d; c++) dot = fmaf(qr[c], ks[lane * d1 + c], dot);
				if (mask && row0 + r < a.n) dot += mask[(row0 + r) * a.mr + (i64)(k0 + lane) * a.mc];
				sc = dot;
			}
			float mn = fmaxf(m[r], warp_max(sc));
			if (mn == -FINF) {
				p[r] = 0;
				continue;
			}
			p[r] = lane < tk ? __expf(sc - mn) : 0.f;
			float corr = __expf(m[r] - mn);
			l[r] = l[r] * corr + warp_sum(p[r]);
			for (int t = 0; t < ATT_MAXD / 32; t++) acc[r][t] *= corr;
			m[r] = mn;
		}
		for (int j = 0; j < tk; j++) {
			const float* vr = vs + j * dv1;
			for (int r = 0; r < ATT_ROWS; r++) {
				float pj = __shfl_sync(0xffffffffu, p[r], j);
				for (int t = 0; t < ATT_MAXD / 32; t++)
					if (t < nt && lane + 32 * t < a.dv) acc[r][t] = fmaf(pj, vr[lane + 32 * t], acc[r][t]);
			}
		}
	}
	for (int r = 0; r < ATT_ROWS; r++) {
		int row = row0 + r;
		if (row >= a.n) break;
		float inv = 1.f / l[r];
		for (int t = 0; t < ATT_MAXD / 32; t++) {
			int c = lane + 32 * t;
			if (t < nt && c < a.dv) a.o[oo + (i64)row * a.dv + c] = acc[r][t] * inv;
		}
	}
}

// forge_attention_rows serves a few query rows (a decoder step): grid (n,
// batch, splits); block z takes the z-th of `splits` equal runs of keys, its
// ATT_WARPS warps split that run (warp w takes tiles w, w+ATT_WARPS, …),
// each lane scores one key straight from memory, and the warps' partial
// softmax sums combine at the end: into the output when splits = 1, else
// into a.part, which forge_attention_combine reduces. Shared memory: the
// query row and the warps' partial results (static).
extern "C" __global__ void forge_attention_rows(AttnArgs a) {
	__shared__ float q[ATT_MAXD];
	__shared__ float pacc[ATT_WARPS][ATT_MAXD];
	__shared__ float pm[ATT_WARPS], pl[ATT_WARPS];
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int row = blockIdx.x;
	i64 qo, ko, vo, oo;
	const float* mask = batch_offsets(a, blockIdx.y, &qo, &ko, &vo, &oo);
	int per = (a.s + a.splits - 1) / a.splits;
	per = (per + ATT_TILE - 1) / ATT_TILE * ATT_TILE;
	int kbeg = blockIdx.z * per, kend = min(a.s, kbeg + per);
	for (int c = threadIdx.x; c < a.d; c += blockDim.x) q[c] = a.q[qo + row * a.qr + c * a.qc];
	__syncthreads();
	int nt = (a.dv + 31) / 32;
	float acc[ATT_MAXD / 32];
	for (int t = 0; t < ATT_MAXD / 32; t++) acc[t] = 0;
	float m = -FINF, l = 0;
	for (int k0 = kbeg + warp * ATT_TILE; k0 < kend; k0 += ATT_WARPS * ATT_TILE) {
		int tk = min(ATT_TILE, kend - k0);
		float sc = -FINF;
		if (lane < tk) {
			const float* kr = a.k + ko + (i64)(k0 + lane) * a.kr;
			float dot = 0;
#pragma unroll 8
			for (int c = 0; c < a.d; c++) dot = fmaf(q[c], kr[(i64)c * a.kc], dot);
			if (mask) dot += mask[row * a.mr + (i64)(k0 + lane) * a.mc];
			sc = dot;
		}
		float mn = fmaxf(m, warp_max(sc));
		if (mn == -FINF) continue;
		float p = lane < tk ? __expf(sc - mn) : 0.f;
		float corr = __expf(m - mn);
		l = l * corr + warp_sum(p);
		for (int t = 0; t < ATT_MAXD / 32; t++) acc[t] *= corr;
		m = mn;
#pragma unroll 4
		for (int j = 0; j < tk; j++) {
			float pj = __shfl_sync(0xffffffffu, p, j);
			const float* vr = a.v + vo + (i64)(k0 + j) * a.vr;
			for (int t = 0; t < ATT_MAXD / 32; t++)
				if (t < nt && lane + 32 * t < a.dv) acc[t] = fmaf(pj, vr[(i64)(lane + 32 * t) * a.vc], acc[t]);
		}
	}
	for (int t = 0; t < ATT_MAXD / 32; t++)
		if (t < nt && lane + 32 * t < a.dv) pacc[warp][lane + 32 * t] = acc[t];
	if (lane == 0) {
		pm[warp] = m;
		pl[warp] = l;
	}
	__syncthreads();
	if (warp != 0) return;
	float mx = -FINF;
	for (int w = 0; w < ATT_WARPS; w++) mx = fmaxf(mx, pm[w]);
	float tot = 0;
	for (int w = 0; w < ATT_WARPS; w++) tot += pm[w] == -FINF ? 0.f : pl[w] * __expf(pm[w] - mx);
	float* part = a.splits > 1 ? split_parts(a, row) + blockIdx.z * (a.dv + 2) : 0;
	for (int t = 0; t < nt; t++) {
		int c = lane + 32 * t;
		if (c >= a.dv) break;
		float v = 0;
		for (int w = 0; w < ATT_WARPS; w++)
			if (pm[w] != -FINF) v += pacc[w][c] * __expf(pm[w] - mx);
		if (part) part[c] = v;
		else a.o[oo + (i64)row * a.dv + c] = v / tot;
	}
	if (part && lane == 0) {
		part[a.dv] = mx;
		part[a.dv + 1] = tot;
	}
}

// forge_attention_decode is forge_attention_rows for heads of 64 (d = dv
// = 64), written for latency: a decoder step's attention moves little data
// and is bound by how many dependent memory round trips each warp makes.
// Grid (n, batch, splits), DEC_WARPS warps per block; block z takes the
// z-th run of keys, each warp 32 keys at a time with one key per lane, and
// every load a lane needs for a tile is independent of the others (fully
// unrolled), so a tile costs about one round trip for the scores and one
// for the values. Values in rows (vc = 1) are read one row per key, each
// lane two columns; values stored transposed (Whisper's cross-attention
// keeps [dh, s]) are read coalesced along the keys, each lane accumulating
// its key's whole value row, and the warp transposes the sums through
// shared memory once at the end. Partial results go to a.part as in
// forge_attention_rows when splits > 1.
#define DEC_WARPS 4
#define DEC_D 64
extern "C" __global__ void __launch_bounds__(DEC_WARPS * 32) forge_attention_decode(AttnArgs a) {
	wait_inputs();
	__shared__ float q[DEC_D];
	__shared__ float red[DEC_WARPS][32][DEC_D + 1];
	__shared__ float pm[DEC_WARPS], pl[DEC_WARPS];
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int row = blockIdx.x;
	i64 qo, ko, vo, oo;
	const float* mask = batch_offsets(a, blockIdx.y, &qo, &ko, &vo, &oo);
	int per = (a.s + a.splits - 1) / a.splits;
	per = (per + 31) / 32 * 32;
	int kbeg = blockIdx.z * per, kend = min(a.s, kbeg + per);
	for (int c = threadIdx.x; c < DEC_D; c += blockDim.x) q[c] = a.q[qo + row * a.qr + c * a.qc];
	__syncthreads();
	bool vt = a.vc != 1;
	float acc[DEC_D];
#pragma unroll
	for (int c = 0; c < DEC_D; c++) acc[c] = 0;
	float m = -FINF, l = 0;
	for (int k0 = kbeg + warp * 32; k0 < kend; k0 += DEC_WARPS * 32) {
		int key = k0 + lane;
		bool live = key < kend;
		// Every load of the tile is issued before the arithmetic that
		// needs it, into registers, and none sits behind a branch: the
		// compiler then keeps them all in flight (one memory round trip)
		// instead of one or a few at a time.
		const float* kp = a.k + ko + (i64)(live ? key : k0) * a.kr;
		float kv[DEC_D];
		if (a.kc == 1 && ((unsigned long long)kp & 15) == 0) {
#pragma unroll
			for (int c = 0; c < DEC_D; c += 4) {
				float4 f = *(const float4*)(kp + c);
				kv[c] = f.x, kv[c + 1] = f.y, kv[c + 2] = f.z, kv[c + 3] = f.w;
			}
		} else {
#pragma unroll
			for (int c = 0; c < DEC_D; c++) kv[c] = kp[(i64)c * a.kc];
		}
		float dot = mask ? mask[row * a.mr + (i64)(live ? key : k0) * a.mc] : 0.f;
		float dots[4] = {0, 0, 0, 0};
#pragma unroll
		for (int c = 0; c < DEC_D; c++) dots[c & 3] = fmaf(q[c], kv[c], dots[c & 3]);
		float sc = live ? dot + ((dots[0] + dots[1]) + (dots[2] + dots[3])) : -FINF;
		float mn = fmaxf(m, warp_max(sc));
		if (mn == -FINF) continue;
		float p = live ? __expf(sc - mn) : 0.f;
		float corr = __expf(m - mn);
		l = l * corr + warp_sum(p);
		m = mn;
		if (vt) {
			const float* vp = a.v + vo + (i64)(live ? key : k0) * a.vr;
#pragma unroll
			for (int c = 0; c < DEC_D; c++) kv[c] = vp[(i64)c * a.vc];
#pragma unroll
			for (int c = 0; c < DEC_D; c++) acc[c] = fmaf(p, kv[c], acc[c] * corr);
		} else {
			// Lanes past the last key hold p = 0 and read the last key's
			// row, so the loop has no branch.
			int last = min(32, kend - k0) - 1;
			float v0[32], v1[32];
#pragma unroll
			for (int j = 0; j < 32; j++) {
				const float* vr = a.v + vo + (i64)(k0 + min(j, last)) * a.vr;
				v0[j] = vr[lane];
				v1[j] = vr[lane + 32];
			}
			acc[0] *= corr;
			acc[1] *= corr;
#pragma unroll
			for (int j = 0; j < 32; j++) {
				float pj = __shfl_sync(0xffffffffu, p, j);
				acc[0] = fmaf(pj, v0[j], acc[0]);
				acc[1] = fmaf(pj, v1[j], acc[1]);
			}
		}
	}
	float o0 = acc[0], o1 = acc[1];
	if (vt) {
#pragma unroll
		for (int c = 0; c < DEC_D; c++) red[warp][lane][c] = acc[c];
		__syncwarp();
		o0 = o1 = 0;
		for (int j = 0; j < 32; j++) {
			o0 += red[warp][j][lane];
			o1 += red[warp][j][lane + 32];
		}
		__syncwarp();
	}
	red[warp][0][lane] = o0;
	red[warp][0][lane + 32] = o1;
	if (lane == 0) {
		pm[warp] = m;
		pl[warp] = l;
	}
	__syncthreads();
	if (warp != 0) return;
	float mx = -FINF;
	for (int w = 0; w < DEC_WARPS; w++) mx = fmaxf(mx, pm[w]);
	float tot = 0, v0 = 0, v1 = 0;
	for (int w = 0; w < DEC_WARPS; w++) {
		if (pm[w] == -FINF) continue;
		float f = __expf(pm[w] - mx);
		tot += pl[w] * f;
		v0 += red[w][0][lane] * f;
		v1 += red[w][0][lane + 32] * f;
	}
	if (a.splits > 1) {
		float* part = split_parts(a, row) + blockIdx.z * (a.dv + 2);
		part[lane] = v0;
		part[lane + 32] = v1;
		if (lane == 0) {
			part[a.dv] = mx;
			part[a.dv + 1] = tot;
		}
		return;
	}
	a.o[oo + (i64)row * a.dv + lane] = v0 / tot;
	a.o[oo + (i64)row * a.dv + lane + 32] = v1 / tot;
}

// forge_attention_combine reduces forge_attention_rows' (and _decode's)
// partial results (combine_row): one warp per (batch, row); grid (n,
// batch); at most ATT_MAX_SPLITS splits.
extern "C" __global__ void forge_attention_combine(AttnArgs a) {
	wait_inputs();
	__shared__ float wz[ATT_MAX_SPLITS];
	int row = blockIdx.x;
	i64 qo, ko, vo, oo;
	batch_offsets(a, blockIdx.y, &qo, &ko, &vo, &oo);
	combine_row(split_parts(a, row), a.splits, a.dv, a.o + oo + (i64)row * a.dv, wz);
}

// ---------------------------------------------------------------------------
// Tensor-core attention (half-precision products)

// The tensor-core helpers take the half type as a template argument (BF:
// bfloat16, else float16), and each kernel branches once, at its top, into
// a body built for one type: a run-time flag tested beside every mma.sync
// split the kernels' unrolled loops into blocks the compiler could not
// interleave, so each chain of products waited on the one before.

// LOG2E_F is log2(e) rounded to float, the factor __expf applies.
#define LOG2E_F 1.4426950408889634f

// exp2_ftz is 2^x on the special function unit, results below 2^-126
// flushed to zero.
__device__ __forceinline__ float exp2_ftz(float x) {
	float y;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
	return y;
}

// pack2 packs two floats as two halves (x in the low half): an operand
// register of mma.sync.
template <bool BF>
__device__ __forceinline__ unsigned pack2(float x, float y) {
	unsigned lo = BF ? f32_to_bf16(x) : f32_to_f16(x);
	unsigned hi = BF ? f32_to_bf16(y) : f32_to_f16(y);
	return lo | (hi << 16);
}

// mma16816 is D = A·B + D for one 16×8×16 tile (f16 or bf16 inputs, f32
// accumulation), in the register layouts of the PTX ISA's m16n8k16.
template <bool BF>
__device__ __forceinline__ void mma16816(float* d, const unsigned* a, const unsigned* b) {
	if (BF) {
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
			: "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			: "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	} else {
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
			: "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			: "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	}
}

// shared_addr is the shared-memory address of p, as ldmatrix and cp.async
// take it.
__device__ __forceinline__ unsigned shared_addr(const void* p) {
	unsigned a;
	asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
	return a;
}

// ldsm_x4 loads four 8×8 matrices of 16-bit values from shared memory
// (ldmatrix.x4) at shared address a: lane l gives the address of row l % 8
// of matrix l / 8, a 16-byte-aligned run of 8 values, and receives in r[i]
// the two values of matrix i at row l / 4, columns 2(l % 4) and 2(l % 4) +
// 1, which is an mma.sync B fragment register when the matrix rows are B's
// columns.
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned a) {
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
}

#define TC_WARPS 4
#define TC_KEYS 32
#define TC_D 64
#define TC_KS 72 // halves per key row of a warp's key tile (64 + 8: no bank conflicts)
#define TC_VS 40 // halves per column of a warp's transposed value tile (32 + 8)

// Pieces the two tensor-core attention kernels share. A warp owns 16
// query rows: lane (g, q4) = (lane / 4, lane % 4) holds rows g and g + 8 of
// every fragment, as mma.sync.m16n8k16 lays them out.

// tc_load_q fills the warp's Q fragments (A operands, row-major) for the
// four 16-wide k-steps over d = 64, rows row0 … row0 + 15 (zero past n).
template <bool BF>
__device__ __forceinline__ void tc_load_q(unsigned (&qa)[4][4], const AttnArgs& a, i64 qo, int row0, int g, int q4) {
	for (int kk = 0; kk < 4; kk++)
		for (int h = 0; h < 2; h++)
			for (int half = 0; half < 2; half++) {
				int r = row0 + g + 8 * h, c = kk * 16 + half * 8 + q4 * 2;
				float x0 = 0, x1 = 0;
				if (r < a.n) {
					x0 = a.q[qo + r * a.qr + (i64)c * a.qc];
					x1 = a.q[qo + r * a.qr + (i64)(c + 1) * a.qc];
				}
				qa[kk][h + 2 * half] = pack2<BF>(x0, x1);
			}
}

// tc_convert_tile converts a tile of keys keys (tk of them real, from k0)
// into half precision: keys row-major into kt (ks halves apart), values
// transposed into vT (vs halves per column); threads first, first + step,
// … share the work, walking the axis that is contiguous in memory.
template <bool BF>
__device__ __forceinline__ void tc_convert_tile(unsigned short* kt, int ks, unsigned short* vT, int vs, const AttnArgs& a, i64 ko, i64 vo,
	int k0, int tk, int keys, int first, int step) {
	for (int e = first; e < keys * TC_D; e += step) {
		int j, c;
		if (a.kc == 1) j = e / TC_D, c = e % TC_D;
		else j = e % keys, c = e / keys;
		float x = j < tk ? a.k[ko + (i64)(k0 + j) * a.kr + (i64)c * a.kc] : 0.f;
		kt[j * ks + c] = BF ? f32_to_bf16(x) : f32_to_f16(x);
	}
	for (int e = first; e < keys * TC_D; e += step) {
		int j, c;
		if (a.vc == 1) j = e / TC_D, c = e % TC_D;
		else j = e % keys, c = e / keys;
		float x = j < tk ? a.v[vo + (i64)(k0 + j) * a.vr + (i64)c * a.vc] : 0.f;
		vT[c * vs + j] = BF ? f32_to_bf16(x) : f32_to_f16(x);
	}
}

// tc_tile runs one tile of 8·NT keys for the warp's rows: S = Q·Kᵀ from
// the half-precision key tile kt (keys row-major, ks halves apart), the
// mask and the tile's bound (tk keys from k0), the online softmax update
// of the running maxima m and sums l, and O += P·V from the transposed
// value tile vT (vs halves per column).
template <int NT, bool BF>
__device__ __forceinline__ void tc_tile(float (&o)[8][4], float (&m)[2], float (&l)[2], const unsigned (&qa)[4][4],
	const unsigned short* kt, int ks, const unsigned short* vT, int vs, const AttnArgs& a, const float* mask, int row0, int k0, int tk, int g, int q4) {
	// B fragments come four registers at a time by ldmatrix: lanes 8i …
	// 8i+7 address the rows of matrix i, the low and high 8 columns of one
	// 16-wide k-step (i = 0, 1) and of the next (i = 2, 3).
	const int lane = (g << 2) | q4;
	const int lr = lane & 7, lc = (lane >> 4) * 16 + ((lane >> 3) & 1) * 8;
	const unsigned ka = shared_addr(kt + lr * ks + lc), va = shared_addr(vT + lr * vs + lc);
	float sc[NT][4];
#pragma unroll
	for (int j = 0; j < NT; j++) {
		for (int t = 0; t < 4; t++) sc[j][t] = 0;
#pragma unroll
		for (int kk = 0; kk < 4; kk += 2) {
			unsigned b[4];
			ldsm_x4(b, ka + (j * 8 * ks + kk * 16) * 2);
			mma16816<BF>(sc[j], qa[kk], b);
			mma16816<BF>(sc[j], qa[kk + 1], b + 2);
		}
	}
	// Mask, bounds, online softmax for rows g (t = 0, 1) and g+8 (t = 2, 3).
	float mx[2] = {-FINF, -FINF};
	if (!mask && tk == 8 * NT) {
		// A whole tile without a mask (every tile of an encoder's but the
		// last): no test per score.
		for (int j = 0; j < NT; j++)
			for (int t = 0; t < 4; t++) mx[t >> 1] = fmaxf(mx[t >> 1], sc[j][t]);
	} else {
		for (int j = 0; j < NT; j++)
			for (int t = 0; t < 4; t++) {
				int key = j * 8 + q4 * 2 + (t & 1), h = t >> 1;
				int r = row0 + g + 8 * h;
				float v = sc[j][t];
				if (key >= tk) v = -FINF;
				else if (mask && r < a.n) v += mask[r * a.mr + (i64)(k0 + key) * a.mc];
				sc[j][t] = v;
				mx[h] = fmaxf(mx[h], v);
			}
	}
	float corr[2];
	for (int h = 0; h < 2; h++) {
		mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
		mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
		float mn = fmaxf(m[h], mx[h]);
		corr[h] = mn == -FINF ? 1.f : __expf(m[h] - mn);
		m[h] = mn;
	}
	// Each score's exponential is one fused multiply-add (the score in
	// base 2 less the row's maximum in base 2, -m·log2 e, found once a row)
	// and one ex2 with denormal results flushed: __expf's handling of
	// denormals and the test for a row with no score yet had made the
	// compiler keep a predicate per score in a register's bits, three times
	// the instructions of the exponential itself. A row's maximum is taken
	// as at least -1e30: so -m·log2 e stays finite where the tile hides
	// every key of the row with a mask of -FLT_MAX (Whisper's causal mask)
	// or -inf (no score yet), and those scores get exp 0 rather than 1
	// (any later score of the row rescales them by 0 anyway). A value below
	// 2^-126 is zero in the half-precision P.
	float ms[2];
	for (int h = 0; h < 2; h++) ms[h] = -fmaxf(m[h], -1e30f) * LOG2E_F;
	float rs[2] = {0, 0};
	for (int j = 0; j < NT; j++)
		for (int t = 0; t < 4; t++) {
			int h = t >> 1;
			sc[j][t] = exp2_ftz(fmaf(sc[j][t], LOG2E_F, ms[h]));
			rs[h] += sc[j][t];
		}
	for (int h = 0; h < 2; h++) {
		rs[h] += __shfl_xor_sync(0xffffffffu, rs[h], 1);
		rs[h] += __shfl_xor_sync(0xffffffffu, rs[h], 2);
		l[h] = l[h] * corr[h] + rs[h];
	}
	for (int j = 0; j < 8; j++) {
		o[j][0] *= corr[0];
		o[j][1] *= corr[0];
		o[j][2] *= corr[1];
		o[j][3] *= corr[1];
	}
	// O += P·V: the score tiles become A fragments, k-steps of 16 keys.
	unsigned pa[NT / 2][4];
#pragma unroll
	for (int t2 = 0; t2 < NT / 2; t2++) {
		pa[t2][0] = pack2<BF>(sc[2 * t2][0], sc[2 * t2][1]);
		pa[t2][1] = pack2<BF>(sc[2 * t2][2], sc[2 * t2][3]);
		pa[t2][2] = pack2<BF>(sc[2 * t2 + 1][0], sc[2 * t2 + 1][1]);
		pa[t2][3] = pack2<BF>(sc[2 * t2 + 1][2], sc[2 * t2 + 1][3]);
	}
#pragma unroll
	for (int j = 0; j < 8; j++) {
#pragma unroll
		for (int t2 = 0; t2 < NT / 2; t2 += 2) {
			unsigned b[4];
			ldsm_x4(b, va + (j * 8 * vs + t2 * 16) * 2);
			mma16816<BF>(o[j], pa[t2], b);
			mma16816<BF>(o[j], pa[t2 + 1], b + 2);
		}
	}
}

// Many query rows (an encoder's): keys and values converted once, then
// streamed into shared memory by cp.async.
//
// forge_attention_tc64, before these, converted each 64-key tile from
// float32 in every block, so for 1,500 keys and rows each head's keys and
// values were read and converted 24 times, and its transposing stores
// into shared memory hit the same banks: 139 µs a layer for one 30-s
// window with 6 heads, 2.3 ms for 32 windows (H100), a fifth of what the
// products' tensor cores allow.

#define TQ_ROWS 64
#define TQ_KEYS 64
#define TQ_KS 72 // halves per key row of a key tile (64 + 8: no bank conflicts)
#define TQ_VS 72 // halves per d row of a transposed value tile (64 + 8)

// forge_attention_kv_half writes the half-precision copies the flash kernel
// streams: per batch element b, keys [sp][64] row-major at kh + b·sp·64 and
// values transposed, [64][sp], at kh + (batch + b)·sp·64, where sp is the
// key count rounded up to a whole tile of 64 keys (so every 8-key run of
// a transposed row is one aligned 16-byte word, and no tile's load needs a
// bound) and the padding is zero. Grid (sp / 64, batch), 256 threads: a
// block transposes its 64 keys' values through shared memory so both
// reads and writes run along memory.
extern "C" __global__ void __launch_bounds__(256) forge_attention_kv_half(AttnArgs a, unsigned short* kh, int sp, int bf16) {
	__shared__ unsigned short vt[64 * 66]; // [d][key], 66 halves apart: 33 words, a bank per d
	i64 qo, ko, vo, oo;
	batch_offsets(a, blockIdx.y, &qo, &ko, &vo, &oo);
	int k0 = blockIdx.x * 64;
	unsigned short* kd = kh + (i64)blockIdx.y * sp * 64;
	unsigned short* vd = kh + ((i64)gridDim.y + blockIdx.y) * sp * 64;
	const float* kg = a.k + ko;
	const float* vg = a.v + vo;
	if (a.kc == 1 && a.vc == 1 && ((a.kr | a.vr) & 3) == 0 && (((size_t)kg | (size_t)vg) & 15) == 0) {
		// Rows of keys and values that are whole 16-byte words (an
		// encoder's, from its products): four floats a load and four
		// halves a store, and the transposed values leave shared memory a
		// word of two keys at a time, a warp to a row of 64. Two bytes a
		// store had made this copy 7.3 µs a layer for one 30-s window
		// (H100), a third of the HBM's rate for its 7 MB.
		auto half = [&](float x) { return bf16 ? f32_to_bf16(x) : f32_to_f16(x); };
		float4 x[4], y[4];
#pragma unroll
		for (int u = 0; u < 4; u++) {
			int e = threadIdx.x + u * 256, j = e >> 4, c = (e & 15) * 4, key = k0 + j;
			float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
			x[u] = key < a.s ? *(const float4*)(kg + (i64)key * a.kr + c) : z;
			y[u] = key < a.s ? *(const float4*)(vg + (i64)key * a.vr + c) : z;
		}
#pragma unroll
		for (int u = 0; u < 4; u++) {
			int e = threadIdx.x + u * 256, j = e >> 4, c = (e & 15) * 4;
			uint2 w;
			w.x = half(x[u].x) | (unsigned)half(x[u].y) << 16;
			w.y = half(x[u].z) | (unsigned)half(x[u].w) << 16;
			*(uint2*)(kd + (i64)(k0 + j) * 64 + c) = w;
			vt[c * 66 + j] = half(y[u].x);
			vt[(c + 1) * 66 + j] = half(y[u].y);
			vt[(c + 2) * 66 + j] = half(y[u].z);
			vt[(c + 3) * 66 + j] = half(y[u].w);
		}
		__syncthreads();
		const unsigned* vw = (const unsigned*)vt;
		int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
		for (int c = warp; c < 64; c += 8) ((unsigned*)(vd + (i64)c * sp + k0))[lane] = vw[c * 33 + lane];
		return;
	}
	// Every load of the tile is issued before the first store (a loop that
	// stored as it loaded waited on each load in turn: 14 µs for a layer's
	// 6 heads × 1,500 keys).
	float x[16], y[16];
#pragma unroll
	for (int u = 0; u < 16; u++) {
		int e = threadIdx.x + u * 256, j = e >> 6, c = e & 63, key = k0 + j;
		x[u] = key < a.s ? a.k[ko + (i64)key * a.kr + (i64)c * a.kc] : 0.f;
		y[u] = key < a.s ? a.v[vo + (i64)key * a.vr + (i64)c * a.vc] : 0.f;
	}
#pragma unroll
	for (int u = 0; u < 16; u++) {
		int e = threadIdx.x + u * 256, j = e >> 6, c = e & 63, key = k0 + j;
		if (key < sp) kd[(i64)key * 64 + c] = bf16 ? f32_to_bf16(x[u]) : f32_to_f16(x[u]);
		vt[c * 66 + j] = bf16 ? f32_to_bf16(y[u]) : f32_to_f16(y[u]);
	}
	__syncthreads();
	for (int e = threadIdx.x; e < 64 * 64; e += blockDim.x) {
		int c = e >> 6, j = e & 63, key = k0 + j;
		if (key < sp) vd[(i64)c * sp + key] = vt[c * 66 + j];
	}
}

// cp_async16 starts a copy of 16 bytes from global memory to a
// shared-memory address (shared_addr's) that does not wait for the data.
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}

// group_sync waits for the threads of one group of warps at named barrier
// id (0 is __syncthreads' own, which a one-group block uses).
__device__ __forceinline__ void group_sync(int id, int threads) {
	asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// FA_GROUP is one group's shared memory: the double-buffered key tile and
// transposed value tile, in halves.
#define FA_GROUP (2 * (TQ_KEYS * TQ_KS + TC_D * TQ_VS))

// forge_attention_fa is forge_attention_tc for many query rows: grid
// (ceil(n/64), batch), four warps of 16 query rows each that share every
// 64-key tile of the half-precision copies forge_attention_kv_half wrote
// (kh, sp as there). Tiles arrive by cp.async into two buffers, the next
// while the block computes on the current one, and no partial results
// need combining. The entry point asks for three blocks an SM (at most 170
// registers a thread): at the 243 the compiler chose, two fitted, each
// scheduler had two warps to pick from, and the kernel was bound by the
// latency of each warp's chain of instructions (32 windows on an H100:
// 961 → 837 µs a layer, without spills).
//
// attention_fa_run is one group's pass, W warps of 16 rows, over tiles
// [t0, t1) of the keys, leaving its rows' output, maxima and sums in o, m
// and l; smem is the group's FA_GROUP halves, and bar its named barrier.
template <int W, bool BF>
__device__ __forceinline__ void attention_fa_run(const AttnArgs& a, const unsigned short* kh, int sp, unsigned short* smem, int bar, int t0, int t1,
	const unsigned (&qa)[4][4], float (&o)[8][4], float (&m)[2], float (&l)[2], const float* mask, int row0, int g, int q4) {
	unsigned short* kt = smem;                       // [2][TQ_KEYS * TQ_KS]
	unsigned short* vT = smem + 2 * TQ_KEYS * TQ_KS; // [2][TC_D * TQ_VS]
	const unsigned short* kg = kh + (i64)blockIdx.y * sp * 64;
	const unsigned short* vg = kh + ((i64)gridDim.y + blockIdx.y) * sp * 64;
	// A tile is 64 rows of 128 bytes for each of K and Vᵀ: 512 words of 16
	// bytes each. A thread of the group's 32·W copies column ch of rows r,
	// r + 4W, r + 8W, … The copies hold whole tiles (sp is a multiple of
	// 64), so no load needs a bound but the rows', and a thread's addresses
	// move by a fixed step from tile to tile: bounds and addresses computed
	// per load had been a fifth of the instructions a tile issued (H100,
	// ncu).
	constexpr int step = 4 * W, loads = (64 + step - 1) / step;
	const int tid = threadIdx.x % (32 * W);
	const int r = tid >> 3, ch = (tid & 7) * 8;
	const unsigned short* kp = kg + r * 64 + ch;
	const unsigned short* vp = vg + (i64)r * sp + ch;
	const i64 vrows = (i64)step * sp;
	const unsigned kd = shared_addr(kt + r * TQ_KS + ch), vd = shared_addr(vT + r * TQ_VS + ch);
	auto load = [&](int st, int t) {
		const unsigned short* k = kp + (i64)t * TQ_KEYS * 64;
		const unsigned short* v = vp + t * TQ_KEYS;
#pragma unroll
		for (int u = 0; u < loads; u++) {
			if (64 % step == 0 || r + u * step < 64) {
				cp_async16(kd + (st * TQ_KEYS * TQ_KS + u * step * TQ_KS) * 2, k + u * step * 64);
				cp_async16(vd + (st * TC_D * TQ_VS + u * step * TQ_VS) * 2, v + u * vrows);
			}
		}
		asm volatile("cp.async.commit_group;" ::: "memory");
	};
	if (t0 >= t1) return;
	load(0, t0);
	for (int t = t0; t < t1; t++) {
		int k0 = t * TQ_KEYS, st = (t - t0) & 1;
		if (t + 1 < t1) {
			load(st ^ 1, t + 1);
			asm volatile("cp.async.wait_group 1;" ::: "memory");
		} else {
			asm volatile("cp.async.wait_group 0;" ::: "memory");
		}
		group_sync(bar, 32 * W);
		tc_tile<8, BF>(o, m, l, qa, kt + st * TQ_KEYS * TQ_KS, TQ_KS, vT + st * TC_D * TQ_VS, TQ_VS, a, mask, row0, k0, min(TQ_KEYS, a.s - k0), g, q4);
		group_sync(bar, 32 * W); // this buffer is loaded again two tiles on
	}
}

// attention_fa runs the block's G groups of W warps (G·32W threads) over
// equal runs of the key tiles for the same 16·W query rows, then combines
// their partial rows through shared memory: group 0 weighs each group's
// output and sum by the exponential of its maximum's distance from the
// largest, as forge_attention_combine does between blocks, and stores the
// result. One group is the kernel as it was; G is a template argument so
// that its kernel has none of the combine's code.
template <int W, int G, bool BF>
__device__ __forceinline__ void attention_fa(const AttnArgs& a, const unsigned short* kh, int sp, unsigned short* smem) {
	constexpr int groups = G;
	const int grp = threadIdx.x / (32 * W);
	int warp = (threadIdx.x >> 5) % W, lane = threadIdx.x & 31;
	int g = lane >> 2, q4 = lane & 3;
	int row0 = blockIdx.x * 16 * W + warp * 16;
	i64 qo, ko, vo, oo;
	const float* mask = batch_offsets(a, blockIdx.y, &qo, &ko, &vo, &oo);
	unsigned qa[4][4];
	tc_load_q<BF>(qa, a, qo, row0, g, q4);
	float o[8][4];
	for (int j = 0; j < 8; j++)
		for (int t = 0; t < 4; t++) o[j][t] = 0;
	float m[2] = {-FINF, -FINF}, l[2] = {0, 0};
	int tiles = (a.s + TQ_KEYS - 1) / TQ_KEYS, per = (tiles + groups - 1) / groups;
	attention_fa_run<W, BF>(a, kh, sp, smem + grp * FA_GROUP, groups == 1 ? 0 : 1 + grp, min(tiles, grp * per), min(tiles, (grp + 1) * per), qa, o, m, l, mask, row0, g, q4);
	if (groups > 1) {
		// A group's partial rows go into its own tile buffers (4.5 KB a
		// warp of its 36 KB), lane-major so that the stores and group 0's
		// loads touch 32 banks: element e of the lane's fragments at
		// [e][lane], then the maxima and the sums.
		auto part = [&](int p) { return (float*)(smem + p * FA_GROUP) + warp * 36 * 32 + lane; };
		if (grp > 0) {
			float* q = part(grp);
			for (int j = 0; j < 8; j++)
				for (int t = 0; t < 4; t++) q[(j * 4 + t) * 32] = o[j][t];
			for (int h = 0; h < 2; h++) {
				q[(32 + h) * 32] = m[h];
				q[(34 + h) * 32] = l[h];
			}
		}
		__syncthreads();
		if (grp > 0) return;
		for (int h = 0; h < 2; h++) {
			float M = m[h];
			for (int p = 1; p < groups; p++) M = fmaxf(M, part(p)[(32 + h) * 32]);
			float f = m[h] == -FINF ? 0.f : __expf(m[h] - M);
			l[h] *= f;
			for (int j = 0; j < 8; j++) o[j][2 * h] *= f, o[j][2 * h + 1] *= f;
			for (int p = 1; p < groups; p++) {
				const float* q = part(p);
				float mp = q[(32 + h) * 32];
				float fp = mp == -FINF ? 0.f : __expf(mp - M);
				l[h] += q[(34 + h) * 32] * fp;
				for (int j = 0; j < 8; j++) {
					o[j][2 * h] += q[(j * 4 + 2 * h) * 32] * fp;
					o[j][2 * h + 1] += q[(j * 4 + 2 * h + 1) * 32] * fp;
				}
			}
		}
	}
	for (int j = 0; j < 8; j++)
		for (int t = 0; t < 4; t++) {
			int h = t >> 1, r = row0 + g + 8 * h, c = j * 8 + q4 * 2 + (t & 1);
			if (r < a.n) a.o[oo + (i64)r * a.dv + c] = o[j][t] / l[h];
		}
}

extern "C" __global__ void __launch_bounds__(128, 3) forge_attention_fa(AttnArgs a, const unsigned short* kh, int sp, int bf16) {
	__shared__ __align__(16) unsigned short smem[FA_GROUP];
	if (bf16) attention_fa<4, 1, true>(a, kh, sp, smem);
	else attention_fa<4, 1, false>(a, kh, sp, smem);
}

// forge_attention_fa_split is forge_attention_fa for grids of too few
// blocks to give each scheduler more than one warp (one 30-s window: 144
// blocks of 64 rows on 132 SMs): blocks of 48 rows whose two groups of
// three warps take half the keys each (FA_SPLIT_SHARED bytes of dynamic
// shared memory), two blocks an SM at the same 170 registers a thread,
// so twice the warps in one wave. Splitting the keys between blocks
// instead had cost a combine kernel more than it saved.
#define FA_SPLIT_SHARED (2 * FA_GROUP * 2)
extern "C" __global__ void __launch_bounds__(192, 2) forge_attention_fa_split(AttnArgs a, const unsigned short* kh, int sp, int bf16) {
	extern __shared__ __align__(16) unsigned short fa_smem[];
	if (bf16) attention_fa<3, 2, true>(a, kh, sp, fa_smem);
	else attention_fa<3, 2, false>(a, kh, sp, fa_smem);
}

// forge_attention_tc is forge_attention for heads of d = dv = 64 with the
// two products on tensor cores (operands rounded to f16 or bf16, scores and
// sums in f32): grid (ceil(n/16), batch), four warps per block that share
// 16 query rows and split the keys (warp w takes tiles w, w+4, …), so even
// one short window keeps every SM busy. Each warp converts its 32-key tile
// to half precision in its own shared memory (keys row-major, values
// transposed, so every mma operand is one 32-bit load), keeps its 16×32
// scores and 16×64 output in registers with an online softmax per row, and
// the four partial results are combined at the end.
template <bool BF>
__device__ __forceinline__ void attention_tc(const AttnArgs& a, unsigned char* smem) {
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int g = lane >> 2, q4 = lane & 3;
	int row0 = blockIdx.x * 16;
	unsigned short* kt = (unsigned short*)smem + warp * (TC_KEYS * TC_KS + TC_D * TC_VS);
	unsigned short* vT = kt + TC_KEYS * TC_KS;
	i64 qo, ko, vo, oo;
	const float* mask = batch_offsets(a, blockIdx.y, &qo, &ko, &vo, &oo);
	// Q fragments for the four k-steps over d (A operand, row-major).
	unsigned qa[4][4];
	tc_load_q<BF>(qa, a, qo, row0, g, q4);
	float o[8][4];
	for (int j = 0; j < 8; j++)
		for (int t = 0; t < 4; t++) o[j][t] = 0;
	float m[2] = {-FINF, -FINF}, l[2] = {0, 0};
	for (int k0 = warp * TC_KEYS; k0 < a.s; k0 += TC_WARPS * TC_KEYS) {
		int tk = min(TC_KEYS, a.s - k0);
		__syncwarp();
		// The warp's tile, converted as it loads.
		tc_convert_tile<BF>(kt, TC_KS, vT, TC_VS, a, ko, vo, k0, tk, TC_KEYS, lane, 32);
		__syncwarp();
		tc_tile<4, BF>(o, m, l, qa, kt, TC_KS, vT, TC_VS, a, mask, row0, k0, tk, g, q4);
	}
	// Combine the four warps' partial rows: (max, sum, output) per row.
	__syncthreads();
	float* co = (float*)smem;                 // [4 warps][16 rows][64]
	float* cm = co + TC_WARPS * 16 * TC_D;    // [4][16]
	float* cl = cm + TC_WARPS * 16;           // [4][16]
	for (int j = 0; j < 8; j++)
		for (int t = 0; t < 4; t++) {
			int h = t >> 1, r = g + 8 * h, c = j * 8 + q4 * 2 + (t & 1);
			co[(warp * 16 + r) * TC_D + c] = o[j][t];
		}
	if (q4 == 0) {
		for (int h = 0; h < 2; h++) {
			cm[warp * 16 + g + 8 * h] = m[h];
			cl[warp * 16 + g + 8 * h] = l[h];
		}
	}
	__syncthreads();
	for (int e = threadIdx.x; e < 16 * TC_D; e += blockDim.x) {
		int r = e / TC_D, c = e % TC_D;
		if (row0 + r >= a.n) continue;
		float M = -FINF;
		for (int w = 0; w < TC_WARPS; w++) M = fmaxf(M, cm[w * 16 + r]);
		float L = 0, v = 0;
		for (int w = 0; w < TC_WARPS; w++) {
			float mw = cm[w * 16 + r];
			if (mw == -FINF) continue;
			float f = __expf(mw - M);
			L += cl[w * 16 + r] * f;
			v += co[(w * 16 + r) * TC_D + c] * f;
		}
		a.o[oo + (i64)(row0 + r) * a.dv + c] = v / L;
	}
}

extern "C" __global__ void forge_attention_tc(AttnArgs a, int bf16) {
	__shared__ __align__(16) unsigned char smem[TC_WARPS * (TC_KEYS * TC_KS + TC_D * TC_VS) * 2];
	if (bf16) attention_tc<true>(a, smem);
	else attention_tc<false>(a, smem);
}
