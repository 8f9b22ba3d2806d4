package synth

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestPlanTempo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc   string
		lo, hi int
		source string
	}{
		{"upbeat synthwave with arpeggiated synth bass and drums at 118 bpm", 118, 118, "number"},
		{"tempo 90, dreamy piano", 90, 90, "number"},
		{"bpm: 128 techno", 128, 128, "number"},
		{"a march at 96 beats per minute", 96, 96, "number"},
		{"122BPM house", 122, 122, "number"},
		{"99.6 bpm", 100, 100, "number"},
		{"5 bpm drone", MinBPM, MinBPM, "number"},
		{"9999 bpm chaos", MaxBPM, MaxBPM, "number"},
		{"slow piano", 70, 85, "words"},
		{"relaxed guitar", 70, 85, "words"},
		{"very slow strings", 55, 68, "words"},
		{"medium tempo groove", 96, 104, "words"},
		{"fast", 125, 140, "words"},
		{"upbeat", 125, 140, "words"},
		{"energetic synths", 125, 140, "words"},
		{"very fast", 150, 175, "words"},
		{"house", 124, 124, "genre"},
		{"deep house with pads", 124, 124, "genre"},
		{"drum and bass", 172, 172, "genre"},
		{"liquid drum & bass", 172, 172, "genre"},
		{"dnb", 172, 172, "genre"},
		{"hip hop", 90, 90, "genre"},
		{"hip-hop beat", 90, 90, "genre"},
		{"lo-fi hip hop", 80, 80, "genre"},
		{"slow hip hop", 85, 85, "words"}, // the genre's slow end
		{"fast house", 128, 128, "words"}, // the genre's fast end
		{"calm lo-fi piano, melancholic, slow", 70, 85, "words"},
		{"dark", 85, 100, "mood"},
		{"sad", 65, 82, "mood"},
		{"", 100, 100, "default"},
		{"a nice tune", 100, 100, "default"},
	} {
		for seed := range uint64(20) {
			a := Plan(tc.desc, 30, seed)
			if a.BPM < tc.lo || a.BPM > tc.hi || a.TempoSource != tc.source {
				t.Errorf("%q (seed %d): %d bpm from %s, want %d..%d from %s", tc.desc, seed, a.BPM, a.TempoSource, tc.lo, tc.hi, tc.source)
				break
			}
		}
	}
	// Words pick within their range: the seed spreads them.
	seen := map[int]bool{}
	for seed := range uint64(40) {
		seen[Plan("slow", 30, seed).BPM] = true
	}
	if len(seen) < 5 {
		t.Errorf("\"slow\" gave only %d different tempos over 40 seeds", len(seen))
	}
}

func TestPlanMeter(t *testing.T) {
	t.Parallel()
	for desc, want := range map[string]int{
		"a waltz": 3, "gentle lullaby": 3, "folk tune in 3/4": 3, "jig in 6/8": 3, "house": 4, "": 4, "waltz but in 4/4": 4,
	} {
		if a := Plan(desc, 30, 1); a.BeatsPerBar != want {
			t.Errorf("%q: %d beats per bar, want %d", desc, a.BeatsPerBar, want)
		}
	}
	if a := Plan("waltz", 30, 1); a.DrumStyle != WaltzBeat {
		t.Errorf("waltz drums %q", a.DrumStyle)
	}
}

func TestPlanMood(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc  string
		mood  string
		modes []Mode
	}{
		{"happy piano", "happy", []Mode{Major}},
		{"joyful, bright and sunny", "happy", []Mode{Major}},
		{"bright", "bright", []Mode{Lydian}},
		{"dreamy synths", "bright", []Mode{Lydian}},
		{"sad strings", "sad", []Mode{Minor}},
		{"melancholic", "sad", []Mode{Minor}},
		{"calm lo-fi piano, melancholic, slow", "sad", []Mode{Minor}},
		{"calm and peaceful", "calm", []Mode{Major}},
		{"dark and ominous", "dark", []Mode{Phrygian}},
		{"nostalgic", "wistful", []Mode{Dorian}},
		{"mysterious night", "wistful", []Mode{Dorian}},
		{"epic adventure", "epic", []Mode{Minor}},
		{"groovy", "groovy", []Mode{Mixolydian}},
		{"exotic desert", "exotic", []Mode{HarmonicMinor}},
		{"aggressive", "aggressive", []Mode{Phrygian}},
		{"happy but in a minor key", "happy", []Mode{Minor}}, // an explicit mode wins
		{"sad tune, in C major", "sad", []Mode{Major}},       // so does an explicit key
		{"upbeat synthwave", "neutral", []Mode{Minor}},       // the genre's own
		{"a tune", "neutral", []Mode{Major}},                 // the default
		{"dorian groove", "groovy", []Mode{Dorian}},          // a named mode
	} {
		a := Plan(tc.desc, 30, 7)
		if a.Mood != tc.mood || !slices.Contains(tc.modes, a.Mode) {
			t.Errorf("%q: mood %s, mode %s; want %s, %v", tc.desc, a.Mood, a.Mode, tc.mood, tc.modes)
		}
		// The harmony follows the mode: the tonic chord is major in the
		// major modes and minor in the minor ones.
		minor := a.Mode.minorish() || a.Mode == Phrygian
		found := false
		for _, c := range a.Progression {
			if c.Degree == 0 {
				found = true
				isMinor := strings.HasPrefix(strings.TrimPrefix(c.Symbol, a.Key), "m") && !strings.HasPrefix(strings.TrimPrefix(c.Symbol, a.Key), "maj")
				if isMinor != minor {
					t.Errorf("%q: tonic chord %s in %s %s", tc.desc, c.Symbol, a.Key, a.Mode)
				}
			}
		}
		if !found {
			t.Errorf("%q: progression %v never reaches the tonic", tc.desc, symbols(a.Progression))
		}
	}
}

func symbols(cs []Chord) []string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Symbol)
	}
	return s
}

func TestPlanKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc string
		key  string
		mode Mode
	}{
		{"ballad in D minor", "D", Minor},
		{"in a minor", "A", Minor},
		{"something in the key of F#", "F#", ""},
		{"Eb major chorale", "Eb", Major},
		{"groove in c#m", "C#", Minor},
		{"b flat major", "Bb", Major},
		{"f sharp minor", "F#", Minor},
		{"in G", "G", ""},
		{"E dorian jam", "E", Dorian},
	} {
		a := Plan(tc.desc, 30, 3)
		if a.Key != tc.key || (tc.mode != "" && a.Mode != tc.mode) {
			t.Errorf("%q: %s %s, want %s %s", tc.desc, a.Key, a.Mode, tc.key, tc.mode)
		}
		if a.Tonic < 48 || a.Tonic > 59 || noteNames[a.Tonic-48] != a.Key {
			t.Errorf("%q: tonic %d for key %s", tc.desc, a.Tonic, a.Key)
		}
	}
	// Ordinary English is not a key.
	for _, desc := range []string{"music in a calm mood", "I am happy", "a beat in b section", "piano, a minor detail"} {
		if _, _, ok := explicitKey(parseText(desc)); ok {
			t.Errorf("%q was read as naming a key", desc)
		}
	}
}

// parts lists an arrangement's instruments as "timbre/role" (with "+arp"
// and "*" for arpeggiated and implied).
func parts(a Arrangement) []string {
	var out []string
	for _, in := range a.Instruments {
		s := string(in.Timbre) + "/" + string(in.Role)
		if in.Arpeggiated && in.Role != RoleArp {
			s += "+arp"
		}
		if in.Implied {
			s += "*"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func TestPlanInstruments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc string
		want []string
	}{
		{"upbeat synthwave with arpeggiated synth bass and drums at 118 bpm",
			[]string{"drums/drums", "lead/melody*", "pad/chords*", "synth bass/bass+arp"}},
		{"calm lo-fi piano, melancholic, slow",
			[]string{"bass/bass*", "drums/drums*", "piano/chords", "piano/melody"}},
		{"solo piano", []string{"piano/chords", "piano/melody"}},
		{"just drums", []string{"drums/drums"}},
		{"piano and strings, no drums", []string{"piano/melody", "strings/chords"}},
		{"flute, bells and acoustic guitar", []string{"bell/melody", "flute/melody", "pluck/chords"}},
		{"jazz trio with piano, upright bass and drums", []string{"bass/bass", "drums/drums", "piano/chords", "piano/melody"}},
		{"synth arpeggios over a warm pad", []string{"lead/arpeggio", "pad/chords"}},
		{"drum and bass", []string{"drums/drums*", "lead/melody*", "pad/chords*", "synth bass/bass*"}},
		{"hip hop beat with 808s, no piano", []string{"808/bass", "drums/drums", "electric piano/chords*"}},
		{"house without drums", []string{"piano/chords*", "pluck/melody*", "synth bass/bass*"}},
		{"dreamy ambient pad with bells", []string{"bell/melody", "pad/chords"}},
		{"rhodes and a trumpet", []string{"brass/melody", "electric piano/chords"}},
		{"organ, choir and cello", []string{"organ/chords", "pad/chords", "strings/melody"}},
		{"piano arpeggios and drums", []string{"drums/drums", "piano/arpeggio"}},
		{"drums and arpeggiated analog synth, with a cello", []string{"drums/drums", "lead/arpeggio", "strings/melody"}},
		{"techno with broken chords", []string{"drums/drums*", "lead/arpeggio", "lead/melody*", "pad/chords*", "synth bass/bass*"}},
		{"trance", []string{"drums/drums*", "lead/arpeggio*", "lead/melody*", "synth bass/bass*"}},
		{"", []string{"bass/bass*", "drums/drums*", "pad/chords*", "piano/melody*"}},
		{"calm", []string{"bass/bass*", "pad/chords*", "piano/melody*"}}, // too calm for drums
		{"no drums, no piano, no pad, no bass", []string{"piano/chords*", "piano/melody*"}},
	} {
		a := Plan(tc.desc, 30, 1)
		if got := parts(a); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.desc, got, tc.want)
		}
		for _, in := range a.Instruments {
			if in.Gain <= 0 || in.Pan < -1 || in.Pan > 1 || in.Name == "" {
				t.Errorf("%q: %+v", tc.desc, in)
			}
		}
	}
	// The genre's words are not instruments: "drum and bass" names no bass.
	for _, in := range Plan("drum and bass", 30, 1).Instruments {
		if !in.Implied {
			t.Errorf("drum and bass: %s was taken as named", in.Name)
		}
	}
	if a := Plan("lo-fi beat with vinyl crackle", 30, 1); !a.Vinyl || a.Genre != "lofi" {
		t.Errorf("lo-fi: genre %q, vinyl %t", a.Genre, a.Vinyl)
	}
}

// checkForm asserts the invariants of an arrangement's form.
func checkForm(t *testing.T, a Arrangement) {
	t.Helper()
	if a.Seconds < 1 || a.Seconds > MaxSeconds {
		t.Fatalf("%q: %d seconds", a.Description, a.Seconds)
	}
	if a.BPM < MinBPM || a.BPM > MaxBPM || (a.BeatsPerBar != 3 && a.BeatsPerBar != 4) {
		t.Fatalf("%q: %d bpm, %d beats per bar", a.Description, a.BPM, a.BeatsPerBar)
	}
	bar := a.BarSeconds()
	if float64(a.Bars)*bar < float64(a.Seconds)-1e-9 || float64(a.Bars-1)*bar >= float64(a.Seconds) {
		t.Fatalf("%q: %d bars of %.3f s for %d s", a.Description, a.Bars, bar, a.Seconds)
	}
	if len(a.Sections) == 0 || a.Sections[0].Start != 0 || a.Sections[len(a.Sections)-1].End != a.Bars {
		t.Fatalf("%q: sections %+v do not cover bars 0..%d", a.Description, a.Sections, a.Bars)
	}
	for i, s := range a.Sections {
		if s.Start >= s.End || (i > 0 && s.Start != a.Sections[i-1].End) {
			t.Fatalf("%q: sections %+v are not contiguous", a.Description, a.Sections)
		}
		if len(s.Roles) == 0 || s.Energy <= 0 || s.Energy > 1 {
			t.Fatalf("%q: section %+v", a.Description, s)
		}
		for _, r := range s.Roles {
			if !a.Has(r) {
				t.Fatalf("%q: section %s has %s, which no instrument plays", a.Description, s.Name, r)
			}
		}
	}
	if len(a.Progression) == 0 || len(a.Bridge) == 0 || a.BarsPerChord < 1 {
		t.Fatalf("%q: progression %v, bridge %v, %d bars per chord", a.Description, a.Progression, a.Bridge, a.BarsPerChord)
	}
	for _, c := range append(slices.Clone(a.Progression), a.Bridge...) {
		if len(c.Notes) < 3 || c.Symbol == "" || c.Root < 36 || c.Root > 47 {
			t.Fatalf("%q: chord %+v", a.Description, c)
		}
	}
	if len(a.Instruments) == 0 {
		t.Fatalf("%q: no instruments", a.Description)
	}
	if a.FadeOut <= 0 || a.FadeOut > float64(a.Seconds)/4+1e-9 {
		t.Fatalf("%q: fade-out %.2f s of %d", a.Description, a.FadeOut, a.Seconds)
	}
}

func TestPlanSections(t *testing.T) {
	t.Parallel()
	for _, desc := range []string{"upbeat synthwave with drums", "calm piano", "blues", "drum and bass", "ambient", "just drums", "waltz"} {
		for _, secs := range []int{1, 3, 10, 15, 30, 60, 120} {
			a := Plan(desc, secs, 9)
			checkForm(t, a)
			n := len(a.Sections)
			if a.Bars >= 4 && (a.Sections[0].Name != "intro" || a.Sections[n-1].Name != "outro") {
				t.Errorf("%q %d s: form %v", desc, secs, a)
			}
			if a.Bars >= 4 && a.Has(RoleDrums) && a.Has(RoleChords) && a.Sections[0].Plays(RoleDrums) {
				t.Errorf("%q %d s: the drums play in the intro", desc, secs)
			}
			if a.Has(RoleDrums) && !slices.ContainsFunc(a.Sections, func(s Section) bool { return s.Plays(RoleDrums) }) {
				t.Errorf("%q %d s: the drums never play", desc, secs)
			}
		}
	}
	// Long pieces get a B theme and a breakdown.
	a := Plan("upbeat synthwave with drums", 120, 9)
	var names []string
	for _, s := range a.Sections {
		names = append(names, s.Name)
	}
	if !slices.Contains(names, "B") || !slices.Contains(names, "breakdown") {
		t.Errorf("120 s: sections %v", names)
	}
	// The blues keeps its twelve-bar form: its phrases are 12 bars.
	for _, s := range Plan("slow blues", 120, 1).Sections {
		if s.Name == "A" && (s.End-s.Start)%12 != 0 {
			t.Errorf("blues section %+v is not whole choruses", s)
		}
	}
	if a := Plan("x", -5, 1); a.Seconds != 1 {
		t.Errorf("-5 s planned as %d", a.Seconds)
	}
	if a := Plan("x", 1e6, 1); a.Seconds != MaxSeconds {
		t.Errorf("1e6 s planned as %d", a.Seconds)
	}
}

func TestPlanDeterministic(t *testing.T) {
	t.Parallel()
	desc := "happy acoustic guitar and flute folk song"
	a, b := Plan(desc, 45, 77), Plan(desc, 45, 77)
	if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(a.Score(), b.Score()) {
		t.Fatal("the same request planned twice differs")
	}
	differ := 0
	for seed := range uint64(10) {
		c := Plan(desc, 45, 100+seed)
		if c.Key != a.Key || !reflect.DeepEqual(symbols(c.Progression), symbols(a.Progression)) || !reflect.DeepEqual(c.Score(), a.Score()) {
			differ++
		}
		if c.BPM != a.BPM || c.Genre != a.Genre || !reflect.DeepEqual(parts(c), parts(a)) {
			t.Errorf("seed %d changed what the description asked for: %v vs %v", 100+seed, c, a)
		}
	}
	if differ < 9 {
		t.Errorf("only %d of 10 other seeds made a different piece", differ)
	}
}

// The melody, the chords and the bass stay in the key.
func TestScoreInKey(t *testing.T) {
	t.Parallel()
	for _, desc := range []string{"happy pop with piano", "dark techno", "nostalgic jazz", "exotic flute", "dreamy ambient bells", "blues"} {
		a := Plan(desc, 60, 5)
		scale := map[int]bool{}
		for _, iv := range a.Mode.Intervals() {
			scale[mod(a.Tonic+iv, 12)] = true
		}
		notes := a.Score()
		if len(notes) < 20 {
			t.Fatalf("%q: only %d notes", desc, len(notes))
		}
		roles := map[Role]int{}
		for _, n := range notes {
			in := a.Instruments[n.Part]
			roles[in.Role]++
			if in.Role == RoleDrums {
				continue
			}
			// The walking bass approaches chords chromatically.
			if in.Role == RoleBass && a.DrumStyle == JazzRide {
				continue
			}
			if !scale[mod(n.Pitch, 12)] {
				t.Errorf("%q: %s plays %d at %.2f s, outside %s %s", desc, in.Name, n.Pitch, n.Start, a.Key, a.Mode)
				break
			}
		}
		for _, in := range a.Instruments {
			if roles[in.Role] == 0 {
				t.Errorf("%q: the %s (%s) plays nothing", desc, in.Name, in.Role)
			}
		}
	}
}
