package dl

import "github.com/ebitengine/purego"

func dlopen(path string) (uintptr, error) {
	// RTLD_GLOBAL is not needed: nothing resolves symbols of these
	// libraries except through this handle.
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }
