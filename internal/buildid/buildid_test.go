package buildid

import "testing"

// TestVersion checks that a test binary (no VCS stamp) is named by its
// executable file, the same way on every call.
func TestVersion(t *testing.T) {
	v := Version()
	if v == "" {
		t.Fatal("Version is empty for a binary on disk")
	}
	if w := Version(); w != v {
		t.Errorf("Version changed between calls: %q then %q", v, w)
	}
}
