package media

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// makeFile renders a small real input with ffmpeg's own sources.
func makeFile(t *testing.T, name string, args ...string) Source {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("ffmpeg", append(append([]string{"-y", "-v", "error"}, args...), path)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("making %s: %v %s", name, err, out)
	}
	info, err := Probe(context.Background(), "", path)
	if err != nil {
		t.Fatal(err)
	}
	return Source{Path: path, Info: info}
}

func tone(t *testing.T, freq int, secs string) Source {
	return makeFile(t, "tone.mp3", "-f", "lavfi", "-i", "sine=frequency="+strconv.Itoa(freq)+":duration="+secs, "-ac", "2", "-c:a", "libmp3lame")
}

func testClip(t *testing.T, size, secs string, sound bool) Source {
	args := []string{"-f", "lavfi", "-i", "testsrc=size=" + size + ":rate=25:duration=" + secs}
	if sound {
		args = append(args, "-f", "lavfi", "-i", "sine=frequency=330:duration="+secs, "-c:a", "aac")
	}
	return makeFile(t, "clip.mp4", append(args, "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p")...)
}

func edit(t *testing.T, spec EditSpec, sources ...Source) (Info, Output) {
	t.Helper()
	dir := t.TempDir()
	out, err := (&Editor{}).Edit(context.Background(), spec, sources, dir, nil)
	if err != nil {
		t.Fatalf("%s: %v", spec.Op, err)
	}
	info, err := Probe(context.Background(), "", out.Path)
	if err != nil {
		t.Fatal(err)
	}
	return info, out
}

func nearLen(t *testing.T, what string, got time.Duration, want float64) {
	t.Helper()
	if math.Abs(got.Seconds()-want) > 0.15 {
		t.Errorf("%s lasts %.3fs, want %.2fs", what, got.Seconds(), want)
	}
}

func TestEditOperations(t *testing.T) {
	needFFmpeg(t)
	a, b := tone(t, 440, "2"), tone(t, 660, "3")
	v1, v2 := testClip(t, "320x240", "2", true), testClip(t, "160x160", "1.5", false)

	info, out := edit(t, EditSpec{Op: OpConcat}, a, b)
	nearLen(t, "concatenated audio", info.Duration, 5)
	if out.ContentType != "audio/mpeg" || info.HasVideo || !info.HasAudio {
		t.Errorf("concat audio: %+v %+v", out, info)
	}
	info, out = edit(t, EditSpec{Op: OpConcat}, v1, v2)
	nearLen(t, "concatenated video", info.Duration, 3.5)
	if out.ContentType != "video/mp4" || !info.HasVideo || !info.HasAudio || info.Width != 320 || info.Height != 240 {
		t.Errorf("concat video: %+v %+v", out, info)
	}
	info, _ = edit(t, EditSpec{Op: OpCrossfade, Fade: 0.5}, a, b)
	nearLen(t, "crossfaded audio", info.Duration, 4.5)
	info, _ = edit(t, EditSpec{Op: OpCrossfade, Fade: 0.5}, v1, v2)
	nearLen(t, "crossfaded video", info.Duration, 3)

	// Music under a longer voice is looped; under a video it lasts the video.
	info, out = edit(t, EditSpec{Op: OpMusicUnder, MusicVolume: 0.3}, b, a)
	nearLen(t, "music under audio", info.Duration, 3)
	if out.Ext != "mp3" {
		t.Errorf("music under audio: %+v", out)
	}
	info, out = edit(t, EditSpec{Op: OpMusicUnder, MusicVolume: 0.3}, v2, a)
	nearLen(t, "music under a silent video", info.Duration, 1.5)
	if !info.HasVideo || !info.HasAudio || out.Ext != "mp4" || info.VideoCodec != "h264" {
		t.Errorf("music under video: %+v %+v", out, info)
	}
	info, _ = edit(t, EditSpec{Op: OpNarrate, BackgroundVolume: 0.3, Delay: 0.5}, v1, b)
	nearLen(t, "narrated video", info.Duration, 2)
	info, _ = edit(t, EditSpec{Op: OpNarrate, BackgroundVolume: 0.3, Delay: 0.5}, a, b)
	nearLen(t, "narration over shorter music", info.Duration, 3.5)

	info, _ = edit(t, EditSpec{Op: OpTrim, Start: 0.5, End: 1.5}, v1)
	nearLen(t, "trimmed video", info.Duration, 1)
	if !info.HasVideo || !info.HasAudio {
		t.Errorf("trim lost a stream: %+v", info)
	}
	info, _ = edit(t, EditSpec{Op: OpTrim, Start: 1, End: 99}, b)
	nearLen(t, "trim past the end", info.Duration, 2)
	info, _ = edit(t, EditSpec{Op: OpVolume, Gain: 0.5}, v1)
	nearLen(t, "quieter video", info.Duration, 2)
	info, out = edit(t, EditSpec{Op: OpTranscode, Format: "wav"}, a)
	if out.ContentType != "audio/wav" || info.AudioCodec != "pcm_s16le" {
		t.Errorf("transcode: %+v %+v", out, info)
	}
	info, out = edit(t, EditSpec{Op: OpExtractAudio, Format: "mp3"}, v1)
	nearLen(t, "extracted audio", info.Duration, 2)
	if info.HasVideo || out.ContentType != "audio/mpeg" {
		t.Errorf("extract_audio: %+v %+v", out, info)
	}
}

func TestEditRefusals(t *testing.T) {
	needFFmpeg(t)
	a, v := tone(t, 440, "1"), testClip(t, "160x120", "1", false)
	for _, c := range []struct {
		spec    EditSpec
		sources []Source
	}{
		{EditSpec{Op: OpConcat}, []Source{a}},
		{EditSpec{Op: OpConcat}, []Source{a, v}},
		{EditSpec{Op: OpCrossfade, Fade: 2}, []Source{a, a}},
		{EditSpec{Op: OpMusicUnder, MusicVolume: 1}, []Source{a, v}},
		{EditSpec{Op: OpTrim, Start: 2, End: 3}, []Source{a}},
		{EditSpec{Op: OpVolume, Gain: 1}, []Source{v}},
		{EditSpec{Op: OpTranscode, Format: "mp4"}, []Source{a}},
		{EditSpec{Op: OpExtractAudio, Format: "mp3"}, []Source{v}},
		{EditSpec{Op: "blur"}, []Source{v}},
	} {
		_, err := (&Editor{}).Edit(context.Background(), c.spec, c.sources, t.TempDir(), nil)
		var failed *FailedError
		if !errors.As(err, &failed) || failed.Step != "validate" || failed.Retryable {
			t.Errorf("%+v: %v, want a validation failure", c.spec, err)
		}
	}
}

func TestSniffAndClassify(t *testing.T) {
	needFFmpeg(t)
	for _, c := range []struct {
		src      Source
		kind, ct string
	}{
		{tone(t, 440, "1"), "audio", "audio/mpeg"},
		{testClip(t, "160x120", "1", true), "video", "video/mp4"},
		{makeFile(t, "a.m4a", "-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac"), "audio", "audio/mp4"},
		{makeFile(t, "a.wav", "-f", "lavfi", "-i", "sine=duration=1"), "audio", "audio/wav"},
	} {
		head := make([]byte, 64)
		f, err := os.Open(c.src.Path)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := f.Read(head)
		f.Close()
		s, ok := Sniff(head[:n])
		if !ok {
			t.Fatalf("%s not recognised", c.src.Path)
		}
		s, err = Classify(s, c.src.Info)
		if err != nil || s.Kind != c.kind || s.ContentType != c.ct {
			t.Errorf("%s: %+v %v, want %s %s", c.src.Path, s, err, c.kind, c.ct)
		}
	}
	if _, ok := Sniff([]byte("<html><body>not media</body></html>")); ok {
		t.Error("HTML was taken for media")
	}
}
