package coordinator

import (
	"iter"
	"math/bits"
)

// bitset is a set of small integers (component indexes) that lists its
// members in increasing order, which is declaration order: finding the
// pending components of a build of 100,000 reads 1,563 words.
type bitset []uint64

func (b *bitset) set(i int, on bool) {
	w := i / 64
	for len(*b) <= w {
		*b = append(*b, 0)
	}
	if on {
		(*b)[w] |= 1 << (i % 64)
	} else {
		(*b)[w] &^= 1 << (i % 64)
	}
}

func (b bitset) has(i int) bool {
	w := i / 64
	return w < len(b) && b[w]&(1<<(i%64)) != 0
}

// all yields the members in increasing order.
func (b bitset) all() iter.Seq[int] {
	return func(yield func(int) bool) {
		for w, word := range b {
			for word != 0 {
				if !yield(w*64 + bits.TrailingZeros64(word)) {
					return
				}
				word &= word - 1
			}
		}
	}
}
