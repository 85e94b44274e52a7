package cublaslt

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/tensorforge/forge/kernels/cuda/driver"
	"github.com/tensorforge/forge/kernels/cuda/internal/dl"
)

func TestErrorFormat(t *testing.T) {
	err := fmt.Errorf("matmul: %w", &Error{Call: "cublasLtMatmul", Status: StatusNotSupported, Msg: "the functionality requested is not supported"})
	if got, want := err.Error(), "matmul: cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED (15): the functionality requested is not supported"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if !errors.Is(err, StatusNotSupported) || errors.Is(err, StatusInvalidValue) {
		t.Errorf("errors.Is does not match the status")
	}
	tests := []struct {
		s    Status
		want string
	}{
		{StatusSuccess, "CUBLAS_STATUS_SUCCESS"},
		{StatusExecutionFailed, "CUBLAS_STATUS_EXECUTION_FAILED"},
		{42, "cublasStatus_t(42)"},
	}
	for _, tt := range tests {
		if got := tt.s.Name(); got != tt.want {
			t.Errorf("Status(%d).Name() = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestLibrarySearchOrder(t *testing.T) {
	spec := librarySpec()
	if spec.Env != "FORGE_CUBLASLT" {
		t.Fatalf("override variable %q", spec.Env)
	}
	got := spec.Candidates(func(string) string { return "" })
	want := []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "/usr/local/cuda/lib64/libcublasLt.so.13"}
	if fmt.Sprint(got[:4]) != fmt.Sprint(want) {
		t.Errorf("first candidates %v, want %v", got[:4], want)
	}
	if got := spec.Candidates(func(string) string { return "/x/libcublasLt.so" }); fmt.Sprint(got) != "[/x/libcublasLt.so]" {
		t.Errorf("with the override: %v", got)
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := load(dl.Spec{Names: []string{"libforge-no-cublaslt.so.99"}})
	if !errors.Is(err, ErrNotFound) || err.Error() != "libcublasLt not found: tried libforge-no-cublaslt.so.99 (none exists)" {
		t.Errorf("error %v", err)
	}
}

// TestLoadedLibrary checks the bindings against whatever cuBLASLt this
// machine has (none in CI: it skips).
func TestLoadedLibrary(t *testing.T) {
	l, err := Load()
	if err != nil {
		t.Skipf("no cuBLASLt: %v", err)
	}
	t.Logf("%s: version %d", l.Path, l.Version())
	if l.Version() < 110000 {
		t.Errorf("version %d", l.Version())
	}
	if s := l.StatusString(StatusNotSupported); s == "" {
		t.Error("no status string for CUBLAS_STATUS_NOT_SUPPORTED")
	}
}

func TestHeuristicResultLayout(t *testing.T) {
	var r heuristicResult
	if unsafe.Sizeof(r) != 96 || unsafe.Offsetof(r.workspaceSize) != 64 || unsafe.Offsetof(r.state) != 72 || unsafe.Offsetof(r.wavesCount) != 76 {
		t.Errorf("heuristicResult: size %d, offsets %d %d %d; want cublasLt.h's 96, 64 72 76",
			unsafe.Sizeof(r), unsafe.Offsetof(r.workspaceSize), unsafe.Offsetof(r.state), unsafe.Offsetof(r.wavesCount))
	}
}

func TestAlignment(t *testing.T) {
	tests := []struct {
		addr   driver.DevicePtr
		stride int64
		want   uint32
	}{
		{0x7f0000000000, 0, 256},
		{0x7f0000000010, 0, 16},
		{0x7f0000000002, 0, 2},
		{0x7f0000000000, 4 * 33, 4},
		{0x7f0000000000, 2 * 64, 128},
		{0x7f0000000400, 1 << 20, 256},
	}
	for _, tt := range tests {
		if got := alignment(tt.addr, tt.stride); got != tt.want {
			t.Errorf("alignment(%#x, %d) = %d, want %d", tt.addr, tt.stride, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := GEMM{M: 4, N: 5, K: 6, A: 256, B: 512, C: 768, In: F32, Out: F32}
	tests := []struct {
		name string
		edit func(*GEMM)
		want string // "" for valid
	}{
		{"valid", func(*GEMM) {}, ""},
		{"half in, f32 out", func(g *GEMM) { g.In = F16 }, ""},
		{"bf16 in and out", func(g *GEMM) { g.In, g.Out = BF16, BF16 }, ""},
		{"zero K", func(g *GEMM) { g.K = 0 }, "must be positive"},
		{"no C", func(g *GEMM) { g.C = 0 }, "device addresses"},
		{"f16 in bf16 out", func(g *GEMM) { g.In, g.Out = F16, BF16 }, "output type bf16 with input f16"},
		{"f32 in f16 out", func(g *GEMM) { g.Out = F16 }, "output type f16 with input f32"},
		{"tf32 on halves", func(g *GEMM) { g.In, g.TF32 = F16, true }, "TF32 needs f32"},
		{"short lda", func(g *GEMM) { g.LDA = 5 }, "leading dimension of A is 5, less than its 6 columns"},
		{"short lda transposed", func(g *GEMM) { g.TransA, g.LDA = true, 3 }, "leading dimension of A is 3, less than its 4 columns"},
		{"short ldc", func(g *GEMM) { g.LDC = 4 }, "leading dimension of C"},
		{"batched C without stride", func(g *GEMM) { g.Batch, g.StrideA, g.StrideB = 2, 24, 30 }, "non-zero StrideC"},
		{"overlapping outputs", func(g *GEMM) { g.Batch, g.StrideA, g.StrideB, g.StrideC = 2, 24, 30, 19 }, "batch stride of C (19) overlaps"},
		{"interleaved inputs", func(g *GEMM) { g.Batch, g.StrideA, g.StrideB, g.StrideC = 2, 6, 5, 20 }, ""},
		{"broadcast B", func(g *GEMM) { g.Batch, g.StrideA, g.StrideC = 3, 24, 20 }, ""},
		{"workspace size without memory", func(g *GEMM) { g.WorkspaceBytes = 1024 }, "WorkspaceBytes without a Workspace"},
	}
	for _, tt := range tests {
		g := ok
		tt.edit(&g)
		err := g.validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

// ltSim computes what cuBLASLt computes for the column-major problem p
// (D = alpha·op(A)·op(B) + beta·C + bias over D's rows), on host slices
// standing for device memory: a, b and c are indexed by element offsets
// from the pointers p names.
func ltSim(t *testing.T, p ltProblem, batch int, k int, alpha, beta float64, a, b, c, bias []float64) {
	t.Helper()
	m, n := int(p.c.rows), int(p.c.cols)
	// Each operand's layout must agree with its op and the product's
	// m, n, k, as cuBLASLt requires.
	ar, ac := int(p.a.rows), int(p.a.cols)
	if p.transA {
		ar, ac = ac, ar
	}
	br, bc := int(p.b.rows), int(p.b.cols)
	if p.transB {
		br, bc = bc, br
	}
	if ar != m || ac != k || br != k || bc != n {
		t.Fatalf("inconsistent layouts: op(A) %dx%d, op(B) %dx%d for m=%d n=%d k=%d", ar, ac, br, bc, m, n, k)
	}
	for bi := range batch {
		oa, ob, oc := bi*int(p.a.stride), bi*int(p.b.stride), bi*int(p.c.stride)
		for j := range n {
			for i := range m {
				var s float64
				for l := range k {
					var x, y float64
					if p.transA {
						x = a[oa+l+i*int(p.a.ld)]
					} else {
						x = a[oa+i+l*int(p.a.ld)]
					}
					if p.transB {
						y = b[ob+j+l*int(p.b.ld)]
					} else {
						y = b[ob+l+j*int(p.b.ld)]
					}
					s += x * y
				}
				d := &c[oc+i+j*int(p.c.ld)]
				*d = alpha*s + beta**d
				if bias != nil {
					*d += bias[i]
				}
			}
		}
	}
}

// TestRowMajorMapping checks, without a GPU, that the column-major problem
// handed to cuBLASLt computes the row-major product GEMM describes.
func TestRowMajorMapping(t *testing.T) {
	tests := []GEMM{
		{M: 3, N: 4, K: 5},
		{M: 3, N: 4, K: 5, TransA: true},
		{M: 3, N: 4, K: 5, TransB: true},
		{M: 3, N: 4, K: 5, TransA: true, TransB: true},
		{M: 3, N: 4, K: 5, LDA: 7, LDB: 6, LDC: 9},
		{M: 3, N: 4, K: 5, TransA: true, TransB: true, LDA: 4, LDB: 8, LDC: 5},
		{M: 2, N: 3, K: 4, Batch: 3, StrideA: 8, StrideB: 12, StrideC: 6},
		{M: 2, N: 3, K: 4, Batch: 3, StrideA: 8, StrideC: 7, TransB: true}, // B shared by the batch
		{M: 2, N: 3, K: 4, Batch: 2, StrideB: 12, StrideC: 6, TransA: true, Bias: 1},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, g := range tests {
		g.A, g.B, g.C, g.In, g.Out, g.Alpha, g.Beta = 1, 1, 1, F32, F32, 1.5, 0.5
		name := describe(g.key())
		if err := g.validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		batch := max(g.Batch, 1)
		fill := func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(rng.IntN(19) - 9)
			}
			return v
		}
		const room = 128
		a, b, c := fill(room), fill(room), fill(room)
		var bias []float64
		if g.Bias != 0 {
			bias = fill(g.N)
		}
		// Row-major reference.
		_, ca := stored(g.M, g.K, g.TransA)
		_, cb := stored(g.K, g.N, g.TransB)
		lda, ldb, ldc := ld(g.LDA, ca), ld(g.LDB, cb), ld(g.LDC, g.N)
		want := append([]float64(nil), c...)
		for bi := range batch {
			oa, ob, oc := bi*int(g.StrideA), bi*int(g.StrideB), bi*int(g.StrideC)
			for i := range g.M {
				for j := range g.N {
					var s float64
					for l := range g.K {
						x := a[oa+i*lda+l]
						if g.TransA {
							x = a[oa+l*lda+i]
						}
						y := b[ob+l*ldb+j]
						if g.TransB {
							y = b[ob+j*ldb+l]
						}
						s += x * y
					}
					d := &want[oc+i*ldc+j]
					*d = float64(g.Alpha)*s + float64(g.Beta)**d
					if bias != nil {
						*d += bias[j]
					}
				}
			}
		}
		p := g.lt()
		if p.aPtr != g.B || p.bPtr != g.A {
			t.Errorf("%s: cuBLASLt's A and B must be our B and A", name)
		}
		// Our B is cuBLASLt's A, our A its B.
		got := append([]float64(nil), c...)
		ltSim(t, p, batch, g.K, float64(g.Alpha), float64(g.Beta), b, a, got, bias)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: cuBLASLt's problem computes\n%v\nwant\n%v", name, got, want)
		}
	}
}

func TestDescribe(t *testing.T) {
	g := GEMM{M: 128, N: 512, K: 64, TransB: true, Batch: 8, StrideA: 1 << 13, StrideC: 1 << 16, In: F16, Out: F32, Bias: 256, A: 256, B: 256, C: 256}
	if got, want := describe(g.key()), "f16→f32 128x512x64 NT batch 8 +bias"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
}

// TestDescriptorsWithLibrary builds the descriptors and preferences of
// several products with whatever cuBLASLt this machine has (host-side
// objects: no device needed). cuBLASLt checks each attribute's size, so
// this catches a wrong attribute id or type. CI has no cuBLASLt: it skips.
func TestDescriptorsWithLibrary(t *testing.T) {
	l, err := Load()
	if err != nil {
		t.Skipf("no cuBLASLt: %v", err)
	}
	base := GEMM{M: 64, N: 48, K: 32, A: 1 << 20, B: 2 << 20, C: 3 << 20, In: F32, Out: F32}
	tests := []func(*GEMM){
		func(*GEMM) {},
		func(g *GEMM) { g.TF32 = true },
		func(g *GEMM) { g.In, g.TransB, g.Bias = F16, true, 4<<20 },
		func(g *GEMM) { g.In, g.Out, g.TransA = BF16, BF16, true },
		func(g *GEMM) {
			g.In, g.Batch, g.StrideA, g.StrideB, g.StrideC = F16, 4, 64*32, 0, 64*48
			g.Workspace, g.WorkspaceBytes = 5<<20, RecommendedWorkspace
		},
	}
	for _, edit := range tests {
		g := base
		edit(&g)
		if err := g.validate(); err != nil {
			t.Fatal(err)
		}
		key := g.key()
		p := &plan{}
		if err := l.describeGEMM(p, &g, key); err != nil {
			t.Errorf("%s: %v", describe(key), err)
		}
		if err := l.destroyPlan(p); err != nil {
			t.Errorf("%s: destroy: %v", describe(key), err)
		}
		pref, err := l.preference(&g, key)
		if err != nil {
			t.Errorf("%s: %v", describe(key), err)
			continue
		}
		if err := call(&l.prefDestroy, pref); err != nil {
			t.Error(err)
		}
	}
	// A wrong size is refused: the check above can fail.
	var desc uintptr
	if err := call(&l.descCreate, uintptr(unsafe.Pointer(&desc)), compute32F, uintptr(F32)); err != nil {
		t.Fatal(err)
	}
	defer call(&l.descDestroy, desc)
	v := uint64(opT)
	if err := call(&l.descSetAttribute, desc, descTransA, uintptr(unsafe.Pointer(&v)), 8); !errors.Is(err, StatusInvalidValue) {
		t.Errorf("TRANSA set with 8 bytes: %v, want CUBLAS_STATUS_INVALID_VALUE", err)
	}
}
