package synth

// rng is splitmix64: tiny, fast and spelled out here, so the same seed
// gives the same music on every Go version (math/rand's streams are not
// promised to stay put).
type rng struct{ s uint64 }

// newRNG starts a stream for one purpose ("key", "melody A", ...). Each
// purpose has its own stream, so a change in how one part is drawn does
// not shift every other random choice.
func newRNG(seed uint64, stream string) *rng {
	h := uint64(14695981039346656037) // FNV-1a
	for i := 0; i < len(stream); i++ {
		h ^= uint64(stream[i])
		h *= 1099511628211
	}
	r := &rng{s: seed ^ h}
	r.next()
	return r
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float is uniform in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// noise is uniform in [-1, 1).
func (r *rng) noise() float64 { return 2*r.float() - 1 }

// intn is uniform in [0, n); 0 when n <= 0.
func (r *rng) intn(n int) int {
	if n <= 0 {
		return 0
	}
	return int(r.next() % uint64(n))
}

// between is uniform in [lo, hi] (integers).
func (r *rng) between(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + r.intn(hi-lo+1)
}

// weighted picks an index with probability proportional to its weight.
func (r *rng) weighted(w []float64) int {
	total := 0.0
	for _, x := range w {
		total += x
	}
	x := r.float() * total
	for i, v := range w {
		if x < v {
			return i
		}
		x -= v
	}
	return len(w) - 1
}
