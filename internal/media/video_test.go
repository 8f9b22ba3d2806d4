package media

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLocalVideoTextToVideo(t *testing.T) {
	needFFmpeg(t)
	guarded, err := NewFilter([]string{`(?i)\bbroadcast\b`})
	if err != nil {
		t.Fatal(err)
	}
	lv := &LocalVideo{Filters: map[string]*Filter{"guarded": guarded}}
	for _, tc := range []struct {
		aspect string
		secs   int
		w, h   int
	}{
		{"16:9", 5, 1280, 720},
		{"9:16", 4, 720, 1280},
	} {
		t.Run(strings.ReplaceAll(tc.aspect, ":", "x"), func(t *testing.T) {
			dir := t.TempDir()
			var mu sync.Mutex
			var seen []string
			start := time.Now()
			out, err := lv.Render(context.Background(), Job{
				RunID: "2026-11-22T10:00:00.000Z#1a2b3c4d", Kind: KindVideo, Model: "open",
				// The other model's filter must not apply here.
				Prompt:  "A lighthouse at dawn, waves rolling in, a famous broadcast of the morning news",
				Seconds: tc.secs, AspectRatio: tc.aspect,
			}, dir, func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() })
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			t.Logf("%s %ds rendered in %v", tc.aspect, tc.secs, time.Since(start).Round(time.Millisecond))
			if filepath.Dir(out.Path) != dir || strings.ContainsAny(filepath.Base(out.Path), "#:") {
				t.Errorf("output %q: want a safe name inside %s", out.Path, dir)
			}
			if out.ContentType != "video/mp4" || out.Ext != "mp4" {
				t.Errorf("output type %q/%q", out.ContentType, out.Ext)
			}
			if files := listDir(t, dir); len(files) != 1 || files[0] != out.Path {
				t.Errorf("workdir holds %v, want only the clip", files)
			}
			checkClip(t, out.Path, float64(tc.secs), tc.w, tc.h)
			mu.Lock()
			defer mu.Unlock()
			joined := strings.Join(seen, "|")
			if !strings.Contains(joined, "encoding 100%") || seen[len(seen)-1] != "encoded" {
				t.Errorf("progress %q: want percentages up to 100%% then encoded", joined)
			}
		})
	}
}

func TestLocalVideoDeterministic(t *testing.T) {
	needFFmpeg(t)
	lv := &LocalVideo{Width: 320, Height: 180}
	job := Job{RunID: "r#1", Kind: KindVideo, Model: "m", Prompt: "same request, same clip", Seconds: 1, AspectRatio: "16:9"}
	var clips [2][]byte
	for i := range clips {
		out, err := lv.Render(context.Background(), job, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if clips[i], err = os.ReadFile(out.Path); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(clips[0], clips[1]) {
		t.Errorf("two renders of the same job differ (%d and %d bytes)", len(clips[0]), len(clips[1]))
	}
}

// near reports whether c is within tol of want in each channel.
func near(c color.Color, want color.RGBA, tol int) bool {
	r, g, b, _ := c.RGBA()
	d := func(a uint32, b uint8) int { x := int(a>>8) - int(b); return max(x, -x) }
	return d(r, want.R) <= tol && d(g, want.G) <= tol && d(b, want.B) <= tol
}

var (
	red   = color.RGBA{255, 0, 0, 255}
	green = color.RGBA{0, 255, 0, 255}
	blue  = color.RGBA{0, 0, 255, 255}
)

func writeImage(t *testing.T, path string, w, h int, at func(x, y int) color.RGBA, enc func(*os.File, image.Image) error) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, at(x, y))
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := enc(f, img); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func encPNG(f *os.File, img image.Image) error { return png.Encode(f, img) }
func encJPEG(f *os.File, img image.Image) error {
	return jpeg.Encode(f, img, &jpeg.Options{Quality: 95})
}

// withOrientation inserts an EXIF APP1 segment carrying an orientation tag
// right after a JPEG's SOI marker.
func withOrientation(t *testing.T, path string, orientation uint16) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tiff := []byte("MM\x00*\x00\x00\x00\x08")          // big-endian, IFD0 at 8
	tiff = binary.BigEndian.AppendUint16(tiff, 1)      // one entry
	tiff = binary.BigEndian.AppendUint16(tiff, 0x0112) // Orientation
	tiff = binary.BigEndian.AppendUint16(tiff, 3)      // SHORT
	tiff = binary.BigEndian.AppendUint32(tiff, 1)      // count
	tiff = binary.BigEndian.AppendUint16(tiff, orientation)
	tiff = append(tiff, 0, 0, 0, 0, 0, 0) // value padding, no next IFD
	seg := append([]byte("Exif\x00\x00"), tiff...)
	app1 := append([]byte{0xff, 0xe1}, binary.BigEndian.AppendUint16(nil, uint16(len(seg)+2))...)
	app1 = append(app1, seg...)
	out := append(append(append([]byte{}, b[:2]...), app1...), b[2:]...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLocalVideoFirstFrame(t *testing.T) {
	needFFmpeg(t)
	src := t.TempDir()
	// 1600x1000: left half red, right half blue.
	halves := filepath.Join(src, "halves.png")
	writeImage(t, halves, 1600, 1000, func(x, y int) color.RGBA {
		if x < 800 {
			return red
		}
		return blue
	}, encPNG)
	// 600x900: top third red, middle green, bottom blue.
	bands := func(x, y int) color.RGBA {
		switch {
		case y < 300:
			return red
		case y < 600:
			return green
		}
		return blue
	}
	bandsJPEG := filepath.Join(src, "bands.jpg")
	writeImage(t, bandsJPEG, 600, 900, bands, encJPEG)
	// The same picture stored sideways (900x600) with EXIF orientation 6
	// (rotate 90° clockwise to display), as phones write portrait photos.
	sideways := filepath.Join(src, "sideways.jpg")
	writeImage(t, sideways, 900, 600, func(x, y int) color.RGBA { return bands(599-y, x) }, encJPEG)
	withOrientation(t, sideways, 6)
	// A misleading name: the format is sniffed from the content.
	disguised := filepath.Join(src, "halves 100%d: copy.jpg")
	if b, err := os.ReadFile(halves); err != nil || os.WriteFile(disguised, b, 0o644) != nil {
		t.Fatal("copying the image")
	}

	type point struct {
		x, y int
		want color.RGBA
	}
	lv := &LocalVideo{}
	for _, tc := range []struct {
		name, image, aspect string
		w, h                int
		points              []point
	}{
		// Cover-scaled to 1280x800 and centre-cropped: both halves stay.
		{"png 16:9", halves, "16:9", 1280, 720, []point{{8, 360, red}, {1271, 360, blue}, {600, 8, red}, {680, 711, blue}}},
		// Cover-scaled to 2048x1280, centre 720 columns: the boundary
		// (x=1024) lands in the middle, so both colours show; a left or
		// right crop would show only one.
		{"png 9:16", disguised, "9:16", 720, 1280, []point{{8, 640, red}, {340, 100, red}, {380, 1180, blue}, {711, 640, blue}}},
		// Cover-scaled to 1280x1920, centre 720 rows: a thin red band at
		// the top, green, a thin blue band at the bottom.
		{"jpeg 16:9", bandsJPEG, "16:9", 1280, 720, []point{{640, 8, red}, {100, 150, green}, {1180, 570, green}, {640, 711, blue}}},
		{"jpeg 9:16", bandsJPEG, "9:16", 720, 1280, []point{{360, 100, red}, {100, 500, green}, {620, 800, green}, {360, 1180, blue}}},
		{"exif 9:16", sideways, "9:16", 720, 1280, []point{{360, 100, red}, {100, 500, green}, {620, 800, green}, {360, 1180, blue}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out, err := lv.Render(context.Background(), Job{
				RunID: "run#img", Kind: KindVideo, Model: "local", Prompt: "the first frame comes alive",
				Seconds: 2, AspectRatio: tc.aspect, ImagePath: tc.image,
			}, dir, nil)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			checkClip(t, out.Path, 2, tc.w, tc.h)
			frame := firstFrameOf(t, out.Path)
			if b := frame.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h {
				t.Fatalf("first frame %v", b)
			}
			for _, p := range tc.points {
				if c := frame.At(p.x, p.y); !near(c, p.want, 70) {
					t.Errorf("pixel (%d,%d) = %v, want about %v", p.x, p.y, c, p.want)
				}
			}
		})
	}
}

func TestLocalVideoAwkwardPrompt(t *testing.T) {
	needFFmpeg(t)
	prompt := "He said \"it's 100% done\": C:\\temp\\new %{pts} %{localtime} \\n \\\\ ; [x], 'y' = z\n" +
		"second line\ttabbed\r\nthird: ünïcödé — 東京 🎬 " + strings.Repeat("averyveryverylongwordwithoutanyspaces", 3) + " " +
		strings.Repeat("and the prompt goes on and on ", 20)
	dir := t.TempDir()
	out, err := (&LocalVideo{}).Render(context.Background(), Job{RunID: "r#awk", Kind: KindVideo, Model: "m", Prompt: prompt, Seconds: 2, AspectRatio: "9:16"}, dir, nil)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	checkClip(t, out.Path, 2, 720, 1280)
}

func TestLocalVideoFilterRefuses(t *testing.T) {
	guarded, err := NewFilter([]string{`(?i)\bbroadcast\b`})
	if err != nil {
		t.Fatal(err)
	}
	lv := &LocalVideo{Filters: map[string]*Filter{"guarded": guarded}, FFmpeg: "/nonexistent/ffmpeg"}
	dir := t.TempDir()
	_, err = lv.Render(context.Background(), Job{RunID: "r#1", Kind: KindVideo, Model: "guarded", Prompt: "A famous BROADCAST", Seconds: 5, AspectRatio: "16:9"}, dir, nil)
	var refused *RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("err = %v, want *RefusedError", err)
	}
	if refused.Message != refusedByFilter || strings.Contains(refused.Message, "broadcast") {
		t.Errorf("message %q names the pattern or is not the generic one", refused.Message)
	}
	if files := listDir(t, dir); len(files) != 0 {
		t.Errorf("a refused render left %v", files)
	}
}

func TestLocalVideoCancel(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	started := make(chan time.Time, 1)
	done := make(chan error, 1)
	go func() {
		_, err := (&LocalVideo{}).Render(ctx, Job{RunID: "r#cancel", Kind: KindVideo, Model: "m", Prompt: "a long clip", Seconds: 120, AspectRatio: "16:9"}, dir,
			func(s string) {
				// ffmpeg is running once it reports progress: cancel then.
				if strings.HasPrefix(s, "encoding ") {
					once.Do(func() { started <- time.Now(); cancel() })
				}
			})
		done <- err
	}()
	var at time.Time
	select {
	case at = <-started:
	case err := <-done:
		t.Fatalf("Render returned before ffmpeg ran: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("ffmpeg never reported progress")
	}
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if d := time.Since(at); d > 3*time.Second {
			t.Errorf("Render took %v to return after cancel", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Render did not return after cancel")
	}
	if procs := processesMentioning(t, dir); len(procs) > 0 {
		t.Errorf("ffmpeg still running after cancel: pids %v", procs)
	}
	if files := listDir(t, dir); len(files) != 0 {
		t.Errorf("a cancelled render left %v", files)
	}
}

// processesMentioning lists the pids whose command line or working
// directory mentions dir (the render's unique workdir).
func processesMentioning(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("reading /proc: %v", err)
	}
	var pids []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if bytes.Contains(cmdline, []byte(dir)) || cwd == dir {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func TestLocalVideoRejects(t *testing.T) {
	dir := t.TempDir()
	notImage := filepath.Join(dir, "notes.png")
	if err := os.WriteFile(notImage, []byte("hello, not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := Job{RunID: "r#1", Kind: KindVideo, Model: "m", Prompt: "p", Seconds: 2, AspectRatio: "16:9"}
	for name, mut := range map[string]func(*Job){
		"aspect":    func(j *Job) { j.AspectRatio = "4:3" },
		"seconds":   func(j *Job) { j.Seconds = 0 },
		"kind":      func(j *Job) { j.Kind = KindSpeech },
		"not image": func(j *Job) { j.ImagePath = notImage },
		"no image":  func(j *Job) { j.ImagePath = filepath.Join(dir, "missing.jpg") },
	} {
		t.Run(name, func(t *testing.T) {
			job := base
			mut(&job)
			_, err := (&LocalVideo{}).Render(context.Background(), job, dir, nil)
			var failed *FailedError
			if !errors.As(err, &failed) || failed.Step != "validate" || failed.Retryable {
				t.Fatalf("err = %#v, want a non-retryable validate FailedError", err)
			}
		})
	}
}

func TestLocalVideoFFmpegFailures(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	job := Job{RunID: "r#1", Kind: KindVideo, Model: "m", Prompt: "p", Seconds: 1, AspectRatio: "16:9"}

	_, err := (&LocalVideo{FFmpeg: filepath.Join(dir, "no-ffmpeg")}).Render(context.Background(), job, dir, nil)
	var failed *FailedError
	if !errors.As(err, &failed) || failed.Step != "encode" || !strings.Contains(failed.Message, "not installed") {
		t.Errorf("missing ffmpeg: err = %v", err)
	}

	// A PNG signature followed by junk passes the sniff but not ffmpeg.
	broken := filepath.Join(dir, "broken.png")
	if err := os.WriteFile(broken, append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 100)...), 0o644); err != nil {
		t.Fatal(err)
	}
	job.ImagePath = broken
	_, err = (&LocalVideo{}).Render(context.Background(), job, dir, nil)
	if !errors.As(err, &failed) || failed.Step != "encode" || failed.Retryable || !strings.HasPrefix(failed.Message, "ffmpeg failed: ") || len(failed.Message) < 20 {
		t.Errorf("broken image: err = %#v", err)
	}
	if files := listDir(t, dir); len(files) != 1 {
		t.Errorf("a failed render left %v", files)
	}
}

func TestWrapText(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		lines int
		want  []string
	}{
		{"a b c", 10, 3, []string{"a b c"}},
		{"one two three four", 9, 3, []string{"one two", "three", "four"}},
		{"line one\nline two", 20, 3, []string{"line one", "line two"}},
		{"abcdefghij", 4, 5, []string{"abcd", "efgh", "ij"}},
		{"a b c d e f", 1, 3, []string{"a", "b", "…"}},
		{"aaa bbb ccc ddd", 3, 2, []string{"aaa", "bb…"}},
		{"tab\there\x00nul", 20, 2, []string{"tab here nul"}},
		{"  \n\n ", 10, 3, nil},
	} {
		got := wrapText(tc.in, tc.width, tc.lines)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("wrapText(%q, %d, %d) = %q, want %q", tc.in, tc.width, tc.lines, got, tc.want)
		}
	}
}

func TestFilter(t *testing.T) {
	if _, err := NewFilter([]string{"("}); err == nil {
		t.Error("a broken pattern compiled")
	}
	f, err := NewFilter([]string{`\bnews\b`, "", `(?i)\bbroadcast\b`})
	if err != nil {
		t.Fatal(err)
	}
	for text, refused := range map[string]bool{
		"evening NEWS": true, "a famous broadcast": true, "newsletter": false, "broadcasting": false, "a cat": false,
	} {
		err := f.Check(text)
		var r *RefusedError
		if got := errors.As(err, &r); got != refused {
			t.Errorf("Check(%q) = %v, want refused %v", text, err, refused)
		}
	}
	var none *Filter
	if err := none.Check("anything at all"); err != nil {
		t.Errorf("nil filter: %v", err)
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"2026-11-22T10:00:00.000Z#1a2b3c4d": "2026-11-22T10-00-00.000Z-1a2b3c4d",
		"../../etc/passwd":                  "etc-passwd",
		"":                                  "video",
		"#":                                 "video",
	} {
		if got := safeName(in, "video"); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
}
