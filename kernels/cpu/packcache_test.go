//go:build unix

package cpu

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/tensorforge/forge/internal/filepages"
	"github.com/tensorforge/forge/internal/packfile"
	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
)

// weightFile writes n random float32 values to a file, maps it and
// registers the mapping with filepages under id, as the weight loader
// does; the buffer table holds it wrapped in slot 0.
func weightFile(t *testing.T, n int, id string) []kernels.Buffer {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(n), 7))
	raw := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(r.Float32()*2-1))
	}
	p := filepath.Join(t.TempDir(), "weights")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, len(raw), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	filepages.Add(m, id)
	t.Cleanup(func() {
		filepages.Remove(m)
		syscall.Munmap(m)
	})
	return []kernels.Buffer{&buffer{b: m, wrapped: true}}
}

// packAll packs, on b, the test's constant weights: one convolution
// weight (two groups) at offset 16, one transposed-convolution phase and
// one GEMM operand, and returns their words, copied and as packed.
func packAll(b *Backend, bufs []kernels.Buffer, bf16 bool) (copies, live [][]byte) {
	wv := kernels.View{Slot: 0, Offset: 16, DType: kernels.F32}
	for g := 0; g < 2; g++ {
		live = append(live, b.packedConv(bufs, wv, g, 24, 20, 3, bf16).Words())
	}
	// A transposed convolution: Cin 20, cog 24, K 4, stride 2: phase 1 has
	// 2 taps.
	pw, _ := b.packedConvT(bufs, kernels.View{Slot: 0, DType: kernels.F32}, 0, 1, 20, 24, 4, 2, 2, bf16)
	live = append(live, pw.Words())
	// A 40×30 GEMM operand, transposed, at offset 3000.
	live = append(live, b.packedSGEMMB(bufs, kernels.View{Slot: 0, Offset: 3000, DType: kernels.F32}, 40, 30, true, 40).Words())
	for _, w := range live {
		copies = append(copies, bytes.Clone(w))
	}
	return copies, live
}

// inFile reports whether every pack's words lie in the mapped pack file
// of set (used in place), rather than on the heap.
func inFile(set *packSet, packs [][]byte) bool {
	if set == nil || set.file == nil {
		return false
	}
	for _, w := range packs {
		found := false
		for _, k := range set.file.Keys() {
			b, ok := set.file.Get(k)
			if ok && len(b) == len(w) && unsafe.SliceData(b) == unsafe.SliceData(w) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// TestPackCache checks that packs kept by one backend are mapped in place
// by the next with the same bytes, and that a damaged file, a file of
// another key (another CPU path or build) or another weight file's
// identity leads to packing again, then to a good file again.
func TestPackCache(t *testing.T) {
	for _, bf16 := range []bool{false, true} {
		dir := t.TempDir()
		bufs := weightFile(t, 8000, "weights v1")
		want, _ := packAll(New(), bufs, bf16)

		// run packs on a fresh backend over dir and reports whether its
		// packs came from the file, after checking their words.
		run := func(step string, bufs []kernels.Buffer, save bool) bool {
			t.Helper()
			b := NewWithPackDir(dir)
			words, packs := packAll(b, bufs, bf16)
			for i := range want {
				if !bytes.Equal(words[i], want[i]) {
					t.Fatalf("bf16 %v, %s: pack %d differs from the packer's", bf16, step, i)
				}
			}
			set, _ := b.packs.set(bufs[0].(*buffer).b)
			mapped := inFile(set, packs)
			if save {
				if err := b.SavePacks(nil); err != nil {
					t.Fatalf("bf16 %v, %s: SavePacks: %v", bf16, step, err)
				}
			}
			return mapped
		}
		files := func() []string {
			f, _ := filepath.Glob(filepath.Join(dir, "packs-*.bin"))
			return f
		}

		if run("first", bufs, true) {
			t.Fatalf("bf16 %v: packs mapped before any file was written", bf16)
		}
		if len(files()) != 1 {
			t.Fatalf("bf16 %v: %d pack files after SavePacks, want 1", bf16, len(files()))
		}
		if !run("second", bufs, true) {
			t.Fatalf("bf16 %v: the second backend packed again", bf16)
		}

		// A file in use but unmodified for two days is marked as used.
		old := time.Now().Add(-48 * time.Hour)
		if err := os.Chtimes(files()[0], old, old); err != nil {
			t.Fatal(err)
		}
		run("stable", bufs, true)
		if st, err := os.Stat(files()[0]); err != nil || time.Since(st.ModTime()) > time.Hour {
			t.Errorf("bf16 %v: a pack file in use was not marked (%v)", bf16, err)
		}

		// A damaged blob: packed again (the others still mapped), and the
		// file rewritten whole.
		p := files()[0]
		d, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		d[64+5] ^= 0x40
		if err := os.WriteFile(p, d, 0o644); err != nil {
			t.Fatal(err)
		}
		if run("damaged", bufs, true) {
			t.Errorf("bf16 %v: a damaged pack was used", bf16)
		}
		if !run("repaired", bufs, false) {
			t.Errorf("bf16 %v: the file was not rewritten after damage", bf16)
		}

		// A file under the right name written for another key (another
		// CPU path, build or format): refused whole.
		w, err := packfile.Create(p, packfile.KeySum("another CPU path"))
		if err != nil {
			t.Fatal(err)
		}
		for i, words := range want {
			w.Add(string(rune('a'+i)), words)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		if run("foreign key", bufs, true) {
			t.Errorf("bf16 %v: packs of another key were used", bf16)
		}
		if !run("rewritten", bufs, false) {
			t.Errorf("bf16 %v: the foreign file was not replaced", bf16)
		}

		// The same bytes in a weight file of another identity (another
		// version of the model): its own file.
		other := weightFile(t, 8000, "weights v2")
		if run("other weights", other, true) {
			t.Errorf("bf16 %v: another weight file's packs were used", bf16)
		}
		if len(files()) != 2 {
			t.Errorf("bf16 %v: %d pack files for two weight files", bf16, len(files()))
		}
	}
}

// TestPackCacheUnwritable checks that a pack directory that cannot be
// made changes nothing but SavePacks's error, and that weights outside
// every mapped file are packed in memory and never kept.
func TestPackCacheUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bufs := weightFile(t, 8000, "weights v1")
	want, _ := packAll(New(), bufs, true)
	b := NewWithPackDir(filepath.Join(file, "derived"))
	got, _ := packAll(b, bufs, true)
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("pack %d differs", i)
		}
	}
	if err := b.SavePacks(nil); err == nil {
		t.Error("SavePacks into a directory under a file succeeded")
	}

	dir := t.TempDir()
	heap := []kernels.Buffer{&buffer{b: bytes.Clone(bufs[0].(*buffer).b), wrapped: true}}
	b = NewWithPackDir(dir)
	packAll(b, heap, true)
	if err := b.SavePacks(nil); err != nil {
		t.Fatal(err)
	}
	if f, _ := filepath.Glob(filepath.Join(dir, "*")); len(f) != 0 {
		t.Errorf("weights on the heap were kept: %v", f)
	}
	if err := New().SavePacks(nil); err != nil {
		t.Errorf("SavePacks without a directory: %v", err)
	}
}

// TestPackCacheConcurrent packs and maps the same weights from several
// goroutines at once (run it with -race): every one gets the same pack.
func TestPackCacheConcurrent(t *testing.T) {
	dir := t.TempDir()
	bufs := weightFile(t, 8000, "weights v1")
	want, _ := packAll(New(), bufs, true)
	for _, step := range []string{"packing", "mapping"} {
		b := NewWithPackDir(dir)
		done := make(chan [][]byte)
		for range 4 {
			go func() {
				words, _ := packAll(b, bufs, true)
				done <- words
			}()
		}
		for range 4 {
			words := <-done
			for i := range want {
				if !bytes.Equal(words[i], want[i]) {
					t.Errorf("%s: pack %d differs", step, i)
				}
			}
		}
		if err := b.SavePacks(nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPruneOthers checks which files go: other builds' pack files of the
// same weight file an hour old or beyond the newest keepOthers, other
// weight files' abandoned ones, temporary files an hour old; the
// writer's own and files not of the pack cache stay.
func TestPruneOthers(t *testing.T) {
	dir := t.TempDir()
	files := []testenv.AgedFile{
		{Name: "packs-w1-self.bin", Age: 2 * time.Hour, Kept: true},
		{Name: "packs-w1-a.bin", Age: time.Minute, Kept: true},
		{Name: "packs-w1-b.bin", Age: 2 * time.Minute, Kept: true},
		{Name: "packs-w1-c.bin", Age: 3 * time.Minute, Kept: false},
		{Name: "packs-w1-old.bin", Age: 61 * time.Minute, Kept: false},
		{Name: "packs-w2-x.bin", Age: 3 * time.Hour, Kept: true},
		{Name: "packs-w3-x.bin", Age: 29 * 24 * time.Hour, Kept: true},
		{Name: "packs-w4-x.bin", Age: 31 * 24 * time.Hour, Kept: false},
		{Name: ".packs-w1-self.bin.tmp-abc", Age: 2 * time.Hour, Kept: false},
		{Name: ".packs-w1-self.bin.tmp-def", Age: time.Minute, Kept: true},
		{Name: "silence-x.bin", Age: 365 * 24 * time.Hour, Kept: true},
	}
	testenv.CheckPruned(t, dir, files, func() { pruneOthers(dir, "packs-w1-", filepath.Join(dir, "packs-w1-self.bin")) })
}

// TestKeptPackReleased checks that a convolution whose pack is used in
// place from the pack file leaves none of the pack's pages resident once
// it has run (implicitConv1d), and that running it again, from pages faulted
// back in, gives the same output.
func TestKeptPackReleased(t *testing.T) {
	dir := t.TempDir()
	// A pack of many pages (192 KiB), so that whole pages lie inside it.
	const rows, cin, taps, L = 128, 128, 3, 50
	bufs := weightFile(t, 16+rows*cin*taps, "weights released")
	wv := kernels.View{Slot: 0, Offset: 16, DType: kernels.F32}
	var pw *gemm.ConvWeight
	b := keptInFile(t, dir, bufs, func(b *Backend) []byte {
		pw = b.packedConv(bufs, wv, 0, rows, cin, taps, false)
		return pw.Words()
	})
	x := randomInput(3, cin*L)
	w := f32s(bufs, wv)[wv.Offset:]
	a := kernels.ConvAttr{Stride: 1, Dilation: 1, Groups: 1, PadLeft: 1, PadRight: 1}
	var outs [2][]float32
	for i := range outs {
		outs[i] = make([]float32, rows*L)
		b.implicitConv1d(gemm.Default(), bufs, wv, x, w, nil, outs[i], 1, cin, L, rows, taps, L, a)
		n, err := filepages.Resident(pw.Words())
		if err != nil {
			t.Skipf("SKIPPED: cannot read resident pages: %v", err)
		}
		if n != 0 {
			t.Errorf("run %d: %d bytes of the pack resident after its convolution, want 0", i, n)
		}
	}
	for j := range outs[0] {
		if math.Float32bits(outs[0][j]) != math.Float32bits(outs[1][j]) {
			t.Fatalf("output[%d] = %v, then %v from the pages faulted back in", j, outs[0][j], outs[1][j])
		}
	}
}

// keptInFile packs a weight of bufs with pack on one backend of dir, saves
// the packs, and returns a second backend of dir on which pack found the
// weight's words in the pack file, in place.
func keptInFile(t *testing.T, dir string, bufs []kernels.Buffer, pack func(*Backend) []byte) *Backend {
	t.Helper()
	first := NewWithPackDir(dir)
	pack(first)
	if err := first.SavePacks(nil); err != nil {
		t.Fatal(err)
	}
	b := NewWithPackDir(dir)
	words := pack(b)
	if set, _ := b.packs.set(bufs[0].(*buffer).b); !inFile(set, [][]byte{words}) {
		t.Fatal("the pack is not used in place from the pack file")
	}
	return b
}

// randomInput returns n values uniform in [−1, 1) from seed.
func randomInput(seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, seed))
	x := make([]float32, n)
	for i := range x {
		x[i] = r.Float32()*2 - 1
	}
	return x
}

// TestKeptWinogradPack: a Winograd weight is kept in the pack file and
// used in place by a later backend, gives its pages back after its
// convolution as direct packs do, and computes the convolution within
// Winograd's error of the direct one; without ConvAttr.Winograd, or with
// a stride, the direct path runs.
func TestKeptWinogradPack(t *testing.T) {
	dir := t.TempDir()
	const rows, cin, taps, L = 128, 128, 7, 300
	bufs := weightFile(t, 16+rows*cin*taps, "winograd weights")
	wv := kernels.View{Slot: 0, Offset: 16, DType: kernels.F32, Shape: []int{rows, cin, taps}, Strides: []int{cin * taps, taps, 1}}
	var pw *gemm.WinogradWeight
	b := keptInFile(t, dir, bufs, func(b *Backend) []byte {
		pw = b.packedWinograd(bufs, wv, 0, rows, cin, taps)
		return pw.Words()
	})
	x := randomInput(5, cin*L)
	w := f32s(bufs, wv)[wv.Offset:]
	a := kernels.ConvAttr{Stride: 1, Dilation: 3, Groups: 1, PadLeft: 9, PadRight: 9, Winograd: true}
	want := make([]float32, rows*L)
	b.implicitConv1d(gemm.Default(), bufs, wv, x, w, nil, want, 1, cin, L, rows, taps, L, a)
	got := make([]float32, rows*L)
	if !b.winogradConv1d(bufs, wv, x, nil, got, 1, cin, L, rows, taps, L, a) {
		t.Skipf("SKIPPED: no Winograd path on this CPU (conv path %s)", gemm.Default().ConvPath())
	}
	if n, err := filepages.Resident(pw.Words()); err == nil && n != 0 {
		t.Errorf("%d bytes of the Winograd pack resident after its convolution, want 0", n)
	}
	var num, den float64
	for i := range want {
		d := float64(got[i] - want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	if rel := math.Sqrt(num / den); !(rel <= 1e-4) {
		t.Errorf("Winograd against the direct convolution: relative L2 %.3g, want ≤ 1e-4", rel)
	}
	for _, c := range []struct {
		name string
		a    kernels.ConvAttr
	}{
		{"not asked", kernels.ConvAttr{Stride: 1, Dilation: 1, Groups: 1, PadLeft: 3, PadRight: 3}},
		{"stride 2", kernels.ConvAttr{Stride: 2, Dilation: 1, Groups: 1, PadLeft: 3, PadRight: 3, Winograd: true}},
	} {
		if b.winogradConv1d(bufs, wv, x, nil, got, 1, cin, L, rows, taps, L, c.a) {
			t.Errorf("%s: the Winograd path ran", c.name)
		}
	}
}

// TestFreedWrapForgetsPacks: the engine frees a constant that no plan
// holds, and the collector may give its memory to the next constant.
// Free of a wrapped buffer drops the packs made of it, so the same
// memory wrapped again with other contents is packed anew, as a fresh
// backend packs it.
func TestFreedWrapForgetsPacks(t *testing.T) {
	raw := make([]byte, 4*8192)
	fill := func(seed uint64) {
		r := rand.New(rand.NewPCG(seed, 3))
		for i := range len(raw) / 4 {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(r.Float32()*2-1))
		}
	}
	b := New()
	fill(1)
	first := []kernels.Buffer{&buffer{b: raw, wrapped: true}}
	before, _ := packAll(b, first, false)
	b.Free(first[0])
	fill(2)
	again, _ := packAll(b, []kernels.Buffer{&buffer{b: raw, wrapped: true}}, false)
	want, _ := packAll(New(), []kernels.Buffer{&buffer{b: raw, wrapped: true}}, false)
	for i := range want {
		if !bytes.Equal(again[i], want[i]) {
			t.Errorf("pack %d of the memory wrapped again is not a fresh backend's (the old one's: %v)", i, bytes.Equal(again[i], before[i]))
		}
	}
}
