package whisper

// HeldStarts returns how many Start programs the window's current cache
// keeps open, for tests of their bound. (The step programs, one per
// attended length, are all kept; a pooled cache may hold them from
// earlier windows.)
func (w *Window) HeldStarts() int { return len(w.cache.starts) }

// MaxStarts exports maxStarts to tests.
const MaxStarts = maxStarts
