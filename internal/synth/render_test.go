package synth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"conduit/internal/audiotest"
)

// mono averages interleaved stereo.
func mono(s []float32) []float32 {
	out := make([]float32, len(s)/2)
	for i := range out {
		out[i] = (s[2*i] + s[2*i+1]) / 2
	}
	return out
}

// drumsOnly silences every part but the drums.
func drumsOnly(a Arrangement) Arrangement {
	a.Instruments = append([]Instrument(nil), a.Instruments...)
	for i := range a.Instruments {
		if a.Instruments[i].Role != RoleDrums {
			a.Instruments[i].Gain = 0
		}
	}
	return a
}

func TestKickOnsetsAtBeatPeriod(t *testing.T) {
	t.Parallel()
	const sr = 22050
	for _, tc := range []struct {
		desc string
		bpm  int
	}{
		{"house with piano and drums", 124},
		{"driving house with piano and drums", 128},
		{"techno at 132 bpm", 132},
		{"upbeat synthwave with arpeggiated synth bass and drums at 118 bpm", 118},
		{"four on the floor dance beat with strings at 92 bpm", 92},
		{"edm with bells, 150 bpm", 150},
	} {
		a := Plan(tc.desc, 20, 11)
		if a.BPM != tc.bpm || a.DrumStyle != FourOnTheFloor || !a.Has(RoleDrums) {
			t.Fatalf("%q: planned %v", tc.desc, a)
		}
		beat := 60 / float64(tc.bpm)
		// The drums alone: every kick the score has is heard, on time, and
		// the onsets repeat at the beat period.
		d := mono(Render(drumsOnly(a), sr))
		got := audiotest.Onsets(d, sr)
		var kicks []float64
		for _, n := range a.Score() {
			if n.Pitch == Kick && a.Instruments[n.Part].Role == RoleDrums {
				kicks = append(kicks, n.Start)
			}
		}
		if len(kicks) < 16 {
			t.Fatalf("%q: %d kicks", tc.desc, len(kicks))
		}
		missed := 0
		for _, k := range kicks {
			found := false
			for _, o := range got {
				if math.Abs(o-k) < 0.015 {
					found = true
					break
				}
			}
			if !found && k < float64(a.Seconds)-a.FadeOut {
				missed++
			}
		}
		if missed > 0 {
			t.Errorf("%q: %d of %d kicks have no onset within 15 ms (onsets %v)", tc.desc, missed, len(kicks), got)
		}
		if p := audiotest.BeatPeriod(d, sr); math.Abs(p-beat)/beat > 0.02 {
			t.Errorf("%q drums: beat period %.4f s, want %.4f (%d bpm)", tc.desc, p, beat, tc.bpm)
		}
		// The full mix: the kick still carries the low band's pulse.
		if p := audiotest.BeatPeriod(mono(Render(a, sr)), sr); math.Abs(p-beat)/beat > 0.02 {
			t.Errorf("%q mix: beat period %.4f s (%.1f bpm), want %.4f (%d bpm)", tc.desc, p, 60/p, beat, tc.bpm)
		}
	}
}

func TestRenderLengthAndRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc string
		secs int
		sr   int
	}{
		{"upbeat synthwave with arpeggiated synth bass and drums at 118 bpm", 7, 44100},
		{"calm lo-fi piano, melancholic, slow", 15, 22050},
		{"trap with 808s and bells", 5, 48000},
		{"dark cinematic strings and brass", 1, 44100},
		{"chiptune", 3, 8000},
		{"jazz trio", 4, 32000},
		{"dreamy ambient pad with bells and flute", 9, 16000},
		{"rock with guitars, organ and drums", 6, 22050},
	} {
		a := Plan(tc.desc, tc.secs, 3)
		s := Render(a, tc.sr)
		if len(s) != Channels*tc.secs*tc.sr {
			t.Errorf("%q: %d samples, want %d", tc.desc, len(s), Channels*tc.secs*tc.sr)
			continue
		}
		peak, sum := 0.0, 0.0
		for i, x := range s {
			v := float64(x)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%q: sample %d is %v", tc.desc, i, v)
			}
			peak = math.Max(peak, math.Abs(v))
			sum += v * v
		}
		rms := math.Sqrt(sum / float64(len(s)))
		if peak > 1 || peak < 0.5 || rms < 0.05 {
			t.Errorf("%q: peak %.3f, rms %.3f", tc.desc, peak, rms)
		}
		// Fades: silent first and last frames, a quiet last 50 ms.
		n := len(s)
		if s[0] != 0 || s[1] != 0 || s[n-1] != 0 || s[n-2] != 0 {
			t.Errorf("%q: ends at %v %v ... %v %v", tc.desc, s[0], s[1], s[n-2], s[n-1])
		}
		tail := 0.0
		for _, x := range s[n-2*tc.sr/20:] {
			tail = math.Max(tail, math.Abs(float64(x)))
		}
		if tail > 0.12 {
			t.Errorf("%q: the last 50 ms peak at %.3f (no fade-out)", tc.desc, tail)
		}
	}
}

func wavHash(t testing.TB, a Arrangement, sr int) [32]byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteWAV(&b, Render(a, sr), sr, Channels); err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b.Bytes())
}

func TestRenderDeterministic(t *testing.T) {
	t.Parallel()
	desc := "happy acoustic guitar and flute folk song with drums and vinyl crackle"
	h1 := wavHash(t, Plan(desc, 8, 99), 22050)
	h2 := wavHash(t, Plan(desc, 8, 99), 22050)
	if h1 != h2 {
		t.Fatal("the same request rendered twice differs")
	}
	if wavHash(t, Plan(desc, 8, 100), 22050) == h1 {
		t.Error("another seed rendered the same bytes")
	}
}

func TestDescriptionsDiffer(t *testing.T) {
	t.Parallel()
	descs := []string{
		"upbeat synthwave with arpeggiated synth bass and drums at 118 bpm",
		"calm lo-fi piano, melancholic, slow",
		"dark techno",
		"happy folk with guitar and flute",
		"dreamy ambient bells",
		"jazz trio",
	}
	seen := map[[32]byte]string{}
	rendered := make([][]float32, len(descs))
	for i, d := range descs {
		a := Plan(d, 6, 1) // one seed: only the description differs
		rendered[i] = mono(Render(a, 16000))
		h := wavHash(t, a, 16000)
		if prev, ok := seen[h]; ok {
			t.Errorf("%q rendered the same as %q", d, prev)
		}
		seen[h] = d
	}
	// Not just different bytes: different music (low correlation).
	for i := range rendered {
		for j := i + 1; j < len(rendered); j++ {
			if c := correlation(rendered[i], rendered[j]); math.Abs(c) > 0.5 {
				t.Errorf("%q and %q correlate at %.2f", descs[i], descs[j], c)
			}
		}
	}
}

func correlation(x, y []float32) float64 {
	var sxy, sxx, syy float64
	for i := range min(len(x), len(y)) {
		a, b := float64(x[i]), float64(y[i])
		sxy += a * b
		sxx += a * a
		syy += b * b
	}
	return sxy / math.Sqrt(sxx*syy+1e-30)
}

// BenchmarkRender60s: 60 s of a busy arrangement at 44.1 kHz on one
// goroutine, the work a worker does for the longest common order (figure
// in the README; `go tool task bench`).
func BenchmarkRender60s(b *testing.B) {
	a := Plan("energetic trance with arpeggiated synths, pads, strings, piano and drums", 60, 1)
	for b.Loop() {
		if s := Render(a, 44100); len(s) != 2*60*44100 {
			b.Fatalf("%d samples", len(s))
		}
	}
}

func TestRenderContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s, err := RenderContext(ctx, Plan("piano", 30, 1), 44100); !errors.Is(err, context.Canceled) || s != nil {
		t.Errorf("cancelled: %d samples, %v", len(s), err)
	}
	for _, sr := range []int{0, -1, 7999, 192001} {
		if s := Render(Plan("piano", 1, 1), sr); s != nil {
			t.Errorf("sample rate %d rendered %d samples", sr, len(s))
		}
	}
	bad := Plan("piano", 1, 1)
	bad.Seconds = MaxSeconds + 1
	if _, err := RenderContext(context.Background(), bad, 8000); err == nil {
		t.Error("an over-long arrangement rendered")
	}
}

func TestWriteWAV(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	in := []float32{0, 0.5, -0.5, 1, -1, 1.5, -2, float32(math.NaN())}
	if err := WriteWAV(&b, in, 22050, 2); err != nil {
		t.Fatal(err)
	}
	w := b.Bytes()
	le := binary.LittleEndian
	if len(w) != 44+2*len(in) || string(w[0:4]) != "RIFF" || le.Uint32(w[4:]) != uint32(len(w)-8) || string(w[8:16]) != "WAVEfmt " ||
		le.Uint32(w[16:]) != 16 || le.Uint16(w[20:]) != 1 || le.Uint16(w[22:]) != 2 || le.Uint32(w[24:]) != 22050 ||
		le.Uint32(w[28:]) != 22050*4 || le.Uint16(w[32:]) != 4 || le.Uint16(w[34:]) != 16 || string(w[36:40]) != "data" || le.Uint32(w[40:]) != uint32(2*len(in)) {
		t.Fatalf("header % x", w[:44])
	}
	want := []int16{0, 16384, -16384, 32767, -32767, 32767, -32767, 0}
	for i, v := range want {
		if got := int16(le.Uint16(w[44+2*i:])); got != v {
			t.Errorf("sample %d (%v) written as %d, want %d", i, in[i], got, v)
		}
	}
	for _, tc := range []struct {
		n, rate, ch int
	}{{3, 44100, 2}, {2, 44100, 0}, {2, 0, 1}, {2, 44100, 9}} {
		if err := WriteWAV(&bytes.Buffer{}, make([]float32, tc.n), tc.rate, tc.ch); err == nil {
			t.Errorf("%d samples, %d Hz, %d channels: no error", tc.n, tc.rate, tc.ch)
		}
	}
	if err := WriteWAV(failWriter{}, make([]float32, 100000), 44100, 1); err == nil {
		t.Error("a failing writer's error was dropped")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
