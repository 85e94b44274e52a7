// Package graph is Forge's lazy tensor graph: element types and shapes, an
// append-only node arena, the ops models are written in, and the compiler
// that turns the requested outputs into a cached, fused, buffer-planned
// program for a kernels.Backend.
//
// Building a graph computes nothing. Each op appends an immutable node and
// infers its shape and dtype at once; identical nodes are shared (hash
// consing gives common-subexpression elimination for free). Errors in op
// arguments do not panic: the offending op returns a Tensor that carries the
// error (see Tensor.Err), every op fed such a tensor passes the same error
// on, and Engine.Compile or Engine.Eval returns it. Model code can therefore
// be written as straight-line arithmetic and check once.
//
// Compiling (Engine.Compile) keeps only the ancestors of the requested
// outputs, folds subgraphs that depend on weights alone (cached per engine,
// so a weight transposed or dequantized in the graph is computed once),
// fuses chains of elementwise ops into one kernels.Expr (through the
// reshapes between them), has a product add a bias that no such chain
// takes (a Linear's, before an attention), turns reshapes,
// transposes, slices and broadcasts into strided views where kernels accept
// them, and plans intermediate buffers into one arena by liveness. Programs
// are cached by the graph's structure and input shapes, so rebuilding the
// same model graph for the next chunk of audio does not recompile. That
// cache, and the pool of buffers closed programs leave for the next ones,
// are bounded and drop what was least recently used (WithPlanCache,
// WithBufferPool), so a long run over ever new shapes stays in bounded
// memory.
//
// A model whose stages are separate graphs (a stage's shapes depend on
// values the host reads first) hands intermediates from one to the next
// with Engine.EvalHeld and Graph.InputHeld: the value stays in the
// backend's memory (a GPU's) instead of a round trip through the host.
package graph
