package outfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tensorforge/forge/internal/testenv"
)

// leftovers returns the temporary files left in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCommitAndAbort: the path holds its old content (or nothing) until
// Commit, then the new content with the old file's permissions; Abort
// leaves it as it was; no temporary file survives either.
func TestCommitAndAbort(t *testing.T) {
	for _, c := range []struct {
		name   string
		old    string // "" for no file
		perm   fs.FileMode
		commit bool
		want   string // content after, "" for no file
	}{
		{"new, committed", "", 0, true, "new"},
		{"new, aborted", "", 0, false, ""},
		{"existing, committed", "old", 0o640, true, "new"},
		{"existing private, committed", "old", 0o600, true, "new"},
		{"existing, aborted", "old", 0o644, false, "old"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.wav")
			if c.old != "" {
				if err := os.WriteFile(path, []byte(c.old), c.perm); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, c.perm); err != nil {
					t.Fatal(err)
				}
			}
			f, err := Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(f, "new"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); c.old == "" && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the path exists before Commit: %v", err)
			} else if c.old != "" && readFile(t, path) != c.old {
				t.Errorf("the path changed before Commit")
			}
			if c.commit {
				if err := f.Commit(); err != nil {
					t.Fatal(err)
				}
				if err := f.Commit(); err == nil {
					t.Error("a second Commit succeeded")
				}
			}
			f.Abort()
			if c.want == "" {
				if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the path exists after Abort: %v", err)
				}
			} else if got := readFile(t, path); got != c.want {
				t.Errorf("content %q, want %q", got, c.want)
			}
			if c.commit && c.old != "" {
				if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != c.perm {
					t.Errorf("permissions %v, %v; want %v kept", fi.Mode().Perm(), err, c.perm)
				}
			}
			if l := leftovers(t, dir); len(l) != 0 {
				t.Errorf("temporary files left: %v", l)
			}
		})
	}
}

// TestSymlinkTargetReplaced: a link's target gets the output; the link
// stays a link.
func TestSymlinkTargetReplaced(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.wav")
	link := filepath.Join(dir, "link.wav")
	if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	f, err := Create(link)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "new")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v %v", fi.Mode(), err)
	}
	if got := readFile(t, real); got != "new" {
		t.Fatalf("target holds %q, want \"new\"", got)
	}
}

// TestStreamsWrittenInPlace: a FIFO is written directly (a rename would
// replace it by a file no reader is waiting on), and Seek fails on it as
// on any pipe.
func TestStreamsWrittenInPlace(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		r, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(r)
		r.Close()
		got <- string(b)
	}()
	f, err := Create(fifo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekCurrent); err == nil {
		t.Error("Seek on a FIFO succeeded")
	}
	io.WriteString(f, "streamed")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "streamed" {
		t.Fatalf("reader got %q", s)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", fi.Mode(), err)
	}
}

// TestErrorsNameThePath: failures name the output, not the temporary
// file: a directory, a missing directory, and a device that is full.
func TestErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Create(dir): %v", err)
	}
	missing := filepath.Join(dir, "no", "such", "out.wav")
	if _, err := Create(missing); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Create in a missing directory: %v", err)
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	f, err := Create("/dev/full")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	if _, err := io.WriteString(f, "x"); !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "/dev/full") {
		t.Errorf("write to /dev/full: %v", err)
	}
}

// TestFileSizeLimit: a write that the file system refuses part way (here
// RLIMIT_FSIZE, the unprivileged stand-in for a full disk) fails with an
// error naming the path, and after Abort the old file is intact and no
// temporary file is left.
func TestFileSizeLimit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.wav")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var saved syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &saved); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	lim := saved
	lim.Cur = 4096
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	_, werr := f.Write(make([]byte, 8192))
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &saved); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(werr, syscall.EFBIG) || !strings.Contains(werr.Error(), path) {
		t.Fatalf("write past the limit: %v, want EFBIG naming %s", werr, path)
	}
	f.Abort()
	if got := readFile(t, path); got != "old" {
		t.Errorf("old file holds %q after the failure", got)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

// TestPrune checks which files go: matching ones older than maxAge or
// beyond the newest two, and temporary files of the pattern older than
// maxAge; the kept file, fresh files among the newest, and files the
// pattern does not match stay.
func TestPrune(t *testing.T) {
	dir := t.TempDir()
	files := []testenv.AgedFile{
		{Name: "tail-self.bin", Age: 3 * time.Hour, Kept: true},
		{Name: "tail-a.bin", Age: time.Minute, Kept: true},
		{Name: "tail-b.bin", Age: 2 * time.Minute, Kept: true},
		{Name: "tail-c.bin", Age: 3 * time.Minute, Kept: false},
		{Name: "tail-old.bin", Age: 61 * time.Minute, Kept: false},
		{Name: ".tail-x.bin.tmp-abc", Age: 2 * time.Hour, Kept: false},
		{Name: ".tail-x.bin.tmp-def", Age: time.Minute, Kept: true},
		{Name: "other-x.bin", Age: 365 * 24 * time.Hour, Kept: true},
		{Name: ".other-x.bin.tmp-abc", Age: 2 * time.Hour, Kept: true},
	}
	testenv.CheckPruned(t, dir, files, func() { Prune(filepath.Join(dir, "tail-*.bin"), filepath.Join(dir, "tail-self.bin"), 2, time.Hour) })
}
