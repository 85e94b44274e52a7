//go:build !linux

package cpu

// adviseHuge does nothing where transparent huge pages are not a thing.
func adviseHuge([]byte) {}
