package media

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// SpeechVoice is how the local renderer speaks one menu voice.
type SpeechVoice struct {
	ID       string // menu id, e.g. "aria"
	Language string // BCP-47, e.g. "en-US", "de-DE"
	Espeak   string // espeak-ng voice name, e.g. "en-us", "de"
	Variant  string // espeak-ng variant, e.g. "m3", "f2" ("" none)
	Pitch    int    // espeak -p 0..99
	Rate     int    // espeak -s words per minute
}

// LocalSpeech renders real MP3 speech with espeak-ng and ffmpeg: the
// embedded default, so speech sells without a provider account.
//
// The text is always read in the voice's language (the voice's espeak-ng
// voice). Model "speech-v3" performs inline square-bracket directions (see
// parseDirections); every other model, "speech-multilingual-v2" among
// them, leaves directions out: they are neither performed nor spoken.
type LocalSpeech struct {
	Espeak  string                 // path of espeak-ng; "" → "espeak-ng" from PATH
	FFmpeg  string                 // path of ffmpeg; "" → "ffmpeg" from PATH
	Voices  map[string]SpeechVoice // by menu id
	Filters map[string]*Filter     // by model, optional
}

// directionModel is the one model that performs directions.
const directionModel = "speech-v3"

const (
	// maxSpeechPCM caps the assembled audio (22.05 kHz 16-bit mono: about
	// 30 minutes), far above what the longest text sold takes to say, so
	// a pile of pause directions cannot fill the worker's memory.
	maxSpeechPCM = 80 << 20
	// The MP3 is mono 24 kHz at 64 kbit/s: espeak-ng synthesizes at
	// 22.05 kHz, so a higher rate would only add bytes.
	speechRate    = "24000"
	speechBitrate = "64k"
)

// Amplitudes (espeak -a, 0..200, linear; 100 is the default).
const (
	ampNormal  = 100
	ampSoft    = 45
	ampWhisper = 50 // on top of the whisper variant, which is not much quieter itself
	ampLoud    = 165
)

// Gaps between separately rendered segments. Each segment is rendered
// with -z (no final sentence pause), so the renderer adds the pause the
// punctuation asks for, close to what espeak-ng makes inside one call.
const (
	gapSentence = 300 * time.Millisecond
	gapClause   = 150 * time.Millisecond
	gapWord     = 40 * time.Millisecond
	gapEnd      = 250 * time.Millisecond // after the last word
)

// espeakName is a voice or variant name: passed as one argument, but never
// something espeak-ng could read as a path or option.
var espeakName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// Render says job.Text as workdir/<run id made safe>.mp3. The content
// filter runs first (on the text as typed and as it will be spoken), so a
// refused text costs nothing and leaves no file.
func (s *LocalSpeech) Render(ctx context.Context, job Job, workdir string, progress func(string)) (Output, error) {
	segs, err := prepareSpeech(s.Filters, job)
	if err != nil {
		return Output{}, err
	}
	voice, ok := s.Voices[job.Voice]
	if !ok {
		return Output{}, &FailedError{Step: "validate", Message: fmt.Sprintf("voice %q is not offered", job.Voice)}
	}
	if !espeakName.MatchString(voice.Espeak) || (voice.Variant != "" && !espeakName.MatchString(voice.Variant)) {
		return Output{}, &FailedError{Step: "validate", Message: fmt.Sprintf("voice %q names espeak-ng voice %q variant %q, which are not valid names", job.Voice, voice.Espeak, voice.Variant)}
	}
	if st, err := os.Stat(workdir); err != nil || !st.IsDir() {
		return Output{}, &FailedError{Step: "render", Message: "the work directory is missing", Retryable: true}
	}
	workdir, err = filepath.Abs(workdir)
	if err != nil {
		return Output{}, &FailedError{Step: "render", Message: err.Error()}
	}

	report(progress, "speaking")
	total := 0
	for _, seg := range segs {
		if seg.Text != "" {
			total++
		}
	}
	var pcm pcmBuilder
	last, done := "", 0 // the text spoken last, and how many were
	for _, seg := range segs {
		if err := ctx.Err(); err != nil {
			return Output{}, err
		}
		pcm.silence(seg.Pause)
		if seg.Text == "" {
			continue
		}
		if last != "" {
			pcm.silence(gapAfter(last))
		}
		last = seg.Text
		audio, rate, err := s.speak(ctx, voice, seg)
		if err != nil {
			return Output{}, err
		}
		if err := pcm.speech(audio, rate); err != nil {
			return Output{}, err
		}
		if done++; total > 1 {
			report(progress, fmt.Sprintf("speaking %d/%d", done, total))
		}
	}
	if pcm.silence(gapEnd); pcm.err != nil {
		return Output{}, pcm.err
	}

	stem := safeName(job.RunID, "speech")
	wav, part, out := stem+".part.wav", stem+".part.mp3", stem+".mp3"
	if err := os.WriteFile(filepath.Join(workdir, wav), pcm.wav(), 0o600); err != nil {
		return Output{}, &FailedError{Step: "render", Message: "writing the audio: " + err.Error(), Retryable: true}
	}
	defer os.Remove(filepath.Join(workdir, wav))
	report(progress, "encoding")
	// Names are relative to workdir (ffmpeg runs there); "file:" keeps a
	// ':' in them from being read as a protocol.
	run := ffmpegRun{bin: s.FFmpeg, dir: workdir, step: "encode", duration: pcm.duration(), progress: progress, args: []string{
		"-f", "wav", "-i", "file:" + wav, "-map_metadata", "-1",
		"-ac", "1", "-ar", speechRate, "-c:a", "libmp3lame", "-b:a", speechBitrate,
		"-fflags", "+bitexact", "-f", "mp3", "file:" + part,
	}}
	if err := run.run(ctx); err != nil {
		_ = os.Remove(filepath.Join(workdir, part))
		return Output{}, err
	}
	if err := os.Rename(filepath.Join(workdir, part), filepath.Join(workdir, out)); err != nil {
		_ = os.Remove(filepath.Join(workdir, part))
		return Output{}, &FailedError{Step: "encode", Message: err.Error()}
	}
	report(progress, "encoded")
	return Output{Path: filepath.Join(workdir, out), ContentType: "audio/mpeg", Ext: "mp3"}, nil
}

// prepareSpeech checks a speech job and splits its text into what the
// model will say: the kind, the content filter (on the text as typed and
// on the words that will be spoken, so a direction wedged into a refused
// phrase does not slip it past), and that something is left to say.
func prepareSpeech(filters map[string]*Filter, job Job) ([]segment, error) {
	if job.Kind != "" && job.Kind != KindSpeech {
		return nil, &FailedError{Step: "validate", Message: fmt.Sprintf("a speech renderer cannot render a %s job", job.Kind)}
	}
	if err := checkFilter(filters, job.Model, job.Text); err != nil {
		return nil, err
	}
	var segs []segment
	if job.Model == directionModel {
		segs = parseDirections(job.Text)
	} else if t := stripDirections(job.Text); t != "" {
		segs = []segment{{Text: t}}
	}
	var words []string
	for _, s := range segs {
		if s.Text != "" {
			words = append(words, s.Text)
		}
	}
	if len(words) == 0 {
		return nil, &FailedError{Step: "validate", Message: "the text has nothing to say"}
	}
	if err := checkFilter(filters, job.Model, strings.Join(strings.Fields(strings.Join(words, " ")), " ")); err != nil {
		return nil, err
	}
	return segs, nil
}

// speak renders one segment with espeak-ng: 16-bit mono PCM and its
// sample rate. The text goes in on stdin, never as an argument, so text
// starting with '-' is read, not taken for an option.
func (s *LocalSpeech) speak(ctx context.Context, v SpeechVoice, seg segment) ([]byte, int, error) {
	bin := s.Espeak
	if bin == "" {
		bin = "espeak-ng"
	}
	variant, amp := v.Variant, ampNormal
	switch seg.Delivery {
	case deliverWhisper:
		variant, amp = whisperVariant(v.Variant), ampWhisper
	case deliverSoft:
		amp = ampSoft
	case deliverLoud:
		amp = ampLoud
	}
	name := v.Espeak
	if variant != "" {
		name += "+" + variant
	}
	rate := v.Rate
	if rate <= 0 {
		rate = 175 // espeak-ng's default
	}
	switch seg.Pace {
	case paceFast:
		rate = rate * 135 / 100
	case paceSlow:
		rate = rate * 70 / 100
	}
	rate = min(max(rate, 80), 450)
	pitch := min(max(v.Pitch, 0), 99)
	// -b 1: the text is UTF-8. -z: no final sentence pause (the renderer
	// adds gaps itself).
	cmd := exec.CommandContext(ctx, bin, "-b", "1", "-z", "-v", name, "-p", strconv.Itoa(pitch), "-s", strconv.Itoa(rate), "-a", strconv.Itoa(amp), "--stdin", "--stdout")
	cmd.Stdin = strings.NewReader(seg.Text)
	var stdout bytes.Buffer
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, 0, ctx.Err()
	}
	if err != nil {
		var execErr *exec.Error
		if errors.As(err, &execErr) || errors.Is(err, os.ErrNotExist) {
			return nil, 0, &FailedError{Step: "render", Message: fmt.Sprintf("espeak-ng (%s) is not installed on the render worker", bin)}
		}
		msg := stderr.lastLines(2)
		if msg == "" {
			msg = err.Error()
		}
		return nil, 0, &FailedError{Step: "render", Message: fmt.Sprintf("espeak-ng failed for voice %s: %s", name, msg)}
	}
	pcm, rateHz, err := wavPCM(stdout.Bytes())
	if err != nil {
		return nil, 0, &FailedError{Step: "render", Message: fmt.Sprintf("espeak-ng (voice %s): %v", name, err)}
	}
	return pcm, rateHz, nil
}

// whisperVariant keeps a female voice female when it whispers.
func whisperVariant(variant string) string {
	switch strings.ToLower(variant) {
	case "f1", "f2", "f3", "f4", "f5", "whisperf", "alicia", "andrea", "annie", "aunty", "belinda", "linda", "steph", "steph2", "steph3", "anika", "grandma":
		return "whisperf"
	}
	return "whisper"
}

// gapAfter is the silence after a segment ending with text: a sentence
// pause after . ! ? …, a clause pause after , ; : and dashes, else a short
// breath between words.
func gapAfter(text string) time.Duration {
	t := strings.TrimRightFunc(text, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(closers, r) })
	r, _ := utf8.DecodeLastRuneInString(t)
	switch {
	case strings.ContainsRune(".!?…。！？", r):
		return gapSentence
	case strings.ContainsRune(",;:—–-、，；：", r):
		return gapClause
	}
	return gapWord
}

// wavPCM returns the samples and rate of a 16-bit mono PCM WAV file.
// espeak-ng writing to stdout cannot seek back, so its data chunk's size
// is a placeholder; the data is taken to the end of the file then.
func wavPCM(b []byte) ([]byte, int, error) {
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, 0, errors.New("the output is not a WAV file")
	}
	rate := 0
	for p := 12; p+8 <= len(b); {
		id, size := string(b[p:p+4]), int(binary.LittleEndian.Uint32(b[p+4:p+8]))
		body := b[p+8:]
		switch id {
		case "fmt ":
			if size < 16 || len(body) < 16 {
				return nil, 0, errors.New("the WAV format chunk is short")
			}
			format, channels := binary.LittleEndian.Uint16(body[0:2]), binary.LittleEndian.Uint16(body[2:4])
			rate = int(binary.LittleEndian.Uint32(body[4:8]))
			bits := binary.LittleEndian.Uint16(body[14:16])
			if format != 1 || channels != 1 || bits != 16 || rate < 8000 || rate > 96000 {
				return nil, 0, fmt.Errorf("the WAV is format %d, %d channels, %d bits, %d Hz; want 16-bit mono PCM", format, channels, bits, rate)
			}
		case "data":
			if rate == 0 {
				return nil, 0, errors.New("the WAV has no format chunk before its data")
			}
			data := body[:min(size, len(body))]
			return data[:len(data)&^1], rate, nil
		}
		if size < 0 || size > len(body) {
			break
		}
		p += 8 + size + size&1
	}
	return nil, 0, errors.New("the WAV has no data")
}

// pcmBuilder assembles 16-bit mono PCM: speech, and silence whose length
// becomes samples once the first speech tells the rate.
type pcmBuilder struct {
	rate    int
	pcm     []byte
	pending time.Duration
	err     error
}

func (b *pcmBuilder) silence(d time.Duration) {
	if d <= 0 {
		return
	}
	if b.rate == 0 {
		b.pending += d
		return
	}
	n := int(d.Seconds()*float64(b.rate)) * 2
	if len(b.pcm)+n > maxSpeechPCM {
		b.err = b.tooLong()
		return
	}
	b.pcm = append(b.pcm, make([]byte, n)...)
}

func (b *pcmBuilder) speech(pcm []byte, rate int) error {
	if b.err != nil {
		return b.err
	}
	if b.rate == 0 {
		b.rate = rate
		b.silence(b.pending)
	} else if rate != b.rate {
		return &FailedError{Step: "render", Message: fmt.Sprintf("espeak-ng changed its sample rate from %d to %d Hz mid-text", b.rate, rate)}
	}
	if len(b.pcm)+len(pcm) > maxSpeechPCM {
		return b.tooLong()
	}
	b.pcm = append(b.pcm, pcm...)
	return b.err
}

func (b *pcmBuilder) tooLong() error {
	return &FailedError{Step: "render", Message: fmt.Sprintf("the speech would last over %d minutes", maxSpeechPCM/2/22050/60)}
}

func (b *pcmBuilder) duration() time.Duration {
	if b.rate == 0 {
		return 0
	}
	return time.Duration(len(b.pcm)/2) * time.Second / time.Duration(b.rate)
}

// wav is the PCM as a WAV file.
func (b *pcmBuilder) wav() []byte {
	h := make([]byte, 44, 44+len(b.pcm))
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], uint32(36+len(b.pcm)))
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // PCM
	binary.LittleEndian.PutUint16(h[22:], 1) // mono
	binary.LittleEndian.PutUint32(h[24:], uint32(b.rate))
	binary.LittleEndian.PutUint32(h[28:], uint32(b.rate*2))
	binary.LittleEndian.PutUint16(h[32:], 2)
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], uint32(len(b.pcm)))
	return append(h, b.pcm...)
}

// delivery is how a segment is voiced.
type delivery uint8

const (
	deliverNormal  delivery = iota
	deliverWhisper          // the whisper variant, quieter
	deliverSoft             // quieter
	deliverLoud             // louder
)

// pace is how fast a segment is spoken, relative to the voice's rate.
type pace uint8

const (
	paceNormal pace = iota
	paceFast        // 135%
	paceSlow        // 70%
)

// segment is a stretch of text spoken one way, after a silence.
type segment struct {
	Pause    time.Duration // silence before Text
	Text     string        // "" or text with something to say; never holds '[' or ']'
	Delivery delivery
	Pace     pace
}

// Pause lengths, and the cap on one run of silence (consecutive pause
// directions add up to at most maxPause).
const (
	pauseShort  = 350 * time.Millisecond
	pauseMedium = 750 * time.Millisecond
	pauseLong   = 1500 * time.Millisecond
	maxPause    = 5 * time.Second
)

// endPunct ends a sentence or clause.
const endPunct = ".,!?;:…。、，！？"

// closers may follow a sentence's final punctuation ("Stop!" she said).
const closers = `"'”’»)]`

// Direction words, matched against the lowercase words of a direction.
var (
	pauseWords = words("pause pauses paused silence beat")
	longWords  = words("long longer extended dramatic")
	shortWords = words("short shorter brief small slight quick beat")
	styleWords = map[string]func(*segment){
		"normal": resetStyle, "normally": resetStyle, "neutral": resetStyle,
	}
)

func init() {
	set := func(list string, f func(*segment)) {
		for w := range words(list) {
			styleWords[w] = f
		}
	}
	set("whisper whispers whispering whispered", func(s *segment) { s.Delivery = deliverWhisper })
	set("softly soft softer quietly quiet quieter gently hushed", func(s *segment) { s.Delivery = deliverSoft })
	set("loudly loud louder shouts shout shouting shouted yells yell yelling", func(s *segment) { s.Delivery = deliverLoud })
	set("faster fast quickly quick rapidly hurriedly", func(s *segment) { s.Pace = paceFast })
	set("slower slow slowly", func(s *segment) { s.Pace = paceSlow })
}

func resetStyle(s *segment) { s.Delivery, s.Pace = deliverNormal, paceNormal }

func words(list string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(list) {
		m[w] = true
	}
	return m
}

// parseDirections splits speech-v3 text into segments at its inline
// directions. The grammar:
//
//   - A direction is '[' … ']' with no bracket inside. It is never
//     spoken. Its words (letters, case-insensitive) decide what it does;
//     a direction with no known word is dropped silently ("[laughs]").
//   - Pause: a direction naming pause, pauses, paused, silence or beat is
//     silence and nothing else: 0.75 s, 0.35 s for a beat or with short,
//     brief, small, slight or quick ("[short pause]"), 1.5 s with long, longer,
//     extended or dramatic ("[long pause]"). Pauses in a row add up, to
//     at most 5 s.
//   - Delivery: whisper(s/ing/ed) → the whisper variant, quieter;
//     softly, quietly, gently, hushed → quieter; loudly, louder, shouts,
//     yells → louder. Pace: faster, quickly, rapidly → 135% of the
//     voice's rate; slower, slowly → 70%. normal(ly) or neutral resets
//     both. Delivery and pace are independent ("[whispers slowly]" is
//     both); a later direction replaces the same one ("[whispers] a
//     [loudly] b": b is loud, not whispered).
//   - Scope: a delivery or pace lasts until the end of its sentence — a
//     '.', '!', '?' or '…' followed (after closing quotes or brackets) by
//     white space or the end, a CJK '。', '！' or '？', or a line break —
//     then the voice speaks as itself again. An abbreviation such as
//     "Mr." ends the sentence too.
//   - A stray '[' or ']' (no partner) is dropped, so no bracket is ever
//     read out.
//
// Segments with the same style and no pause between them are merged, so
// unknown directions do not cut a sentence up. Punctuation left with
// nothing to say ("[whispers]." ) joins the segment before it.
func parseDirections(text string) []segment {
	text = cleanText(text)
	var segs []segment
	cur := segment{}
	var buf strings.Builder
	flush := func() {
		t := buf.String()
		buf.Reset()
		if !speakable(t) {
			// Nothing to say: its punctuation still ends the words before
			// it (and so sets the gap after them).
			if n := len(segs); n > 0 && strings.TrimSpace(t) != "" {
				segs[n-1].Text = endWith(segs[n-1].Text, t)
			}
			return
		}
		n := len(segs)
		if n > 0 && cur.Pause == 0 && segs[n-1].Delivery == cur.Delivery && segs[n-1].Pace == cur.Pace {
			segs[n-1].Text += t
		} else {
			if n > 0 {
				// Punctuation before the first word ends the words
				// before it ("Hello [pause]. World").
				i := strings.IndexFunc(t, func(r rune) bool { return !unicode.IsSpace(r) && !strings.ContainsRune(endPunct, r) })
				segs[n-1].Text = endWith(segs[n-1].Text, t[:i])
				t = t[i:]
			}
			cur.Text = t
			segs = append(segs, cur)
		}
		cur.Pause, cur.Text = 0, ""
	}
	scanBrackets(text, func(run string) {
		for i, r := range run {
			styled := cur.Delivery != deliverNormal || cur.Pace != paceNormal
			if styled && (r == '\n' || unicode.IsSpace(r) && endsSentence(buf.String())) {
				flush()
				resetStyle(&cur)
			}
			buf.WriteRune(r)
			if styled && strings.ContainsRune("。！？", r) && !strings.ContainsRune("。！？", firstRune(run[i+utf8.RuneLen(r):])) {
				flush()
				resetStyle(&cur)
			}
		}
	}, func(dir string) {
		flush()
		ws := strings.FieldsFunc(strings.ToLower(dir), func(r rune) bool { return !unicode.IsLetter(r) })
		for _, w := range ws {
			if pauseWords[w] {
				cur.Pause = min(cur.Pause+pauseLength(ws), maxPause)
				return
			}
		}
		for _, w := range ws {
			if f := styleWords[w]; f != nil {
				f(&cur)
			}
		}
	})
	flush()
	if cur.Pause > 0 {
		segs = append(segs, segment{Pause: cur.Pause})
	}
	for i := range segs {
		segs[i].Text = strings.Join(strings.Fields(segs[i].Text), " ")
	}
	return segs
}

// endWith adds punctuation to the end of text, without the white space
// between them ("Hello " + " ." is "Hello. ").
func endWith(text, punct string) string {
	if strings.TrimSpace(punct) == "" {
		return text + punct
	}
	return strings.TrimRightFunc(text, unicode.IsSpace) + strings.TrimSpace(punct) + " "
}

func pauseLength(ws []string) time.Duration {
	for _, w := range ws {
		switch {
		case longWords[w]:
			return pauseLong
		case shortWords[w]:
			return pauseShort
		}
	}
	return pauseMedium
}

// stripDirections is the text with every direction and stray bracket left
// out and white space collapsed: what a model that does not perform
// directions says.
func stripDirections(text string) string {
	// A direction leaves a NUL (cleanText has removed any in the text):
	// before closing punctuation it goes with the white space around it
	// ("gut [laughs]." is "gut."), elsewhere it is a space ("a[b]c" is
	// "a c").
	var b strings.Builder
	scanBrackets(cleanText(text), func(run string) { b.WriteString(run) }, func(string) { b.WriteByte(0) })
	s := directionBeforePunct.ReplaceAllString(b.String(), "$1")
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\x00", " ")), " ")
}

var directionBeforePunct = regexp.MustCompile(`\s*\x00[\s\x00]*([` + endPunct + `)»”’])`)

// scanBrackets walks text, calling onText with each run of text between
// directions and onDirection with each direction's inside. A '[' followed
// by another '[' before any ']' and a ']' without a '[' are stray and
// dropped.
func scanBrackets(text string, onText, onDirection func(string)) {
	for len(text) > 0 {
		i := strings.IndexAny(text, "[]")
		if i < 0 {
			onText(text)
			return
		}
		if i > 0 {
			onText(text[:i])
		}
		if text[i] == ']' {
			text = text[i+1:]
			continue
		}
		j := strings.IndexAny(text[i+1:], "[]")
		if j < 0 || text[i+1+j] == '[' {
			text = text[i+1:]
			continue
		}
		onDirection(text[i+1 : i+1+j])
		text = text[i+1+j+1:]
	}
}

// cleanText drops invalid UTF-8 and turns control characters other than
// line breaks into spaces.
func cleanText(text string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n':
			return r
		case r == '\r', r == '\t', unicode.IsControl(r):
			return ' '
		}
		return r
	}, strings.ToValidUTF8(text, ""))
}

// endsSentence reports whether text ends with a sentence's final
// punctuation, closing quotes and brackets aside.
func endsSentence(text string) bool {
	t := strings.TrimRightFunc(text, func(r rune) bool { return strings.ContainsRune(closers, r) })
	r, _ := utf8.DecodeLastRuneInString(t)
	return r == '.' || r == '!' || r == '?' || r == '…'
}

// speakable reports whether text has anything but white space and
// punctuation (symbols such as '%' or '&' are read out, so they count).
func speakable(text string) bool {
	return strings.IndexFunc(text, func(r rune) bool { return !unicode.IsSpace(r) && !unicode.IsPunct(r) }) >= 0
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}
