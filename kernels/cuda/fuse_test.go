package cuda

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cuda/nvrtc"
)

// dv is a dense view.
func dv(slot, off int, dt kernels.DType, shape ...int) kernels.View {
	st := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = n
		n *= shape[i]
	}
	return kernels.View{Slot: slot, Offset: off, DType: dt, Shape: shape, Strides: st}
}

// Expressions of a decoder layer's elementwise steps.
var (
	exprAdd = &kernels.Expr{NumRegs: 3, Result: 2, Code: []kernels.Instr{
		{Op: kernels.ELoad, Dst: 0, A: 0}, {Op: kernels.ELoad, Dst: 1, A: 1}, {Op: kernels.EAdd, Dst: 2, A: 0, B: 1}}}
	exprAddScale = &kernels.Expr{NumRegs: 5, Result: 4, Code: []kernels.Instr{
		{Op: kernels.ELoad, Dst: 0, A: 0}, {Op: kernels.ELoad, Dst: 1, A: 1}, {Op: kernels.EAdd, Dst: 2, A: 0, B: 1},
		{Op: kernels.EConst, Dst: 3, Imm: 0.125}, {Op: kernels.EMul, Dst: 4, A: 2, B: 3}}}
	exprAdd3 = &kernels.Expr{NumRegs: 5, Result: 4, Code: []kernels.Instr{
		{Op: kernels.ELoad, Dst: 0, A: 0}, {Op: kernels.ELoad, Dst: 1, A: 1}, {Op: kernels.ELoad, Dst: 2, A: 2},
		{Op: kernels.EAdd, Dst: 3, A: 1, B: 2}, {Op: kernels.EAdd, Dst: 4, A: 0, B: 3}}}
	exprGelu = &kernels.Expr{NumRegs: 4, Result: 3, Code: []kernels.Instr{
		{Op: kernels.ELoad, Dst: 0, A: 0}, {Op: kernels.ELoad, Dst: 1, A: 1}, {Op: kernels.EAdd, Dst: 2, A: 0, B: 1},
		{Op: kernels.EGeluErf, Dst: 3, A: 2}}}
)

// decoderLayer is one pre-norm decoder layer of Whisper tiny at one token,
// as the graph compiles it (slots and arena offsets as in a real step):
// the case the merges are for, including the two that must not merge (the
// out-projection whose residual add overwrites the product's own input).
func decoderLayer() []kernels.Step {
	f32, i8, i64 := kernels.F32, kernels.I8, kernels.I64
	const d = 384
	lq := func(in kernels.View, w, out kernels.View) kernels.Step {
		return kernels.Step{Op: kernels.OpLinearQ, Name: "linear_q", In: []kernels.View{in, w, dv(90, 0, f32), dv(91, 0, i8)}, Out: []kernels.View{out}}
	}
	ln := func(in, out kernels.View, w int) kernels.Step {
		return kernels.Step{Op: kernels.OpLayerNorm, Name: "layer_norm", Attr: kernels.NormAttr{Axis: 2, Eps: 1e-5}, In: []kernels.View{in, dv(w, 0, f32, d), dv(w+1, 0, f32, d)}, Out: []kernels.View{out}}
	}
	ew := func(name string, e *kernels.Expr, out kernels.View, in ...kernels.View) kernels.Step {
		return kernels.Step{Op: kernels.OpFused, Name: name, Expr: e, In: in, Out: []kernels.View{out}}
	}
	upd := func(src kernels.View, cache int) kernels.Step {
		return kernels.Step{Op: kernels.OpSliceUpdate, Name: "update", Attr: kernels.AxisAttr{Axis: 1}, In: []kernels.View{src, dv(80, 0, i64, 1)}, Out: []kernels.View{dv(cache, 0, f32, 1, 448, d)}}
	}
	att := func(q kernels.View, k, v, keys int, out kernels.View) kernels.Step {
		return kernels.Step{Op: kernels.OpAttention, Name: "attention", In: []kernels.View{q, dv(k, 0, f32, 1, 6, keys, 64), dv(v, 0, f32, 1, 6, keys, 64)}, Out: []kernels.View{out}}
	}
	a := func(off int, shape ...int) kernels.View { return dv(0, off, f32, shape...) }
	w := func(slot, n, k int) kernels.View { return dv(slot, 0, i8, n, k) }
	return []kernels.Step{
		ln(a(384, 1, 1, d), a(0, 1, 1, d), 10),                                 // 0
		lq(a(0, 1, d), w(13, d, d), a(768, 1, d)),                              // 1 q
		ew("mul", exprAddScale, a(1152, d), a(768, d), dv(12, 0, f32, d)),      // 2
		lq(a(0, 1, d), w(17, d, d), a(768, 1, d)),                              // 3 k
		upd(a(768, 1, 1, d), 164),                                              // 4
		lq(a(0, 1, d), w(21, d, d), a(768, 1, d)),                              // 5 v
		ew("add", exprAdd, a(0, d), a(768, d), dv(20, 0, f32, d)),              // 6
		upd(a(0, 1, 1, d), 165),                                                // 7
		att(a(1152, 1, 6, 1, 64), 164, 165, 32, a(0, 1, 6, 1, 64)),             // 8 self
		lq(a(0, 1, d), w(25, d, d), a(768, 1, d)),                              // 9 out
		ew("add", exprAdd3, a(0, d), a(384, d), a(768, d), dv(24, 0, f32, d)),  // 10: writes 9's input
		ln(a(0, 1, 1, d), a(384, 1, 1, d), 28),                                 // 11
		lq(a(384, 1, d), w(31, d, d), a(768, 1, d)),                            // 12 cross q
		ew("mul", exprAddScale, a(384, d), a(768, d), dv(30, 0, f32, d)),       // 13
		att(a(384, 1, 6, 1, 64), 166, 167, 1500, a(768, 1, 6, 1, 64)),          // 14 cross, split
		lq(a(768, 1, d), w(35, d, d), a(384, 1, d)),                            // 15
		ew("add", exprAdd3, a(3072, d), a(0, d), a(384, d), dv(34, 0, f32, d)), // 16
		ln(a(3072, 1, 1, d), a(1536, 1, 1, d), 38),                             // 17
		lq(a(1536, 1, d), w(41, 4*d, d), a(0, 1, 4*d)),                         // 18 fc1
		ew("gelu_erf", exprGelu, a(1536, 4*d), a(0, 4*d), dv(40, 0, f32, 4*d)), // 19
		lq(a(1536, 1, 4*d), w(45, d, 4*d), a(0, 1, d)),                         // 20 fc2
		ew("add", exprAdd3, a(384, d), a(3072, d), a(0, d), dv(44, 0, f32, d)), // 21
		ln(a(384, 1, 1, d), a(0, 1, 1, d), 48),                                 // 22 the next layer's
		lq(a(0, 1, d), w(51, d, d), dv(200, 0, f32, 1, d)),                     // 23 into an output
	}
}

// arenaReadAfter: nothing of the arena is read after the run.
func arenaReadAfter(v kernels.View) bool { return v.Slot != 0 }

func TestFuseDecoderLayer(t *testing.T) {
	steps := decoderLayer()
	groups, merged := fuse(steps, arenaReadAfter)
	var got [][]int
	for i := range steps {
		if g := groups[i]; g != nil {
			got = append(got, g.steps())
		}
	}
	want := [][]int{{0, 1, 2, 3, 4, 5, 6, 7}, {11, 12, 13}, {15, 16}, {17, 18, 19}, {20, 21}, {22, 23}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("merges %v, want %v", got, want)
	}
	var alone []int
	for i := range steps {
		if !merged[i] && groups[i] == nil {
			alone = append(alone, i)
		}
	}
	if w := []int{8, 9, 10, 14}; !slices.Equal(alone, w) {
		t.Errorf("steps launched alone %v, want %v", alone, w)
	}
	// The cross-attention, split over blocks, leaves its combine to the
	// output projection after it; the self-attention over 32 keys is not
	// split.
	for _, c := range []struct{ lin, comb int }{{15, 14}, {20, -1}, {1, -1}} {
		if g := groups[c.lin]; g == nil || g.parts[0].comb != c.comb {
			t.Errorf("group at step %d combines attention %v, want %d", c.lin, g, c.comb)
		}
	}
	launches := len(groups) + len(alone)
	t.Logf("one layer: %d steps in %d launches", len(steps), launches)
}

// TestFuseKeepsWhatIsRead: no merge may drop a tensor someone reads.
func TestFuseKeepsWhatIsRead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func([]kernels.Step) []kernels.Step
		read   func(kernels.View) bool
		absent [][]int // merges that must not happen
	}{
		// The last norm's output is not written over in the run.
		{"norm output read after the run", nil, func(v kernels.View) bool { return v.Slot != 0 || v.Offset == 0 }, [][]int{{22, 23}}},
		{"product output read later", func(s []kernels.Step) []kernels.Step {
			// The attention reads the value product's output too.
			s[8].In = append(s[8].In, dv(0, 768, kernels.F32, 1, 384))
			return s
		}, arenaReadAfter, [][]int{{0, 5, 6, 7}}},
		{"fc1 output partly read after fc2 overwrote its head", func(s []kernels.Step) []kernels.Step {
			s[21].In = append(s[21].In, dv(0, 1000, kernels.F32, 384))
			return s
		}, arenaReadAfter, [][]int{{17, 18, 19}}},
		{"norm input overwritten between consumers", func(s []kernels.Step) []kernels.Step {
			s[2].Out[0] = dv(0, 384, kernels.F32, 384)
			return s
		}, arenaReadAfter, [][]int{{0, 1, 2}, {0, 3, 4}, {0, 5, 6, 7}}},
		{"cache update at a position of several values", func(s []kernels.Step) []kernels.Step {
			s[4].In[1] = dv(80, 0, kernels.I64, 2)
			return s
		}, arenaReadAfter, [][]int{{0, 3, 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := decoderLayer()
			if tc.edit != nil {
				steps = tc.edit(steps)
			}
			groups, _ := fuse(steps, tc.read)
			for _, g := range groups {
				for _, f := range g.parts {
					for _, a := range tc.absent {
						if slices.Equal(f.steps(), a) {
							t.Errorf("merged %v", a)
						}
					}
				}
			}
		})
	}
}

// TestFusedSourcesCompile compiles every merged kernel of a decoder layer
// with this machine's NVRTC (CI has Debian's), as the fixed kernels are.
func TestFusedSourcesCompile(t *testing.T) {
	lib, err := nvrtc.Default()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must compile the CUDA kernels, but NVRTC is missing: %v", err)
		}
		t.Skipf("SKIPPED: no NVRTC here, the merged kernels are not compile-checked: %v", err)
	}
	steps := decoderLayer()
	groups, _ := fuse(steps, arenaReadAfter)
	names := map[string]bool{}
	for i := range steps {
		f := groups[i]
		if f == nil {
			continue
		}
		name, src, err := f.source(steps)
		if err != nil {
			t.Fatalf("merge %v: %v", f.steps(), err)
		}
		if names[name] {
			continue
		}
		names[name] = true
		ptx, log, err := lib.Compile(src, name+".cu", nvrtc.ArchOption("compute_90"), "--std=c++14")
		if err != nil {
			t.Fatalf("merge %v does not compile: %v\n%s\n%s", f.steps(), err, log, src[len(commonSource):])
		}
		if !strings.Contains(string(ptx), ".entry "+name+"(") {
			t.Errorf("merge %v: %s is not in the PTX", f.steps(), name)
		}
	}
	t.Logf("%d distinct merged kernels", len(names))
}
