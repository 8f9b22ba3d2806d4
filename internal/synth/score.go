package synth

import (
	"math"
	"slices"
	"sort"
)

// Note is one event of the score.
type Note struct {
	Part     int     // index into Arrangement.Instruments
	Start    float64 // seconds from the beginning
	Dur      float64 // seconds held (the sound may ring on after, as a plucked string does)
	Pitch    int     // MIDI note; for drums one of Kick, Snare, ...
	Velocity float64 // 0..1
}

// Drum sounds, numbered as in General MIDI.
const (
	Kick      = 36
	Rim       = 37
	Snare     = 38
	Clap      = 39
	ClosedHat = 42
	OpenHat   = 46
	Crash     = 49
	Ride      = 51
	Shaker    = 70
)

// scorer writes the notes of an arrangement.
type scorer struct {
	a     Arrangement
	iv    [7]int
	step  float64 // seconds per sixteenth
	spb   int     // sixteenths per bar
	notes []Note
}

// Score composes the notes of the arrangement: drums, bass, chords,
// arpeggios and melody, section by section, sorted by start time. The
// choices left open (melody contour, arpeggio shape, velocities) come
// from the arrangement's seed, so the same arrangement always gives the
// same score.
func (a Arrangement) Score() []Note {
	if a.BPM <= 0 || a.BeatsPerBar <= 0 || len(a.Progression) == 0 {
		return nil
	}
	s := &scorer{a: a, iv: a.Mode.Intervals(), step: 15 / float64(a.BPM), spb: 4 * a.BeatsPerBar}
	if a.BarsPerChord <= 0 {
		s.a.BarsPerChord = 1
	}
	melodies := 0
	for i, in := range a.Instruments {
		switch in.Role {
		case RoleDrums:
			s.drums(i)
		case RoleBass:
			s.bass(i, in)
		case RoleChords:
			s.chords(i, in)
		case RoleArp:
			s.arp(i, in)
		case RoleMelody:
			s.melody(i, in, melodies)
			melodies++
		}
	}
	sort.SliceStable(s.notes, func(i, j int) bool {
		x, y := s.notes[i], s.notes[j]
		if x.Start != y.Start {
			return x.Start < y.Start
		}
		if x.Part != y.Part {
			return x.Part < y.Part
		}
		return x.Pitch < y.Pitch
	})
	return s.notes
}

// at is the time of a sixteenth step in a bar, with swing: the off-beat
// eighths (or sixteenths) are pushed late by Swing of their length.
func (s *scorer) at(bar int, step float64) float64 {
	t := (float64(bar*s.spb) + step) * s.step
	if s.a.Swing > 0 {
		unit := 2.0
		if s.a.SwingUnit == 16 {
			unit = 1
		}
		if u := step / unit; u == math.Trunc(u) && int(u)%2 == 1 {
			t += s.a.Swing * unit * s.step
		}
	}
	return t
}

func (s *scorer) add(n Note) {
	if n.Start < 0 || n.Start >= float64(s.a.Seconds) || n.Dur <= 0 {
		return
	}
	n.Velocity = clamp(n.Velocity, 0.05, 1)
	s.notes = append(s.notes, n)
}

// section is the section a bar is in.
func (s *scorer) section(bar int) Section {
	for _, sec := range s.a.Sections {
		if bar >= sec.Start && bar < sec.End {
			return sec
		}
	}
	return Section{Name: "A", Start: 0, End: s.a.Bars}
}

// chordAt is the chord of a bar: the B sections play the bridge loop,
// the others the main loop, each from its start.
func (s *scorer) chordAt(bar int) Chord {
	sec := s.section(bar)
	prog := s.a.Progression
	if sec.Name == "B" && len(s.a.Bridge) > 0 {
		prog = s.a.Bridge
	}
	return prog[((bar-sec.Start)/s.a.BarsPerChord)%len(prog)]
}

// spanLeft is how many bars remain of the chord starting at bar, within
// its section.
func (s *scorer) spanLeft(bar int) int {
	sec := s.section(bar)
	off := (bar - sec.Start) % s.a.BarsPerChord
	return min(s.a.BarsPerChord-off, sec.End-bar)
}

func (s *scorer) fifth(c Chord) int {
	return scalePitch(0, s.iv, c.Degree+4) - scalePitch(0, s.iv, c.Degree)
}

// hits reads a pattern: one character per sixteenth, '.' rest, ','
// ghost, 'o' soft, 'x' normal, 'X' accent.
func hits(p string) []float64 {
	v := make([]float64, len(p))
	for i := range p {
		switch p[i] {
		case ',':
			v[i] = 0.32
		case 'o':
			v[i] = 0.55
		case 'x':
			v[i] = 0.78
		case 'X':
			v[i] = 1
		}
	}
	return v
}

// groove is a drum pattern for one bar.
type groove struct {
	kick, snare, clap, hat, open, ride, rim, shaker string
}

func grooveFor(style DrumStyle, b bool) groove {
	switch style {
	case FourOnTheFloor:
		if b {
			return groove{kick: "X...X...X...X...", clap: "....x.......x...", hat: ",,x,,,x,,,x,,,x,", open: "..............o."}
		}
		return groove{kick: "X...X...X...X...", clap: "....x.......x...", hat: "..x...x...x...x."}
	case BoomBap:
		if b {
			return groove{kick: "X......x..X..x..", snare: "....X.......X...", hat: "x.oox.o.x.oox.o."}
		}
		return groove{kick: "X.........X.....", snare: "....X.......X...", hat: "x.o.x.o.x.o.x.o."}
	case Breakbeat:
		if b {
			return groove{kick: "X.........X..x..", snare: "....X.......X...", hat: "x,o,x,o,x,o,x,o,"}
		}
		return groove{kick: "X.........X.....", snare: "....X.......X...", hat: "x.o.x.o.x.o.x.o."}
	case HalfTime:
		if b {
			return groove{kick: "X.........x..x..", snare: "........X.......", hat: "x,o,x,o,x,o,x,o,"}
		}
		return groove{kick: "X.........x.....", snare: "........X.......", hat: "x.o.x.o.x.o.x.o."}
	case TrapBeat:
		if b {
			return groove{kick: "X..x...x..x..x..", clap: "........X.......", hat: "xoxoxoxoxoxoxoxo"}
		}
		return groove{kick: "X......x..x.....", clap: "........X.......", hat: "xoxoxoxoxoxoxoxo"}
	case JazzRide:
		if b {
			return groove{ride: "X...x.x.X...x.x.", hat: "....o.......o...", kick: ",...,...,...,...", snare: "......,.....,..."}
		}
		return groove{ride: "X...x.x.X...x.x.", hat: "....o.......o...", kick: ",...,...,...,..."}
	case WaltzBeat:
		if b {
			return groove{kick: "X.......x...", snare: "....o...o...", hat: "x.,.x.,.x.,."}
		}
		return groove{kick: "X...........", snare: "....o...o...", hat: "..,...,...,."}
	case BossaBeat:
		return groove{kick: "X..xX..xX..xX..x", rim: "x..x..x...x..x..", shaker: "o,o,o,o,o,o,o,o,"}
	}
	// Backbeat.
	if b {
		return groove{kick: "X.....x.X.x.....", snare: "....X.......X...", hat: "x.o.x.o.x.o.x.o.", open: "..............o."}
	}
	return groove{kick: "X.......X.x.....", snare: "....X.......X...", hat: "x.o.x.o.x.o.x.o."}
}

func (s *scorer) drums(part int) {
	r := newRNG(s.a.Seed, "drums")
	style := s.a.DrumStyle
	if s.a.BeatsPerBar == 3 {
		style = WaltzBeat
	}
	fills := style != JazzRide && style != WaltzBeat && style != BossaBeat
	prevDrums := false
	for si, sec := range s.a.Sections {
		if !sec.Plays(RoleDrums) {
			prevDrums = false
			continue
		}
		g := grooveFor(style, sec.Name == "B")
		if sec.Start > 0 && (!prevDrums || sec.Name == "B") {
			s.add(Note{Part: part, Start: s.at(sec.Start, 0), Dur: 0.1, Pitch: Crash, Velocity: 0.75})
		}
		prevDrums = true
		last := si == len(s.a.Sections)-1
		for bar := sec.Start; bar < sec.End; bar++ {
			fill := fills && !last && bar == sec.End-1 && sec.End-sec.Start >= 4 && s.spb == 16
			for _, lane := range []struct {
				p     string
				pitch int
				jit   float64
			}{{g.kick, Kick, 0}, {g.snare, Snare, 0.04}, {g.clap, Clap, 0.04}, {g.hat, ClosedHat, 0.08}, {g.open, OpenHat, 0.05},
				{g.ride, Ride, 0.06}, {g.rim, Rim, 0.05}, {g.shaker, Shaker, 0.08}} {
				if lane.p == "" {
					continue
				}
				for st, v := range hits(lane.p) {
					if st >= s.spb || v == 0 {
						continue
					}
					if v < 0.4 && sec.Energy < 0.45 {
						continue // ghost notes only when there is energy
					}
					if fill && st >= 12 && lane.pitch != Kick {
						continue
					}
					if style == TrapBeat && lane.pitch == ClosedHat && st >= 12 && bar%2 == 1 {
						continue // the roll below replaces them
					}
					vel := v*(0.75+0.3*sec.Energy) + lane.jit*r.noise()
					s.add(Note{Part: part, Start: s.at(bar, float64(st)), Dur: 0.1, Pitch: lane.pitch, Velocity: vel})
				}
			}
			if fill {
				for k := range 4 {
					s.add(Note{Part: part, Start: s.at(bar, float64(12+k)), Dur: 0.1, Pitch: Snare, Velocity: 0.45 + 0.15*float64(k)})
				}
			}
			if style == TrapBeat && bar%2 == 1 {
				for k := range 8 {
					s.add(Note{Part: part, Start: s.at(bar, 12+0.5*float64(k)), Dur: 0.05, Pitch: ClosedHat, Velocity: 0.35 + 0.06*float64(k)})
				}
			}
		}
	}
}

// line is a monophonic pattern over a bar: one character per sixteenth,
// 'r' root, 'f' fifth, 'o' octave, '.' rest; each note lasts to the next.
func (s *scorer) line(part int, bar int, pattern string, root, fifth int, gate, vel float64) {
	var on []int
	for i := 0; i < len(pattern) && i < s.spb; i++ {
		if pattern[i] != '.' {
			on = append(on, i)
		}
	}
	for k, st := range on {
		end := s.spb
		if k+1 < len(on) {
			end = on[k+1]
		}
		p := root
		switch pattern[st] {
		case 'f':
			p = root + fifth
		case 'o':
			p = root + 12
		}
		dur := (s.at(bar, float64(end)) - s.at(bar, float64(st))) * gate
		accent := 0.0
		if st%4 == 0 {
			accent = 0.08
		}
		s.add(Note{Part: part, Start: s.at(bar, float64(st)), Dur: dur, Pitch: p, Velocity: vel + accent})
	}
}

func (s *scorer) bass(part int, in Instrument) {
	a := s.a
	r := newRNG(a.Seed, "bass")
	arpShape := []string{"rofo", "rfof", "roro"}[r.intn(3)]
	for _, sec := range a.Sections {
		if !sec.Plays(RoleBass) {
			continue
		}
		vel := 0.6 + 0.35*sec.Energy
		b := sec.Name == "B"
		for bar := sec.Start; bar < sec.End; bar++ {
			c := s.chordAt(bar)
			root := c.Root
			if in.Timbre == Strings || in.Timbre == Pad || in.Timbre == Chip {
				root += 12
			}
			fifth := s.fifth(c)
			var pat string
			gate := 0.88
			switch {
			case in.Arpeggiated:
				unit := arpShape
				if a.BPM >= 140 {
					unit = string(arpShape[0]) + "." + string(arpShape[1]) + "."
				}
				for len(pat) < s.spb {
					pat += unit
				}
				gate = 0.8
			case !a.Has(RoleDrums) && sec.Energy < 0.55 || a.Genre == "ambient" || a.Genre == "cinematic":
				if (bar-sec.Start)%a.BarsPerChord != 0 {
					continue
				}
				span := s.spanLeft(bar)
				s.add(Note{Part: part, Start: s.at(bar, 0), Dur: float64(span) * a.BarSeconds() * 0.97, Pitch: root, Velocity: vel})
				continue
			case a.DrumStyle == JazzRide && a.BeatsPerBar == 4:
				s.walk(part, bar, c, s.chordAt(bar+1), vel)
				continue
			case a.BeatsPerBar == 3:
				pat = "r..........."
				if b {
					pat = "r.......f..."
				}
			case a.DrumStyle == FourOnTheFloor && a.Genre == "synthwave":
				pat = "r.r.r.r.r.r.r.o."
				gate = 0.7
			case a.DrumStyle == FourOnTheFloor:
				pat = "..r...r...r...r."
				if b {
					pat = "..r...r...o...r."
				}
				gate = 0.6
			case a.DrumStyle == BoomBap:
				pat = "r.........r..f.."
			case a.DrumStyle == Breakbeat:
				pat = "r.........f....."
			case a.DrumStyle == HalfTime:
				pat = "r.......f......."
			case a.DrumStyle == TrapBeat:
				pat = "r......r..r....."
				gate = 1
			case a.DrumStyle == BossaBeat:
				pat = "r.....f.r.....f."
			case sec.Energy >= 0.7:
				pat = "r.r.r.r.r.r.r.r."
				gate = 0.75
			default:
				pat = "r.......f.r....."
			}
			s.line(part, bar, pat, root, fifth, gate, vel)
		}
	}
}

// walk is a walking bass bar: root, a chord or scale tone, the fifth,
// and a chromatic approach to the next chord's root.
func (s *scorer) walk(part, bar int, c, next Chord, vel float64) {
	third := scalePitch(0, s.iv, c.Degree+2) - scalePitch(0, s.iv, c.Degree)
	approach := next.Root - 1
	if next.Root-1 < c.Root {
		approach = next.Root + 1
	}
	for k, p := range []int{c.Root, c.Root + third, c.Root + s.fifth(c), approach} {
		st := float64(4 * k)
		s.add(Note{Part: part, Start: s.at(bar, st), Dur: 0.9 * 4 * s.step, Pitch: p, Velocity: vel + 0.05*float64(1-k%2)})
	}
}

func (s *scorer) chords(part int, in Instrument) {
	a := s.a
	jazzy := map[string]bool{"lofi": true, "hip hop": true, "soul": true, "vaporwave": true, "trip hop": true}[a.Genre]
	for _, sec := range a.Sections {
		if !sec.Plays(RoleChords) {
			continue
		}
		vel := 0.5 + 0.35*sec.Energy
		calm := a.BPM < 92 || sec.Energy < 0.5
		for bar := sec.Start; bar < sec.End; bar++ {
			c := s.chordAt(bar)
			notes := slices.Clone(c.Notes)
			spanStart := (bar-sec.Start)%a.BarsPerChord == 0
			switch in.Timbre {
			case Pad, Strings, Lead, Brass, Flute:
				if spanStart {
					s.block(part, bar, 0, float64(s.spanLeft(bar)*s.spb)*0.985, notes, vel)
				}
			case Organ:
				if a.Genre == "reggae" {
					s.rhythm(part, bar, "..x...x...x...x.", 0.6, notes, vel)
				} else if spanStart {
					s.block(part, bar, 0, float64(s.spanLeft(bar)*s.spb)*0.985, notes, vel)
				}
			case Bell:
				s.broken(part, bar, shift(notes, 12), -1, vel*0.9)
			case Chip:
				s.broken16(part, bar, shift(notes, 12), vel)
			case Piano, ElectricPiano:
				switch {
				case a.BeatsPerBar == 3:
					s.add(Note{Part: part, Start: s.at(bar, 0), Dur: 3.6 * s.step, Pitch: c.Root + 12, Velocity: vel})
					s.block(part, bar, 4, 3.4, notes, vel*0.8)
					s.block(part, bar, 8, 3.4, notes, vel*0.75)
				case a.Genre == "house":
					s.rhythm(part, bar, "x..x..x.....x...", 0.5, notes, vel)
				case a.Genre == "jazz":
					s.rhythm(part, bar, "x.....x.....x...", 0.55, notes, vel*0.85)
				case a.Genre == "funk":
					s.rhythm(part, bar, "x..x..x...x..x..", 0.4, notes, vel)
				case jazzy:
					s.rhythm(part, bar, "x.........x.....", 0.95, notes, vel*0.9)
				case calm:
					s.broken(part, bar, notes, c.Root+12, vel*0.85)
				case sec.Energy >= 0.7:
					s.rhythm(part, bar, "x...x...x...x...", 0.9, notes, vel*0.85)
				default:
					s.rhythm(part, bar, "x.......x.......", 0.95, notes, vel*0.9)
				}
			case Pluck:
				if calm {
					s.broken(part, bar, notes, c.Root+12, vel)
				} else {
					s.strum(part, bar, "x.x..xx.x.x..xx.", notes, vel)
				}
			default:
				if spanStart {
					s.block(part, bar, 0, float64(s.spanLeft(bar)*s.spb)*0.985, notes, vel)
				}
			}
		}
	}
}

func shift(ns []int, by int) []int {
	out := make([]int, len(ns))
	for i, n := range ns {
		out[i] = n + by
	}
	return out
}

// block plays all notes together at step st for dur sixteenths.
func (s *scorer) block(part, bar int, st, dur float64, notes []int, vel float64) {
	t := s.at(bar, st)
	for _, p := range notes {
		s.add(Note{Part: part, Start: t, Dur: dur * s.step, Pitch: p, Velocity: vel})
	}
}

// rhythm plays the chord on a pattern's hits, each held gate of the gap
// to the next.
func (s *scorer) rhythm(part, bar int, pattern string, gate float64, notes []int, vel float64) {
	v := hits(pattern)
	var on []int
	for i := 0; i < len(v) && i < s.spb; i++ {
		if v[i] > 0 {
			on = append(on, i)
		}
	}
	for k, st := range on {
		end := s.spb
		if k+1 < len(on) {
			end = on[k+1]
		}
		s.block(part, bar, float64(st), float64(end-st)*gate, notes, vel*v[st]/0.78)
	}
}

// broken is a broken chord in eighths (low, high, middle, high ...),
// over a bass note held through the bar when bassNote >= 0.
func (s *scorer) broken(part, bar int, notes []int, bassNote int, vel float64) {
	if bassNote >= 0 {
		s.add(Note{Part: part, Start: s.at(bar, 0), Dur: float64(s.spb) * s.step * 0.95, Pitch: bassNote, Velocity: vel})
	}
	hi := len(notes) - 1
	order := []int{0, hi, 1, hi, 0, hi, 1, hi}
	if len(notes) >= 4 {
		order = []int{0, 2, 1, 3, 0, 2, 1, 3}
	}
	for k := 0; 2*k < s.spb; k++ {
		p := notes[min(order[k%len(order)], hi)]
		v := vel * 0.8
		if k%2 == 0 {
			v = vel * 0.9
		}
		s.add(Note{Part: part, Start: s.at(bar, float64(2*k)), Dur: 3.6 * s.step, Pitch: p, Velocity: v})
	}
}

// broken16 is the chiptune chord: the chord's notes cycled in sixteenths.
func (s *scorer) broken16(part, bar int, notes []int, vel float64) {
	for st := 0; st < s.spb; st++ {
		s.add(Note{Part: part, Start: s.at(bar, float64(st)), Dur: 0.9 * s.step, Pitch: notes[st%len(notes)], Velocity: vel * 0.8})
	}
}

// strum plays the chord as a guitar strum on each hit: down strokes (low
// to high) on the beat's eighths, up strokes on the sixteenths between,
// strings 12 ms apart.
func (s *scorer) strum(part, bar int, pattern string, notes []int, vel float64) {
	v := hits(pattern)
	var on []int
	for i := 0; i < len(v) && i < s.spb; i++ {
		if v[i] > 0 {
			on = append(on, i)
		}
	}
	for k, st := range on {
		end := s.spb
		if k+1 < len(on) {
			end = on[k+1]
		}
		order := notes
		sv := vel
		if st%2 == 1 {
			order = slices.Clone(notes)
			slices.Reverse(order)
			sv *= 0.75
		}
		t := s.at(bar, float64(st))
		dur := (s.at(bar, float64(end)) - t) * 0.95
		for i, p := range order {
			s.add(Note{Part: part, Start: t + 0.012*float64(i), Dur: dur, Pitch: p, Velocity: sv * (1 - 0.05*float64(i))})
		}
	}
}

func (s *scorer) arp(part int, in Instrument) {
	a := s.a
	r := newRNG(a.Seed, "arp")
	shape := r.intn(3)
	rate := 1
	if a.BPM > 132 {
		rate = 2
	}
	octave := 12
	if in.Timbre == Pad || in.Timbre == Strings || in.Timbre == Organ {
		octave = 0
	}
	for _, sec := range a.Sections {
		if !sec.Plays(RoleArp) {
			continue
		}
		vel := 0.5 + 0.35*sec.Energy
		for bar := sec.Start; bar < sec.End; bar++ {
			c := s.chordAt(bar)
			base := shift(c.Notes, octave)
			tones := append(slices.Clone(base), shift(base, 12)...)
			n := len(tones)
			for k, st := 0, 0; st < s.spb; k, st = k+1, st+rate {
				var idx int
				switch shape {
				case 0: // up
					idx = k % n
				case 1: // up and down
					idx = k % (2*n - 2)
					if idx >= n {
						idx = 2*n - 2 - idx
					}
				default: // leaping: low, high, next low, next high
					idx = (k/2)%(n/2) + (k%2)*(n/2)
				}
				v := vel * 0.8
				if st%4 == 0 {
					v = vel
				}
				s.add(Note{Part: part, Start: s.at(bar, float64(st)), Dur: float64(rate) * s.step * 0.8, Pitch: tones[idx], Velocity: v})
			}
		}
	}
}

// motifNote is one note of a two-bar melodic motif.
type motifNote struct {
	step, dur int // sixteenths within the two bars
	move      int // scale steps from the previous note
}

// motif makes a two-bar rhythm and contour for a section type: notes
// fall on strong positions more often than weak ones, the phrase ends
// on a long note, and steps are mostly by scale step.
func (s *scorer) motif(name string, energy float64) []motifNote {
	r := newRNG(s.a.Seed, "motif "+name)
	total := 2 * s.spb
	// Busier with energy, and with fewer beats per second: a tune moves
	// at a few notes a second whatever the tempo.
	density := (0.4 + 0.5*energy) * clamp(105/float64(s.a.BPM), 0.6, 1.4)
	var steps []int
	for pos := 0; pos < total-s.spb/2; pos += 2 {
		w := 0.4
		switch {
		case pos%s.spb == 0:
			w = 1
		case pos%4 == 0:
			w = 0.75
		}
		// Each bar of the motif starts with a note (a phrase and its
		// answer); the rest is drawn.
		if pos%s.spb == 0 || r.float() < w*density {
			steps = append(steps, pos)
			// Now and then a pair of sixteenths.
			if s.a.BPM < 110 && pos%4 == 2 && r.float() < 0.25*density {
				steps = append(steps, pos+1)
			}
		}
	}
	moves := []int{0, 1, -1, 2, -2, 3, -3, 4}
	weights := []float64{0.12, 0.28, 0.28, 0.12, 0.1, 0.04, 0.04, 0.02}
	var out []motifNote
	for i, st := range steps {
		end := total - 2 // a short breath before the next phrase
		if i+1 < len(steps) {
			end = steps[i+1]
		}
		out = append(out, motifNote{step: st, dur: end - st, move: moves[r.weighted(weights)]})
	}
	return out
}

// melody plays the tune: each section type has its own two-bar motif,
// repeated over the section's chords (strong beats and phrase ends land
// on chord tones, so it fits the harmony as it changes), the second
// phrase of each pair answering the first, the section ending on the
// tonic. With several melody instruments they take turns by section.
func (s *scorer) melody(part int, in Instrument, index int) {
	a := s.a
	n := 0
	for _, x := range a.Instruments {
		if x.Role == RoleMelody {
			n++
		}
	}
	base := a.Tonic + 12 // C4..B4
	if in.Timbre == Bell {
		base += 12 // bells speak best high
	}
	r := newRNG(a.Seed, "melody")
	motifs := map[string][]motifNote{}
	turn := 0
	deg := 4
	for _, sec := range a.Sections {
		if !sec.Plays(RoleMelody) {
			continue
		}
		mine := turn%n == index
		turn++
		if !mine {
			continue
		}
		m, ok := motifs[sec.Name]
		if !ok {
			m = s.motif(sec.Name, sec.Energy)
			motifs[sec.Name] = m
		}
		// About an octave and a half; the B theme sits a third higher.
		lo, hi := 0, 9
		if sec.Name == "B" {
			lo, hi = 2, 11
		}
		vel := 0.6 + 0.3*sec.Energy
		for pb := sec.Start; pb < sec.End; pb += 2 {
			answer := ((pb - sec.Start) / 2 % 2) == 1
			for k, mn := range m {
				bar := pb + mn.step/s.spb
				if bar >= sec.End {
					break
				}
				c := s.chordAt(bar)
				mv := mn.move
				if answer && mn.step >= s.spb {
					mv = -mv // the answer turns the second bar around
				}
				if deg+mv < lo || deg+mv > hi {
					mv = -mv
				}
				deg += mv
				st := mn.step % s.spb
				lastOfPhrase := k == len(m)-1
				lastOfSection := lastOfPhrase && (pb+2 >= sec.End || bar == sec.End-1)
				if st%(s.spb/2) == 0 || lastOfPhrase || (st%4 == 0 && r.float() < 0.5) {
					prev := deg - mv
					deg = nearestChordTone(deg, c.Degree, len(c.Notes))
					// Snapping must not undo the motif's step: a line
					// that meant to move keeps moving, to the next chord
					// tone that way.
					if deg == prev && mv != 0 {
						deg = nextChordTone(prev, c.Degree, len(c.Notes), mv)
					}
				}
				if lastOfSection && sec.Name != "breakdown" {
					deg = nearestTonic(deg)
				}
				deg = max(lo-2, min(deg, hi+2))
				dur := float64(mn.dur)
				if lastOfSection {
					dur = math.Max(dur, float64(min(s.spb, (sec.End-bar)*s.spb-st)))
				}
				start := s.at(bar, float64(st))
				end := s.at(bar, float64(st)+dur)
				v := vel + 0.05*r.noise()
				if st%4 == 0 {
					v += 0.06
				}
				s.add(Note{Part: part, Start: start, Dur: (end - start) * 0.92, Pitch: scalePitch(base, s.iv, deg), Velocity: v})
			}
		}
	}
}

// nearestChordTone moves a scale degree to the nearest tone of the chord
// on chordDeg (root, third, fifth, and seventh for four-note chords).
func nearestChordTone(deg, chordDeg, size int) int {
	for d := 0; d < 7; d++ {
		for _, c := range []int{deg - d, deg + d} {
			if isChordTone(c, chordDeg, size) {
				return c
			}
		}
	}
	return deg
}

// nextChordTone is the first chord tone above (dir > 0) or below from.
func nextChordTone(from, chordDeg, size, dir int) int {
	step := 1
	if dir < 0 {
		step = -1
	}
	for d := from + step; ; d += step {
		if isChordTone(d, chordDeg, size) {
			return d
		}
	}
}

func isChordTone(deg, chordDeg, size int) bool {
	rel := mod(deg-chordDeg, 7)
	return rel == 0 || rel == 2 || rel == 4 || (size >= 4 && rel == 6)
}

func nearestTonic(deg int) int {
	lo := 7 * floorDiv(deg, 7)
	if deg-lo <= 3 {
		return lo
	}
	return lo + 7
}
