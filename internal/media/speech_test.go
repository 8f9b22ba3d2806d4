package media

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"conduit/internal/config"
)

// needEspeak fails (never skips) without espeak-ng: the speech renderer's
// whole point is real speech.
func needEspeak(t testing.TB) {
	t.Helper()
	needFFmpeg(t)
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		t.Fatalf("espeak-ng is not installed (apt-get install espeak-ng); the speech tests render real speech and need it: %v", err)
	}
}

// testVoices are fixed here so the direction tests do not move when the
// menu's voices are retuned.
var testVoices = map[string]SpeechVoice{
	"aria":  {ID: "aria", Language: "en-US", Espeak: "en-us", Variant: "f2", Pitch: 55, Rate: 165},
	"roger": {ID: "roger", Language: "en-US", Espeak: "en-us", Variant: "m3", Pitch: 38, Rate: 160},
	"lena":  {ID: "lena", Language: "de-DE", Espeak: "de", Variant: "f2", Pitch: 56, Rate: 160},
	// lena's settings on the English voice: what lena would sound like if
	// the language were ignored.
	"lena-en": {ID: "lena-en", Language: "en-US", Espeak: "en-us", Variant: "f2", Pitch: 56, Rate: 160},
}

// sayResult is a rendered MP3 decoded back to 24 kHz mono PCM.
type sayResult struct {
	out  Output
	mp3  []byte
	raw  []byte // s16le
	pcm  []int16
	secs float64
}

func (r sayResult) rms() float64 { return rmsOf(r.pcm) }

func rmsOf(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var sum float64
	for _, s := range pcm {
		sum += float64(s) * float64(s)
	}
	return math.Sqrt(sum / float64(len(pcm)))
}

// say renders text and checks the file is an MP3 ffprobe accepts.
func say(t *testing.T, s *LocalSpeech, model, voice, text string) sayResult {
	t.Helper()
	out, err := s.Render(context.Background(), Job{RunID: "2026-11-22T10:00:00.000Z#5p33ch", Kind: KindSpeech, Model: model, Text: text, Voice: voice}, t.TempDir(), nil)
	if err != nil {
		t.Fatalf("Render(%q, %s, %s): %v", text, model, voice, err)
	}
	return decodeSpeech(t, out)
}

func decodeSpeech(t testing.TB, out Output) sayResult {
	t.Helper()
	mp3, err := os.ReadFile(out.Path)
	if err != nil {
		t.Fatal(err)
	}
	p := probe(t, out.Path)
	if len(p.Streams) != 1 || p.Streams[0].CodecType != "audio" || p.Streams[0].CodecName != "mp3" || p.Format.FormatName != "mp3" {
		t.Fatalf("%s: ffprobe sees %+v, want one mp3 audio stream in an mp3 file", out.Path, p)
	}
	raw, err := exec.Command("ffmpeg", "-v", "error", "-i", out.Path, "-f", "s16le", "-ac", "1", "-ar", "24000", "-").Output()
	if err != nil {
		t.Fatalf("decoding %s: %v", out.Path, err)
	}
	pcm := make([]int16, len(raw)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	return sayResult{out: out, mp3: mp3, raw: raw, pcm: pcm, secs: float64(len(pcm)) / 24000}
}

// samples are one short sentence per language of the voice menu.
var samples = map[string]string{
	"en": "Hello there, this is a short test of my voice.",
	"de": "Guten Tag, das ist ein kurzer Test meiner Stimme.",
	"fr": "Bonjour, ceci est un court essai de ma voix.",
	"es": "Hola, esta es una breve prueba de mi voz.",
	"it": "Ciao, questa è una breve prova della mia voce.",
	"pt": "Olá, este é um breve teste da minha voz.",
	"nl": "Hallo, dit is een korte test van mijn stem.",
	"pl": "Dzień dobry, to jest krótki test mojego głosu.",
	"sv": "Hej, det här är ett kort test av min röst.",
	"nb": "Hei, dette er en kort test av stemmen min.",
	"da": "Hej, dette er en kort test af min stemme.",
	"fi": "Hei, tämä on lyhyt testi äänestäni.",
	"cs": "Dobrý den, toto je krátký test mého hlasu.",
	"ru": "Здравствуйте, это короткая проверка моего голоса.",
	"uk": "Добрий день, це коротка перевірка мого голосу.",
	"ro": "Bună ziua, acesta este un scurt test al vocii mele.",
	"hu": "Jó napot, ez egy rövid próba a hangomról.",
	"el": "Γεια σας, αυτή είναι μια σύντομη δοκιμή της φωνής μου.",
	"tr": "Merhaba, bu sesimin kısa bir denemesidir.",
	"hi": "नमस्ते, यह मेरी आवाज़ का एक छोटा परीक्षण है।",
	"ta": "வணக்கம், இது என் குரலின் சிறிய சோதனை.",
	"ja": "こんにちは、これはわたしのこえのテストです。",
	"ko": "안녕하세요, 이것은 제 목소리의 짧은 테스트입니다.",
	"vi": "Xin chào, đây là bài kiểm tra ngắn giọng nói của tôi.",
	"id": "Halo, ini adalah tes singkat suara saya.",
	"ar": "مرحبا، هذا اختبار قصير لصوتي.",
}

// menuVoices is the default voice menu, read through the config package
// the way the server reads it (an empty config file, so the environment's
// CONDUIT_CONFIG cannot change it).
func menuVoices(t *testing.T) []config.Voice {
	t.Helper()
	path := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c.Media.Speech.Voices
}

func asSpeechVoice(v config.Voice) SpeechVoice {
	return SpeechVoice{ID: v.ID, Language: v.Language, Espeak: v.Espeak, Variant: v.Variant, Pitch: v.Pitch, Rate: v.Rate}
}

// TestSpeechVoiceMenu checks the menu's shape and that espeak-ng has
// every voice and variant it names (espeak-ng silently falls back to its
// default variant for an unknown one, so rendering alone would not tell).
func TestSpeechVoiceMenu(t *testing.T) {
	t.Parallel()
	needEspeak(t)
	voices := menuVoices(t)
	if len(voices) < 32 {
		t.Errorf("%d voices, want at least 32", len(voices))
	}
	list, err := exec.Command("espeak-ng", "--voices").Output()
	if err != nil {
		t.Fatal(err)
	}
	variants, err := exec.Command("espeak-ng", "--voices=variant").Output()
	if err != nil {
		t.Fatal(err)
	}
	installed, installedVariants := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(string(list), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 4 {
			installed[f[1]] = true // the language column is what -v takes
		}
	}
	for _, line := range strings.Split(string(variants), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 4 {
			for _, field := range f {
				if name, ok := strings.CutPrefix(field, "!v/"); ok {
					installedVariants[name] = true
				}
			}
		}
	}
	idRE := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	langRE := regexp.MustCompile(`^[a-z]{2,3}(-([A-Z]{2}|[0-9]{3}))?$`)
	ids, combos, langs := map[string]bool{}, map[string]string{}, map[string]bool{}
	defaults, premium := 0, 0
	for _, v := range voices {
		if !idRE.MatchString(v.ID) || ids[v.ID] {
			t.Errorf("voice id %q: want unique [a-z0-9-]+", v.ID)
		}
		ids[v.ID] = true
		combo := v.Espeak + "+" + v.Variant + "/" + strconv.Itoa(v.Pitch) + "/" + strconv.Itoa(v.Rate)
		if other, dup := combos[combo]; dup {
			t.Errorf("voices %s and %s are both %s", other, v.ID, combo)
		}
		combos[combo] = v.ID
		if v.Default {
			defaults++
			if !strings.HasPrefix(v.Language, "en-") {
				t.Errorf("default voice %s speaks %s, want English", v.ID, v.Language)
			}
		}
		if v.PriceMultiplier != "" {
			premium++
			if m, err := strconv.ParseFloat(v.PriceMultiplier, 64); err != nil || m <= 1 {
				t.Errorf("voice %s: price_multiplier %q, want a decimal above 1", v.ID, v.PriceMultiplier)
			}
		}
		if !langRE.MatchString(v.Language) {
			t.Errorf("voice %s: language %q is not a BCP-47 tag", v.ID, v.Language)
		}
		langs[v.Language] = true
		if !installed[v.Espeak] {
			t.Errorf("voice %s: espeak-ng has no voice %q", v.ID, v.Espeak)
		}
		if v.Variant == "" || !installedVariants[v.Variant] {
			t.Errorf("voice %s: espeak-ng has no variant %q", v.ID, v.Variant)
		}
		if v.Pitch < 0 || v.Pitch > 99 || v.Rate < 80 || v.Rate > 450 || strings.TrimSpace(v.Description) == "" {
			t.Errorf("voice %s: pitch %d, rate %d, description %q", v.ID, v.Pitch, v.Rate, v.Description)
		}
	}
	if defaults != 1 {
		t.Errorf("%d default voices, want 1", defaults)
	}
	if premium < 3 || premium > 5 {
		t.Errorf("%d premium voices, want 3 to 5", premium)
	}
	for _, want := range []string{"en-US", "en-GB", "de-DE", "fr-FR", "es-ES", "it-IT", "pt-BR", "nl-NL", "pl-PL", "hi-IN", "ja-JP"} {
		if !langs[want] {
			t.Errorf("no voice speaks %s", want)
		}
	}
}

// TestLocalSpeechEveryVoice renders every menu voice: each makes an MP3
// of plausible length for a short sentence in its language, and no two
// sound the same (voices of one language say the same sentence, so equal
// audio would mean equal voices).
func TestLocalSpeechEveryVoice(t *testing.T) {
	t.Parallel()
	needEspeak(t)
	voices := menuVoices(t)
	s := &LocalSpeech{Voices: map[string]SpeechVoice{}}
	for _, v := range voices {
		s.Voices[v.ID] = asSpeechVoice(v)
	}
	var mu sync.Mutex
	heard := map[[32]byte]string{}
	t.Run("voices", func(t *testing.T) {
		for _, v := range voices {
			t.Run(v.ID, func(t *testing.T) {
				t.Parallel()
				lang, _, _ := strings.Cut(v.Language, "-")
				text, ok := samples[lang]
				if !ok {
					t.Fatalf("no sample sentence for %s; add one to samples", v.Language)
				}
				r := say(t, s, "speech-multilingual-v2", v.ID, text)
				if r.secs < 1 || r.secs > 6 {
					t.Errorf("%s: %.2f s for %q, want 1 to 6 s", v.ID, r.secs, text)
				}
				if r.rms() < 300 {
					t.Errorf("%s: RMS %.0f: nearly silent", v.ID, r.rms())
				}
				sum := sha256.Sum256(r.raw)
				mu.Lock()
				defer mu.Unlock()
				if other, dup := heard[sum]; dup {
					t.Errorf("voices %s and %s render the same audio", other, v.ID)
				}
				heard[sum] = v.ID
			})
		}
	})
	if len(heard) != len(voices) && !t.Failed() {
		t.Errorf("%d distinct renders for %d voices", len(heard), len(voices))
	}
}

func TestLocalSpeechOutput(t *testing.T) {
	t.Parallel()
	needEspeak(t)
	s := &LocalSpeech{Voices: testVoices}
	dir := t.TempDir()
	var mu sync.Mutex
	var seen []string
	out, err := s.Render(context.Background(), Job{RunID: "2026-11-22T10:00:00.000Z#1a2b3c4d", Kind: KindSpeech, Model: "speech-v3",
		Text: "Good morning. [pause] [whispers] This part is a secret. [loudly] And this is not!", Voice: "aria"},
		dir, func(p string) { mu.Lock(); seen = append(seen, p); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(out.Path) != dir || filepath.Base(out.Path) != "2026-11-22T10-00-00.000Z-1a2b3c4d.mp3" {
		t.Errorf("output %q: want a safe name inside %s", out.Path, dir)
	}
	if out.ContentType != "audio/mpeg" || out.Ext != "mp3" {
		t.Errorf("output type %q/%q", out.ContentType, out.Ext)
	}
	if files := listDir(t, dir); len(files) != 1 || files[0] != out.Path {
		t.Errorf("workdir holds %v, want only the MP3", files)
	}
	p := probe(t, out.Path)
	if st := p.Streams[0]; st.CodecName != "mp3" {
		t.Errorf("codec %s", st.CodecName)
	}
	raw, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "stream=sample_rate,channels", "-of", "csv=p=0", out.Path).Output()
	if err != nil || strings.TrimSpace(string(raw)) != "24000,1" {
		t.Errorf("sample rate and channels %q (%v), want 24000,1", raw, err)
	}
	mu.Lock()
	defer mu.Unlock()
	joined := strings.Join(seen, "|")
	if seen[0] != "speaking" || !strings.Contains(joined, "speaking 3/3") || !strings.Contains(joined, "encoding 100%") || seen[len(seen)-1] != "encoded" {
		t.Errorf("progress %q: want speaking, each segment, encoding to 100%%, encoded", joined)
	}
}

func TestLocalSpeechDeterministic(t *testing.T) {
	t.Parallel()
	needEspeak(t)
	s := &LocalSpeech{Voices: testVoices}
	a := say(t, s, "speech-v3", "aria", "Same text, [softly] same file.")
	b := say(t, s, "speech-v3", "aria", "Same text, [softly] same file.")
	if string(a.mp3) != string(b.mp3) {
		t.Errorf("two renders of one job differ (%d and %d bytes)", len(a.mp3), len(b.mp3))
	}
}

// Directions are performed, never read out.
func TestLocalSpeechDirections(t *testing.T) {
	t.Parallel()
	needEspeak(t)
	s := &LocalSpeech{Voices: testVoices}

	t.Run("pause", func(t *testing.T) {
		t.Parallel()
		render := func(text string) sayResult { return say(t, s, "speech-v3", "aria", text) }
		plain, paused := render("Hello there. How are you?"), render("Hello there. [pause] How are you?")
		long := render("Hello there. [long pause] How are you?")
		if d := paused.secs - plain.secs; d < 0.55 || d > 0.95 {
			t.Errorf("[pause] adds %.2f s (%.2f → %.2f), want about 0.75", d, plain.secs, paused.secs)
		}
		if d := long.secs - paused.secs; d < 0.6 || d > 0.9 {
			t.Errorf("[long pause] is %.2f s longer than [pause], want about 0.75", d)
		}
		// The pause is silence: the added stretch holds no speech.
		if q := quietest(paused.pcm, 0.5); q > 50 {
			t.Errorf("the quietest half second of the paused text has RMS %.0f, want silence", q)
		}
	})

	t.Run("whisper", func(t *testing.T) {
		t.Parallel()
		render := func(text string) sayResult { return say(t, s, "speech-v3", "aria", text) }
		plain, whispered, spoken := render("secret words"), render("[whispers] secret words"), render("whispers secret words")
		word := spoken.secs - plain.secs
		if word < 0.25 {
			t.Fatalf("saying \"whispers\" adds only %.2f s; the test cannot tell", word)
		}
		if d := whispered.secs - plain.secs; d > word/2 {
			t.Errorf("[whispers] adds %.2f s, about as long as saying the word (%.2f s)", d, word)
		}
		if whispered.rms() > 0.75*plain.rms() {
			t.Errorf("whispered RMS %.0f, plain %.0f: want clearly quieter", whispered.rms(), plain.rms())
		}
		// Whisper lasts to the end of its sentence: whispering one of two
		// sentences is louder than whispering both, quieter than neither.
		none := render("This part is quiet. This part is normal.")
		one := render("[whispers] This part is quiet. This part is normal.")
		both := render("[whispers] This part is quiet. [whispers] This part is normal.")
		if !(both.rms() < one.rms() && one.rms() < none.rms()) {
			t.Errorf("RMS whispering both %.0f, the first %.0f, none %.0f: want increasing", both.rms(), one.rms(), none.rms())
		}
	})

	t.Run("volume", func(t *testing.T) {
		t.Parallel()
		render := func(text string) sayResult { return say(t, s, "speech-v3", "aria", text) }
		soft, plain, loud := render("[softly] I am right here."), render("I am right here."), render("[shouts] I am right here.")
		if !(soft.rms() < 0.7*plain.rms() && plain.rms() < 0.8*loud.rms()) {
			t.Errorf("RMS softly %.0f, plain %.0f, shouts %.0f: want clearly increasing", soft.rms(), plain.rms(), loud.rms())
		}
		if d := math.Abs(loud.secs - plain.secs); d > 0.1 {
			t.Errorf("[shouts] changes the length by %.2f s: the word was spoken?", d)
		}
	})

	t.Run("rate", func(t *testing.T) {
		t.Parallel()
		render := func(text string) sayResult { return say(t, s, "speech-v3", "aria", text) }
		const text = "This is a somewhat longer sentence to say at different speeds."
		fast, plain, slow := render("[faster] "+text), render(text), render("[slowly] "+text)
		if !(fast.secs < 0.85*plain.secs && plain.secs < 0.85*slow.secs) {
			t.Errorf("lengths faster %.2f, plain %.2f, slowly %.2f: want clearly increasing", fast.secs, plain.secs, slow.secs)
		}
	})

	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		render := func(text string) sayResult { return say(t, s, "speech-v3", "aria", text) }
		plain, directed := render("Hello there, friend."), render("[laughs] Hello [sighs] there, [clears throat] friend.")
		if string(plain.mp3) != string(directed.mp3) {
			t.Errorf("unknown directions changed the audio (%.2f s vs %.2f s)", directed.secs, plain.secs)
		}
	})
}

// quietest is the lowest RMS over any window of secs seconds (24 kHz).
func quietest(pcm []int16, secs float64) float64 {
	n := int(secs * 24000)
	best := math.Inf(1)
	for i := 0; i+n <= len(pcm); i += n / 10 {
		best = math.Min(best, rmsOf(pcm[i:i+n]))
	}
	return best
}

func TestLocalSpeechMultilingual(t *testing.T) {
	t.Parallel()
	needEspeak(t)
	s := &LocalSpeech{Voices: testVoices}
	const text = "Guten Morgen, wie geht es dir? Mir geht es gut."
	plain := say(t, s, "speech-multilingual-v2", "lena", text)
	// Directions are neither performed nor spoken: the same audio as
	// without them.
	directed := say(t, s, "speech-multilingual-v2", "lena", "[whispers] Guten Morgen, wie geht es dir? [long pause] Mir geht es [laughs] gut.")
	if string(plain.mp3) != string(directed.mp3) {
		t.Errorf("directions changed multilingual audio: %.2f s vs %.2f s", directed.secs, plain.secs)
	}
	if plain.secs < 1.5 || plain.secs > 6 {
		t.Errorf("%.2f s, want 1.5 to 6", plain.secs)
	}
	// Read as German, not as English with lena's pitch and rate.
	english := say(t, s, "speech-multilingual-v2", "lena-en", text)
	if string(english.mp3) == string(plain.mp3) {
		t.Error("the German voice renders German text like the English voice")
	}
	// espeak-ng's German rules say "geht" as [ge:t]; English rules do not.
	ph, err := exec.Command("espeak-ng", "-q", "-x", "-v", "de", "geht").Output()
	if err != nil || !strings.Contains(string(ph), "e:t") {
		t.Errorf("espeak-ng's German reading of \"geht\" is %q (%v)", ph, err)
	}
}

func TestLocalSpeechLeadingDash(t *testing.T) {
	t.Parallel()
	needEspeak(t)
	s := &LocalSpeech{Voices: testVoices}
	dir := t.TempDir()
	planted := filepath.Join(dir, "planted.wav")
	for text, most := range map[string]float64{"--help": 3, "-v de --stdout Hallo": 6, "- minus one": 3,
		// Read aloud, the long temporary path takes a while.
		"-w " + planted + " hello": 30} {
		r := say(t, s, "speech-v3", "aria", text)
		if r.secs < 0.4 || r.secs > most || r.rms() < 300 {
			t.Errorf("%q: %.2f s, RMS %.0f: want it read aloud", text, r.secs, r.rms())
		}
	}
	if _, err := os.Stat(planted); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("text was taken for an option: %s exists (%v)", planted, err)
	}
}

func TestLocalSpeechRefusals(t *testing.T) {
	t.Parallel()
	needEspeak(t)
	filter, err := NewFilter([]string{`\bbomb threat\b`})
	if err != nil {
		t.Fatal(err)
	}
	s := &LocalSpeech{Voices: testVoices, Filters: map[string]*Filter{"speech-v3": filter}}
	for _, text := range []string{"Please read this BOMB THREAT aloud.", "a bomb [pause] threat", "a bomb[whispers]\nthreat"} {
		dir := t.TempDir()
		_, err := s.Render(context.Background(), Job{RunID: "r#1", Kind: KindSpeech, Model: "speech-v3", Text: text, Voice: "aria"}, dir, nil)
		var re *RefusedError
		if !errors.As(err, &re) || re.Message != refusedByFilter {
			t.Errorf("%q: %v, want the filter's refusal", text, err)
		}
		if files := listDir(t, dir); len(files) != 0 {
			t.Errorf("a refusal left %v", files)
		}
	}
	// The other model has no filter.
	say(t, s, "speech-multilingual-v2", "aria", "a bomb threat")
}

func TestLocalSpeechFailures(t *testing.T) {
	t.Parallel()
	needEspeak(t)
	script := filepath.Join(t.TempDir(), "fake-espeak")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 1\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	bad := map[string]SpeechVoice{
		"nosuch": {Espeak: "xx-nosuch", Pitch: 50, Rate: 170},
		"option": {Espeak: "-a", Pitch: 50, Rate: 170},
		"path":   {Espeak: "en-us", Variant: "../../etc/passwd", Pitch: 50, Rate: 170},
	}
	for id, v := range testVoices {
		bad[id] = v
	}
	for _, tc := range []struct {
		name      string
		s         *LocalSpeech
		job       Job
		step      string
		retryable bool
		msg       string
	}{
		{"unknown voice", &LocalSpeech{Voices: testVoices}, Job{Model: "speech-v3", Text: "hi", Voice: "nobody"}, "validate", false, `voice "nobody" is not offered`},
		{"no voice", &LocalSpeech{Voices: testVoices}, Job{Model: "speech-v3", Text: "hi"}, "validate", false, "not offered"},
		{"video job", &LocalSpeech{Voices: testVoices}, Job{Kind: KindVideo, Model: "speech-v3", Text: "hi", Voice: "aria"}, "validate", false, "video job"},
		{"nothing to say", &LocalSpeech{Voices: testVoices}, Job{Model: "speech-v3", Text: " [pause] [whispers] ... ", Voice: "aria"}, "validate", false, "nothing to say"},
		{"only directions, multilingual", &LocalSpeech{Voices: testVoices}, Job{Model: "speech-multilingual-v2", Text: "[laughs]", Voice: "aria"}, "validate", false, "nothing to say"},
		{"voice name is an option", &LocalSpeech{Voices: bad}, Job{Model: "speech-v3", Text: "hi", Voice: "option"}, "validate", false, "not valid names"},
		{"variant is a path", &LocalSpeech{Voices: bad}, Job{Model: "speech-v3", Text: "hi", Voice: "path"}, "validate", false, "not valid names"},
		{"espeak voice missing", &LocalSpeech{Voices: bad}, Job{Model: "speech-v3", Text: "hi", Voice: "nosuch"}, "render", false, "does not exist"},
		{"espeak not installed", &LocalSpeech{Voices: testVoices, Espeak: filepath.Join(t.TempDir(), "espeak-ng")}, Job{Model: "speech-v3", Text: "hi", Voice: "aria"}, "render", false, "not installed"},
		{"espeak fails", &LocalSpeech{Voices: testVoices, Espeak: script}, Job{Model: "speech-v3", Text: "hi", Voice: "aria"}, "render", false, "espeak-ng failed"},
		{"ffmpeg not installed", &LocalSpeech{Voices: testVoices, FFmpeg: filepath.Join(t.TempDir(), "ffmpeg")}, Job{Model: "speech-v3", Text: "hi", Voice: "aria"}, "encode", false, "not installed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.job.RunID = "r#1"
			_, err := tc.s.Render(context.Background(), tc.job, dir, nil)
			var fe *FailedError
			if !errors.As(err, &fe) || fe.Step != tc.step || fe.Retryable != tc.retryable || !strings.Contains(fe.Message, tc.msg) {
				t.Fatalf("got %#v (%v), want a FailedError at %s, retryable %t, saying %q", err, err, tc.step, tc.retryable, tc.msg)
			}
			if files := listDir(t, dir); len(files) != 0 {
				t.Errorf("a failure left %v", files)
			}
		})
	}
}

func TestLocalSpeechCancel(t *testing.T) {
	t.Parallel()
	needEspeak(t)
	s := &LocalSpeech{Voices: testVoices}
	job := Job{RunID: "r#1", Kind: KindSpeech, Model: "speech-v3", Voice: "aria", Text: "[whispers] One. [loudly] Two. [softly] Three. [faster] Four."}
	// Cancelled between segments, and as the encoder starts.
	for _, at := range []string{"speaking 1/4", "encoding"} {
		t.Run(at, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			dir := t.TempDir()
			_, err := s.Render(ctx, job, dir, func(p string) {
				if p == at {
					cancel()
				}
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
			if files := listDir(t, dir); len(files) != 0 {
				t.Errorf("a cancelled render left %v", files)
			}
		})
	}
	// A hung espeak-ng is killed when the context ends.
	script := filepath.Join(t.TempDir(), "slow-espeak")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 30\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	slow := &LocalSpeech{Voices: testVoices, Espeak: script}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := slow.Render(ctx, job, t.TempDir(), nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Errorf("got %v after %v, want context.DeadlineExceeded promptly", err, time.Since(start))
	}
}

func TestParseDirections(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		text string
		want []segment
	}{
		{"", nil},
		{"Hello there.", []segment{{Text: "Hello there."}}},
		{"Hello there. [pause] How are you?", []segment{{Text: "Hello there."}, {Pause: 750 * ms, Text: "How are you?"}}},
		{"[short pause]Hi[Long Pause]", []segment{{Pause: 350 * ms, Text: "Hi"}, {Pause: 1500 * ms}}},
		{"[quick pause] x", []segment{{Pause: 350 * ms, Text: "x"}}},
		{"[pauses] [beat] x", []segment{{Pause: 1100 * ms, Text: "x"}}},
		{strings.Repeat("[long pause]", 5) + "x", []segment{{Pause: 5 * time.Second, Text: "x"}}},
		{"[pause]", []segment{{Pause: 750 * ms}}},
		{"[whispers] secret words", []segment{{Text: "secret words", Delivery: deliverWhisper}}},
		{"[WHISPERING] One. Two.", []segment{{Text: "One.", Delivery: deliverWhisper}, {Text: "Two."}}},
		{"[whispers] One! Two? [whispers] Three… Four", []segment{{Text: "One!", Delivery: deliverWhisper}, {Text: "Two?"}, {Text: "Three…", Delivery: deliverWhisper}, {Text: "Four"}}},
		{`[whispers] "Stop!" she said.`, []segment{{Text: `"Stop!"`, Delivery: deliverWhisper}, {Text: "she said."}}},
		{"[whispers] a [loudly] b", []segment{{Text: "a", Delivery: deliverWhisper}, {Text: "b", Delivery: deliverLoud}}},
		{"[whispers slowly] a. b", []segment{{Text: "a.", Delivery: deliverWhisper, Pace: paceSlow}, {Text: "b"}}},
		{"[whispers] [faster] a [softly] b", []segment{{Text: "a", Delivery: deliverWhisper, Pace: paceFast}, {Text: "b", Delivery: deliverSoft, Pace: paceFast}}},
		{"[faster] a [normal] b", []segment{{Text: "a", Pace: paceFast}, {Text: "b"}}},
		{"[quietly] a [louder] b [quickly] c [slower] d", []segment{{Text: "a", Delivery: deliverSoft}, {Text: "b", Delivery: deliverLoud}, {Text: "c", Delivery: deliverLoud, Pace: paceFast}, {Text: "d", Delivery: deliverLoud, Pace: paceSlow}}},
		{"[whispers] line one\nline two", []segment{{Text: "line one", Delivery: deliverWhisper}, {Text: "line two"}}},
		{"[whispers] 静かに。普通です。", []segment{{Text: "静かに。", Delivery: deliverWhisper}, {Text: "普通です。"}}},
		{"[softly] Mr. Smith", []segment{{Text: "Mr.", Delivery: deliverSoft}, {Text: "Smith"}}},
		{"[laughs] Hello [sighs] there.", []segment{{Text: "Hello there."}}},
		{"Hello [whispers].", []segment{{Text: "Hello."}}},
		{"Hello [pause]. World", []segment{{Text: "Hello."}, {Pause: 750 * ms, Text: "World"}}},
		{"a [b [c] d] e", []segment{{Text: "a b d e"}}},
		{`Hello [pause] "World" [whispers] ¿Qué? x`, []segment{{Text: "Hello"}, {Pause: 750 * ms, Text: `"World"`}, {Text: "¿Qué?", Delivery: deliverWhisper}, {Text: "x"}}},
		{"Wait [laughs] , what", []segment{{Text: "Wait , what"}}},
		{"[unclosed text", []segment{{Text: "unclosed text"}}},
		{"closed] text]", []segment{{Text: "closed text"}}},
		{"[[pause]] x", []segment{{Pause: 750 * ms, Text: "x"}}},
		{"tab\tand\x00control", []segment{{Text: "tab and control"}}},
		{"[loudly] 100% & more", []segment{{Text: "100% & more", Delivery: deliverLoud}}},
	} {
		if got := parseDirections(tc.text); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseDirections(%q)\n got %+v\nwant %+v", tc.text, got, tc.want)
		}
	}
}

func TestStripDirections(t *testing.T) {
	for text, want := range map[string]string{
		"[whispers] Guten [pause] Morgen":  "Guten Morgen",
		"Mir geht es [laughs]gut.":         "Mir geht es gut.",
		"Ein Geheimnis [laughs] .":         "Ein Geheimnis.",
		"Er sagte [pause] \"Hallo\"":       "Er sagte \"Hallo\"",
		"Bonjour ! [rires]":                "Bonjour !",
		"a[b]c":                            "a c",
		"[unclosed [x] y] z":               "unclosed y z",
		"  spaced\n\nout  ":                "spaced out",
		"[only directions] [pause]":        "",
		"-v de --stdout":                   "-v de --stdout",
		"no directions, just text. Right?": "no directions, just text. Right?",
	} {
		if got := stripDirections(text); got != want {
			t.Errorf("stripDirections(%q) = %q, want %q", text, got, want)
		}
	}
}

// FuzzParseDirections: no input panics, no bracket is ever spoken, every
// word of the text (as a model that ignores directions reads it) is
// spoken exactly once and in order, and the segments are well formed.
func FuzzParseDirections(f *testing.F) {
	for _, s := range []string{
		"Hello there. [pause] How are you?", "[whispers] secret. words", "[[pause]]", "a]b[c", "[", "]", "[]",
		"[long pause][short pause][pause]", "[loudly] 静かに。x", "\"Stop!\" [whispers] \"go.\" now", "[faster]\n[slower]\n",
		"\xff\xfe[pause]\x00", "[whispers slowly] a [normal] b. c", "… [beat] ! ? .", "-v de [whispers] --stdout",
	} {
		f.Add(s)
	}
	letters := func(s string) string {
		return strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsNumber(r) {
				return r
			}
			return -1
		}, s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		segs := parseDirections(text)
		var spoken strings.Builder
		for i, s := range segs {
			if strings.ContainsAny(s.Text, "[]") {
				t.Fatalf("segment %d speaks a bracket: %q", i, s.Text)
			}
			if s.Text == "" && (s.Pause <= 0 || i != len(segs)-1) {
				t.Fatalf("segment %d of %d says nothing: %+v", i, len(segs), s)
			}
			if s.Text != "" && (!speakable(s.Text) || s.Text != strings.TrimSpace(s.Text)) {
				t.Fatalf("segment %d text %q", i, s.Text)
			}
			if s.Pause < 0 || s.Pause > maxPause || s.Delivery > deliverLoud || s.Pace > paceSlow {
				t.Fatalf("segment %d: %+v", i, s)
			}
			spoken.WriteString(s.Text)
		}
		stripped := stripDirections(text)
		if strings.ContainsAny(stripped, "[]") {
			t.Fatalf("stripDirections(%q) = %q", text, stripped)
		}
		if a, b := letters(spoken.String()), letters(stripped); a != b {
			t.Fatalf("parseDirections speaks %q, stripDirections %q", a, b)
		}
	})
}
