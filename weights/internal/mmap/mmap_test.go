package mmap

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("hello, map"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(f.Data) != "hello, map" {
		t.Errorf("Data = %q", f.Data)
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
	if err := f.Close(); err != nil || f.Data != nil {
		t.Errorf("second Close: %v, Data %v", err, f.Data)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	e, err := Open(empty)
	if err != nil || len(e.Data) != 0 {
		t.Errorf("empty file: %v, %d bytes", err, len(e.Data))
	}
	e.Close()
	if _, err := Open(filepath.Join(dir, "absent")); err == nil {
		t.Error("Open of a missing file succeeded")
	}
	if _, err := Open(dir); err == nil {
		t.Error("Open of a directory succeeded")
	}
}
