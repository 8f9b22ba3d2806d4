package media

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// LocalVideo renders real MP4 files with ffmpeg: the prompt as an animated
// title over a moving gradient, or over the first frame (scaled to cover,
// centre-cropped, slowly zooming), with a generated chord as the audio
// track; H.264/AAC, exactly the length and frame sold. Colours, motion and
// chord derive from the request, so the same request renders the same
// clip. It is the embedded default: no provider account, nothing to pay,
// yet a real file the buyer can play.
type LocalVideo struct {
	FFmpeg string // path of ffmpeg; "" → "ffmpeg" from PATH
	// Filters by model; a nil map or a model without one accepts every
	// prompt.
	Filters map[string]*Filter
	// Width and Height of the 16:9 frame (9:16 swaps them); default
	// 1280x720. Odd sizes are rounded down to even (yuv420p needs it).
	Width, Height int
	// Heights overrides the frame's short side by model (768 for a model
	// sold as 768p); the long side follows at 16:9, rounded to even.
	Heights map[string]int
	FPS     int // default 24
	// FontFile is the title font; "" finds one at run time (fontconfig's
	// sans, else DejaVuSans.ttf under /usr/share/fonts).
	FontFile string
}

// Render makes the clip as workdir/<run id made safe>.mp4. The content
// filter runs first, so a refused prompt costs nothing and leaves no file.
func (l *LocalVideo) Render(ctx context.Context, job Job, workdir string, progress func(string)) (Output, error) {
	if err := checkFilter(l.Filters, job.Model, job.Prompt); err != nil {
		return Output{}, err
	}
	if err := validateVideo(job); err != nil {
		return Output{}, err
	}
	if st, err := os.Stat(workdir); err != nil || !st.IsDir() {
		return Output{}, &FailedError{Step: "render", Message: "the work directory is missing", Retryable: true}
	}
	workdir, err := filepath.Abs(workdir)
	if err != nil {
		return Output{}, &FailedError{Step: "render", Message: err.Error()}
	}
	font := l.FontFile
	if font == "" {
		if font, err = findFont(); err != nil {
			return Output{}, err
		}
	}
	w, h := l.Width&^1, l.Height&^1
	if w <= 0 || h <= 0 {
		w, h = 1280, 720
	}
	if mh := l.Heights[job.Model] &^ 1; mh > 0 {
		w, h = (mh*16/9+1)&^1, mh
	}
	w, h, _ = aspect(job.AspectRatio, w, h)
	fps := l.FPS
	if fps <= 0 {
		fps = 24
	}
	seed := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d\x00%s\x00%t", job.Model, job.Prompt, job.Seconds, job.AspectRatio, job.ImagePath != "")))
	secs := fmt.Sprint(job.Seconds)
	frames := job.Seconds * fps

	var args []string
	var video string
	if job.ImagePath != "" {
		img, err := sniffImage(job.ImagePath)
		if err != nil {
			return Output{}, err
		}
		abs, err := filepath.Abs(job.ImagePath)
		if err != nil {
			return Output{}, &FailedError{Step: "validate", Message: err.Error()}
		}
		// An explicit demuxer and the file: protocol, so a '%' or ':' in the
		// path is never read as a sequence pattern or a protocol. ffmpeg's
		// own rotation is off: the EXIF orientation is applied below, the
		// same on every ffmpeg version.
		args = append(args, "-noautorotate", "-f", img.demuxer, "-i", "file:"+abs)
		// Scale to cover at twice the size and centre-crop: the first frame
		// is exactly the centre crop, and zoompan (whose pan positions are
		// whole pixels) zooms smoothly on the supersampled image.
		video = "[0:v]" + img.orient() + fmt.Sprintf("scale=%d:%d:force_original_aspect_ratio=increase:flags=bicubic,crop=%d:%d,setsar=1,"+
			"zoompan=z='1+0.06*on/%d':d=%d:x='iw/2-iw/zoom/2':y='ih/2-ih/zoom/2':s=%dx%d:fps=%d",
			2*w, 2*h, 2*w, 2*h, max(frames, 1), frames+fps, w, h, fps)
	} else {
		// Linear or radial only: the circular and spiral kinds cost an
		// atan2 per pixel and triple the encode time.
		c := palette(seed[:])
		args = append(args, "-f", "lavfi", "-i", fmt.Sprintf("gradients=s=%dx%d:r=%d:d=%s:c0=%s:c1=%s:c2=%s:nb_colors=3:speed=0.012:seed=%d:type=%d",
			w, h, fps, secs, c[0], c[1], c[2], binary.BigEndian.Uint32(seed[12:16]), int(seed[16])%2))
		video = "[0:v]setsar=1"
	}

	titles, err := l.writeTitles(job.Prompt, workdir, w, h)
	defer func() {
		for _, t := range titles {
			_ = os.Remove(filepath.Join(workdir, t))
		}
	}()
	if err != nil {
		return Output{}, err
	}
	video += drawTitles(titles, font, w, h)
	video += ",format=yuv420p[v]"

	args = append(args, "-f", "lavfi", "-i", fmt.Sprintf("aevalsrc=%s:c=stereo:s=48000:d=%s", chord(seed[20:24]), secs))
	audio := fmt.Sprintf("[1:a]afade=t=in:d=0.5,afade=t=out:st=%g:d=0.5[a]", math.Max(0, float64(job.Seconds)-0.5))

	stem := safeName(job.RunID, "video")
	part := filepath.Join(workdir, stem+".part.mp4")
	out := filepath.Join(workdir, stem+".mp4")
	args = append(args,
		"-filter_complex", video+";"+audio, "-map", "[v]", "-map", "[a]",
		"-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p", "-r", fmt.Sprint(fps), "-g", fmt.Sprint(2*fps),
		"-c:a", "aac", "-b:a", "128k", "-ar", "48000",
		"-t", secs, "-movflags", "+faststart", "-fflags", "+bitexact", "-f", "mp4", "file:"+part)

	report(progress, "encoding")
	run := ffmpegRun{bin: l.FFmpeg, dir: workdir, step: "encode", args: args, duration: time.Duration(job.Seconds) * time.Second, progress: progress}
	if err := run.run(ctx); err != nil {
		_ = os.Remove(part)
		return Output{}, err
	}
	if err := os.Rename(part, out); err != nil {
		_ = os.Remove(part)
		return Output{}, &FailedError{Step: "encode", Message: err.Error()}
	}
	report(progress, "encoded")
	return Output{Path: out, ContentType: "video/mp4", Ext: "mp4"}, nil
}

// titleFontSize is the title's font size for a w x h frame.
func titleFontSize(w, h int) int { return max(min(w, h)/14, 12) }

// writeTitles wraps the prompt and writes one text file per line into
// workdir, returning their (relative) names. drawtext reads the text from
// files with expansion off, so quotes, colons, '%' and backslashes in a
// prompt are drawn as typed and never parsed.
func (l *LocalVideo) writeTitles(prompt, workdir string, w, h int) ([]string, error) {
	fs := titleFontSize(w, h)
	// DejaVu Sans averages about 0.6 em per character; keep a margin.
	perLine := max(int(0.88*float64(w)/(0.62*float64(fs))), 8)
	maxLines := 5
	if h > w {
		maxLines = 9
	}
	var names []string
	for i, line := range wrapText(prompt, perLine, maxLines) {
		name := fmt.Sprintf("title-%d.txt", i)
		if err := os.WriteFile(filepath.Join(workdir, name), []byte(line), 0o600); err != nil {
			return names, &FailedError{Step: "render", Message: "writing the title: " + err.Error(), Retryable: true}
		}
		names = append(names, name)
	}
	return names, nil
}

// drawTitles draws each line centred, the block centred in the frame; the
// lines fade in and rise into place one after another within the first
// second.
func drawTitles(files []string, font string, w, h int) string {
	if len(files) == 0 {
		return ""
	}
	fs := titleFontSize(w, h)
	lineH := fs * 13 / 10
	top := (h - len(files)*lineH) / 2
	rise := h / 24
	var b strings.Builder
	for i, f := range files {
		start := 0.5 * float64(i) / float64(len(files))
		a := fmt.Sprintf("clip((t-%.3f)/0.6\\,0\\,1)", start)
		fmt.Fprintf(&b, ",drawtext=fontfile=%s:textfile=%s:expansion=none:fontsize=%d:fontcolor=white"+
			":borderw=%d:bordercolor=black@0.6:shadowx=2:shadowy=2:shadowcolor=black@0.4"+
			":x=(w-text_w)/2:y=%d+%d*pow(1-%s\\,2):alpha=%s",
			filterArg(font), filterArg(f), fs, max(fs/18, 1), top+i*lineH, rise, a, a)
	}
	return b.String()
}

// wrapText turns a prompt into at most maxLines lines of at most width
// characters: the prompt's own line breaks are kept, long lines are
// wrapped at spaces, words longer than a line are split, control
// characters and invalid UTF-8 are dropped. When the prompt is cut the
// last line ends in an ellipsis.
func wrapText(text string, width, maxLines int) []string {
	text = strings.ToValidUTF8(text, "")
	var out []string
	cut := false
	for _, para := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		para = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) || r == utf8.RuneError {
				return ' '
			}
			return r
		}, para)
		cur := ""
		flush := func() {
			if cur != "" {
				out = append(out, cur)
				cur = ""
			}
		}
		for _, word := range strings.Fields(para) {
			for utf8.RuneCountInString(word) > width {
				flush()
				r := []rune(word)
				out = append(out, string(r[:width]))
				word = string(r[width:])
			}
			switch {
			case cur == "":
				cur = word
			case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(word) <= width:
				cur += " " + word
			default:
				flush()
				cur = word
			}
		}
		flush()
		if len(out) > maxLines {
			cut = true
			break
		}
	}
	if len(out) > maxLines {
		out, cut = out[:maxLines], true
	}
	if cut && len(out) > 0 {
		last := []rune(out[len(out)-1])
		if len(last) >= width {
			last = last[:width-1]
		}
		out[len(out)-1] = strings.TrimRight(string(last), " ") + "…"
	}
	return out
}

// palette is three background colours from the seed: spread hues, muted
// enough that a white title stays readable.
func palette(seed []byte) [3]string {
	hue := float64(binary.BigEndian.Uint16(seed[0:2])) / 65536
	var c [3]string
	for i := range c {
		hh := math.Mod(hue+float64(i)*(0.18+float64(seed[2+i]%40)/400), 1)
		s := 0.45 + float64(seed[5+i]%30)/100
		v := 0.32 + float64(seed[8+i]%25)/100
		r, g, b := hsv(hh, s, v)
		c[i] = fmt.Sprintf("0x%02x%02x%02x", r, g, b)
	}
	return c
}

func hsv(h, s, v float64) (uint8, uint8, uint8) {
	i := math.Floor(h * 6)
	f := h*6 - i
	p, q, t := v*(1-s), v*(1-f*s), v*(1-(1-f)*s)
	var r, g, b float64
	switch int(i) % 6 {
	case 0:
		r, g, b = v, t, p
	case 1:
		r, g, b = q, v, p
	case 2:
		r, g, b = p, v, t
	case 3:
		r, g, b = p, q, v
	case 4:
		r, g, b = t, p, v
	default:
		r, g, b = v, p, q
	}
	return uint8(r * 255), uint8(g * 255), uint8(b * 255)
}

// chord is a soft major or minor triad with a slow swell, as a stereo
// aevalsrc expression pair (the right channel slightly detuned for
// width). It contains no ',' or ':', so it needs no escaping.
func chord(seed []byte) string {
	root := 110 * math.Pow(2, float64(seed[0]%12)/12) // A2 .. G#3
	third := math.Pow(2, 4.0/12)                      // major
	if seed[1]%2 == 1 {
		third = math.Pow(2, 3.0/12) // minor
	}
	fifth := math.Pow(2, 7.0/12)
	swell := 0.15 + float64(seed[2]%10)/40
	ch := func(detune float64) string {
		f := root * detune
		return fmt.Sprintf("(0.11*sin(2*PI*%.3f*t)+0.08*sin(2*PI*%.3f*t)+0.07*sin(2*PI*%.3f*t)+0.03*sin(2*PI*%.3f*t))*(0.8+0.2*sin(2*PI*%.3f*t))",
			f, f*third, f*fifth, f*2, swell)
	}
	return "'" + ch(1) + "|" + ch(1.002) + "'"
}
