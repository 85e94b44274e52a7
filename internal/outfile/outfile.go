// Package outfile writes a command's output file so that its path only
// ever holds a complete result. The bytes go to a temporary file in the
// same directory (named .NAME.tmp-XXXX); Commit syncs it to disk and
// renames it over the path in one step, and Abort removes it, leaving
// whatever was at the path before (or nothing) untouched. So a failed run,
// a full disk or a signal never leaves a half-written or empty file where
// a good one was. A process killed outright (SIGKILL, power loss) can leave
// the temporary file behind, never a torn one at the path.
//
// A path that exists and is not a regular file (a FIFO, a terminal,
// /dev/null, /dev/stdout on a pipe) cannot be replaced by a rename and has
// no old content to keep: it is written in place, and a reader of such a
// stream sees where the writing stopped.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// File is an output being written: an io.WriteSeeker whose errors name the
// output's path rather than the temporary file's. Seek fails on a stream
// (a pipe), as on the stream itself. A File is not safe for concurrent use.
type File struct {
	f      *os.File
	path   string // as the caller named it
	target string // path with symbolic links resolved: what Commit replaces
	tmp    bool   // f is a temporary file beside target
	done   bool   // Commit or Abort has run
}

// Create starts writing the output named path. Its directory must exist
// and be writable; path itself is not touched until Commit.
func Create(path string) (*File, error) {
	fi, err := os.Stat(path)     // through symbolic links: a link's target is what gets replaced
	var perm fs.FileMode = 0o666 // a new file: the umask decides, as for os.Create
	keep := false                // an existing file: its permissions stay
	switch {
	case err == nil && fi.IsDir():
		return nil, &fs.PathError{Op: "create", Path: path, Err: errors.New("is a directory")}
	case err == nil && !fi.Mode().IsRegular():
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return nil, err
		}
		return &File{f: f, path: path, target: path}, nil
	case err == nil:
		perm, keep = fi.Mode().Perm(), true
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	}
	dir, base := filepath.Split(target)
	for range 100 {
		name := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, rename(err, path)
		}
		if keep {
			// The umask applied to the open may have dropped some of the
			// replaced file's permissions.
			if err := f.Chmod(perm); err != nil {
				f.Close()
				os.Remove(name)
				return nil, rename(err, path)
			}
		}
		return &File{f: f, path: path, target: target, tmp: true}, nil
	}
	return nil, &fs.PathError{Op: "create", Path: path, Err: errors.New("no free temporary name beside it")}
}

// Name returns the path the output was created for.
func (f *File) Name() string { return f.path }

// Write writes p to the output.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	return n, rename(err, f.path)
}

// Seek sets the offset of the next Write, as os.File.Seek does.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	off, err := f.f.Seek(offset, whence)
	return off, rename(err, f.path)
}

// Commit finishes the output: the temporary file is synced to disk, closed
// and renamed over the path (a stream is just closed). On any failure the
// temporary file is removed and the path keeps its old content. A second
// Commit, or one after Abort, fails.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("outfile: %s already committed or aborted", f.path)
	}
	f.done = true
	if !f.tmp {
		return rename(f.f.Close(), f.path)
	}
	err := f.f.Sync() // the data must be on disk before the rename is
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.f.Name(), f.target)
	}
	if err != nil {
		os.Remove(f.f.Name())
		return rename(err, f.path)
	}
	syncDir(filepath.Dir(f.target))
	return nil
}

// Abort abandons the output: the temporary file is closed and removed, and
// the path keeps what it held. After Commit it does nothing, so
// `defer f.Abort()` is safe on every path.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.f.Close()
	if f.tmp {
		os.Remove(f.f.Name())
	}
}

// syncDir makes a rename in dir durable where the system allows it; a
// failure (some file systems refuse to sync a directory) changes nothing
// the caller could act on.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// rename makes an error about the temporary file name the output's path.
func rename(err error, path string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: path, Err: pe.Err}
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return &fs.PathError{Op: "rename", Path: path, Err: le.Err}
	}
	return err
}

var _ io.WriteSeeker = (*File)(nil)

// Prune removes the files that match pattern (filepath.Match syntax),
// except keep, that were last modified more than maxAge ago or are not
// among the newest newest of them, and the temporary files Create left
// beside them (a writer killed mid-write) once maxAge old. It is for
// caches of derived files that each build of a program writes under a
// name of its own: a fresh file may be another process's, in use now, so
// age alone would let every rebuilt test binary's file stay for maxAge.
// Errors are ignored: a file that cannot be removed now is tried again by
// the next prune.
func Prune(pattern, keep string, newest int, maxAge time.Duration) {
	all, _ := filepath.Glob(pattern)
	type file struct {
		path string
		mod  time.Time
	}
	var files []file
	for _, p := range all {
		if st, err := os.Stat(p); err == nil && p != keep && st.Mode().IsRegular() {
			files = append(files, file{p, st.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return b.mod.Compare(a.mod) })
	for i, f := range files {
		if i >= newest || time.Since(f.mod) > maxAge {
			os.Remove(f.path)
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(filepath.Dir(pattern), "."+filepath.Base(pattern)+".tmp-*"))
	for _, t := range tmps {
		if st, err := os.Stat(t); err == nil && time.Since(st.ModTime()) > maxAge {
			os.Remove(t)
		}
	}
}
