package media

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Library operations: assemble several items into one file, or edit one.
const (
	OpConcat       = "concat"        // clips or tracks one after another
	OpCrossfade    = "crossfade"     // one after another, each fading into the next
	OpMusicUnder   = "music_under"   // music (looped, lowered) under a video or a voice
	OpNarrate      = "narrate"       // a voice over a video or music, whose own sound is lowered
	OpTrim         = "trim"          // keep start..end
	OpVolume       = "volume"        // scale the sound
	OpTranscode    = "transcode"     // another format
	OpExtractAudio = "extract_audio" // a video's sound track alone
)

// EditSpec is one operation with its settings, already checked by the
// library (internal/library) and filled with defaults; the editor checks
// again only what would make ffmpeg fail obscurely.
type EditSpec struct {
	Op string `json:"op"`
	// Fade is the crossfade's overlap in seconds.
	Fade float64 `json:"fade"`
	// Start and End bound a trim, in seconds.
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	// Gain scales the sound (volume): 1 keeps it, 0 mutes.
	Gain float64 `json:"gain"`
	// MusicVolume scales the music of music_under.
	MusicVolume float64 `json:"musicVolume"`
	// BackgroundVolume scales the main item's own sound under a
	// narration; Delay is when the narration starts, in seconds.
	BackgroundVolume float64 `json:"backgroundVolume"`
	Delay            float64 `json:"delay"`
	// Format is the output of transcode and extract_audio: mp3, wav, m4a,
	// ogg (audio), mp4, webm (video).
	Format string `json:"format"`
}

// Source is an input file of an edit and what Probe said about it.
type Source struct {
	Path string
	Info Info
}

// Formats the editor writes, by name: content type, extension, the
// encoder arguments and whether it holds video.
type format struct {
	contentType, ext string
	video            bool
	args             []string
}

var formats = map[string]format{
	"mp3": {contentType: "audio/mpeg", ext: "mp3", args: []string{"-c:a", "libmp3lame", "-b:a", "192k", "-ar", "44100", "-ac", "2", "-f", "mp3"}},
	"wav": {contentType: "audio/wav", ext: "wav", args: []string{"-c:a", "pcm_s16le", "-ar", "44100", "-ac", "2", "-f", "wav"}},
	"m4a": {contentType: "audio/mp4", ext: "m4a", args: []string{"-c:a", "aac", "-b:a", "160k", "-ar", "44100", "-ac", "2", "-movflags", "+faststart", "-f", "mp4"}},
	"ogg": {contentType: "audio/ogg", ext: "ogg", args: []string{"-c:a", "libopus", "-b:a", "128k", "-ar", "48000", "-ac", "2", "-f", "ogg"}},
	"mp4": {contentType: "video/mp4", ext: "mp4", video: true, args: []string{
		"-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p",
		"-c:a", "aac", "-b:a", "128k", "-ar", "48000", "-ac", "2", "-movflags", "+faststart", "-f", "mp4"}},
	"webm": {contentType: "video/webm", ext: "webm", video: true, args: []string{
		"-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "1M", "-pix_fmt", "yuv420p",
		"-c:a", "libopus", "-b:a", "128k", "-ar", "48000", "-ac", "2", "-f", "webm"}},
}

// AudioFormats and VideoFormats are what transcode and extract_audio
// write.
var (
	AudioFormats = []string{"mp3", "wav", "m4a", "ogg"}
	VideoFormats = []string{"mp4", "webm"}
)

// Editor runs library operations with ffmpeg.
type Editor struct {
	FFmpeg string // "" → "ffmpeg" from PATH
}

// Edit runs spec over sources (in order) into workdir, a directory the
// caller owns and removes. progress (may be nil) hears "encoding N%".
// A bad combination is a non-retryable *FailedError at step "validate";
// an ffmpeg failure one at step "edit" with ffmpeg's words.
func (e *Editor) Edit(ctx context.Context, spec EditSpec, sources []Source, workdir string, progress func(string)) (Output, error) {
	return e.EditLimited(ctx, spec, sources, workdir, Limits{Progress: progress})
}

// Limits bound one edit and watch it.
type Limits struct {
	// MaxBytes caps the file written (ffmpeg's -fs: it stops there, and
	// the caller refuses a file that reached it); 0 is no cap.
	MaxBytes int64
	// Progress (may be nil) hears "encoding N%".
	Progress func(string)
	// Encoded (may be nil) hears how much of the output ffmpeg encoded
	// so far (its -progress out_time): the work a job is charged for.
	Encoded func(time.Duration)
}

// EditLimited is Edit within limits.
func (e *Editor) EditLimited(ctx context.Context, spec EditSpec, sources []Source, workdir string, lim Limits) (Output, error) {
	if len(sources) == 0 {
		return Output{}, invalid("an edit needs at least one source file")
	}
	for _, s := range sources {
		if !s.Info.HasAudio && !s.Info.HasVideo {
			return Output{}, invalid("a source has no audio or video stream")
		}
	}
	var p plan
	var err error
	switch spec.Op {
	case OpConcat:
		p, err = joinPlan(sources, 0)
	case OpCrossfade:
		if spec.Fade <= 0 {
			return Output{}, invalid("the crossfade needs a positive length")
		}
		p, err = joinPlan(sources, spec.Fade)
	case OpMusicUnder:
		p, err = mixPlan(sources, 1, spec.MusicVolume, 0, false)
	case OpNarrate:
		p, err = mixPlan(sources, spec.BackgroundVolume, 1, spec.Delay, true)
	case OpTrim:
		p, err = trimPlan(sources, spec.Start, spec.End)
	case OpVolume:
		p, err = volumePlan(sources, spec.Gain)
	case OpTranscode:
		p, err = transcodePlan(sources, spec.Format, false)
	case OpExtractAudio:
		p, err = transcodePlan(sources, spec.Format, true)
	default:
		return Output{}, invalid(fmt.Sprintf("unknown operation %q", spec.Op))
	}
	if err != nil {
		return Output{}, err
	}
	return e.run(ctx, p, sources, workdir, lim)
}

func invalid(msg string) error { return &FailedError{Step: "validate", Message: msg} }

// plan is one ffmpeg invocation: per-input options (before each -i), a
// filter graph, what to map, extra codec options and the output format.
type plan struct {
	inputOpts [][]string
	filter    string
	maps      []string
	codec     []string // before the format's own (e.g. -c:v copy)
	out       format
	duration  time.Duration
}

func (e *Editor) run(ctx context.Context, p plan, sources []Source, workdir string, lim Limits) (Output, error) {
	progress := lim.Progress
	var args []string
	for i, s := range sources {
		abs, err := filepath.Abs(s.Path)
		if err != nil {
			return Output{}, &FailedError{Step: "edit", Message: err.Error()}
		}
		if i < len(p.inputOpts) {
			args = append(args, p.inputOpts[i]...)
		}
		// "file:" so a ':' in a path is never read as a protocol.
		args = append(args, "-i", "file:"+abs)
	}
	if p.filter != "" {
		args = append(args, "-filter_complex", p.filter)
	}
	for _, m := range p.maps {
		args = append(args, "-map", m)
	}
	args = append(args, "-map_metadata", "-1")
	// The plan's own codec choices come after the format's, so they win
	// (a copied picture).
	args = append(args, p.out.args...)
	args = append(args, p.codec...)
	if p.duration > 0 {
		args = append(args, "-t", secs(p.duration.Seconds()))
	}
	if lim.MaxBytes > 0 {
		args = append(args, "-fs", strconv.FormatInt(lim.MaxBytes, 10))
	}
	part, out := "edit.part."+p.out.ext, "edit."+p.out.ext
	args = append(args, "-fflags", "+bitexact", "file:"+part)
	report(progress, "encoding")
	r := ffmpegRun{bin: e.FFmpeg, dir: workdir, step: "edit", args: args, duration: p.duration, progress: progress, encoded: lim.Encoded}
	if err := r.run(ctx); err != nil {
		_ = os.Remove(filepath.Join(workdir, part))
		return Output{}, err
	}
	if err := os.Rename(filepath.Join(workdir, part), filepath.Join(workdir, out)); err != nil {
		return Output{}, &FailedError{Step: "edit", Message: err.Error()}
	}
	report(progress, "encoded")
	return Output{Path: filepath.Join(workdir, out), ContentType: p.out.contentType, Ext: p.out.ext}, nil
}

// secs writes seconds for ffmpeg with millisecond precision.
func secs(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }

// Every audio stream is brought to one rate and layout before it is
// joined or mixed: the filters refuse to mix different ones.
const (
	audioNorm = "aformat=sample_fmts=fltp:sample_rates=48000:channel_layouts=stereo"
	joinFPS   = 30
)

// allOneKind says whether every source is video, or every one audio.
func allOneKind(sources []Source) (video bool, err error) {
	video = sources[0].Info.HasVideo
	for _, s := range sources[1:] {
		if s.Info.HasVideo != video {
			return false, invalid("the items to join must all be videos or all be audio")
		}
	}
	return video, nil
}

// joinPlan concatenates the sources, each fading into the next over fade
// seconds when fade > 0. Videos are brought to the first one's frame
// size (letterboxed), 30 fps and a stereo sound track (silence for a
// video without one).
func joinPlan(sources []Source, fade float64) (plan, error) {
	if len(sources) < 2 {
		return plan{}, invalid("joining needs at least two items")
	}
	video, err := allOneKind(sources)
	if err != nil {
		return plan{}, err
	}
	var total float64
	for _, s := range sources {
		d := s.Info.Duration.Seconds()
		if fade > 0 && d <= fade {
			return plan{}, invalid(fmt.Sprintf("every item must be longer than the %gs crossfade", fade))
		}
		total += d
	}
	total -= fade * float64(len(sources)-1)
	var g []string
	w, h := sources[0].Info.Width&^1, sources[0].Info.Height&^1
	for i, s := range sources {
		d := secs(s.Info.Duration.Seconds())
		if video {
			g = append(g, fmt.Sprintf("[%d:v]scale=%d:%d:force_original_aspect_ratio=decrease,pad=%d:%d:(ow-iw)/2:(oh-ih)/2,setsar=1,fps=%d,format=yuv420p,trim=duration=%s,setpts=PTS-STARTPTS[v%d]",
				i, w, h, w, h, joinFPS, d, i))
		}
		if s.Info.HasAudio {
			g = append(g, fmt.Sprintf("[%d:a]%s,apad,atrim=duration=%s,asetpts=PTS-STARTPTS[a%d]", i, audioNorm, d, i))
		} else {
			g = append(g, fmt.Sprintf("anullsrc=r=48000:cl=stereo,atrim=duration=%s,%s[a%d]", d, audioNorm, i))
		}
	}
	out := formats["mp3"]
	maps := []string{"[a]"}
	if video {
		out, maps = formats["mp4"], []string{"[v]", "[a]"}
	}
	if fade == 0 {
		var in string
		for i := range sources {
			if video {
				in += fmt.Sprintf("[v%d]", i)
			}
			in += fmt.Sprintf("[a%d]", i)
		}
		v := 0
		if video {
			v = 1
		}
		g = append(g, fmt.Sprintf("%sconcat=n=%d:v=%d:a=1%s[a]", in, len(sources), v, map[bool]string{true: "[v]", false: ""}[video]))
		return plan{filter: strings.Join(g, ";"), maps: maps, out: out, duration: seconds(secs(total))}, nil
	}
	// Chains of pairwise crossfades: each joins what came before with the
	// next source, starting fade seconds before the end so far.
	vPrev, aPrev := "[v0]", "[a0]"
	offset := 0.0
	for i := 1; i < len(sources); i++ {
		offset += sources[i-1].Info.Duration.Seconds() - fade
		vOut, aOut := fmt.Sprintf("[vx%d]", i), fmt.Sprintf("[ax%d]", i)
		if i == len(sources)-1 {
			vOut, aOut = "[v]", "[a]"
		}
		if video {
			g = append(g, fmt.Sprintf("%s[v%d]xfade=transition=fade:duration=%s:offset=%s%s", vPrev, i, secs(fade), secs(offset), vOut))
		}
		g = append(g, fmt.Sprintf("%s[a%d]acrossfade=d=%s%s", aPrev, i, secs(fade), aOut))
		vPrev, aPrev = vOut, aOut
	}
	return plan{filter: strings.Join(g, ";"), maps: maps, out: out, duration: seconds(secs(total))}, nil
}

// mixPlan lays the second source's sound over the first's: music_under
// (the bed looped to the main item's length, scaled by overVol) and
// narrate (the voice at overVol after delay seconds, the main item's own
// sound scaled by mainVol). A video keeps its picture untouched; the
// result is as long as the main item, or for a narration over audio as
// long as whichever ends last.
func mixPlan(sources []Source, mainVol, overVol, delay float64, narrate bool) (plan, error) {
	if len(sources) != 2 {
		return plan{}, invalid("this operation takes exactly two items: the main one and the one laid over it")
	}
	main, over := sources[0], sources[1]
	if !over.Info.HasAudio {
		return plan{}, invalid("the second item has no sound to lay over the first")
	}
	dur := main.Info.Duration.Seconds()
	inputOpts := [][]string{nil, nil}
	overChain := fmt.Sprintf("[1:a]%s,volume=%s", audioNorm, secs(overVol))
	if narrate {
		ms := int64(delay * 1000)
		overChain += fmt.Sprintf(",adelay=%d|%d", ms, ms)
		if !main.Info.HasVideo {
			dur = max(dur, delay+over.Info.Duration.Seconds())
		}
	} else {
		// The bed repeats for as long as the main item lasts.
		inputOpts[1] = []string{"-stream_loop", "-1"}
	}
	g := []string{overChain + "[o]"}
	if main.Info.HasAudio {
		g = append(g, fmt.Sprintf("[0:a]%s,volume=%s[m]", audioNorm, secs(mainVol)),
			fmt.Sprintf("[m][o]amix=inputs=2:duration=longest:dropout_transition=0:normalize=0,atrim=duration=%s[a]", secs(dur)))
	} else {
		g = append(g, fmt.Sprintf("[o]apad,atrim=duration=%s[a]", secs(dur)))
	}
	p := plan{inputOpts: inputOpts, filter: strings.Join(g, ";"), out: formats["mp3"], maps: []string{"[a]"}, duration: seconds(secs(dur))}
	if main.Info.HasVideo {
		p.out, p.maps = formats["mp4"], []string{"0:v:0", "[a]"}
		p.codec = keepVideo(main)
	}
	return p, nil
}

// keepVideo copies an H.264 picture as it is (no quality lost, no time
// spent); anything else is re-encoded by the output format.
func keepVideo(s Source) []string {
	if s.Info.VideoCodec == "h264" {
		return []string{"-c:v", "copy"}
	}
	return nil
}

func trimPlan(sources []Source, start, end float64) (plan, error) {
	if len(sources) != 1 {
		return plan{}, invalid("trim takes one item")
	}
	s := sources[0]
	if start < 0 || end <= start {
		return plan{}, invalid("trim needs 0 <= start < end")
	}
	end = min(end, s.Info.Duration.Seconds())
	if end <= start {
		return plan{}, invalid("trim's start is past the end of the item")
	}
	p := plan{inputOpts: [][]string{{"-ss", secs(start), "-t", secs(end - start)}}, duration: seconds(secs(end - start)), out: formats["mp3"], maps: []string{"0:a:0"}}
	if s.Info.HasVideo {
		// Re-encoded, so the cut is exact rather than at a key frame.
		p.out, p.maps = formats["mp4"], []string{"0:v:0"}
		if s.Info.HasAudio {
			p.maps = append(p.maps, "0:a:0")
		}
	}
	return p, nil
}

func volumePlan(sources []Source, gain float64) (plan, error) {
	if len(sources) != 1 {
		return plan{}, invalid("volume takes one item")
	}
	s := sources[0]
	if !s.Info.HasAudio {
		return plan{}, invalid("the item has no sound to change")
	}
	p := plan{filter: fmt.Sprintf("[0:a]%s,volume=%s[a]", audioNorm, secs(gain)), maps: []string{"[a]"}, out: formats["mp3"], duration: s.Info.Duration}
	if s.Info.HasVideo {
		p.out, p.maps, p.codec = formats["mp4"], []string{"0:v:0", "[a]"}, keepVideo(s)
	}
	return p, nil
}

func transcodePlan(sources []Source, name string, audioOnly bool) (plan, error) {
	if len(sources) != 1 {
		return plan{}, invalid("this operation takes one item")
	}
	s := sources[0]
	f, ok := formats[name]
	switch {
	case !ok:
		return plan{}, invalid(fmt.Sprintf("unknown format %q", name))
	case audioOnly && !s.Info.HasVideo:
		return plan{}, invalid("extract_audio needs a video")
	case audioOnly && !s.Info.HasAudio:
		return plan{}, invalid("the video has no sound track to extract")
	case (audioOnly || !s.Info.HasVideo) && f.video:
		return plan{}, invalid(fmt.Sprintf("%s is a video format; audio goes to %s", name, strings.Join(AudioFormats, ", ")))
	case !audioOnly && s.Info.HasVideo && !f.video:
		return plan{}, invalid(fmt.Sprintf("%s is an audio format; a video goes to %s (extract_audio takes its sound)", name, strings.Join(VideoFormats, ", ")))
	}
	p := plan{out: f, duration: s.Info.Duration, maps: []string{"0:a:0"}}
	if f.video {
		p.maps = []string{"0:v:0"}
		if s.Info.HasAudio {
			p.maps = append(p.maps, "0:a:0")
		}
	}
	return p, nil
}
