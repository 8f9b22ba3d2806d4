package media

import (
	"bufio"
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"conduit/internal/synth"
)

// LocalMusic renders real MP3 music with the Go synthesizer
// (internal/synth) and ffmpeg: the description is read into an
// arrangement (tempo, key and mode, instruments, sections), rendered
// sample by sample, and encoded. It is the embedded default, so music
// sells without a provider account; the same request always renders the
// same track.
type LocalMusic struct {
	FFmpeg string // path of ffmpeg; "" → "ffmpeg" from PATH
	// Filters by model; a nil map or a model without one accepts every
	// prompt.
	Filters map[string]*Filter
	// SampleRate the synthesizer renders at; 0 → 44100. The MP3 is
	// 44.1 kHz whatever it is (ffmpeg resamples).
	SampleRate int
}

const (
	// musicRate and musicBitrate are the MP3's: 44.1 kHz stereo at
	// 192 kbit/s, a good listening quality for synthesized music.
	musicRate    = 44100
	musicBitrate = "192k"
)

// validateMusic rejects a job no music renderer can make (a bug upstream,
// so not retryable) and applies the model's content filter first, so a
// refused prompt costs nothing.
func validateMusic(filters map[string]*Filter, job Job) error {
	if job.Kind != "" && job.Kind != KindMusic {
		return &FailedError{Step: "validate", Message: fmt.Sprintf("a music renderer cannot render a %s job", job.Kind)}
	}
	if err := checkFilter(filters, job.Model, job.Prompt); err != nil {
		return err
	}
	if strings.TrimSpace(job.Prompt) == "" {
		return &FailedError{Step: "validate", Message: "the description is empty"}
	}
	if job.Seconds <= 0 || job.Seconds > synth.MaxSeconds {
		return &FailedError{Step: "validate", Message: fmt.Sprintf("the track length must be 1..%d seconds, not %d", synth.MaxSeconds, job.Seconds)}
	}
	return nil
}

// musicSeed derives the synthesizer's seed from what was ordered (model,
// description, length), never from the run id: the same request renders
// the same track, and a retried run renders what the first attempt would
// have.
func musicSeed(job Job) uint64 {
	h := fnv.New64a()
	h.Write([]byte(job.Model))
	h.Write([]byte{0})
	h.Write([]byte(job.Prompt))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(job.Seconds)))
	return h.Sum64()
}

// Render composes and encodes the track as workdir/<run id made safe>.mp3.
func (l *LocalMusic) Render(ctx context.Context, job Job, workdir string, progress func(string)) (Output, error) {
	if err := validateMusic(l.Filters, job); err != nil {
		return Output{}, err
	}
	rate := l.SampleRate
	if rate == 0 {
		rate = musicRate
	}
	if rate < synth.MinSampleRate || rate > synth.MaxSampleRate {
		return Output{}, &FailedError{Step: "validate", Message: fmt.Sprintf("sample rate %d is outside %d..%d", rate, synth.MinSampleRate, synth.MaxSampleRate)}
	}
	if st, err := os.Stat(workdir); err != nil || !st.IsDir() {
		return Output{}, &FailedError{Step: "render", Message: "the work directory is missing", Retryable: true}
	}
	workdir, err := filepath.Abs(workdir)
	if err != nil {
		return Output{}, &FailedError{Step: "render", Message: err.Error()}
	}

	report(progress, "composing")
	a := synth.Plan(job.Prompt, job.Seconds, musicSeed(job))
	report(progress, fmt.Sprintf("rendering %d bpm, %s %s", a.BPM, a.Key, a.Mode))
	samples, err := synth.RenderContext(ctx, a, rate)
	if err != nil {
		if ctx.Err() != nil {
			return Output{}, ctx.Err()
		}
		return Output{}, &FailedError{Step: "render", Message: err.Error()}
	}

	stem := safeName(job.RunID, "music")
	wav, part, out := stem+".part.wav", stem+".part.mp3", stem+".mp3"
	defer os.Remove(filepath.Join(workdir, wav))
	if err := writeWAVFile(filepath.Join(workdir, wav), samples, rate); err != nil {
		return Output{}, &FailedError{Step: "render", Message: "writing the audio: " + err.Error(), Retryable: true}
	}

	report(progress, "encoding")
	// Names are relative to workdir (ffmpeg runs there); "file:" keeps a
	// ':' in them from being read as a protocol. -t pins the length to
	// what was sold whatever the resampler does at the edges.
	run := ffmpegRun{bin: l.FFmpeg, dir: workdir, step: "encode", duration: time.Duration(job.Seconds) * time.Second, progress: progress, args: []string{
		"-f", "wav", "-i", "file:" + wav, "-map_metadata", "-1",
		"-ac", "2", "-ar", strconv.Itoa(musicRate), "-c:a", "libmp3lame", "-b:a", musicBitrate,
		"-t", strconv.Itoa(job.Seconds), "-fflags", "+bitexact", "-f", "mp3", "file:" + part,
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

// writeWAVFile stores the synthesizer's stereo samples as 16-bit WAV.
func writeWAVFile(path string, samples []float32, rate int) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	if err := synth.WriteWAV(w, samples, rate, synth.Channels); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
