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
// there; only their order differs.
template <int K>
__device__ __forceinline__ void layer_norm_warp(const float* xr, const float* w, const float* b, float* yr, int n, float eps, int lane) {
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
		((float4*)yr)[j] = o;
	}
}

extern "C" __global__ void __launch_bounds__(256) forge_layer_norm_warp(const float* x, const float* w, const float* b, float* y, i64 rows, int n, float eps) {
	int lane = threadIdx.x & 31;
	i64 r = (i64)blockIdx.x * 8 + (threadIdx.x >> 5);
	if (r >= rows) return; // the whole warp: its shuffles see no absent lane
	const float* xr = x + r * n;
	float* yr = y + r * n;
	switch (n >> 7) {
	case 1: layer_norm_warp<1>(xr, w, b, yr, n, eps, lane); break;
	case 2: layer_norm_warp<2>(xr, w, b, yr, n, eps, lane); break;
	case 3: layer_norm_warp<3>(xr, w, b, yr, n, eps, lane); break;
	case 4: layer_norm_warp<4>(xr, w, b, yr, n, eps, lane); break;
	case 5: layer_norm_warp<5>(xr, w, b, yr, n, eps, lane); break;
	case 6: layer_norm_warp<6>(xr, w, b, yr, n, eps, lane); break;
	case 7: layer_norm_warp<7>(xr, w, b, yr, n, eps, lane); break;
	default: layer_norm_warp<8>(xr, w, b, yr, n, eps, lane); break;
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
	float* part = a.splits > 1 ? a.part + (((i64)blockIdx.y * a.n + row) * a.splits + blockIdx.z) * (a.dv + 2) : 0;
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
		float* part = a.part + (((i64)blockIdx.y * a.n + row) * a.splits + blockIdx.z) * (a.dv + 2);
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
	combine_row(a.part + ((i64)blockIdx.y * a.n + row) * a.splits * (a.dv + 2), a.splits, a.dv, a.o + oo + (i64)row * a.dv, wz);
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
// its writes run along memory.
extern "C" __global__ void forge_transpose(const float* x, float* y, int rows, int cols, i64 ldx, i64 ldy) {
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

// ---------------------------------------------------------------------------
// Tensor-core attention (half-precision products)

// The tensor-core helpers take the half type as a template argument (BF:
// bfloat16, else float16), and each kernel branches once, at its top, into
// a body built for one type: a run-time flag tested beside every mma.sync
// split the kernels' unrolled loops into blocks the compiler could not
// interleave, so each chain of products waited on the one before.

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
	float rs[2] = {0, 0};
	for (int j = 0; j < NT; j++)
		for (int t = 0; t < 4; t++) {
			int h = t >> 1;
			sc[j][t] = m[h] == -FINF ? 0.f : __expf(sc[j][t] - m[h]);
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
// key count rounded up to 8 (so every 8-key run of a transposed row is one
// aligned 16-byte word) and the padding is zero. Grid (ceil(sp / 64),
// batch), 256 threads: a block transposes its 64 keys' values through
// shared memory so both reads and writes run along memory.
extern "C" __global__ void __launch_bounds__(256) forge_attention_kv_half(AttnArgs a, unsigned short* kh, int sp, int bf16) {
	__shared__ unsigned short vt[64 * 66]; // [d][key], 66 halves apart: 33 words, a bank per d
	i64 qo, ko, vo, oo;
	batch_offsets(a, blockIdx.y, &qo, &ko, &vo, &oo);
	int k0 = blockIdx.x * 64;
	unsigned short* kd = kh + (i64)blockIdx.y * sp * 64;
	unsigned short* vd = kh + ((i64)gridDim.y + blockIdx.y) * sp * 64;
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

// cp_async16 starts a copy of 16 bytes from global to shared memory that
// does not wait for the data; with full false it writes 16 zero bytes and
// reads nothing (src must still be a valid address).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool full) {
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared_addr(dst)), "l"(src), "r"(full ? 16 : 0) : "memory");
}

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
template <bool BF>
__device__ __forceinline__ void attention_fa(const AttnArgs& a, const unsigned short* kh, int sp, unsigned short (*kt)[TQ_KEYS * TQ_KS], unsigned short (*vT)[TC_D * TQ_VS]) {
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int g = lane >> 2, q4 = lane & 3;
	int row0 = blockIdx.x * TQ_ROWS + warp * 16;
	i64 qo, ko, vo, oo;
	const float* mask = batch_offsets(a, blockIdx.y, &qo, &ko, &vo, &oo);
	const unsigned short* kg = kh + (i64)blockIdx.y * sp * 64;
	const unsigned short* vg = kh + ((i64)gridDim.y + blockIdx.y) * sp * 64;
	// A tile is 64 rows of 128 bytes for each of K and Vᵀ: 512 words of 16
	// bytes each, four per thread.
	auto load = [&](int st, int k0) {
#pragma unroll
		for (int u = 0; u < 4; u++) {
			int e = threadIdx.x + u * 128, r = e >> 3, ch = (e & 7) * 8;
			int key = k0 + r, kk = k0 + ch;
			cp_async16(&kt[st][r * TQ_KS + ch], kg + (i64)min(key, sp - 1) * 64 + ch, key < sp);
			cp_async16(&vT[st][r * TQ_VS + ch], vg + (i64)r * sp + min(kk, sp - 8), kk < sp);
		}
		asm volatile("cp.async.commit_group;" ::: "memory");
	};
	unsigned qa[4][4];
	tc_load_q<BF>(qa, a, qo, row0, g, q4);
	float o[8][4];
	for (int j = 0; j < 8; j++)
		for (int t = 0; t < 4; t++) o[j][t] = 0;
	float m[2] = {-FINF, -FINF}, l[2] = {0, 0};
	int tiles = (a.s + TQ_KEYS - 1) / TQ_KEYS;
	load(0, 0);
	for (int t = 0; t < tiles; t++) {
		int k0 = t * TQ_KEYS;
		if (t + 1 < tiles) {
			load((t + 1) & 1, k0 + TQ_KEYS);
			asm volatile("cp.async.wait_group 1;" ::: "memory");
		} else {
			asm volatile("cp.async.wait_group 0;" ::: "memory");
		}
		__syncthreads();
		tc_tile<8, BF>(o, m, l, qa, kt[t & 1], TQ_KS, vT[t & 1], TQ_VS, a, mask, row0, k0, min(TQ_KEYS, a.s - k0), g, q4);
		__syncthreads(); // this buffer is loaded again two tiles on
	}
	for (int j = 0; j < 8; j++)
		for (int t = 0; t < 4; t++) {
			int h = t >> 1, r = row0 + g + 8 * h, c = j * 8 + q4 * 2 + (t & 1);
			if (r < a.n) a.o[oo + (i64)r * a.dv + c] = o[j][t] / l[h];
		}
}

extern "C" __global__ void __launch_bounds__(128, 3) forge_attention_fa(AttnArgs a, const unsigned short* kh, int sp, int bf16) {
	__shared__ __align__(16) unsigned short kt[2][TQ_KEYS * TQ_KS];
	__shared__ __align__(16) unsigned short vT[2][TC_D * TQ_VS];
	if (bf16) attention_fa<true>(a, kh, sp, kt, vT);
	else attention_fa<false>(a, kh, sp, kt, vT);
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
