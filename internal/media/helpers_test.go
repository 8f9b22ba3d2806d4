package media

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// Tests need real ffmpeg: the renderer's whole point is making real
// files, so a worker (or CI) without it must fail loudly, not skip.
func needFFmpeg(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed (apt-get install ffmpeg); the media tests render real files and need it: %v", bin, err)
		}
	}
}

type probeResult struct {
	Streams []struct {
		CodecType string `json:"codec_type"`
		CodecName string `json:"codec_name"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
		PixFmt    string `json:"pix_fmt"`
		Duration  string `json:"duration"`
	} `json:"streams"`
	Format struct {
		Duration   string `json:"duration"`
		FormatName string `json:"format_name"`
	} `json:"format"`
}

func probe(t testing.TB, path string) probeResult {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p probeResult
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("ffprobe output: %v\n%s", err, out)
	}
	return p
}

// checkClip asserts an MP4 of exactly secs seconds (±0.1 s), w x h, with
// one H.264 yuv420p video stream and one AAC audio stream of that length.
func checkClip(t testing.TB, path string, secs float64, w, h int) {
	t.Helper()
	p := probe(t, path)
	dur, err := strconv.ParseFloat(p.Format.Duration, 64)
	if err != nil || dur < secs-0.1 || dur > secs+0.1 {
		t.Errorf("duration %q, want %.1f±0.1", p.Format.Duration, secs)
	}
	var videos, audios int
	for _, s := range p.Streams {
		switch s.CodecType {
		case "video":
			videos++
			if s.CodecName != "h264" || s.PixFmt != "yuv420p" {
				t.Errorf("video stream %s/%s, want h264/yuv420p", s.CodecName, s.PixFmt)
			}
			if s.Width != w || s.Height != h {
				t.Errorf("frame %dx%d, want %dx%d", s.Width, s.Height, w, h)
			}
		case "audio":
			audios++
			if s.CodecName != "aac" {
				t.Errorf("audio codec %s, want aac", s.CodecName)
			}
			if d, err := strconv.ParseFloat(s.Duration, 64); err != nil || d < secs-0.1 || d > secs+0.1 {
				t.Errorf("audio duration %q, want %.1f±0.1", s.Duration, secs)
			}
		}
	}
	if videos != 1 || audios != 1 {
		t.Errorf("%d video and %d audio streams, want 1 and 1", videos, audios)
	}
}

// firstFrameOf decodes frame 0 of a clip.
func firstFrameOf(t testing.TB, clip string) image.Image {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", clip, "-frames:v", "1", "-f", "image2pipe", "-c:v", "png", "-").Output()
	if err != nil {
		t.Fatalf("extracting the first frame: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("decoding the first frame: %v", err)
	}
	return img
}

// sampleClip is a small real MP4 made by LocalVideo, shared by the queue
// tests as what the fake provider serves.
var (
	sampleOnce sync.Once
	sampleMP4  []byte
	sampleErr  error
)

func sampleClip(t testing.TB) []byte {
	t.Helper()
	needFFmpeg(t)
	sampleOnce.Do(func() {
		dir, err := os.MkdirTemp("", "media-sample-")
		if err != nil {
			sampleErr = err
			return
		}
		defer os.RemoveAll(dir)
		lv := &LocalVideo{Width: 320, Height: 180}
		out, err := lv.Render(context.Background(), Job{RunID: "sample#1", Kind: KindVideo, Model: "local", Prompt: "sample", Seconds: 1, AspectRatio: "16:9"}, dir, nil)
		if err != nil {
			sampleErr = err
			return
		}
		sampleMP4, sampleErr = os.ReadFile(out.Path)
	})
	if sampleErr != nil {
		t.Fatalf("rendering the sample clip: %v", sampleErr)
	}
	return sampleMP4
}

// listDir names the files in dir.
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, filepath.Join(dir, e.Name()))
	}
	return names
}
