package cuda

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tensorforge/forge/kernels/cuda/driver"
)

// TestArena: allocations never overlap, freed ranges are reused and merged,
// slabs are mapped only when nothing fits, and the counters add up.
func TestArena(t *testing.T) {
	var maps []int
	next := uint64(1 << 20)
	a := &arena{slabSize: 1 << 20, grow: func(n int) (uint64, error) {
		maps = append(maps, n)
		base := next
		next += uint64(n) + 1<<20 // slabs are not adjacent
		return base, nil
	}}
	rng := rand.New(rand.NewPCG(1, 1))
	type alloc struct {
		addr uint64
		size int
	}
	var live []alloc
	for i := range 2000 {
		if len(live) > 0 && rng.IntN(3) == 0 {
			k := rng.IntN(len(live))
			a.release(live[k].addr, live[k].size)
			live = append(live[:k], live[k+1:]...)
			continue
		}
		n := 1 + rng.IntN(20000)
		addr, size, err := a.alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		if size < n || size%align != 0 || addr%align != 0 {
			t.Fatalf("alloc %d: %d bytes at %#x", n, size, addr)
		}
		for _, o := range live {
			if addr < o.addr+uint64(o.size) && o.addr < addr+uint64(size) {
				t.Fatalf("step %d: [%#x,+%d) overlaps [%#x,+%d)", i, addr, size, o.addr, o.size)
			}
		}
		live = append(live, alloc{addr, size})
	}
	sum := 0
	for _, o := range live {
		sum += o.size
	}
	if l, p := a.stats(); l != sum || p < l {
		t.Errorf("live %d (want %d), peak %d", l, sum, p)
	}
	for _, o := range live {
		a.release(o.addr, o.size)
	}
	if len(a.free) != len(a.slabs) {
		t.Errorf("after freeing everything: %d free ranges in %d slabs, want one per slab", len(a.free), len(a.slabs))
	}
	if _, peak := a.stats(); a.mapped() > peak*3/2+a.slabSize {
		t.Errorf("%d bytes mapped in %d slabs for a peak of %d live: freed memory is not reused", a.mapped(), len(maps), peak)
	}
	// A request larger than a slab gets a slab of its own size.
	if _, size, err := a.alloc(4 << 20); err != nil || size != 4<<20 || maps[len(maps)-1] != 4<<20 {
		t.Errorf("large alloc: %d bytes, %v, last slab %d", size, err, maps[len(maps)-1])
	}
}

// TestForgetDerived: freeing a constant drops the half and dequantized
// copies made from it (any of their sources in its range), and only
// those: a new constant at the same address must not be read through an
// old copy.
func TestForgetDerived(t *testing.T) {
	g := &gemm{half: map[string]*derived{
		"half of the freed constant":             {buf: &buffer{ptr: 1}, srcs: []driver.DevicePtr{150}},
		"dequantized, its scale freed":           {buf: &buffer{ptr: 2}, srcs: []driver.DevicePtr{40, 199, 500}},
		"of another constant":                    {buf: &buffer{ptr: 3}, srcs: []driver.DevicePtr{200}},
		"dequantized, its sources all elsewhere": {buf: &buffer{ptr: 4}, srcs: []driver.DevicePtr{40, 99}},
	}}
	var freed []driver.DevicePtr
	for _, b := range g.forget(100, 200) {
		freed = append(freed, b.ptr)
	}
	slices.Sort(freed)
	if !slices.Equal(freed, []driver.DevicePtr{1, 2}) {
		t.Errorf("freed copies %v, want [1 2]", freed)
	}
	if len(g.half) != 2 || g.half["of another constant"] == nil || g.half["dequantized, its sources all elsewhere"] == nil {
		t.Errorf("copies left: %v", g.half)
	}
}
