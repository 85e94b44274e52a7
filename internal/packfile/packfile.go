// Package packfile keeps named blobs of derived bytes in one file that a
// later process maps read-only and uses in place: a CPU backend's packed
// weights, which cost a quarter of a second of CPU to make at every start
// and are the same in every process that runs the same weights with the
// same code on the same CPU path.
//
// A file is a 64-byte header, the blobs (each at a multiple of 64 bytes,
// so that a blob's words are as aligned as the kernels' own allocations),
// and an index at the end naming each blob's key, place, length and
// CRC-32C. The header carries the caller's key for the whole file (what
// the blobs were derived from, and by which code), the index's place and
// CRC-32C, and its own CRC-32C.
//
// Nothing read from a file is trusted: Open checks the header, the key
// and the index, and File.Get checks a blob's CRC-32C the first time it
// is asked for, so a damaged or foreign file is refused (whole, or blob by
// blob) and the caller derives the bytes again. CRC-32C rather than a
// cryptographic hash because the threat is damage (a bad disk block, a
// file truncated or edited by hand), not an adversary who can write the
// cache directory and could as well replace the weights: the check runs
// at about 10 GB/s on the CPU's CRC32 instruction, ~15 ms for Kokoro's
// 130 MB of packs, spread over the first use of each, where SHA-256 would
// cost ~80 ms every start. Files are written through internal/outfile (a
// temporary file renamed over the path), so a crash never leaves a torn
// file under the name.
package packfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
)

// Version is the format version written in every header; a file of
// another version is refused.
const Version = 1

// Align is the alignment of every blob in the file (and so in the
// mapping, which starts on a page).
const Align = 64

const (
	magic      = "FORGEPK\x00"
	headerSize = 64
	// maxKey bounds a key's length, so that a damaged length cannot make
	// the parser allocate much.
	maxKey = 1 << 12
)

// castagnoli is the CRC-32C table: hardware-accelerated on amd64 and
// arm64.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header layout (little endian):
//
//	0   magic "FORGEPK\0"
//	8   version uint32
//	12  blob count uint32
//	16  file key: the first 24 bytes of the caller's key hash (see KeySum)
//	40  index offset uint64
//	48  index length uint64
//	56  index CRC-32C uint32
//	60  CRC-32C of bytes 0–59 uint32
//
// Index entry: key length uint32, key bytes, offset uint64, length
// uint64, CRC-32C uint32.

// entry is one blob of a file's index.
type entry struct {
	off, n uint64
	crc    uint32
	once   sync.Once
	ok     bool
}

// index is a parsed file: its blobs by key, over the file's bytes.
type index struct {
	data  []byte
	blobs map[string]*entry
	keys  []string // in file order
}

// parse checks data, a whole file, against the file key fileKey (KeySum's
// bytes) and returns its index. It never trusts a length or an offset it
// has not bounded by len(data).
func parse(data []byte, fileKey [24]byte) (*index, error) {
	if len(data) < headerSize {
		return nil, fmt.Errorf("packfile: %d bytes, shorter than a header", len(data))
	}
	h := data[:headerSize]
	if string(h[:8]) != magic {
		return nil, errors.New("packfile: not a pack file")
	}
	if crc32.Checksum(h[:60], castagnoli) != binary.LittleEndian.Uint32(h[60:]) {
		return nil, errors.New("packfile: header checksum mismatch")
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != Version {
		return nil, fmt.Errorf("packfile: format version %d, want %d", v, Version)
	}
	if [24]byte(h[16:40]) != fileKey {
		return nil, errors.New("packfile: written for another key")
	}
	count := binary.LittleEndian.Uint32(h[12:])
	ioff, ilen := binary.LittleEndian.Uint64(h[40:]), binary.LittleEndian.Uint64(h[48:])
	if ioff < headerSize || ioff > uint64(len(data)) || ilen != uint64(len(data))-ioff {
		return nil, fmt.Errorf("packfile: index at %d (%d bytes) in a %d-byte file", ioff, ilen, len(data))
	}
	idx := data[ioff:]
	if crc32.Checksum(idx, castagnoli) != binary.LittleEndian.Uint32(h[56:]) {
		return nil, errors.New("packfile: index checksum mismatch")
	}
	// Each entry takes at least 24 bytes, which bounds count before any
	// allocation sized by it.
	if uint64(count) > ilen/24 {
		return nil, fmt.Errorf("packfile: %d entries in a %d-byte index", count, ilen)
	}
	ix := &index{data: data, blobs: make(map[string]*entry, count), keys: make([]string, 0, count)}
	for i := uint32(0); i < count; i++ {
		if len(idx) < 4 {
			return nil, fmt.Errorf("packfile: index entry %d truncated", i)
		}
		kl := binary.LittleEndian.Uint32(idx)
		if kl > maxKey || uint64(len(idx)) < 4+uint64(kl)+20 {
			return nil, fmt.Errorf("packfile: index entry %d: key of %d bytes", i, kl)
		}
		key := string(idx[4 : 4+kl])
		e := idx[4+kl:]
		off, n := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(e[8:])
		if off%Align != 0 || off < headerSize || off > ioff || n > ioff-off {
			return nil, fmt.Errorf("packfile: blob %q at %d (%d bytes) outside the blobs (%d bytes)", key, off, n, ioff)
		}
		if _, dup := ix.blobs[key]; dup {
			return nil, fmt.Errorf("packfile: blob %q twice", key)
		}
		ix.blobs[key] = &entry{off: off, n: n, crc: binary.LittleEndian.Uint32(e[16:])}
		ix.keys = append(ix.keys, key)
		idx = e[20:]
	}
	if len(idx) != 0 {
		return nil, fmt.Errorf("packfile: %d bytes after the index's %d entries", len(idx), count)
	}
	return ix, nil
}

// get returns the blob named key, checking its CRC-32C on the first call
// (once, whoever asks): false when there is none or it is damaged.
func (ix *index) get(key string) ([]byte, bool) {
	e := ix.blobs[key]
	if e == nil {
		return nil, false
	}
	b := ix.data[e.off : e.off+e.n : e.off+e.n]
	e.once.Do(func() { e.ok = crc32.Checksum(b, castagnoli) == e.crc })
	return b, e.ok
}
