package filepages

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// mapFile writes n bytes of a pattern to a temporary file and maps it as
// weights/internal/mmap does (read-only, shared); it returns the mapping
// and the bytes written.
func mapFile(t *testing.T, n int) (mapped, want []byte) {
	t.Helper()
	want = make([]byte, n)
	for i := range want {
		want[i] = byte(i*7 + i>>12)
	}
	p := filepath.Join(t.TempDir(), "w")
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mapped, err = syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mapped) })
	return mapped, want
}

// residentKB returns the Rss of the mapping that starts at b, from
// /proc/self/smaps.
func residentKB(t *testing.T, b []byte) int {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	start := strconv.FormatUint(uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), 16) + "-"
	in := false
	for _, l := range strings.Split(string(smaps), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			in = strings.HasPrefix(f[0], start)
			continue
		}
		if in && strings.HasPrefix(l, "Rss:") {
			kb, err := strconv.Atoi(strings.Fields(l)[1])
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("mapping %s not in smaps", start)
	return 0
}

func touch(b []byte) (sum byte) {
	for i := 0; i < len(b); i += 512 {
		sum += b[i]
	}
	return sum
}

func TestRelease(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pages are released on Linux only")
	}
	page := int(pageSize)
	const pages = 64
	tests := []struct {
		name     string
		lo, hi   int // the released slice, in bytes of the mapping
		register bool
		want     int // bytes released
	}{
		{"whole mapping", 0, pages * page, true, pages * page},
		{"pages inside", 3 * page, 10 * page, true, 7 * page},
		{"partial pages at both ends are kept", 3*page + 1, 10*page - 1, true, 5 * page},
		{"less than a page", page + 10, 2*page - 10, true, 0},
		{"not registered", 0, pages * page, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, want := mapFile(t, pages*page)
			if tt.register {
				Add(m, "test")
				defer Remove(m)
			}
			if got, w := touch(m), touch(want); got != w {
				t.Fatalf("the mapping reads %d, the file %d", got, w)
			}
			before := residentKB(t, m)
			if before < pages*page/1024 {
				t.Fatalf("%d KB resident after touching %d KB", before, pages*page/1024)
			}
			if got := Release(m[tt.lo:tt.hi]); got != tt.want {
				t.Errorf("Release = %d bytes, want %d", got, tt.want)
			}
			after := residentKB(t, m)
			if before-after != tt.want/1024 {
				t.Errorf("resident %d → %d KB, want %d KB fewer", before, after, tt.want/1024)
			}
			if n, err := Resident(m); err != nil || n != after*1024 {
				t.Errorf("Resident = %d, %v; smaps says %d KB", n, err, after)
			}
			if !bytes.Equal(m, want) {
				t.Error("the mapping's bytes changed")
			}
		})
	}
}

// TestReleaseHeap checks the case Release exists to refuse: memory of the
// Go heap, which MADV_DONTNEED would zero, even while a file is
// registered.
func TestReleaseHeap(t *testing.T) {
	m, _ := mapFile(t, 16*int(pageSize))
	Add(m, "test")
	defer Remove(m)
	heap := bytes.Repeat([]byte{0xA5}, 64*int(pageSize))
	if got := Release(heap); got != 0 {
		t.Errorf("Release of heap memory = %d bytes, want 0", got)
	}
	if bytes.Count(heap, []byte{0xA5}) != len(heap) {
		t.Error("heap memory changed")
	}
}

// TestRemove checks that a removed mapping is no longer released.
func TestRemove(t *testing.T) {
	m, _ := mapFile(t, 16*int(pageSize))
	Add(m, "test")
	Remove(m)
	if got := Release(m); got != 0 {
		t.Errorf("Release after Remove = %d bytes, want 0", got)
	}
	Remove(m) // a second Remove is harmless
	Add(nil, "")
	if got := Release(nil); got != 0 {
		t.Errorf("Release(nil) = %d", got)
	}
}

// TestLookup checks that a slice is named by its mapping's id and offset
// only while wholly inside a registered mapping.
func TestLookup(t *testing.T) {
	m, _ := mapFile(t, 4*int(pageSize))
	Add(m, "weights-a")
	defer Remove(m)
	heap := make([]byte, 64)
	for _, c := range []struct {
		name   string
		p      []byte
		id     string
		off    int64
		wantOK bool
	}{
		{"start", m[:10], "weights-a", 0, true},
		{"inside", m[100:300], "weights-a", 100, true},
		{"whole", m, "weights-a", 0, true},
		{"tail", m[len(m)-1:], "weights-a", int64(len(m) - 1), true},
		{"heap", heap, "", 0, false},
		{"empty", m[5:5], "", 0, false},
	} {
		id, off, ok := Lookup(c.p)
		if ok != c.wantOK || id != c.id || off != c.off {
			t.Errorf("%s: Lookup = %q, %d, %v; want %q, %d, %v", c.name, id, off, ok, c.id, c.off, c.wantOK)
		}
	}
	Remove(m)
	if _, _, ok := Lookup(m[:10]); ok {
		t.Error("Lookup found a removed mapping")
	}
}
