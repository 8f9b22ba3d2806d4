package synth

import (
	"context"
	"fmt"
	"math"
	"sort"
)

// Channels is the channel count of Render's output (interleaved L, R).
const Channels = 2

// Sample rates Render accepts.
const (
	MinSampleRate = 8000
	MaxSampleRate = 192000
)

// Render synthesizes the arrangement: interleaved stereo float samples
// (L, R, L, R, ...) in [-1, 1], exactly a.Seconds*sampleRate frames. It
// returns nil for a sample rate outside MinSampleRate..MaxSampleRate.
func Render(a Arrangement, sampleRate int) []float32 {
	out, _ := RenderContext(context.Background(), a, sampleRate)
	return out
}

// RenderContext is Render that gives up when ctx ends (checked between
// notes), returning the context's error.
func RenderContext(ctx context.Context, a Arrangement, sampleRate int) ([]float32, error) {
	if sampleRate < MinSampleRate || sampleRate > MaxSampleRate {
		return nil, fmt.Errorf("synth: sample rate %d is outside %d..%d", sampleRate, MinSampleRate, MaxSampleRate)
	}
	if a.Seconds <= 0 || a.Seconds > MaxSeconds {
		return nil, fmt.Errorf("synth: length %d s is outside 1..%d", a.Seconds, MaxSeconds)
	}
	sr := float64(sampleRate)
	frames := a.Seconds * sampleRate
	m := &mixer{
		left:  make([]float32, frames),
		right: make([]float32, frames),
		send:  make([]float32, frames),
	}
	notes := a.Score()
	kicks := kickTimes(a, notes)
	v := &voicer{sr: sr, bpm: float64(a.BPM)}
	// Render part by part, so a part's scratch buffer stays warm.
	order := make([]int, len(notes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return notes[order[i]].Part < notes[order[j]].Part })
	for k, ni := range order {
		if k%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		n := notes[ni]
		if n.Part < 0 || n.Part >= len(a.Instruments) {
			continue
		}
		in := a.Instruments[n.Part]
		// Each note has its own noise stream, so the notes do not depend
		// on the order they are rendered in.
		r := newRNG(a.Seed^uint64(ni)*0x9e3779b97f4a7c15, "note")
		buf := v.note(in.Timbre, in.Role, n, r)
		m.add(a, in, n, buf, sr, kicks)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return m.master(a, sr), nil
}

// mixer holds the stereo mix and the reverb send.
type mixer struct {
	left, right, send []float32
}

// drumPan and drumSend place each drum in the stereo field and the room.
var drumPan = map[int]float64{ClosedHat: 0.25, OpenHat: 0.25, Ride: 0.3, Crash: -0.25, Shaker: -0.3, Rim: -0.1, Clap: 0.05}
var drumSend = map[int]float64{Snare: 0.25, Clap: 0.3, Rim: 0.2, OpenHat: 0.1, Ride: 0.15, Crash: 0.2, ClosedHat: 0.05}

// sends is how much of each timbre goes to the reverb.
var sends = map[Timbre]float64{
	Piano: 0.25, ElectricPiano: 0.2, Organ: 0.15, Pad: 0.4, Strings: 0.35, Bass: 0, SynthBass: 0.02, Sub808: 0,
	Lead: 0.25, Brass: 0.2, Pluck: 0.3, Bell: 0.45, Flute: 0.3, Chip: 0.1,
}

// add mixes one rendered note: velocity, the part's gain and pan (chord
// notes spread a little by pitch for width), the reverb send, and for
// sustained parts over a four-on-the-floor kick a sidechain duck that
// makes room for each kick (the "pumping" of dance music).
func (m *mixer) add(a Arrangement, in Instrument, n Note, buf []float32, sr float64, kicks []float64) {
	start := int(math.Round(n.Start * sr))
	if start >= len(m.left) {
		return
	}
	gain := in.Gain * math.Pow(n.Velocity, 1.3)
	pan := in.Pan
	send := sends[in.Timbre]
	if in.Timbre == Drums {
		pan, send = drumPan[n.Pitch], drumSend[n.Pitch]
	} else if in.Role == RoleChords || in.Role == RoleArp {
		pan += float64(mod(n.Pitch*7, 5)-2) * 0.12
	}
	send *= a.Reverb
	pan = clamp(pan, -1, 1)
	gl := gain * math.Cos((pan+1)*math.Pi/4)
	gr := gain * math.Sin((pan+1)*math.Pi/4)
	gs := gain * send
	depth := 0.0
	if len(kicks) > 0 && in.Timbre != Drums && (in.Role == RoleBass || in.Timbre == Pad || in.Timbre == Strings || in.Role == RoleArp) {
		depth = 0.35
		if in.Role == RoleBass {
			depth = 0.5
		}
	}
	end := min(len(buf), len(m.left)-start)
	if depth == 0 {
		for i := range end {
			x := float64(buf[i])
			m.left[start+i] += float32(x * gl)
			m.right[start+i] += float32(x * gr)
			m.send[start+i] += float32(x * gs)
		}
		return
	}
	// The duck: depth at each kick, recovering with a 90 ms time constant.
	k := sort.SearchFloat64s(kicks, n.Start+1e-9) - 1
	rec := math.Exp(-1 / (0.09 * sr))
	duck := 0.0
	if k >= 0 {
		duck = depth * math.Exp(-(n.Start-kicks[k])/0.09)
	}
	nextKick := math.MaxInt
	if k+1 < len(kicks) {
		nextKick = int(math.Round(kicks[k+1]*sr)) - start
	}
	for i := range end {
		if i >= nextKick {
			k++
			duck = depth
			nextKick = math.MaxInt
			if k+1 < len(kicks) {
				nextKick = int(math.Round(kicks[k+1]*sr)) - start
			}
		}
		g := 1 - duck
		duck *= rec
		x := float64(buf[i]) * g
		m.left[start+i] += float32(x * gl)
		m.right[start+i] += float32(x * gr)
		m.send[start+i] += float32(x * gs)
	}
}

// kickTimes are the kick drum's onsets when the groove is four on the
// floor (nil otherwise: only that groove pumps).
func kickTimes(a Arrangement, notes []Note) []float64 {
	if a.DrumStyle != FourOnTheFloor {
		return nil
	}
	var out []float64
	for _, n := range notes {
		if n.Pitch == Kick && n.Part >= 0 && n.Part < len(a.Instruments) && a.Instruments[n.Part].Timbre == Drums {
			out = append(out, n.Start)
		}
	}
	return out
}

// master finishes the mix: reverb, DC removal, (lo-fi) a darker tone and
// vinyl crackle, loudness, a soft limiter that keeps every sample inside
// ±1, a short fade-in and the closing fade-out; interleaved.
func (m *mixer) master(a Arrangement, sr float64) []float32 {
	n := len(m.left)
	rv := newReverb(sr, 0.84, 0.35)
	hpR := 1 - 2*math.Pi*25/sr
	var xl, yl, xr, yr float64
	var tl, tr float64 // lo-fi tone filter state
	toneA := 1 - math.Exp(-2*math.Pi*5200/sr)
	const block = 1024
	wl, wr := make([]float32, block), make([]float32, block)
	for b := 0; b < n; b += block {
		e := min(b+block, n)
		rv.process(m.send[b:e], wl[:e-b], wr[:e-b])
		for i := b; i < e; i++ {
			l := float64(m.left[i]) + 0.55*float64(wl[i-b])
			r := float64(m.right[i]) + 0.55*float64(wr[i-b])
			// DC blocker / rumble filter.
			yl = l - xl + hpR*yl
			xl = l
			yr = r - xr + hpR*yr
			xr = r
			l, r = yl, yr
			if a.Vinyl {
				tl += toneA * (l - tl)
				tr += toneA * (r - tr)
				l, r = tl, tr
			}
			m.left[i], m.right[i] = float32(l), float32(r)
		}
	}

	// Loudness: the 99.9th percentile of the level goes to 0.8, so the
	// few peaks above it meet the soft limiter rather than the whole
	// piece being made quiet by one transient.
	gain := 1.0
	if p := percentileAbs(m.left, m.right, 0.999); p > 1e-6 {
		gain = math.Min(0.8/p, 30)
	}

	var crackle *rng
	if a.Vinyl {
		crackle = newRNG(a.Seed, "vinyl")
	}
	pop := 0.0
	popMul := math.Exp(-1 / (0.0004 * sr))
	fadeIn := 0.005 * sr
	fadeOut := a.FadeOut * sr
	out := make([]float32, 2*n)
	for i := range n {
		l := float64(m.left[i]) * gain
		r := float64(m.right[i]) * gain
		if crackle != nil {
			if crackle.float() < 6/sr {
				pop = (0.02 + 0.06*crackle.float()) * math.Copysign(1, crackle.noise())
			}
			hiss := 0.003 * crackle.noise()
			l += pop + hiss
			r += pop*0.8 + hiss
			pop *= popMul
		}
		g := 1.0
		if fi := float64(i); fi < fadeIn {
			g = fi / fadeIn
		}
		if left := float64(n - 1 - i); left < fadeOut {
			u := left / fadeOut
			g *= u * u * (3 - 2*u) // smoothstep, 0 at the last sample
		}
		out[2*i] = float32(limit(l * g))
		out[2*i+1] = float32(limit(r * g))
	}
	return out
}

// limit passes levels below the knee unchanged and bends the rest
// smoothly towards (never past) ±0.999.
func limit(x float64) float64 {
	const knee, ceil = 0.85, 0.999
	if math.IsNaN(x) {
		return 0
	}
	ax := math.Abs(x)
	if ax <= knee {
		return x
	}
	y := knee + (ceil-knee)*math.Tanh((ax-knee)/(ceil-knee))
	return math.Copysign(math.Min(y, ceil), x)
}

// percentileAbs is the q-quantile of |x| over both channels, from a
// histogram (exact enough, and linear time).
func percentileAbs(a, b []float32, q float64) float64 {
	var pk float32
	for _, ch := range [][]float32{a, b} {
		for _, x := range ch {
			if x < 0 {
				x = -x
			}
			if x > pk || x != x {
				pk = x
			}
		}
	}
	peak := float64(pk)
	if peak == 0 || math.IsNaN(peak) || math.IsInf(peak, 0) {
		return peak
	}
	const bins = 4096
	var hist [bins]int
	total := 0
	for _, ch := range [][]float32{a, b} {
		scale := float32((bins - 1) / peak)
		for _, x := range ch {
			if x < 0 {
				x = -x
			}
			hist[min(int(x*scale), bins-1)]++
			total++
		}
	}
	want := int(q * float64(total))
	seen := 0
	for i, c := range hist {
		seen += c
		if seen >= want {
			return float64(i+1) / (bins - 1) * peak
		}
	}
	return peak
}

// reverb is Freeverb (Jezar's Schroeder–Moorer design): eight damped
// feedback combs in parallel and four all-passes in series per channel,
// the right channel's delays slightly longer for width. It runs a block at
// a time, one filter over the whole block before the next, which keeps
// each filter's state in registers.
type reverb struct {
	combs [2][8]comb
	allps [2][4]allpass
}

type comb struct {
	buf             []float32
	idx             int
	store           float32
	feedback, damp1 float32
}

type allpass struct {
	buf []float32
	idx int
}

func newReverb(sr, room, damp float64) *reverb {
	combLen := [8]int{1116, 1188, 1277, 1356, 1422, 1491, 1557, 1617}
	apLen := [4]int{556, 441, 341, 225}
	scale := sr / 44100
	rv := &reverb{}
	for ch := range 2 {
		for i, l := range combLen {
			n := max(1, int(float64(l+23*ch)*scale))
			rv.combs[ch][i] = comb{buf: make([]float32, n), feedback: float32(room), damp1: float32(damp)}
		}
		for i, l := range apLen {
			n := max(1, int(float64(l+23*ch)*scale))
			rv.allps[ch][i] = allpass{buf: make([]float32, n)}
		}
	}
	return rv
}

// process reads the mono send in and writes the two wet channels (which
// must be as long as in and are overwritten).
func (rv *reverb) process(in, outL, outR []float32) {
	for ch, out := range [2][]float32{outL, outR} {
		clear(out)
		for i := range rv.combs[ch] {
			c := &rv.combs[ch][i]
			buf, idx, store, fb, d := c.buf, c.idx, c.store, c.feedback, c.damp1
			for k, x := range in {
				y := buf[idx]
				store = y*(1-d) + store*d
				buf[idx] = x*0.015 + store*fb // 0.015: Freeverb's input gain
				if idx++; idx == len(buf) {
					idx = 0
				}
				out[k] += y
			}
			c.idx, c.store = idx, store
		}
		for i := range rv.allps[ch] {
			ap := &rv.allps[ch][i]
			buf, idx := ap.buf, ap.idx
			for k, s := range out {
				b := buf[idx]
				buf[idx] = s + b*0.5
				out[k] = b - s
				if idx++; idx == len(buf) {
					idx = 0
				}
			}
			ap.idx = idx
		}
	}
}
