package ipalloc

import "math/bits"

// A subnet's held addresses are kept by offset in chunks of chunkSize
// addresses: a bitmap, which dynamic allocation scans a 64-bit word at a
// time, and the holder's id per address, which the conflict checks read.
// Chunks exist only while they hold an address, so memory follows use even
// in an IPv6 /64; excluded ranges are never materialised (the walk skips
// them by their intervals).
const (
	chunkShift = 10
	chunkSize  = 1 << chunkShift
	chunkWords = chunkSize / 64
	// maxDenseChunks bounds the chunk directory kept as a slice (32 KiB of
	// pointers, a /10 of IPv4); larger windows index chunks by a map.
	maxDenseChunks = 1 << 12
)

type chunk struct {
	held int
	bits [chunkWords]uint64
	// ids grows by doubling to the highest offset held: a network with a
	// few pods keeps a few bytes, not a chunk's worth.
	ids []uint32
}

// firstFree is the first offset in [lo, hi) with no holder; 0 <= lo < hi <=
// chunkSize.
func (c *chunk) firstFree(lo, hi uint64) (uint64, bool) {
	w := lo >> 6
	word := ^c.bits[w] & (^uint64(0) << (lo & 63))
	for {
		if word != 0 {
			off := w<<6 + uint64(bits.TrailingZeros64(word))
			return off, off < hi
		}
		w++
		if w<<6 >= hi {
			return 0, false
		}
		word = ^c.bits[w]
	}
}

// holders maps offsets of a subnet's walked range to holder ids (0: free).
type holders struct {
	dense  []*chunk
	sparse map[uint64]*chunk
	// last is the sparse chunk used last, at index lastCI: consecutive
	// allocations mostly fall in one chunk.
	last   *chunk
	lastCI uint64
}

func newHolders(size uint64) holders {
	if n := (size + chunkSize - 1) >> chunkShift; n <= maxDenseChunks {
		return holders{dense: make([]*chunk, n)}
	}
	return holders{sparse: map[uint64]*chunk{}}
}

func (h *holders) chunk(ci uint64) *chunk {
	if h.sparse == nil {
		return h.dense[ci]
	}
	if h.last != nil && h.lastCI == ci {
		return h.last
	}
	c := h.sparse[ci]
	if c != nil {
		h.last, h.lastCI = c, ci
	}
	return c
}

func (h *holders) get(off uint64) uint32 {
	if c := h.chunk(off >> chunkShift); c != nil {
		if i := off & (chunkSize - 1); i < uint64(len(c.ids)) {
			return c.ids[i]
		}
	}
	return 0
}

// set records id (not 0) as the holder of the free offset off.
func (h *holders) set(off uint64, id uint32) {
	ci := off >> chunkShift
	c := h.chunk(ci)
	if c == nil {
		c = new(chunk)
		if h.sparse == nil {
			h.dense[ci] = c
		} else {
			h.sparse[ci] = c
		}
	}
	i := off & (chunkSize - 1)
	if i >= uint64(len(c.ids)) {
		ids := make([]uint32, min(chunkSize, max(16, 1<<bits.Len64(i))))
		copy(ids, c.ids)
		c.ids = ids
	}
	c.ids[i] = id
	c.bits[i>>6] |= 1 << (i & 63)
	c.held++
}

// clear frees off; a chunk left empty is dropped.
func (h *holders) clear(off uint64) {
	ci := off >> chunkShift
	c := h.chunk(ci)
	i := off & (chunkSize - 1)
	if c == nil || i >= uint64(len(c.ids)) || c.ids[i] == 0 {
		return
	}
	c.ids[i] = 0
	c.bits[i>>6] &^= 1 << (i & 63)
	if c.held--; c.held > 0 {
		return
	}
	if h.sparse == nil {
		h.dense[ci] = nil
	} else {
		delete(h.sparse, ci)
		if h.last == c {
			h.last = nil
		}
	}
}

// firstFree is the first offset in [lo, hi) with no holder. Full chunks are
// skipped whole; a missing chunk is free.
func (h *holders) firstFree(lo, hi uint64) (uint64, bool) {
	for lo < hi {
		ci := lo >> chunkShift
		base := ci << chunkShift
		end := min(hi, base+chunkSize)
		c := h.chunk(ci)
		if c == nil {
			return lo, true
		}
		if c.held < chunkSize {
			if off, ok := c.firstFree(lo-base, end-base); ok {
				return base + off, true
			}
		}
		lo = end
	}
	return 0, false
}
