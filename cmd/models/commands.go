package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	_ "github.com/tensorforge/forge/models/all" // every model's source table and converter
	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/onnx"
)

const usage = `usage:
  models fetch [ID... | all]   fetch, verify and convert into the cache
  models verify [ID... | all]  hash every cached file in full; replace what is corrupt
  models list ID               every converted tensor: name, dtype, shape
  models graph ID [FILE]       the ONNX graph(s) of ID: inputs, outputs, initializers, nodes,
                               with converted tensor names as {=name}
  models const ID NAME [FILE]  every value of one ONNX constant (initializer or Constant output)
  models info [ID]             source table, cache paths, manifest summary
  models path ID [FILE]        cached path of the model dir or of one of its files
ids: ` + "%s\n"

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintf(os.Stderr, usage, strings.Join(weights.IDs(), ", "))
		return usageError{errors.New("no command")}
	}
	cache, err := weights.NewCache()
	if err != nil {
		return err
	}
	switch args[0] {
	case "fetch":
		return fetchCmd(ctx, cache, args[1:])
	case "verify":
		return verifyCmd(ctx, out, cache, args[1:])
	case "list":
		if len(args) != 2 {
			return usageError{errors.New("usage: models list ID")}
		}
		return listCmd(out, cache, args[1])
	case "graph":
		if len(args) < 2 || len(args) > 3 {
			return usageError{errors.New("usage: models graph ID [FILE]")}
		}
		file := ""
		if len(args) == 3 {
			file = args[2]
		}
		return graphCmd(out, cache, args[1], file)
	case "const":
		if len(args) < 3 || len(args) > 4 {
			return usageError{errors.New("usage: models const ID NAME [FILE]")}
		}
		file := ""
		if len(args) == 4 {
			file = args[3]
		}
		return constCmd(out, cache, args[1], args[2], file)
	case "info":
		return infoCmd(out, cache, args[1:])
	case "path":
		if len(args) < 2 || len(args) > 3 {
			return usageError{errors.New("usage: models path ID [FILE]")}
		}
		a, err := cache.Open(args[1])
		if err != nil {
			return err
		}
		defer a.Close()
		if len(args) == 2 {
			fmt.Fprintln(out, a.Dir)
			return nil
		}
		p, err := a.Path(args[2])
		if err != nil {
			return err
		}
		fmt.Fprintln(out, p)
		return nil
	case "-h", "--help", "help":
		fmt.Fprintf(out, usage, strings.Join(weights.IDs(), ", "))
		return nil
	}
	fmt.Fprintf(os.Stderr, usage, strings.Join(weights.IDs(), ", "))
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

// knownIDs reports the first id that names no model as a bad command
// line.
func knownIDs(ids []string) error {
	for _, id := range ids {
		if _, err := weights.Lookup(id); err != nil {
			return usageError{err}
		}
	}
	return nil
}

func fetchCmd(ctx context.Context, cache *weights.Cache, ids []string) error {
	if len(ids) == 0 || (len(ids) == 1 && ids[0] == "all") {
		ids = weights.IDs()
	}
	if err := knownIDs(ids); err != nil {
		return err
	}
	cache.Log = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "models: "+format+"\n", args...)
	}
	t0 := time.Now()
	if err := cache.Ensure(ctx, ids...); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "models: %s ready in %s (%.1fs)\n", strings.Join(ids, ", "), cache.Root, time.Since(t0).Seconds())
	return nil
}

// verifyCmd hashes every file of the cached models in full, which catches
// damage that the identity check on load cannot see (bytes changed with
// size, times and inode unchanged), and repairs what it finds as fetch
// does. Models not in the cache are reported, not fetched.
func verifyCmd(ctx context.Context, out io.Writer, cache *weights.Cache, ids []string) error {
	if len(ids) == 0 || (len(ids) == 1 && ids[0] == "all") {
		ids = weights.IDs()
	}
	cache.Log = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "models: "+format+"\n", args...)
	}
	if err := knownIDs(ids); err != nil {
		return err
	}
	var present []string
	for _, id := range ids {
		if !cache.Ready(id) {
			fmt.Fprintf(out, "%s: not in the cache (run `models fetch %s`)\n", id, id)
			continue
		}
		present = append(present, id)
	}
	found, err := cache.Verify(ctx, present...)
	for _, f := range found {
		fmt.Fprintf(out, "%v\n", f)
	}
	if err != nil {
		return err
	}
	if len(found) > 0 {
		fmt.Fprintf(out, "replaced %d corrupt file(s); %s intact now\n", len(found), strings.Join(present, ", "))
	} else if len(present) > 0 {
		fmt.Fprintf(out, "%s: every file matches its sha256\n", strings.Join(present, ", "))
	}
	return nil
}

func listCmd(w io.Writer, cache *weights.Cache, id string) error {
	a, err := cache.Open(id)
	if err != nil {
		return err
	}
	defer a.Close()
	m := a.Manifest
	fmt.Fprintf(w, "# %s: %d tensors, %d parameters (%s)\n", id, m.Tensors, m.Params, filepath.Join(a.Dir, m.Weights))
	for _, n := range m.Notes {
		fmt.Fprintf(w, "# %s\n", n)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, name := range a.Names() {
		t, _ := a.Tensor(name)
		fmt.Fprintf(tw, "%s\t%s\t%v\n", name, t.DType, shapeString(t.Shape))
	}
	return tw.Flush()
}

func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func graphCmd(w io.Writer, cache *weights.Cache, id, file string) error {
	m, err := weights.Lookup(id)
	if err != nil {
		return err
	}
	var names map[string]map[string][]string
	if a, err := cache.Open(id); err == nil {
		names = a.Manifest.ONNXNames
		a.Close()
	}
	shown := 0
	for _, f := range m.Files {
		if !strings.HasSuffix(f.Name, ".onnx") || (file != "" && f.Name != file) {
			continue
		}
		p, err := cache.SourcePath(id, f.Name)
		if err != nil {
			return err
		}
		g, err := onnx.Open(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "# %s/%s: ir %d, opsets %s, producer %s %s\n", id, f.Name, g.IRVersion, opsets(g.Opsets), g.ProducerName, g.ProducerVersion)
		printGraph(w, g.Graph, "", names[f.Name])
		g.Close()
		shown++
	}
	if shown == 0 {
		return fmt.Errorf("%s has no ONNX file %q", id, file)
	}
	return nil
}

func constCmd(w io.Writer, cache *weights.Cache, id, name, file string) error {
	m, err := weights.Lookup(id)
	if err != nil {
		return err
	}
	for _, f := range m.Files {
		if !strings.HasSuffix(f.Name, ".onnx") || (file != "" && f.Name != file) {
			continue
		}
		p, err := cache.SourcePath(id, f.Name)
		if err != nil {
			return err
		}
		g, err := onnx.Open(p)
		if err != nil {
			return err
		}
		t, ok := constants(g.Graph)[name]
		if ok {
			err = printValues(w, t)
		}
		g.Close()
		if ok {
			return err
		}
	}
	return fmt.Errorf("%s has no constant %q", id, name)
}

func opsets(os []onnx.Opset) string {
	var s []string
	for _, o := range os {
		d := o.Domain
		if d == "" {
			d = "ai.onnx"
		}
		s = append(s, fmt.Sprintf("%s:%d", d, o.Version))
	}
	return strings.Join(s, " ")
}

func infoCmd(w io.Writer, cache *weights.Cache, ids []string) error {
	if len(ids) == 0 {
		ids = weights.IDs()
	}
	fmt.Fprintf(w, "cache: %s\n", cache.Root)
	for _, id := range ids {
		m, err := weights.Lookup(id)
		if err != nil {
			return err
		}
		state := "not fetched"
		if cache.Ready(id) {
			state = "ready"
		}
		fmt.Fprintf(w, "\n%s (%s): %s\n", id, state, m.Description)
		var total int64
		for _, f := range m.Files {
			total += f.Size
		}
		fmt.Fprintf(w, "  %d files, %d bytes\n", len(m.Files), total)
		for i, f := range m.Files {
			if i == 6 && len(m.Files) > 8 {
				fmt.Fprintf(w, "  … %d more\n", len(m.Files)-6)
				break
			}
			pkgs := map[string]bool{}
			var specs []string
			for _, p := range f.Parts {
				if !pkgs[p.Package.Spec()] {
					pkgs[p.Package.Spec()] = true
					specs = append(specs, p.Package.Spec())
				}
			}
			where := f.Parts[0].Path
			if len(f.Parts) > 1 {
				where = fmt.Sprintf("%d parts", len(f.Parts))
			}
			fmt.Fprintf(w, "  %-36s %10d  sha256 %s…  npm %s %s  (hf %s %s)\n", f.Name, f.Size, f.SHA256[:16], strings.Join(specs, "+"), where, f.Upstream.Repo, f.Upstream.Path)
		}
		if a, err := cache.Open(id); err == nil {
			fmt.Fprintf(w, "  converted: %d tensors, %d params, %s (%.1fs)\n", a.Manifest.Tensors, a.Manifest.Params, a.Manifest.Weights, a.Manifest.ConvertSeconds)
			a.Close()
		} else if errors.Is(err, weights.ErrCorrupt) {
			fmt.Fprintf(w, "  corrupt (run `models fetch %s` to repair): %v\n", id, err)
		}
	}
	return nil
}
