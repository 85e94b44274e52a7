package mtl

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSelectorTable: every selector the bridge registers is spelled with
// as many colons as the arguments its call site passes, and none is
// missing or repeated; a mistake here would crash on a Mac.
func TestSelectorTable(t *testing.T) {
	if msg, ok := checkSelectors(); !ok {
		t.Fatal(msg)
	}
	for _, c := range []struct {
		s    selector
		name string
		args int
	}{
		{selNewBufferWithBytesNoCopy, "newBufferWithBytesNoCopy:length:options:deallocator:", 4},
		{selSetBufferOffsetAtIndex, "setBuffer:offset:atIndex:", 3},
		{selDispatchThreadgroups, "dispatchThreadgroups:threadsPerThreadgroup:", 2},
		{selNewLibraryWithSource, "newLibraryWithSource:options:error:", 3},
		{selCommit, "commit", 0},
	} {
		if got := selectorTable[c.s]; got.name != c.name || got.args != c.args {
			t.Errorf("selector %d = %+v, want %s with %d arguments", c.s, got, c.name, c.args)
		}
	}
}

// TestCheckSelectorsCatches: the check fails on each kind of mistake.
func TestCheckSelectorsCatches(t *testing.T) {
	saved := selectorTable
	defer func() { selectorTable = saved }()
	for _, c := range []struct {
		name string
		edit func()
		want string
	}{
		{"wrong count", func() { selectorTable[selCommit].args = 1 }, "commit has a wrong argument count"},
		{"duplicate", func() { selectorTable[selCommit] = selectorTable[selRelease] }, "release appears twice"},
		{"empty", func() { selectorTable[selLength].name = "" }, "has no name"},
		{"space", func() { selectorTable[selLength].name = "len gth" }, "white space"},
	} {
		selectorTable = saved
		c.edit()
		msg, ok := checkSelectors()
		if ok || !strings.Contains(msg, c.want) {
			t.Errorf("%s: check = %q, %v; want a failure saying %q", c.name, msg, ok, c.want)
		}
	}
}

func TestErrorDecoding(t *testing.T) {
	for _, c := range []struct {
		err  *Error
		want []string
		is   error
	}{
		{&Error{Op: "compiling a library", Domain: "MTLLibraryErrorDomain", Code: 3, Description: "program_source:4:9: error: use of undeclared identifier 'x'"},
			[]string{"metal: compiling a library: compile failure: program_source:4:9", "'x'"}, ErrCompile},
		{&Error{Op: "running a command buffer", Domain: "MTLCommandBufferErrorDomain", Code: 7, Description: "Insufficient Memory", Reason: "the GPU ran out of memory"},
			[]string{"out of memory: Insufficient Memory (the GPU ran out of memory)"}, ErrOutOfMemory},
		{&Error{Op: "running a command buffer", Domain: "MTLCommandBufferErrorDomain", Code: 3, Description: "Caused GPU Address Fault Error"},
			[]string{"page fault: Caused GPU Address Fault Error"}, nil},
		{&Error{Op: "x", Domain: "NSCocoaErrorDomain", Code: 260, Description: "The file doesn't exist.", Reason: "The file doesn't exist."},
			[]string{"metal: x: NSCocoaErrorDomain error 260: The file doesn't exist."}, nil},
	} {
		msg := c.err.Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q does not say %q", msg, w)
			}
		}
		if strings.Count(msg, c.err.Description) != 1 {
			t.Errorf("%q repeats the description", msg)
		}
		for _, s := range []error{ErrCompile, ErrOutOfMemory} {
			if got := errors.Is(c.err, s); got != (s == c.is) {
				t.Errorf("%q: errors.Is(%v) = %v", msg, s, got)
			}
		}
	}
}

func TestLibraryResult(t *testing.T) {
	warn := &Error{Domain: libraryDomain, Code: 4, Description: "unused variable"}
	fail := &Error{Domain: libraryDomain, Code: 3, Description: "error"}
	for _, c := range []struct {
		name string
		lib  bool
		err  *Error
		want error
	}{
		{"clean", true, nil, nil},
		{"warnings only", true, warn, nil},
		{"failed", false, fail, ErrCompile},
		{"failed silently", false, nil, ErrNil},
	} {
		got := libraryResult(c.lib, c.err)
		if (c.want == nil) != (got == nil) || (c.want != nil && !errors.Is(got, c.want)) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestStatusResult(t *testing.T) {
	oom := &Error{Domain: commandBufferDomain, Code: 7}
	for _, c := range []struct {
		status int
		err    *Error
		want   string // "" for success
	}{
		{statusCompleted, nil, ""},
		{statusError, oom, "out of memory"},
		{statusError, nil, "without an error object"},
		{statusScheduled, nil, "still scheduled"},
		{42, nil, "unknown status 42"},
	} {
		got := statusResult(c.status, c.err)
		if (c.want == "") != (got == nil) || (got != nil && !strings.Contains(got.Error(), c.want)) {
			t.Errorf("status %d: %v, want %q", c.status, got, c.want)
		}
	}
}

func TestNoCopyRange(t *testing.T) {
	const page = 16384 // Apple silicon's page
	for _, c := range []struct {
		name        string
		addr        uintptr
		n, max      int
		base        uintptr
		length, off int
		ok          bool
	}{
		{"aligned pages", 0x100000, 2 * page, 0, 0x100000, 2 * page, 0, true},
		{"inside one page", 0x100010, 100, 0, 0x100000, page, 0x10, true},
		{"straddles pages", 0x100000 + page - 8, 16, 0, 0x100000, 2 * page, page - 8, true},
		{"ends on a page", 0x100008, page - 8, 0, 0x100000, page, 8, true},
		{"misaligned for the kernels", 0x100004, 64, 0, 0, 0, 0, false},
		{"empty", 0x100000, 0, 0, 0, 0, 0, false},
		{"over the device's limit", 0x100000, 3 * page, 2 * page, 0, 0, 0, false},
		{"at the limit", 0x100000, 2 * page, 2 * page, 0x100000, 2 * page, 0, true},
	} {
		base, length, off, ok := NoCopyRange(c.addr, c.n, page, c.max)
		if ok != c.ok || (ok && (base != c.base || length != c.length || off != c.off)) {
			t.Errorf("%s: (%#x, %d, %d, %v), want (%#x, %d, %d, %v)", c.name, base, length, off, ok, c.base, c.length, c.off, c.ok)
		}
		if ok && (base%page != 0 || length%page != 0 || uintptr(off)+base != c.addr || off+c.n > length) {
			t.Errorf("%s: the range does not cover the bytes in whole pages", c.name)
		}
	}
	if _, _, _, ok := NoCopyRange(0x100000, 8, 3000, 0); ok {
		t.Error("a page size that is not a power of two was accepted")
	}
	if AllocLength(0) <= 0 || AllocLength(5) != 5 {
		t.Error("AllocLength: Metal needs a positive length")
	}
}

// TestThread: batches run in order, each inside one pool pushed and popped
// on the locked thread; panics come back to the caller; Close ends it.
func TestThread(t *testing.T) {
	var depth, pushes, maxDepth atomic.Int64
	th := newThread(poolHooks{
		push: func() uintptr {
			pushes.Add(1)
			d := depth.Add(1)
			maxDepth.Store(max(maxDepth.Load(), d))
			return uintptr(d)
		},
		pop: func(p uintptr) {
			if d := depth.Add(-1); uintptr(d+1) != p {
				t.Errorf("popped pool %d, the current one is %d", p, d+1)
			}
		},
	})
	var order []int
	for i := range 5 {
		if err := th.Do(func() error { order = append(order, i); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	boom := errors.New("boom")
	if err := th.Do(func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("error %v, want boom", err)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "panicked on the Metal thread") {
				t.Errorf("recovered %v", r)
			}
		}()
		_ = th.Do(func() error { panic("bad") })
	}()
	th.Close()
	if err := th.Do(func() error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Do after Close: %v", err)
	}
	if len(order) != 5 || order[4] != 4 || pushes.Load() != 7 || depth.Load() != 0 || maxDepth.Load() != 1 {
		t.Errorf("order %v, %d pools pushed, depth %d (max %d); want 0..4, 7, 0, 1", order, pushes.Load(), depth.Load(), maxDepth.Load())
	}
}
