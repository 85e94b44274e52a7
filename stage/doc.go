// Package stage holds the goroutine building blocks of a Forge pipeline.
//
// A stage is one goroutine that receives [Frame] values from a bounded input
// channel and sends frames to a bounded output channel. Because channels are
// bounded, a slow stage blocks the stage before it (backpressure) and memory
// stays bounded however fast a source is.
//
// The kinds of stage:
//
//   - [Map] and [MapFrame]: one frame in, one frame out.
//   - [FlatMap] and [Process]: one frame in, any number out (a VAD turns PCM
//     chunks into speech segments); a [Processor] that is also a [Flusher]
//     emits what it still holds when the input ends.
//   - [Batch] and [Rechunk]: many in, one out, bounded by size and time.
//   - [Source] ([FromFunc], [FromSamples], [FromSlice], [FromSeq],
//     [FromReader], [FromPCM16]) and [Sink] ([ToFunc], [Discard]).
//   - [Tee] and [Merge] for pipelines that branch and join.
//
// Every frame carries its media position (Offset samples at Rate) and the
// wall time it entered the pipeline, so end-to-end latency and time to first
// output are measured, not guessed. Each stage records [Metrics] as it runs
// with atomic counters and preallocated histograms: the per-frame path does
// not allocate.
//
// Wiring stages by hand is possible (every stage has a Run method taking its
// channels), but package pipeline does it for you: it sizes channels, runs
// every stage under one group, cancels all on the first error and closes each
// stage's output after its Run returns. Run methods never close their output
// channels; whoever created the channel closes it.
package stage
