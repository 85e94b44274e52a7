package espeak

import "os"

// libraryCandidates lists the files Default tries, in order: Homebrew on
// Apple silicon, Homebrew on Intel, MacPorts, then the loader's search path.
func libraryCandidates() []string {
	c := []string{
		"/opt/homebrew/lib/libespeak-ng.1.dylib",
		"/opt/homebrew/lib/libespeak-ng.dylib",
		"/usr/local/lib/libespeak-ng.1.dylib",
		"/usr/local/lib/libespeak-ng.dylib",
		"/opt/local/lib/libespeak-ng.1.dylib",
		"libespeak-ng.1.dylib",
		"libespeak-ng.dylib",
	}
	if p := os.Getenv("FORGE_ESPEAK_LIBRARY"); p != "" {
		c = append([]string{p}, c...)
	}
	return c
}

// libcCandidates lists the C libraries that provide open_memstream.
func libcCandidates() []string { return []string{"/usr/lib/libSystem.B.dylib"} }
