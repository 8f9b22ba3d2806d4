// Package synth composes and renders original instrumental music from a
// free-text description, in pure Go: Plan reads the description into an
// Arrangement (tempo, meter, key and mode, chord progression, instruments
// and their roles, sections), Score turns the arrangement into notes
// (seeded, so the same request always gives the same piece), and Render
// synthesizes them sample by sample — band-limited oscillators with
// envelopes and filters, FM bells and electric piano, Karplus-Strong
// plucked strings, noise-based drums — then mixes with reverb, headroom
// and a soft limiter. WriteWAV stores the result as 16-bit PCM.
//
// Everything is deterministic: the same (description, seconds, seed)
// renders the same samples, with no map iteration, clock or global
// random source on the way.
package synth

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Limits of what Plan produces.
const (
	MinBPM     = 40
	MaxBPM     = 240
	MaxSeconds = 600 // longer requests are cut to this (memory grows with length)
)

// Timbre is how an instrument sounds.
type Timbre string

// The timbres Render can synthesize.
const (
	Piano         Timbre = "piano"          // additive, inharmonic partials, hammer
	ElectricPiano Timbre = "electric piano" // FM, tine-like
	Organ         Timbre = "organ"          // drawbar additive
	Pad           Timbre = "pad"            // detuned saws, low-pass filtered, slow
	Strings       Timbre = "strings"        // detuned saws with vibrato
	Bass          Timbre = "bass"           // round electric bass
	SynthBass     Timbre = "synth bass"     // saw + sub through a resonant filter
	Sub808        Timbre = "808"            // sine sub bass with a pitch drop
	Lead          Timbre = "lead"           // detuned saws, vibrato, filter envelope
	Brass         Timbre = "brass"          // saw with a swelling filter
	Pluck         Timbre = "pluck"          // Karplus-Strong string (guitar, harp)
	Bell          Timbre = "bell"           // FM, inharmonic
	Flute         Timbre = "flute"          // sine harmonics, breath noise
	Chip          Timbre = "chip"           // pulse wave, 8-bit
	Drums         Timbre = "drums"          // kick, snare, clap, hats, ride, crash
)

// Role is what an instrument plays.
type Role string

// The roles, in the order parts are listed in a Section.
const (
	RoleDrums  Role = "drums"
	RoleBass   Role = "bass"
	RoleChords Role = "chords"
	RoleArp    Role = "arpeggio"
	RoleMelody Role = "melody"
)

var roleOrder = []Role{RoleDrums, RoleBass, RoleChords, RoleArp, RoleMelody}

// DrumStyle is the groove the drums play.
type DrumStyle string

// The drum grooves.
const (
	FourOnTheFloor DrumStyle = "four on the floor" // kick on every beat
	Backbeat       DrumStyle = "backbeat"          // kick 1 and 3, snare 2 and 4
	BoomBap        DrumStyle = "boom bap"          // hip hop, lo-fi
	Breakbeat      DrumStyle = "breakbeat"         // two-step drum and bass
	HalfTime       DrumStyle = "half time"         // snare on 3
	TrapBeat       DrumStyle = "trap"              // sparse kick, rolling hats
	JazzRide       DrumStyle = "jazz ride"         // ride pattern, feathered kick
	WaltzBeat      DrumStyle = "waltz"             // 3/4
	BossaBeat      DrumStyle = "bossa nova"
)

// Instrument is one part of the ensemble.
type Instrument struct {
	Name        string // the words that asked for it, e.g. "synth bass"; the timbre when implied
	Timbre      Timbre
	Role        Role
	Arpeggiated bool    // asked for as arpeggiated (an arp part, or an arpeggiated bassline)
	Implied     bool    // added by the genre or the default ensemble, not named
	Gain        float64 // mix level
	Pan         float64 // -1 (left) .. 1 (right)
}

// Section is a stretch of bars, [Start, End), with the roles that play.
type Section struct {
	Name       string // "intro", "A", "B", "breakdown", "outro"
	Start, End int
	Energy     float64 // 0..1: density and loudness
	Roles      []Role
}

// Plays reports whether role plays in the section.
func (s Section) Plays(r Role) bool {
	for _, x := range s.Roles {
		if x == r {
			return true
		}
	}
	return false
}

// Arrangement is what Plan understood, and everything Score and Render
// need. It is plain data: callers may inspect it or adjust it before
// rendering.
type Arrangement struct {
	Description string
	Seconds     int
	Seed        uint64

	Genre       string  // "synthwave", "lofi", ... ("" none recognised)
	Mood        string  // "happy", "sad", "dark", "calm", ... ("neutral")
	TempoSource string  // "number", "words", "genre", "mood" or "default"
	BPM         int     // MinBPM..MaxBPM
	BeatsPerBar int     // 4, or 3 (waltz, 3/4)
	Swing       float64 // 0 straight .. 0.33 triplet feel
	SwingUnit   int     // the swung note: 8 (eighths) or 16 (sixteenths)
	Energy      float64 // 0..1

	Key   string // the tonic's name, e.g. "A", "F#", "Bb"
	Tonic int    // MIDI note of the tonic, 48..59 (C3..B3)
	Mode  Mode

	Sevenths     bool
	Progression  []Chord // the A sections' loop
	Bridge       []Chord // the B sections' loop
	BarsPerChord int

	Instruments []Instrument
	DrumStyle   DrumStyle

	Bars     int // enough bars to fill Seconds (the last may be cut short)
	Sections []Section
	FadeOut  float64 // seconds faded out at the end

	Reverb float64 // 0..2: how much the reverb send is used
	Vinyl  bool    // lo-fi: crackle and a darker tone
}

// BarSeconds is the length of one bar.
func (a Arrangement) BarSeconds() float64 {
	return float64(a.BeatsPerBar) * 60 / float64(a.BPM)
}

// Has reports whether an instrument plays the role.
func (a Arrangement) Has(r Role) bool {
	for _, in := range a.Instruments {
		if in.Role == r {
			return true
		}
	}
	return false
}

// String is a one-line summary, e.g. "synthwave, 118 bpm 4/4, A minor,
// Am–F–C–G; synth bass (bass, arpeggiated), drums, pad*, lead*; intro 0-2
// A 2-6 ...". Implied instruments are starred.
func (a Arrangement) String() string {
	var b strings.Builder
	if a.Genre != "" {
		b.WriteString(a.Genre + ", ")
	}
	fmt.Fprintf(&b, "%s, %d bpm %d/4, %s %s, ", a.Mood, a.BPM, a.BeatsPerBar, a.Key, a.Mode)
	for i, c := range a.Progression {
		if i > 0 {
			b.WriteString("–")
		}
		b.WriteString(c.Symbol)
	}
	b.WriteString(";")
	for i, in := range a.Instruments {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s (%s", in.Name, in.Role)
		if in.Arpeggiated && in.Role != RoleArp {
			b.WriteString(", arpeggiated")
		}
		b.WriteString(")")
		if in.Implied {
			b.WriteString("*")
		}
	}
	b.WriteString(";")
	for _, s := range a.Sections {
		fmt.Fprintf(&b, " %s %d-%d", s.Name, s.Start, s.End)
	}
	return b.String()
}

// genreInfo is what a genre implies when the description does not say.
type genreInfo struct {
	name                 string
	phrases              []string
	lo, def, hi          int // tempo range and default
	beats                int // 0 → 4
	swing                float64
	swingUnit            int
	drums                DrumStyle
	hasDrums             bool // the genre's ensemble has drums
	mode                 Mode // when the mood does not choose one
	melody, chords, bass Timbre
	sevenths             bool
	reverb               float64
	barsPerChord         int
	vinyl                bool
	arpChords            bool // chords are played as an arpeggio part
}

var genres = []genreInfo{
	{name: "synthwave", phrases: []string{"synthwave", "synth wave", "outrun", "retrowave", "retro wave", "darksynth", "80s", "eighties"},
		lo: 100, def: 110, hi: 120, drums: FourOnTheFloor, hasDrums: true, mode: Minor, melody: Lead, chords: Pad, bass: SynthBass, reverb: 1},
	{name: "vaporwave", phrases: []string{"vaporwave", "chillwave"},
		lo: 70, def: 80, hi: 95, drums: Backbeat, hasDrums: true, mode: Major, melody: ElectricPiano, chords: Pad, bass: SynthBass, sevenths: true, reverb: 1.3},
	{name: "house", phrases: []string{"house", "deep house", "tech house", "garage", "uk garage"},
		lo: 120, def: 124, hi: 128, drums: FourOnTheFloor, hasDrums: true, mode: Minor, melody: Pluck, chords: Piano, bass: SynthBass, sevenths: true, reverb: 0.7},
	{name: "techno", phrases: []string{"techno", "minimal techno"},
		lo: 125, def: 130, hi: 140, drums: FourOnTheFloor, hasDrums: true, mode: Minor, melody: Lead, chords: Pad, bass: SynthBass, reverb: 0.7},
	{name: "trance", phrases: []string{"trance", "psytrance", "psy trance"},
		lo: 132, def: 138, hi: 142, drums: FourOnTheFloor, hasDrums: true, mode: Minor, melody: Lead, chords: Pad, bass: SynthBass, reverb: 1, arpChords: true},
	{name: "disco", phrases: []string{"disco", "nu disco", "funky house"},
		lo: 115, def: 120, hi: 126, drums: FourOnTheFloor, hasDrums: true, mode: Dorian, melody: Brass, chords: Strings, bass: Bass, sevenths: true, reverb: 0.6},
	{name: "edm", phrases: []string{"edm", "electronic dance", "dance music", "electro", "big room", "electronica", "club", "rave"},
		lo: 124, def: 128, hi: 130, drums: FourOnTheFloor, hasDrums: true, mode: Minor, melody: Lead, chords: Pad, bass: SynthBass, reverb: 0.8},
	{name: "drum and bass", phrases: []string{"drum and bass", "drum n bass", "drum bass", "drumnbass", "dnb", "d and b", "jungle", "liquid funk", "neurofunk"},
		lo: 170, def: 172, hi: 176, drums: Breakbeat, hasDrums: true, mode: Minor, melody: Lead, chords: Pad, bass: SynthBass, reverb: 0.8, barsPerChord: 2},
	{name: "dubstep", phrases: []string{"dubstep", "brostep"},
		lo: 138, def: 140, hi: 142, drums: HalfTime, hasDrums: true, mode: Phrygian, melody: Lead, chords: Pad, bass: SynthBass, reverb: 0.6, barsPerChord: 2},
	{name: "trap", phrases: []string{"trap"},
		lo: 130, def: 140, hi: 150, drums: TrapBeat, hasDrums: true, mode: HarmonicMinor, melody: Bell, chords: Pad, bass: Sub808, reverb: 0.6, barsPerChord: 2},
	{name: "lofi", phrases: []string{"lofi", "lo fi", "chillhop", "chill hop", "lofi hip hop", "lo fi hip hop", "study beats"},
		lo: 70, def: 80, hi: 90, swing: 0.18, swingUnit: 16, drums: BoomBap, hasDrums: true, mode: Dorian, melody: Piano, chords: ElectricPiano, bass: Bass, sevenths: true, reverb: 0.7, vinyl: true},
	{name: "hip hop", phrases: []string{"hip hop", "hiphop", "rap", "boom bap", "boombap"},
		lo: 85, def: 90, hi: 95, swing: 0.12, swingUnit: 16, drums: BoomBap, hasDrums: true, mode: Minor, melody: Piano, chords: ElectricPiano, bass: Bass, sevenths: true, reverb: 0.5},
	{name: "trip hop", phrases: []string{"trip hop", "triphop", "downtempo"},
		lo: 75, def: 85, hi: 95, swing: 0.08, swingUnit: 16, drums: BoomBap, hasDrums: true, mode: Minor, melody: Pluck, chords: Pad, bass: Bass, reverb: 1},
	{name: "jazz", phrases: []string{"jazz", "swing", "bebop", "big band", "cool jazz", "smooth jazz"},
		lo: 90, def: 120, hi: 160, swing: 0.3, swingUnit: 8, drums: JazzRide, hasDrums: true, mode: Major, melody: Brass, chords: Piano, bass: Bass, sevenths: true, reverb: 0.6},
	{name: "blues", phrases: []string{"blues", "shuffle"},
		lo: 70, def: 85, hi: 110, swing: 0.3, swingUnit: 8, drums: Backbeat, hasDrums: true, mode: Mixolydian, melody: Pluck, chords: Organ, bass: Bass, reverb: 0.5},
	{name: "funk", phrases: []string{"funk", "funky"},
		lo: 98, def: 108, hi: 118, swing: 0.06, swingUnit: 16, drums: Backbeat, hasDrums: true, mode: Dorian, melody: Brass, chords: ElectricPiano, bass: Bass, sevenths: true, reverb: 0.4},
	{name: "soul", phrases: []string{"r and b", "rnb", "soul", "neo soul", "motown", "gospel"},
		lo: 70, def: 85, hi: 100, swing: 0.08, swingUnit: 16, drums: BoomBap, hasDrums: true, mode: Dorian, melody: Strings, chords: ElectricPiano, bass: Bass, sevenths: true, reverb: 0.6},
	{name: "rock", phrases: []string{"rock", "indie", "indie rock", "alternative", "grunge", "surf rock"},
		lo: 110, def: 120, hi: 140, drums: Backbeat, hasDrums: true, mode: Major, melody: Lead, chords: Pluck, bass: Bass, reverb: 0.5},
	{name: "punk", phrases: []string{"punk", "pop punk"},
		lo: 160, def: 170, hi: 190, drums: Backbeat, hasDrums: true, mode: Major, melody: Lead, chords: Pluck, bass: Bass, reverb: 0.3},
	{name: "metal", phrases: []string{"metal", "heavy metal"},
		lo: 120, def: 150, hi: 180, drums: Backbeat, hasDrums: true, mode: Phrygian, melody: Lead, chords: Pluck, bass: Bass, reverb: 0.4},
	{name: "pop", phrases: []string{"pop", "synthpop", "synth pop", "electropop", "k pop", "kpop", "dance pop", "indie pop"},
		lo: 100, def: 115, hi: 124, drums: Backbeat, hasDrums: true, mode: Major, melody: Lead, chords: Piano, bass: SynthBass, reverb: 0.6},
	{name: "reggae", phrases: []string{"reggae", "dub", "ska", "dancehall"},
		lo: 70, def: 80, hi: 90, drums: HalfTime, hasDrums: true, mode: Major, melody: Pluck, chords: Organ, bass: Bass, reverb: 0.6},
	{name: "bossa nova", phrases: []string{"bossa nova", "bossa", "samba", "latin"},
		lo: 120, def: 130, hi: 140, drums: BossaBeat, hasDrums: true, mode: Major, melody: Flute, chords: Pluck, bass: Bass, sevenths: true, reverb: 0.5},
	{name: "chiptune", phrases: []string{"chiptune", "chip tune", "8 bit", "8bit", "16 bit", "video game", "retro game", "nes", "gameboy", "game boy"},
		lo: 130, def: 140, hi: 160, drums: Backbeat, hasDrums: true, mode: Major, melody: Chip, chords: Chip, bass: Chip, reverb: 0.2},
	{name: "ambient", phrases: []string{"ambient", "drone", "meditation", "meditative", "new age", "soundscape", "spa music", "sleep music"},
		lo: 60, def: 70, hi: 80, mode: Lydian, melody: Bell, chords: Pad, bass: "", reverb: 1.8, barsPerChord: 2},
	{name: "cinematic", phrases: []string{"cinematic", "orchestral", "orchestra", "film score", "movie score", "soundtrack", "trailer", "symphonic", "epic orchestral"},
		lo: 70, def: 90, hi: 110, drums: HalfTime, mode: Minor, melody: Brass, chords: Strings, bass: Strings, reverb: 1.4, barsPerChord: 2},
	{name: "classical", phrases: []string{"classical", "baroque", "chamber music", "romantic era", "sonata", "nocturne", "etude"},
		lo: 70, def: 96, hi: 120, mode: Major, melody: Piano, chords: Strings, bass: Strings, reverb: 1.1},
	{name: "folk", phrases: []string{"folk", "celtic", "singer songwriter"},
		lo: 90, def: 100, hi: 115, drums: Backbeat, mode: Major, melody: Flute, chords: Pluck, bass: Bass, reverb: 0.7},
	{name: "country", phrases: []string{"country", "bluegrass", "americana", "western"},
		lo: 100, def: 112, hi: 125, drums: Backbeat, hasDrums: true, mode: Major, melody: Pluck, chords: Pluck, bass: Bass, reverb: 0.5},
	{name: "waltz", phrases: []string{"waltz", "valse"},
		lo: 84, def: 96, hi: 180, beats: 3, drums: WaltzBeat, mode: Major, melody: Piano, chords: Strings, bass: Bass, reverb: 1},
	{name: "lullaby", phrases: []string{"lullaby", "music box", "nursery"},
		lo: 60, def: 66, hi: 76, beats: 3, drums: WaltzBeat, mode: Major, melody: Bell, chords: Piano, bass: "", reverb: 1.2},
	{name: "ballad", phrases: []string{"ballad", "power ballad", "love song"},
		lo: 60, def: 70, hi: 80, drums: Backbeat, mode: Major, melody: Piano, chords: Strings, bass: Bass, reverb: 1.1},
}

// defaultGenre is the ensemble when neither a genre nor an instrument is
// named: piano melody over a pad, with bass, and drums if lively.
var defaultGenre = genreInfo{drums: Backbeat, melody: Piano, chords: Pad, bass: Bass, reverb: 0.8}

// Tempo words, slowest first.
var tempoWords = []struct {
	lo, hi int
	energy float64
	words  []string
}{
	{55, 68, -0.35, []string{"very slow", "extremely slow", "super slow", "largo", "lento", "grave", "glacial", "crawling"}},
	{70, 85, -0.25, []string{"slow", "slowly", "relaxed", "relaxing", "laid back", "laidback", "lazy", "chill", "chilled", "mellow", "gentle", "leisurely", "adagio", "unhurried", "calm", "peaceful", "sleepy", "slow tempo", "slow paced"}},
	{96, 104, 0, []string{"medium", "moderate", "moderately", "mid tempo", "midtempo", "medium tempo", "andante", "moderato", "steady", "walking pace"}},
	{125, 140, 0.25, []string{"fast", "upbeat", "up tempo", "uptempo", "energetic", "driving", "lively", "quick", "brisk", "allegro", "danceable", "dancing", "pumping", "high energy", "bouncy", "rapid", "racing", "exciting", "hype", "hyped", "fast paced", "fast tempo"}},
	{150, 175, 0.35, []string{"very fast", "extremely fast", "super fast", "frantic", "presto", "vivace", "breakneck", "hyper", "blazing", "furious", "frenetic"}},
}

// Moods: each picks a mode, a tempo range (used when nothing else sets
// the tempo) and an energy change. Strong words (feelings) weigh 3, mild
// ones (settings, textures, calm) weigh 1, so "calm, peaceful but
// melancholic" is sad; the heaviest mood wins, the first mentioned on a
// tie.
var moods = []struct {
	name   string
	mode   Mode
	lo, hi int
	energy float64
	strong []string
	mild   []string
}{
	{"happy", Major, 110, 124, 0.15,
		[]string{"happy", "joyful", "joyous", "cheerful", "uplifting", "optimistic", "triumphant", "celebratory", "festive", "carefree", "feel good", "lighthearted", "light hearted", "victorious", "euphoric", "ecstatic", "gleeful", "hopeful", "positive"},
		[]string{"sunny", "playful", "fun", "summer", "summery", "sweet", "romantic", "love", "bouncy", "warm", "friendly", "cute"}},
	{"bright", Lydian, 85, 105, 0.05,
		[]string{"dreamy", "magical", "ethereal", "whimsical", "wondrous", "heavenly", "enchanted", "celestial"},
		[]string{"bright", "floating", "sparkling", "shimmering", "fairy tale", "wonder", "curious", "airy", "space", "cosmic"}},
	{"groovy", Mixolydian, 100, 115, 0.1,
		[]string{"swagger", "swaggering", "cocky", "sassy"},
		[]string{"groovy", "grooving", "groove", "grooves", "confident", "rocking", "bluesy", "gritty", "dirty", "southern"}},
	{"sad", Minor, 65, 82, -0.2,
		[]string{"sad", "melancholic", "melancholy", "sorrowful", "somber", "sombre", "mournful", "lonely", "heartbroken", "heartbreaking", "tragic", "gloomy", "tearful", "grief", "grieving", "depressing", "depressed", "longing", "yearning", "regretful", "sorrow", "despair", "bleak"},
		[]string{"rainy", "emotional", "farewell", "blue", "grey", "gray", "autumn", "winter", "cold"}},
	{"wistful", Dorian, 80, 95, -0.1,
		[]string{"nostalgic", "wistful", "bittersweet", "reflective", "pensive", "contemplative", "introspective", "mysterious"},
		[]string{"thoughtful", "cool", "smooth", "sultry", "late night", "night", "nocturnal", "urban", "moody", "city", "midnight", "jazzy"}},
	{"dark", Phrygian, 85, 100, 0.05,
		[]string{"dark", "ominous", "menacing", "sinister", "eerie", "creepy", "scary", "spooky", "horror", "evil", "suspenseful", "haunting", "haunted", "brooding", "foreboding", "threatening", "dystopian", "terrifying"},
		[]string{"tense", "tension", "suspense", "gothic", "villain", "shadowy", "noir", "cyberpunk"}},
	{"aggressive", Phrygian, 130, 150, 0.3,
		[]string{"aggressive", "angry", "brutal", "fierce", "raging", "rage", "violent"},
		[]string{"intense", "heavy", "hard", "hardcore", "punchy", "distorted"}},
	{"epic", Minor, 90, 110, 0.25,
		[]string{"epic", "dramatic", "powerful", "majestic", "heroic", "grand", "anthemic", "legendary", "soaring"},
		[]string{"adventurous", "adventure", "battle", "quest", "fantasy", "inspiring", "inspirational", "motivational", "big"}},
	{"calm", Major, 68, 85, -0.3,
		nil,
		[]string{"calm", "peaceful", "serene", "tranquil", "soothing", "relaxing", "meditative", "relaxed", "gentle", "soft", "mellow", "quiet", "tender", "cozy", "cosy", "sleepy", "chill", "chilled", "laid back", "easy", "easygoing", "healing", "zen", "study", "focus", "lounge", "background", "ambient", "spa", "lazy", "morning"}},
	{"exotic", HarmonicMinor, 90, 110, 0.1,
		[]string{"exotic", "arabian", "middle eastern", "flamenco", "gypsy", "klezmer", "mystical"},
		[]string{"spanish", "desert", "egyptian", "persian", "bazaar"}},
}

// Instruments by timbre: the words that name each.
var instrumentWords = []struct {
	timbre Timbre
	words  []string
}{
	{ElectricPiano, []string{"electric piano", "e piano", "epiano", "rhodes", "fender rhodes", "wurlitzer", "wurli", "electric keys"}},
	{Bell, []string{"bell", "bells", "glockenspiel", "glock", "chimes", "celesta", "music box", "vibraphone", "vibes", "marimba", "xylophone", "kalimba", "toy piano", "mallets", "handpan"}},
	{Piano, []string{"piano", "pianos", "grand piano", "upright piano", "keyboard", "keyboards", "keys", "harpsichord"}},
	{Organ, []string{"organ", "organs", "hammond", "church organ", "b3", "accordion"}},
	{Pad, []string{"pad", "pads", "synth pad", "synth pads", "warm pad", "choir", "choirs", "voices", "vocal pad", "drone", "drones", "texture", "textures"}},
	{Strings, []string{"strings", "string", "string section", "violin", "violins", "viola", "violas", "cello", "cellos", "orchestral strings", "string quartet", "fiddle"}},
	{SynthBass, []string{"synth bass", "bass synth", "synthbass", "acid bass", "reese", "reese bass", "wobble bass", "wobble", "moog bass", "analog bass", "pulsing bass"}},
	{Sub808, []string{"808", "808s", "808 bass", "sub bass", "sub", "subs"}},
	{Bass, []string{"bass", "bassline", "bass line", "bass guitar", "electric bass", "upright bass", "double bass", "contrabass", "upright", "walking bass", "basses"}},
	{Chip, []string{"square wave", "square lead", "pulse wave", "chip", "chiptune lead", "8 bit synth"}},
	{Lead, []string{"synth lead", "lead", "lead synth", "synth", "synths", "synthesizer", "synthesizers", "supersaw", "saw lead", "analog synth", "keytar", "theremin"}},
	{Brass, []string{"brass", "trumpet", "trumpets", "horn", "horns", "french horn", "trombone", "trombones", "sax", "saxophone", "saxophones", "tuba", "brass section"}},
	{Pluck, []string{"pluck", "plucks", "plucked", "guitar", "guitars", "acoustic guitar", "electric guitar", "nylon guitar", "harp", "harps", "banjo", "ukulele", "uke", "mandolin", "koto", "sitar", "lute", "pizzicato", "bouzouki", "oud", "shamisen"}},
	{Flute, []string{"flute", "flutes", "pan flute", "panflute", "whistle", "whistling", "ocarina", "recorder", "piccolo", "clarinet", "oboe", "woodwind", "woodwinds", "shakuhachi", "bansuri", "bagpipe", "bagpipes"}},
	{Drums, []string{"drums", "drum", "drum kit", "drum machine", "beat", "beats", "percussion", "percussive", "kick", "kicks", "kick drum", "snare", "snares", "hi hat", "hi hats", "hihat", "hihats", "hats", "claps", "clap", "breakbeat", "breakbeats", "breaks", "cymbals", "shaker", "tambourine", "congas", "bongos", "toms"}},
}

var arpWords = []string{"arpeggiated", "arpeggio", "arpeggios", "arp", "arps", "arpeggiating", "arpeggiator", "broken chords", "arpeggiate"}

// soloWords keep the ensemble to what was named.
var soloWords = []string{"solo", "only", "just", "alone", "unaccompanied", "nothing else", "a cappella"}

var (
	reBPMAfter  = regexp.MustCompile(`(\d{1,5}(?:\.\d+)?)\s*(?:bpm|b\.p\.m|beats?\s+(?:per|a|each)\s+minute)`)
	reBPMBefore = regexp.MustCompile(`(?:tempo|bpm)\s*(?:of|at|is|around|about|approximately|approx|near|~|=|:)?\s*(\d{1,5}(?:\.\d+)?)`)
)

// Plan reads a description of genre, mood, instruments and tempo into an
// arrangement of the given length (clamped to 1..MaxSeconds). seed picks
// among the choices the description leaves open (key, progression,
// melody, exact tempo within a word's range); the same inputs always give
// the same arrangement. Plan never fails: an empty or unreadable
// description gives a pleasant default.
//
// What it reads (the tables above list every word):
//   - tempo: a number ("118 bpm", "tempo 90", "bpm: 128"), else words
//     (slow/relaxed ≈ 70–85, medium ≈ 100, fast/upbeat/energetic ≈
//     125–140, very slow, very fast), placed within the genre's range when
//     there is a genre; else the genre's own tempo; else the mood's;
//   - genre: synthwave, house, techno, trance, disco, edm, drum and bass,
//     dubstep, trap, lo-fi, hip hop, trip hop, jazz, blues, funk, soul,
//     rock, punk, metal, pop, reggae, bossa nova, chiptune, ambient,
//     cinematic, classical, folk, country, waltz, lullaby, ballad: tempo,
//     meter, groove, swing and a default ensemble;
//   - mood: happy → major, bright/dreamy → lydian, groovy → mixolydian,
//     sad/melancholic → minor, nostalgic/mysterious → dorian,
//     dark/aggressive → phrygian, epic → minor, exotic → harmonic minor,
//     calm → major (and slower); a named key or mode ("in D minor",
//     "dorian") wins;
//   - instruments: piano, electric piano, organ, pad/choir, strings,
//     bass, synth bass, 808, synth/lead, brass, guitar/pluck/harp, bells,
//     flute/woodwinds, chip, drums; "arpeggiated" binds to the instrument
//     next to it; "no drums"/"without bass" exclude; "solo"/"only" stop
//     the genre filling in the rest;
//   - meter: waltz, 3/4, 6/8.
func Plan(description string, seconds int, seed uint64) Arrangement {
	seconds = max(1, min(seconds, MaxSeconds))
	a := Arrangement{Description: description, Seconds: seconds, Seed: seed, BeatsPerBar: 4, SwingUnit: 8}
	t := parseText(description)

	// The genre first: its words ("drum and bass", "lo-fi hip hop") are
	// then not read as instruments or moods.
	var g *genreInfo
	{
		entries := make([][]string, len(genres))
		for i := range genres {
			entries[i] = genres[i].phrases
		}
		ms := t.findAll(entries, false)
		for _, m := range ms {
			for k := range m.n {
				t.used[m.pos+k] = true
			}
		}
		if len(ms) > 0 {
			g = &genres[ms[0].value]
			a.Genre = g.name
		}
	}
	profile := defaultGenre
	if g != nil {
		profile = *g
	}

	// Mood: the mode, and a tempo and energy hint.
	moodIdx := -1
	{
		entries := make([][]string, 0, 2*len(moods))
		for _, m := range moods {
			entries = append(entries, m.strong, m.mild)
		}
		score := make([]int, len(moods))
		first := make([]int, len(moods))
		for i := range first {
			first[i] = math.MaxInt
		}
		for _, m := range t.findAll(entries, true) {
			i := m.value / 2
			score[i] += 1 + 2*(1-m.value%2) // strong 3, mild 1
			first[i] = min(first[i], m.pos)
		}
		for i := range moods {
			if score[i] > 0 && (moodIdx < 0 || score[i] > score[moodIdx] || (score[i] == score[moodIdx] && first[i] < first[moodIdx])) {
				moodIdx = i
			}
		}
	}
	a.Mood = "neutral"
	energy := 0.6
	if moodIdx >= 0 {
		a.Mood = moods[moodIdx].name
		energy += moods[moodIdx].energy
	}

	// Tempo words: the most mentioned class, the first on a tie.
	tempoIdx := -1
	{
		entries := make([][]string, len(tempoWords))
		for i := range tempoWords {
			entries[i] = tempoWords[i].words
		}
		count := make([]int, len(tempoWords))
		first := make([]int, len(tempoWords))
		for _, m := range t.findAll(entries, true) {
			if count[m.value] == 0 {
				first[m.value] = m.pos
			}
			count[m.value]++
		}
		for i := range tempoWords {
			if count[i] > 0 && (tempoIdx < 0 || count[i] > count[tempoIdx] || (count[i] == count[tempoIdx] && first[i] < first[tempoIdx])) {
				tempoIdx = i
			}
		}
		if tempoIdx >= 0 {
			energy += tempoWords[tempoIdx].energy
		}
	}
	a.Energy = clamp(energy, 0.1, 1)

	// Meter.
	a.BeatsPerBar = 4
	if profile.beats != 0 {
		a.BeatsPerBar = profile.beats
	}
	switch {
	case t.has("3/4", "6/8", "12/8") || t.findAll([][]string{{"in three", "triple meter", "triple time", "three four"}}, false) != nil:
		a.BeatsPerBar = 3
	case t.has("4/4", "2/4"):
		a.BeatsPerBar = 4
	}

	// Tempo: a number, else words (within the genre's range when there is
	// a genre), else the genre, else the mood, else 100.
	r := newRNG(seed, "tempo")
	lower := strings.ToLower(description)
	if len(lower) > maxDescription {
		lower = lower[:maxDescription]
	}
	if bpm, ok := explicitBPM(lower); ok {
		a.BPM, a.TempoSource = bpm, "number"
	} else if tempoIdx >= 0 {
		a.TempoSource = "words"
		w := tempoWords[tempoIdx]
		if g != nil {
			switch tempoIdx {
			case 0:
				a.BPM = g.lo * 85 / 100
			case 1:
				a.BPM = g.lo
			case 2:
				a.BPM = g.def
			case 3:
				a.BPM = g.hi
			default:
				a.BPM = g.hi * 112 / 100
			}
		} else {
			a.BPM = r.between(w.lo, w.hi)
		}
	} else if g != nil {
		a.BPM, a.TempoSource = g.def, "genre"
	} else if moodIdx >= 0 {
		a.BPM, a.TempoSource = r.between(moods[moodIdx].lo, moods[moodIdx].hi), "mood"
	} else {
		a.BPM, a.TempoSource = 100, "default"
	}
	a.BPM = max(MinBPM, min(a.BPM, MaxBPM))

	// Swing.
	a.Swing, a.SwingUnit = profile.swing, profile.swingUnit
	if a.SwingUnit == 0 {
		a.SwingUnit = 8
	}
	if a.Swing == 0 && t.has("swing", "swung", "swinging", "shuffle", "shuffled", "triplet") {
		a.Swing, a.SwingUnit = 0.3, 8
	}
	if t.has("straight") {
		a.Swing = 0
	}

	// Mode and key.
	a.Mode = Major
	switch {
	case moodIdx >= 0:
		a.Mode = moods[moodIdx].mode
	case profile.mode != "":
		a.Mode = profile.mode
	}
	pc, keyMode, hasKey := explicitKey(t)
	if m, ok := explicitMode(t); ok {
		a.Mode = m
	}
	if keyMode != "" {
		a.Mode = keyMode
	}
	kr := newRNG(seed, "key")
	if !hasKey {
		choices := []int{0, 7, 2, 5, 9, 10, 4, 3} // C G D F A Bb E Eb
		if a.Mode.minorish() || a.Mode == Phrygian {
			choices = []int{9, 4, 2, 0, 7, 6, 11, 5} // A E D C G F# B F
		}
		pc = choices[kr.intn(len(choices))]
	}
	a.Key = noteNames[pc]
	a.Tonic = 48 + pc

	// Harmony.
	a.Sevenths = profile.sevenths || t.has("seventh", "sevenths", "7th", "7ths", "jazzy", "neo", "lush")
	if t.has("triads", "simple") {
		a.Sevenths = false
	}
	a.BarsPerChord = 1
	if profile.barsPerChord > 0 {
		a.BarsPerChord = profile.barsPerChord
	} else if a.BPM >= 150 {
		a.BarsPerChord = 2
	}
	hr := newRNG(seed, "harmony")
	main, bridge := pickProgressions(hr, a.Mode, a.Mood, a.Genre)
	iv := a.Mode.Intervals()
	build := func(degs []int) []Chord {
		cs := make([]Chord, len(degs))
		for i, d := range degs {
			cs[i] = buildChord(a.Tonic, iv, d, a.Sevenths)
		}
		voiceLead(cs, 52)
		return cs
	}
	a.Progression, a.Bridge = build(main), build(bridge)

	// Ensemble.
	a.Instruments = ensemble(t, g, profile, a.Energy)
	a.DrumStyle = profile.drums
	if a.DrumStyle == "" {
		a.DrumStyle = Backbeat
	}
	if g == nil && (t.has("dance", "dancing", "danceable") || a.BPM >= 120 && a.Energy >= 0.75) {
		a.DrumStyle = FourOnTheFloor
	}
	if t.findAll([][]string{{"four on the floor", "4 on the floor", "four to the floor"}}, false) != nil {
		a.DrumStyle = FourOnTheFloor
	}
	if a.BeatsPerBar == 3 {
		a.DrumStyle = WaltzBeat
	}

	// Form.
	a.Bars = int(math.Ceil(float64(seconds)/a.BarSeconds() - 1e-9))
	loopBars := len(a.Progression) * a.BarsPerChord
	a.Sections = sections(a.Bars, loopBars, a.Energy, a)
	a.FadeOut = fadeLength(a)

	a.Reverb = profile.reverb
	if t.has("reverb", "spacious", "atmospheric", "lush", "washed", "cavernous", "hall") {
		a.Reverb += 0.5
	}
	if t.has("dry", "tight") {
		a.Reverb *= 0.4
	}
	a.Reverb = clamp(a.Reverb, 0, 2)
	a.Vinyl = profile.vinyl || t.has("vinyl", "crackle", "tape", "cassette", "dusty")
	return a
}

// explicitBPM finds "118 bpm", "tempo 90", "bpm: 128", "96 beats per
// minute"; the number is clamped to MinBPM..MaxBPM.
func explicitBPM(s string) (int, bool) {
	var num string
	if m := reBPMAfter.FindStringSubmatch(s); m != nil {
		num = m[1]
	} else if m := reBPMBefore.FindStringSubmatch(s); m != nil {
		num = m[1]
	} else {
		return 0, false
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return int(clamp(math.Round(f), MinBPM, MaxBPM)), true
}

var modeNames = [][]string{
	{"major", "ionian", "major key"},
	{"minor", "aeolian", "minor key", "natural minor"},
	{"dorian"},
	{"phrygian", "locrian"},
	{"lydian"},
	{"mixolydian"},
	{"harmonic minor"},
}
var modeValues = []Mode{Major, Minor, Dorian, Phrygian, Lydian, Mixolydian, HarmonicMinor}

// explicitMode finds a named mode anywhere ("in a minor key", "dorian").
func explicitMode(t *text) (Mode, bool) {
	ms := t.findAll(modeNames, false)
	if len(ms) == 0 {
		return "", false
	}
	return modeValues[ms[0].value], true
}

// explicitKey finds a key: "in D minor", "key of F#", "Eb major", "in
// C#m", "d minor". A lone "a", "b" or "e" after "in" counts only before a
// mode word or "key" ("in a minor"), so "in a calm mood" is not A; a bare
// note name counts only before a mode word, and "am" only after "in" or
// "key" ("I am").
func explicitKey(t *text) (pc int, mode Mode, ok bool) {
	toks := t.toks
	at := func(i int) string {
		if i >= 0 && i < len(toks) {
			return toks[i]
		}
		return ""
	}
	modeAfter := func(j int) Mode {
		if at(j) == "harmonic" && at(j+1) == "minor" {
			return HarmonicMinor
		}
		for i, names := range modeNames {
			for _, n := range names {
				if !strings.Contains(n, " ") && at(j) == n {
					return modeValues[i]
				}
			}
		}
		return ""
	}
	for i := range toks {
		lead := toks[i] == "key" || toks[i] == "in"
		j := i
		if lead {
			j = i + 1
			if toks[i] == "key" && at(j) == "of" {
				j++
			}
		}
		tok := at(j)
		p, minor, ok := noteClass(tok)
		if !ok {
			continue
		}
		next := j + 1
		switch at(next) {
		case "sharp":
			p, next = p+1, next+1
		case "flat":
			p, next = p-1, next+1
		}
		m := modeAfter(next)
		if minor {
			if !lead {
				continue
			}
			m = Minor
		}
		bare := len(tok) == 1 && next == j+1
		switch {
		case !lead:
			if m == "" || (bare && (tok == "a" || tok == "b")) {
				continue
			}
		case toks[i] == "in" && bare && m == "" && at(next) != "key" && (tok == "a" || tok == "b" || tok == "e"):
			continue
		}
		return mod(p, 12), m, true
	}
	return 0, "", false
}

var noteBase = map[byte]int{'c': 0, 'd': 2, 'e': 4, 'f': 5, 'g': 7, 'a': 9, 'b': 11}

// noteClass reads a note name token: "c", "f#", "eb", "bb", and with a
// trailing "m" a minor key ("am", "c#m", "bbm").
func noteClass(tok string) (pc int, minor bool, ok bool) {
	if tok == "" {
		return 0, false, false
	}
	p, found := noteBase[tok[0]]
	if !found {
		return 0, false, false
	}
	rest := tok[1:]
	switch {
	case strings.HasPrefix(rest, "#"):
		p++
		rest = rest[1:]
	case strings.HasPrefix(rest, "b") && len(rest) <= 2:
		p--
		rest = rest[1:]
	}
	switch rest {
	case "", "maj":
		return p, false, true
	case "m", "min":
		return p, true, true
	}
	return 0, false, false
}

func clamp(x, lo, hi float64) float64 {
	if x < lo || math.IsNaN(x) {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// mention is an instrument named in the description.
type mention struct {
	timbre Timbre
	name   string
	pos, n int
	arp    bool
}

var melodicTimbres = []Timbre{Lead, Brass, Flute, Bell, Chip}

// dualTimbres can play a melody or chords; when no melodic instrument is
// named, the first of these (in this order) takes the melody.
var dualTimbres = []Timbre{Piano, Pluck, ElectricPiano, Strings, Organ}

func isBass(t Timbre) bool { return t == Bass || t == SynthBass || t == Sub808 }

func in(t Timbre, set []Timbre) bool {
	for _, x := range set {
		if x == t {
			return true
		}
	}
	return false
}

// ensemble turns the instruments named into parts with roles, and fills
// what is missing from the genre (or, when nothing at all is named, the
// default ensemble) unless the description says "solo" or "only".
func ensemble(t *text, g *genreInfo, profile genreInfo, energy float64) []Instrument {
	entries := make([][]string, len(instrumentWords))
	for i := range instrumentWords {
		entries[i] = instrumentWords[i].words
	}
	arpAt := map[int]bool{}
	for _, m := range t.findAll([][]string{arpWords}, true) {
		for k := range m.n {
			arpAt[m.pos+k] = true
		}
	}
	var named []mention
	excluded := map[Timbre]bool{}
	for _, m := range t.findAll(entries, true) {
		tb := instrumentWords[m.value].timbre
		if t.negated(m.pos) {
			excluded[tb] = true
			if tb == Bass {
				excluded[SynthBass], excluded[Sub808] = true, true
			}
			continue
		}
		named = append(named, mention{timbre: tb, name: strings.Join(t.toks[m.pos:m.pos+m.n], " "), pos: m.pos, n: m.n})
	}
	// An arpeggio word belongs to the instrument just before it ("synth
	// arpeggios"), else to one starting within the next three words
	// ("arpeggiated synth bass"); drums are never arpeggiated.
	usedArp := map[int]bool{}
	for k := range t.toks {
		if !arpAt[k] || (k > 0 && arpAt[k-1]) {
			continue
		}
		target := -1
		for i, m := range named {
			if m.timbre != Drums && !m.arp && m.pos+m.n == k {
				target = i
			}
		}
		if target < 0 {
			for i, m := range named {
				if m.timbre != Drums && !m.arp && m.pos > k && m.pos <= k+3 && !slices.Contains(t.toks[k:m.pos], brk) {
					target = i
					break
				}
			}
		}
		if target >= 0 {
			named[target].arp = true
			usedArp[k] = true
		}
	}
	if t.has("drumless", "beatless") {
		excluded[Drums] = true
	}
	// An arpeggio asked for on its own ("with arpeggios") gets the
	// genre's lead sound.
	for k := range t.toks {
		if arpAt[k] && !(k > 0 && arpAt[k-1]) && !usedArp[k] && !t.negated(k) {
			tb := profile.melody
			if tb == "" || tb == Bell || tb == Flute || tb == Brass {
				tb = Pluck
			}
			named = append(named, mention{timbre: tb, name: t.toks[k], pos: k, arp: true})
			break
		}
	}

	var out []Instrument
	seen := map[Timbre]bool{}
	add := func(in Instrument) { out = append(out, in) }
	hasRole := func(r Role) bool {
		for _, in := range out {
			if in.Role == r {
				return true
			}
		}
		return false
	}
	// Drums and the first bass.
	for _, m := range named {
		if excluded[m.timbre] || seen[m.timbre] {
			continue
		}
		switch {
		case m.timbre == Drums:
			seen[m.timbre] = true
			add(Instrument{Name: m.name, Timbre: Drums, Role: RoleDrums})
		case isBass(m.timbre) && !hasRole(RoleBass):
			seen[m.timbre] = true
			add(Instrument{Name: m.name, Timbre: m.timbre, Role: RoleBass, Arpeggiated: m.arp})
		}
	}
	// The rest: arpeggios, melodies, chords.
	var rest []mention
	for _, m := range named {
		if excluded[m.timbre] || seen[m.timbre] || m.timbre == Drums || isBass(m.timbre) {
			continue
		}
		seen[m.timbre] = true
		if m.arp {
			add(Instrument{Name: m.name, Timbre: m.timbre, Role: RoleArp, Arpeggiated: true})
			continue
		}
		rest = append(rest, m)
	}
	melodies := map[int]bool{}
	for i, m := range rest {
		if in(m.timbre, melodicTimbres) {
			melodies[i] = true
		}
	}
	if len(melodies) == 0 {
	pick:
		for _, tb := range dualTimbres {
			for i, m := range rest {
				if m.timbre == tb {
					melodies[i] = true
					break pick
				}
			}
		}
	}
	for i, m := range rest {
		if !melodies[i] {
			add(Instrument{Name: m.name, Timbre: m.timbre, Role: RoleChords})
		}
	}
	for i, m := range rest {
		if melodies[i] {
			add(Instrument{Name: m.name, Timbre: m.timbre, Role: RoleMelody})
		}
	}
	// One instrument that can do both plays chords under its own melody
	// (a solo piano's left hand).
	if !hasRole(RoleChords) && !hasRole(RoleArp) {
		for i, m := range rest {
			if melodies[i] && in(m.timbre, dualTimbres) {
				add(Instrument{Name: m.name, Timbre: m.timbre, Role: RoleChords})
				break
			}
		}
	}

	solo := len(named) > 0 && t.findAll([][]string{soloWords}, false) != nil
	if !solo && (g != nil || len(named) == 0) {
		fill := func(r Role, tb Timbre, ok bool) {
			if !ok || tb == "" || excluded[tb] || hasRole(r) {
				return
			}
			if r == RoleBass && (excluded[Bass] || excluded[SynthBass] || excluded[Sub808]) {
				return
			}
			if r == RoleChords && hasRole(RoleArp) && profile.arpChords {
				return
			}
			add(Instrument{Name: string(tb), Timbre: tb, Role: r, Implied: true})
		}
		drums := profile.hasDrums
		if g == nil {
			drums = energy >= 0.5
		}
		fill(RoleDrums, Drums, drums)
		fill(RoleBass, profile.bass, true)
		if profile.arpChords && !hasRole(RoleChords) && !hasRole(RoleArp) && !excluded[profile.melody] {
			add(Instrument{Name: string(profile.melody), Timbre: profile.melody, Role: RoleArp, Arpeggiated: true, Implied: true})
		}
		fill(RoleChords, profile.chords, true)
		fill(RoleMelody, profile.melody, true)
	}
	if len(out) == 0 || (len(out) == 1 && out[0].Role == RoleBass && out[0].Timbre == Bass && len(named) == 0) {
		// Everything was excluded ("no drums, no piano"): a piano still plays.
		out = append(out,
			Instrument{Name: "piano", Timbre: Piano, Role: RoleChords, Implied: true},
			Instrument{Name: "piano", Timbre: Piano, Role: RoleMelody, Implied: true})
	}
	mixLevels(out)
	return out
}

// mixLevels sets each part's gain and place in the stereo field.
func mixLevels(ins []Instrument) {
	gains := map[Timbre]float64{
		Piano: 0.5, ElectricPiano: 0.6, Organ: 0.22, Pad: 0.28, Strings: 0.3, Bass: 0.45, SynthBass: 0.8, Sub808: 0.55,
		Lead: 0.4, Brass: 0.45, Pluck: 0.8, Bell: 0.5, Flute: 0.5, Chip: 0.16, Drums: 0.6,
	}
	arps, melodies := 0, 0
	for i := range ins {
		in := &ins[i]
		in.Gain = gains[in.Timbre]
		switch in.Role {
		case RoleChords:
			in.Gain *= 0.8
			in.Pan = -0.2
		case RoleArp:
			in.Gain *= 0.7
			in.Pan = 0.35
			if arps%2 == 1 {
				in.Pan = -0.35
			}
			arps++
		case RoleMelody:
			in.Gain *= 1.4 // the tune sits on top of the mix
			in.Pan = 0.12
			if melodies%2 == 1 {
				in.Pan = -0.12
			}
			melodies++
		case RoleBass:
			if in.Timbre == Strings || in.Timbre == Pad {
				in.Gain *= 1.6
			}
		}
	}
}

// sections lays out the form: intro, alternating A and B themes (with a
// breakdown in longer pieces) in phrases of whole chord loops, outro.
// Drums enter after the intro; the breakdown drops drums and bass.
func sections(bars, loopBars int, energy float64, a Arrangement) []Section {
	type raw struct {
		name   string
		length int
		energy float64
	}
	var plan []raw
	switch {
	case bars < 4:
		plan = []raw{{"A", bars, 0.8}}
	case bars < 8:
		plan = []raw{{"intro", 1, 0.45}, {"A", bars - 2, 0.8}, {"outro", 1, 0.55}}
	default:
		intro, outro := 2, 2
		if bars >= 24 {
			intro, outro = 4, 4
		}
		if bars >= 96 {
			intro = 8
		}
		body := bars - intro - outro
		phrase := max(loopBars, 4)
		if body >= 8*phrase {
			phrase *= 2
		}
		n := max(body/phrase, 1)
		names := make([]string, n)
		for i := range names {
			names[i] = []string{"A", "B"}[i%2]
		}
		if n >= 5 {
			names[n*3/5] = "breakdown"
			for i := n*3/5 + 1; i < n; i++ {
				names[i] = []string{"A", "B"}[(i-n*3/5+1)%2]
			}
		}
		plan = append(plan, raw{"intro", intro, 0.45})
		seenA := false
		for i, nm := range names {
			l := phrase
			if i == n-1 {
				l = body - phrase*(n-1)
			}
			e := map[string]float64{"A": 0.75, "B": 0.95, "breakdown": 0.4}[nm]
			if nm == "A" && seenA {
				e = 0.85
			}
			seenA = seenA || nm == "A"
			plan = append(plan, raw{nm, l, e})
		}
		plan = append(plan, raw{"outro", outro, 0.55})
	}
	var out []Section
	start := 0
	for _, p := range plan {
		s := Section{Name: p.name, Start: start, End: start + p.length, Energy: clamp(p.energy*(0.55+0.6*energy), 0.1, 1)}
		s.Roles = sectionRoles(p.name, a)
		out = append(out, s)
		start += p.length
	}
	return out
}

// sectionRoles is which of the ensemble's roles play in a section.
func sectionRoles(name string, a Arrangement) []Role {
	var want []Role
	switch name {
	case "intro":
		want = []Role{RoleChords, RoleArp}
	case "breakdown":
		want = []Role{RoleChords, RoleArp, RoleMelody}
	case "outro":
		want = []Role{RoleDrums, RoleBass, RoleChords, RoleArp}
	default:
		want = roleOrder
	}
	var out []Role
	for _, r := range roleOrder {
		if a.Has(r) && slices.Contains(want, r) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		// The intro of a piece without chords: the next part in line
		// carries it (bass, else the melody, else the drums).
		for _, r := range []Role{RoleBass, RoleMelody, RoleDrums} {
			if a.Has(r) {
				return []Role{r}
			}
		}
	}
	return out
}

// fadeLength is the closing fade: the outro's length within 2–8 s, and
// never more than a quarter of the piece.
func fadeLength(a Arrangement) float64 {
	f := 2.0
	if n := len(a.Sections); n > 1 && a.Sections[n-1].Name == "outro" {
		f = float64(a.Sections[n-1].End-a.Sections[n-1].Start) * a.BarSeconds()
	}
	f = clamp(f, 2, 8)
	return math.Min(f, float64(a.Seconds)/4)
}
