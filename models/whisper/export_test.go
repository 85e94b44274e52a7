package whisper

// HeldPrograms returns how many decoder programs the window's current
// cache keeps open, for tests of their bound.
func (w *Window) HeldPrograms() int { return len(w.cache.steps) }

// MaxStarts exports maxStarts to tests.
const MaxStarts = maxStarts
