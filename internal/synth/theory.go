package synth

import (
	"math"
	"slices"
)

// Mode is the scale the music is in.
type Mode string

// The modes Plan chooses from. Minor is the natural minor (aeolian).
const (
	Major         Mode = "major" // ionian
	Minor         Mode = "minor" // aeolian
	Dorian        Mode = "dorian"
	Phrygian      Mode = "phrygian"
	Lydian        Mode = "lydian"
	Mixolydian    Mode = "mixolydian"
	HarmonicMinor Mode = "harmonic minor"
)

// Intervals are the mode's seven scale steps in semitones above the tonic.
// An unknown mode reads as major.
func (m Mode) Intervals() [7]int {
	switch m {
	case Minor:
		return [7]int{0, 2, 3, 5, 7, 8, 10}
	case Dorian:
		return [7]int{0, 2, 3, 5, 7, 9, 10}
	case Phrygian:
		return [7]int{0, 1, 3, 5, 7, 8, 10}
	case Lydian:
		return [7]int{0, 2, 4, 6, 7, 9, 11}
	case Mixolydian:
		return [7]int{0, 2, 4, 5, 7, 9, 10}
	case HarmonicMinor:
		return [7]int{0, 2, 3, 5, 7, 8, 11}
	}
	return [7]int{0, 2, 4, 5, 7, 9, 11}
}

// minorish modes have a minor third over the tonic.
func (m Mode) minorish() bool { return m.Intervals()[2] == 3 }

// noteNames spells pitch classes the way lead sheets usually do.
var noteNames = [12]string{"C", "C#", "D", "Eb", "E", "F", "F#", "G", "Ab", "A", "Bb", "B"}

// scalePitch is the MIDI note of scale degree deg (0 = tonic; 7 = the
// tonic an octave up; negative goes down).
func scalePitch(tonic int, iv [7]int, deg int) int {
	o := floorDiv(deg, 7)
	return tonic + 12*o + iv[deg-7*o]
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func mod(a, b int) int { return a - b*floorDiv(a, b) }

// freq is the equal-tempered frequency of a MIDI note (A4 = 69 = 440 Hz).
func freq(note float64) float64 { return 440 * math.Pow(2, (note-69)/12) }

// Chord is one chord of a progression.
type Chord struct {
	Degree int    // scale degree of the root, 0 = tonic
	Symbol string // lead-sheet name, e.g. "Am7", "F", "Bdim"
	Root   int    // MIDI note of the root in the bass octave (36–47)
	Notes  []int  // the voicing played by chord parts (MIDI, around middle C)
}

// buildChord stacks thirds on a scale degree (triad, or seventh chord).
func buildChord(tonic int, iv [7]int, deg int, seventh bool) Chord {
	n := 3
	if seventh {
		n = 4
	}
	pitches := make([]int, n)
	for i := range pitches {
		pitches[i] = scalePitch(tonic, iv, deg+2*i)
	}
	root := pitches[0]
	bass := 36 + mod(root, 12)
	c := Chord{Degree: deg, Root: bass, Notes: pitches}
	c.Symbol = noteNames[mod(root, 12)] + quality(pitches)
	return c
}

// quality names a stacked-thirds chord from its intervals.
func quality(p []int) string {
	third, fifth := p[1]-p[0], p[2]-p[0]
	q := ""
	switch {
	case third == 3 && fifth == 7:
		q = "m"
	case third == 3 && fifth == 6:
		q = "dim"
	case third == 4 && fifth == 8:
		q = "aug"
	}
	if len(p) < 4 {
		return q
	}
	switch seventh := p[3] - p[0]; {
	case q == "" && seventh == 11:
		return "maj7"
	case q == "" && seventh == 10:
		return "7"
	case q == "m" && seventh == 10:
		return "m7"
	case q == "m" && seventh == 11:
		return "m(maj7)"
	case q == "dim" && seventh == 10:
		return "m7b5"
	case q == "dim" && seventh == 9:
		return "dim7"
	}
	return q + "7"
}

// voiceLead moves each chord's notes to the inversion and octave nearest
// the previous chord (smallest total movement), keeping the lowest note
// between lo and lo+12, so chord parts glide instead of jumping in
// parallel root positions.
func voiceLead(chords []Chord, lo int) {
	var prev []int
	for ci := range chords {
		pcs := chords[ci].Notes
		best, bestCost := []int(nil), math.MaxInt
		for inv := range pcs {
			for shift := -24; shift <= 24; shift += 12 {
				v := make([]int, len(pcs))
				for i := range pcs {
					p := pcs[(inv+i)%len(pcs)] + shift
					if i > 0 {
						for p <= v[i-1] {
							p += 12
						}
					}
					v[i] = p
				}
				if v[0] < lo || v[0] >= lo+12 {
					continue
				}
				cost := 0
				if prev == nil {
					// The first chord: close to root position in the middle.
					cost = absInt(v[0]-(lo+5)) + 2*inv
				} else {
					for i := range v {
						cost += absInt(v[i] - prev[min(i, len(prev)-1)])
					}
				}
				if cost < bestCost {
					best, bestCost = v, cost
				}
			}
		}
		if best != nil {
			chords[ci].Notes = best
		}
		prev = chords[ci].Notes
	}
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// progressions are common loops for each mode, as 0-based scale degrees
// (major: I–V–vi–IV is {0, 4, 5, 3}). The chord qualities follow from
// the mode, so a degree list means the right thing in every mode.
var progressions = map[Mode][][]int{
	Major: {
		{0, 4, 5, 3}, // I–V–vi–IV
		{0, 5, 3, 4}, // I–vi–IV–V
		{0, 3, 4, 3}, // I–IV–V–IV
		{5, 3, 0, 4}, // vi–IV–I–V
		{0, 2, 3, 4}, // I–iii–IV–V
		{0, 3, 0, 4}, // I–IV–I–V
	},
	Minor: {
		{0, 5, 2, 6}, // i–VI–III–VII
		{0, 6, 5, 6}, // i–VII–VI–VII
		{0, 5, 3, 4}, // i–VI–iv–v
		{0, 3, 5, 4}, // i–iv–VI–v
		{0, 3, 6, 2}, // i–iv–VII–III
	},
	Dorian: {
		{0, 3, 0, 3}, // i–IV
		{0, 3, 6, 3}, // i–IV–VII–IV
		{0, 6, 3, 0}, // i–VII–IV–i
		{0, 1, 3, 0}, // i–ii–IV–i
	},
	Phrygian: {
		{0, 1, 0, 1}, // i–bII
		{0, 1, 6, 0}, // i–bII–bvii–i
		{0, 5, 1, 0}, // i–bVI–bII–i
	},
	Lydian: {
		{0, 1, 0, 1}, // I–II
		{0, 1, 2, 1}, // I–II–iii–II
		{0, 1, 4, 0}, // I–II–V–I
	},
	Mixolydian: {
		{0, 6, 3, 0}, // I–bVII–IV–I
		{0, 3, 6, 3}, // I–IV–bVII–IV
		{0, 6, 0, 3}, // I–bVII–I–IV
	},
	HarmonicMinor: {
		{0, 3, 4, 0}, // i–iv–V–i
		{0, 5, 3, 4}, // i–VI–iv–V
		{0, 5, 4, 4}, // i–VI–V–V
	},
}

// Genre- and mood-specific loops that replace the mode's table.
var (
	jazzMajor  = [][]int{{1, 4, 0, 0}, {1, 4, 0, 5}, {0, 5, 1, 4}} // ii–V–I, ii–V–I–vi, I–vi–ii–V
	jazzMinor  = [][]int{{0, 3, 0, 3}, {0, 3, 6, 2}, {1, 4, 0, 0}}
	epicMinor  = [][]int{{0, 5, 2, 6}, {0, 5, 6, 0}, {0, 6, 5, 6}} // i–VI–III–VII and kin
	twelveBar  = [][]int{{0, 3, 0, 0, 3, 3, 0, 0, 4, 3, 0, 4}}     // the blues
	sevenDrops = [][]int{{0, 5, 3, 4}, {0, 3, 0, 4}}               // for seventh-chord ballads
)

// pickProgressions chooses the main (A) loop and a contrasting bridge (B)
// loop for the mode, mood and genre.
func pickProgressions(r *rng, mode Mode, mood, genre string) (main, bridge []int) {
	table := progressions[mode]
	if table == nil {
		table = progressions[Major]
	}
	switch {
	case genre == "blues":
		table = twelveBar
	case (genre == "jazz" || genre == "lofi" || genre == "bossa nova") && !mode.minorish():
		table = jazzMajor
	case genre == "jazz" || genre == "lofi":
		table = jazzMinor
	case mood == "epic" && mode == Minor:
		table = epicMinor
	case genre == "ballad" && mode == Major:
		table = sevenDrops
	}
	i := r.intn(len(table))
	main = table[i]
	if len(table) > 1 {
		j := (i + 1 + r.intn(len(table)-1)) % len(table)
		bridge = table[j]
	} else {
		// One loop only: the bridge starts it from its middle.
		bridge = append(slices.Clone(main[len(main)/2:]), main[:len(main)/2]...)
	}
	return slices.Clone(main), slices.Clone(bridge)
}
