package metal

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

	"github.com/tensorforge/forge/kernels/codegen"
)

// pipelineKey identifies a compiled pipeline in the backend's in-memory
// cache: the kernel's function name within the library of src ("" for the
// hand-written library), hashed with codegen.Key so equal sources share one
// library however many steps use them.
func pipelineKey(src, fn string) string {
	if src == "" {
		return "fixed/" + fn
	}
	return codegen.Key(codegen.MSL, src) + "/" + fn
}

// archiveVersion changes when the way the backend builds pipelines
// changes, so an old archive is not mixed with new pipelines.
const archiveVersion = "forge-metal-1"

// archivePath is where the backend keeps its MTLBinaryArchive of compiled
// pipelines: one file per (GPU, OS version, backend version) in dir, since
// a new OS brings a new GPU compiler and the archive holds its output.
// Empty when dir is.
func archivePath(dir, device, osVersion string) string {
	if dir == "" {
		return ""
	}
	h := sha256.Sum256([]byte(archiveVersion + "\x00" + device + "\x00" + osVersion))
	return filepath.Join(dir, "metal-"+hex.EncodeToString(h[:8])+".binarchive")
}
