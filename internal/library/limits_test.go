package library

import (
	"testing"
	"time"

	"conduit/internal/config"
	"conduit/internal/errs"
	"conduit/internal/media"
	"conduit/internal/store"
)

func item(kind string, secs float64, size int64) store.MediaItem {
	d := time.Duration(secs * float64(time.Second))
	return store.MediaItem{ID: "med_0000000000000000", Kind: kind, Duration: &d, Size: size, HasAudio: true}
}

// Every operation's length comes from its inputs before any work.
func TestOutputLengthFromTheInputs(t *testing.T) {
	a, b := item("audio", 10, 240_000), item("audio", 4, 96_000)
	v := item("video", 8, 800_000) // 100 kB/s
	for _, c := range []struct {
		name  string
		spec  media.EditSpec
		items []store.MediaItem
		secs  float64
	}{
		{"concat", media.EditSpec{Op: media.OpConcat}, []store.MediaItem{a, a, b}, 24},
		{"crossfade", media.EditSpec{Op: media.OpCrossfade, Fade: 1}, []store.MediaItem{a, a, b}, 22},
		{"music_under", media.EditSpec{Op: media.OpMusicUnder}, []store.MediaItem{v, a}, 8},
		{"narrate over video", media.EditSpec{Op: media.OpNarrate, Delay: 6}, []store.MediaItem{v, a}, 8},
		{"narrate over audio", media.EditSpec{Op: media.OpNarrate, Delay: 3}, []store.MediaItem{b, a}, 13},
		{"trim", media.EditSpec{Op: media.OpTrim, Start: 1, End: 3.5}, []store.MediaItem{a}, 2.5},
		{"volume", media.EditSpec{Op: media.OpVolume, Gain: 2}, []store.MediaItem{v}, 8},
		{"transcode", media.EditSpec{Op: media.OpTranscode, Format: "wav"}, []store.MediaItem{a}, 10},
		{"extract_audio", media.EditSpec{Op: media.OpExtractAudio, Format: "mp3"}, []store.MediaItem{v}, 8},
	} {
		if got := outputOf(c.spec, c.items); got.seconds != c.secs || got.bytes <= 0 {
			t.Errorf("%s: %+v, want %v s", c.name, got, c.secs)
		}
	}
	// Sizes follow the output format: a WAV is far larger than an MP3 of
	// the same length; a video's picture keeps its sources' byte rate.
	wav := outputOf(media.EditSpec{Op: media.OpTranscode, Format: "wav"}, []store.MediaItem{a})
	mp3 := outputOf(media.EditSpec{Op: media.OpVolume, Gain: 1}, []store.MediaItem{a})
	if wav.bytes < 1_700_000 || mp3.bytes > 400_000 {
		t.Errorf("wav %d, mp3 %d bytes", wav.bytes, mp3.bytes)
	}
	if got := outputOf(media.EditSpec{Op: media.OpConcat}, []store.MediaItem{v, v}); got.bytes < 1_600_000 {
		t.Errorf("two 800 kB clips joined: %d bytes", got.bytes)
	}
}

// The caps refuse in the library's error shape: a 400 naming the field,
// with a code and the limit.
func TestOutputCaps(t *testing.T) {
	s := &Service{Config: config.Library{MaxOutputSeconds: 600, MaxOutputBytes: 200 << 20}}
	if err := s.checkOutput("items", output{seconds: 600, bytes: 1 << 20}); err != nil {
		t.Fatalf("at the cap: %v", err)
	}
	err := s.checkOutput("items", output{seconds: 1440, bytes: 1 << 20})
	e, ok := err.(*errs.Error)
	if !ok || e.Kind != errs.Invalid || e.Code != "MEDIA_OUTPUT_TOO_LONG" || e.Extra["field"] != "items" || e.Extra["maxOutputSeconds"] != 600 {
		t.Fatalf("%#v", err)
	}
	err = s.checkOutput("item", output{seconds: 60, bytes: 300 << 20})
	if e, ok := err.(*errs.Error); !ok || e.Code != "MEDIA_OUTPUT_TOO_LARGE" || e.Extra["field"] != "item" {
		t.Fatalf("%#v", err)
	}
}
