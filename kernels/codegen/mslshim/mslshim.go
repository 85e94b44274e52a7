// Package mslshim compiles Metal Shading Language with clang on machines
// without Metal, and runs the result on the CPU.
//
// The shim header (the file metal_stdlib in this directory, embedded)
// declares the subset of the Metal standard library that Forge's kernels
// use and maps MSL's address spaces and attributes onto C++, so clang in
// C++ mode compiles a generated .metal source unchanged. Build links
// sources into a shared library, whose extern "C" functions a test calls
// through purego; the header's fgshim::run_group runs one threadgroup's
// threads as fibers, so threadgroup memory and barriers behave as on a GPU
// (and a barrier that not every thread reaches is reported).
//
// What this proves: that the source is well-formed C++ under Metal's
// rules as far as the shim declares them (types, address-space spelling,
// overloads, attributes), and, run on the CPU, that the kernel computes
// the right answer with IEEE float32 arithmetic and the host's libm. What
// only a Mac proves: that Apple's compiler accepts it (MSL is stricter in
// places C++ is not: e.g. pointer address spaces must match exactly),
// Metal's own math library and its fast-math default (the backend must
// compile with fast math off), threadgroup sizes and memory limits, and
// speed.
package mslshim

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

//go:embed metal_stdlib
var header []byte

// Header returns the shim header's text.
func Header() []byte { return bytes.Clone(header) }

// ErrNoClang is wrapped by Clang's error when no clang++ is installed.
var ErrNoClang = errors.New("mslshim: no clang++ (Debian: apt-get install clang)")

// Clang returns the path of the C++ compiler the shim uses: $FORGE_CLANG
// if set, else clang++ on the PATH (or a versioned clang++-N from 19 down
// to 14).
func Clang() (string, error) {
	if p := os.Getenv("FORGE_CLANG"); p != "" {
		return exec.LookPath(p)
	}
	names := []string{"clang++"}
	for v := 19; v >= 14; v-- {
		names = append(names, fmt.Sprintf("clang++-%d", v))
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", ErrNoClang
}

// flags are clang's options for MSL: C++17 (MSL 2 is C++14 with
// extensions), no floating-point contraction or fast math (the kernels'
// results must be IEEE's, as kernels/cpu computes them), warnings as
// errors except for the Metal attributes the shim leaves to clang to
// ignore.
var flags = []string{"-x", "c++", "-std=c++17", "-ffp-contract=off", "-fno-fast-math",
	"-Wall", "-Wextra", "-Werror", "-Wno-unknown-attributes", "-Wno-unused-function", "-Wno-unused-parameter"}

// writeHeader puts the shim header into dir as metal_stdlib.
func writeHeader(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "metal_stdlib"), header, 0o644); err != nil {
		return fmt.Errorf("mslshim: writing the shim header: %w", err)
	}
	return nil
}

// run compiles src (written into dir as name) with extra options.
func run(ctx context.Context, dir, name, src string, extra ...string) error {
	cxx, err := Clang()
	if err != nil {
		return err
	}
	if err := writeHeader(dir); err != nil {
		return err
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		return fmt.Errorf("mslshim: writing %s: %w", name, err)
	}
	args := append([]string{"-I", dir}, flags...)
	args = append(args, extra...)
	args = append(args, path)
	out, err := exec.CommandContext(ctx, cxx, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mslshim: clang %s: %w\n%s", name, err, out)
	}
	return nil
}

// Check compiles src (MSL) without producing anything: the compile check.
// dir is a scratch directory.
func Check(ctx context.Context, dir, src string) error {
	return run(ctx, dir, "check.metal", src, "-fsyntax-only")
}

// Build compiles src (MSL, plus any extern "C" harness functions appended
// to it) into the shared library lib, optimised, for Open.
func Build(ctx context.Context, dir, src, lib string) error {
	return run(ctx, dir, filepath.Base(lib)+".metal", src, "-O1", "-fPIC", "-shared", "-o", lib)
}
