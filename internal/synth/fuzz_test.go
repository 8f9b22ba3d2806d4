package synth

import (
	"math"
	"testing"
)

// FuzzPlan: whatever the description, Plan does not panic, keeps the
// tempo within MinBPM..MaxBPM, covers the length with contiguous
// sections, and its score stays inside the piece.
func FuzzPlan(f *testing.F) {
	for _, d := range []string{
		"upbeat synthwave with arpeggiated synth bass and drums at 118 bpm",
		"calm lo-fi piano, melancholic, slow",
		"", "in", "key of", "no", "arpeggiated", "drum and bass without bass", "999999999999 bpm", "tempo -5",
		"b flat", "in a", "waltz 4/4 3/4", "solo solo solo", "♯♭&'n'", "\x00\xff", "lo-fi lo-fi hip hop 0.0001 bpm",
	} {
		f.Add(d, 30, uint64(1))
	}
	f.Add("house", 0, uint64(0))
	f.Add("blues", 600, uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, desc string, secs int, seed uint64) {
		// Lengths beyond the clamp add nothing but time.
		secs %= 2 * MaxSeconds
		a := Plan(desc, secs, seed)
		checkForm(t, a)
		if a.Bars > 0 && float64(a.Bars)*a.BarSeconds() > float64(a.Seconds)+a.BarSeconds() {
			t.Fatalf("%d bars overshoot %d s", a.Bars, a.Seconds)
		}
		for _, n := range a.Score() {
			if n.Part < 0 || n.Part >= len(a.Instruments) || n.Start < 0 || n.Start >= float64(a.Seconds) ||
				!(n.Dur > 0) || !(n.Velocity > 0) || n.Velocity > 1 || n.Pitch < 0 || n.Pitch > 127 {
				t.Fatalf("%q: note %+v", desc, n)
			}
		}
	})
}
