// Command models fetches, converts and inspects Forge's model weights.
//
//	models fetch [ID... | all]   fetch, verify and convert into the cache (what `make models` runs)
//	models verify [ID... | all]  hash every cached file in full; replace what is corrupt
//	models list ID               every converted tensor: name, dtype, shape
//	models graph ID [FILE]       the ONNX graph(s): inputs, outputs, initializers, nodes with attributes
//	models const ID NAME [FILE]  every value of one ONNX constant
//	models info [ID]             source table, cache paths, manifest summary
//	models path ID [FILE]        the cached path of a side file (or the model dir)
//
// Loading a model hashes only the files that changed (size, times, inode)
// since they were last verified; `models verify` hashes everything.
//
// The cache is $FORGE_MODELS, else $XDG_CACHE_HOME/forge/models, else
// ~/.cache/forge/models.
//
// Exit codes, as every Forge command: 0 success (and --help), 1 a failed
// run, 2 a bad command line (no or an unknown command, a wrong number of
// arguments, an unknown model id).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "models:", err)
		os.Exit(exitCode(err))
	}
}

// usageError marks a bad command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCode is 2 for a bad command line (an unknown model id among them),
// 1 for any other failure.
func exitCode(err error) int {
	if errors.As(err, new(usageError)) {
		return 2
	}
	return 1
}
