// Package mtl is the thin Objective-C bridge under Forge's Metal backend:
// the Metal objects the backend uses (device, shared-storage buffers,
// libraries compiled from MSL source, compute pipelines, binary archives,
// command queues, command buffers with a compute encoder) reached through
// purego's objc_msgSend on darwin, with no cgo.
//
// Every message goes through a typed function registered once over
// objc_msgSend for its exact C signature (so struct arguments such as
// MTLSize travel by the platform ABI), with selectors registered once from
// one table. NSErrors become *Error values (domain, code, description,
// failure reason), matched by errors.Is against ErrCompile and
// ErrOutOfMemory. Metal calls run on a Thread: one locked OS thread that
// wraps each batch in an autorelease pool; objects that outlive a batch
// (command buffers, encoders) are retained.
//
// What does not need the framework builds and is tested on every system:
// the selector table (names against argument counts), NSError decoding,
// the results of library compiles and command buffers, the no-copy range
// of host memory, and the thread's pool discipline. The rest (files named
// *_darwin.go) builds only for darwin and is exercised on a Mac.
package mtl
