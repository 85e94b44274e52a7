package espeak

import "os"

// libraryCandidates lists the files Default tries, in order.
func libraryCandidates() []string {
	c := []string{"libespeak-ng.so.1", "libespeak-ng.so"}
	if p := os.Getenv("FORGE_ESPEAK_LIBRARY"); p != "" {
		c = append([]string{p}, c...)
	}
	return c
}

// libcCandidates lists the C libraries that provide open_memstream.
func libcCandidates() []string { return []string{"libc.so.6", "libc.so"} }
