package cpu

import "runtime/debug"

// Reclaim returns the memory of freed buffers to the operating system now:
// collected, and the pages given back (debug.FreeOSMemory). Free only
// drops a buffer for the garbage collector, whose next cycle and
// scavenger come later, so a large allocation made just after freeing
// buffers of its size would otherwise sit beside their still resident
// pages. The graph engine calls it when it frees idle buffers to make room
// for a larger one; it costs a garbage collection (a few milliseconds: the
// buffers hold no pointers).
func (b *Backend) Reclaim() { debug.FreeOSMemory() }
