package whisper

// HeldStarts returns how many Start programs the window's current cache
// keeps open, for tests of their bound. (The step programs, one per
// attended length, are all kept; a pooled cache may hold them from
// earlier windows.)
func (w *Window) HeldStarts() int { return len(w.cache.starts) }

// MaxStarts exports maxStarts to tests.
const MaxStarts = maxStarts

// KeepSilenceTail makes a model that has not made its silence tail yet
// keep it in dir under version, as a build from a clean checkout keeps it
// beside the weights; it returns the file's path.
func KeepSilenceTail(m *Model, dir, version string) string {
	m.tailMu.Lock()
	defer m.tailMu.Unlock()
	m.tails = tailCache{dir: dir, version: version}
	return m.tails.path(m)
}

// SilenceTailEncodes returns how many times m computed its silence tail
// rather than reading it.
func SilenceTailEncodes(m *Model) int {
	m.tailMu.Lock()
	defer m.tailMu.Unlock()
	return m.tailEncodes
}
