package media

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"conduit/internal/audiotest"
	"conduit/internal/synth"
)

// musicProbe is what ffprobe says about an audio file.
type musicProbe struct {
	Streams []struct {
		CodecType  string `json:"codec_type"`
		CodecName  string `json:"codec_name"`
		SampleRate string `json:"sample_rate"`
		Channels   int    `json:"channels"`
	} `json:"streams"`
	Format struct {
		Duration   string `json:"duration"`
		FormatName string `json:"format_name"`
		BitRate    string `json:"bit_rate"`
	} `json:"format"`
}

func probeAudio(t testing.TB, path string) musicProbe {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p musicProbe
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("ffprobe output: %v\n%s", err, out)
	}
	return p
}

// checkMP3 asserts one MP3 stream, 44.1 kHz stereo, secs long (±0.15 s).
func checkMP3(t testing.TB, path string, secs float64) {
	t.Helper()
	p := probeAudio(t, path)
	if len(p.Streams) != 1 || p.Streams[0].CodecType != "audio" || p.Streams[0].CodecName != "mp3" || p.Format.FormatName != "mp3" {
		t.Fatalf("%s: %+v, want one MP3 audio stream", path, p)
	}
	if s := p.Streams[0]; s.SampleRate != "44100" || s.Channels != 2 {
		t.Errorf("%s: %s Hz, %d channels; want 44100 Hz stereo", path, s.SampleRate, s.Channels)
	}
	if d, err := strconv.ParseFloat(p.Format.Duration, 64); err != nil || math.Abs(d-secs) > 0.15 {
		t.Errorf("%s: duration %q, want %.2f±0.15", path, p.Format.Duration, secs)
	}
	if br, err := strconv.Atoi(p.Format.BitRate); err != nil || br < 128000 || br > 200000 {
		t.Errorf("%s: bit rate %q, want 128–192 kbit/s", path, p.Format.BitRate)
	}
}

// decodePCM decodes an audio file to mono float samples at rate.
func decodePCM(t testing.TB, path string, rate int) []float32 {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-i", path, "-f", "f32le", "-ac", "1", "-ar", strconv.Itoa(rate), "-").Output()
	if err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	pcm := make([]float32, len(out)/4)
	for i := range pcm {
		pcm[i] = math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:]))
	}
	return pcm
}

func musicJob(prompt string, secs int) Job {
	return Job{RunID: "2026-11-22T10:00:00.000Z#m1", Kind: KindMusic, Model: "compose-1", Prompt: prompt, Seconds: secs}
}

func TestLocalMusicTrack(t *testing.T) {
	t.Parallel()
	needFFmpeg(t)
	for _, tc := range []struct {
		prompt string
		secs   int
		bpm    int
	}{
		{"house with piano and drums", 10, 124},
		{"upbeat synthwave with arpeggiated synth bass and drums at 118 bpm", 30, 118},
	} {
		t.Run(strconv.Itoa(tc.secs), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			job := musicJob(tc.prompt, tc.secs)
			var seen []string
			out, err := (&LocalMusic{}).Render(context.Background(), job, dir, func(s string) { seen = append(seen, s) })
			if err != nil {
				t.Fatal(err)
			}
			if out.ContentType != "audio/mpeg" || out.Ext != "mp3" || out.Path != filepath.Join(dir, "2026-11-22T10-00-00.000Z-m1.mp3") {
				t.Errorf("output %+v", out)
			}
			if files := listDir(t, dir); len(files) != 1 || files[0] != out.Path {
				t.Errorf("workdir holds %v", files)
			}
			checkMP3(t, out.Path, float64(tc.secs))
			if len(seen) < 4 || seen[0] != "composing" || !strings.HasPrefix(seen[1], "rendering ") || !slices.Contains(seen, "encoding") || seen[len(seen)-1] != "encoded" {
				t.Errorf("progress %v", seen)
			}

			// The tempo asked for is the tempo heard: the beat period of
			// the decoded MP3's kick is the planned one's (within 3%).
			a := synth.Plan(job.Prompt, job.Seconds, musicSeed(job))
			if a.BPM != tc.bpm || !a.Has(synth.RoleDrums) {
				t.Fatalf("planned %v", a)
			}
			beat := 60 / float64(a.BPM)
			if p := audiotest.BeatPeriod(decodePCM(t, out.Path, 22050), 22050); math.Abs(p-beat)/beat > 0.03 {
				t.Errorf("beat period %.4f s (%.1f bpm), want %.4f s (%d bpm)", p, 60/p, beat, a.BPM)
			}
		})
	}
}

func pcmHash(t testing.TB, path string) [32]byte {
	t.Helper()
	pcm := decodePCM(t, path, 44100)
	b := make([]byte, 4*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return sha256.Sum256(b)
}

func TestLocalMusicDeterministic(t *testing.T) {
	t.Parallel()
	needFFmpeg(t)
	l := &LocalMusic{}
	render := func(job Job) Output {
		t.Helper()
		out, err := l.Render(context.Background(), job, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	job := musicJob("calm lo-fi piano, melancholic, slow", 6)
	again := job
	again.RunID = "2026-11-23T08:00:00.000Z#other" // another run of the same request
	a, b := render(job), render(again)
	if pcmHash(t, a.Path) != pcmHash(t, b.Path) {
		t.Error("the same request rendered twice decodes to different audio")
	}
	x, _ := os.ReadFile(a.Path)
	y, _ := os.ReadFile(b.Path)
	if string(x) != string(y) {
		t.Error("the same request rendered twice gives different MP3 files")
	}
	other := job
	other.Prompt = "dark techno"
	if pcmHash(t, render(other).Path) == pcmHash(t, a.Path) {
		t.Error("another description rendered the same audio")
	}
	if musicSeed(job) != musicSeed(again) || musicSeed(job) == musicSeed(other) {
		t.Error("the seed depends on the run id, or not on the description")
	}
	longer := job
	longer.Seconds = 7
	if musicSeed(longer) == musicSeed(job) {
		t.Error("the seed does not depend on the length")
	}
}

func TestLocalMusicRefused(t *testing.T) {
	t.Parallel()
	filter, err := NewFilter([]string{`\b(in the style of|sounds? like|cover of)\b`})
	if err != nil {
		t.Fatal(err)
	}
	l := &LocalMusic{Filters: map[string]*Filter{"compose-1": filter}}
	dir := t.TempDir()
	_, err = l.Render(context.Background(), musicJob("a ballad In The Style Of someone famous", 10), dir, nil)
	var re *RefusedError
	if !errors.As(err, &re) || re.Message != refusedByFilter {
		t.Fatalf("got %v, want the filter's refusal", err)
	}
	if files := listDir(t, dir); len(files) != 0 {
		t.Errorf("a refusal left %v", files)
	}
	// Another model without that filter takes the same prompt.
	needFFmpeg(t)
	job := musicJob("a ballad in the style of someone famous", 2)
	job.Model = "compose-free"
	if _, err := l.Render(context.Background(), job, t.TempDir(), nil); err != nil {
		t.Errorf("unfiltered model: %v", err)
	}
}

func TestLocalMusicFailures(t *testing.T) {
	t.Parallel()
	needFFmpeg(t)
	for _, tc := range []struct {
		name      string
		l         *LocalMusic
		job       Job
		workdir   string
		step      string
		retryable bool
		msg       string
	}{
		{name: "wrong kind", job: Job{Kind: KindVideo, Model: "compose-1", Prompt: "x", Seconds: 5}, step: "validate", msg: "cannot render a video job"},
		{name: "no length", job: musicJob("piano", 0), step: "validate", msg: "1..600 seconds, not 0"},
		{name: "too long", job: musicJob("piano", 601), step: "validate", msg: "not 601"},
		{name: "blank description", job: musicJob(" \n\t", 10), step: "validate", msg: "description is empty"},
		{name: "bad sample rate", l: &LocalMusic{SampleRate: 100}, job: musicJob("piano", 5), step: "validate", msg: "sample rate 100"},
		{name: "no workdir", job: musicJob("piano", 5), workdir: "/nonexistent/work", step: "render", retryable: true, msg: "work directory is missing"},
		{name: "no ffmpeg", l: &LocalMusic{FFmpeg: "/nonexistent/ffmpeg"}, job: musicJob("piano", 2), step: "encode", msg: "not installed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := tc.l
			if l == nil {
				l = &LocalMusic{}
			}
			dir := tc.workdir
			if dir == "" {
				dir = t.TempDir()
			}
			_, err := l.Render(context.Background(), tc.job, dir, nil)
			var fe *FailedError
			if !errors.As(err, &fe) || fe.Step != tc.step || fe.Retryable != tc.retryable || !strings.Contains(fe.Message, tc.msg) {
				t.Fatalf("got %#v (%v), want a FailedError at %s, retryable %t, saying %q", err, err, tc.step, tc.retryable, tc.msg)
			}
			if tc.workdir == "" {
				if files := listDir(t, dir); len(files) != 0 {
					t.Errorf("a failure left %v", files)
				}
			}
		})
	}
}

func TestLocalMusicCancel(t *testing.T) {
	t.Parallel()
	needFFmpeg(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	if _, err := (&LocalMusic{}).Render(ctx, musicJob("piano", 30), dir, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before: %v", err)
	}
	// Cancelled while ffmpeg encodes (at its first progress report):
	// ffmpeg is stopped and nothing stays.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	_, err := (&LocalMusic{}).Render(ctx, musicJob("piano", 60), dir, func(s string) {
		if strings.HasPrefix(s, "encoding ") {
			once.Do(cancel)
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while encoding: %v", err)
	}
	if files := listDir(t, dir); len(files) != 0 {
		t.Errorf("a cancelled render left %v", files)
	}
}

// sampleMusic is a short real MP3 made by LocalMusic: what the fake
// hosted provider serves.
var (
	musicOnce sync.Once
	musicMP3  []byte
	musicErr  error
)

func sampleMusic(t testing.TB) []byte {
	t.Helper()
	needFFmpeg(t)
	musicOnce.Do(func() {
		dir, err := os.MkdirTemp("", "media-music-")
		if err != nil {
			musicErr = err
			return
		}
		defer os.RemoveAll(dir)
		out, err := (&LocalMusic{SampleRate: 22050}).Render(context.Background(), musicJob("bright bells", 2), dir, nil)
		if err != nil {
			musicErr = err
			return
		}
		musicMP3, musicErr = os.ReadFile(out.Path)
	})
	if musicErr != nil {
		t.Fatalf("rendering the sample track: %v", musicErr)
	}
	return musicMP3
}
