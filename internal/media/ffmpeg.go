package media

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ffmpegRun is one ffmpeg invocation. Output files are named by the
// caller; ffmpeg runs in dir so files there can be named relatively inside
// filter graphs (no escaping of the caller's workdir path needed).
type ffmpegRun struct {
	bin      string
	dir      string
	step     string
	args     []string
	duration time.Duration // expected output length, for progress percent
	progress func(string)
	// encoded (may be nil) hears ffmpeg's out_time: the output encoded so
	// far.
	encoded func(time.Duration)
}

// run runs ffmpeg with -progress on stdout and reports the percentage
// encoded. The context kills ffmpeg (it has no children, so nothing is
// left behind). A failure is a *FailedError at r.step carrying the last
// lines ffmpeg wrote to stderr; cancellation is the context's error.
func (r ffmpegRun) run(ctx context.Context) error {
	bin := r.bin
	if bin == "" {
		bin = "ffmpeg"
	}
	args := append([]string{"-y", "-hide_banner", "-nostdin", "-nostats", "-loglevel", "error", "-progress", "pipe:1"}, r.args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = r.dir
	var stderr tailBuffer
	cmd.Stderr = &stderr
	// If ffmpeg is killed, do not wait long for pipes to drain.
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var execErr *exec.Error
		if errors.As(err, &execErr) || errors.Is(err, os.ErrNotExist) {
			return &FailedError{Step: r.step, Message: fmt.Sprintf("ffmpeg (%s) is not installed on the render worker", bin)}
		}
		return &FailedError{Step: r.step, Message: "ffmpeg could not start: " + err.Error(), Retryable: true}
	}
	r.readProgress(stdout)
	err = cmd.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		msg := stderr.lastLines(3)
		if msg == "" {
			msg = err.Error()
		}
		return &FailedError{Step: r.step, Message: "ffmpeg failed: " + msg}
	}
	return nil
}

// readProgress parses ffmpeg's -progress key=value blocks until EOF and
// reports "encoding N%" whenever the percentage moves.
func (r ffmpegRun) readProgress(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	last := -1
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok || (r.encoded == nil && (r.progress == nil || r.duration <= 0)) {
			continue
		}
		// out_time_us is microseconds (out_time_ms is too, despite its
		// name); it is "N/A" before the first frame.
		if k != "out_time_us" {
			continue
		}
		us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || us < 0 {
			continue
		}
		if r.encoded != nil {
			r.encoded(time.Duration(us) * time.Microsecond)
		}
		if r.progress == nil || r.duration <= 0 {
			continue
		}
		pct := min(int(time.Duration(us)*time.Microsecond*100/r.duration), 100)
		if pct != last {
			last = pct
			r.progress(fmt.Sprintf("encoding %d%%", pct))
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
}

// tailBuffer keeps the last 8 KiB written to it (ffmpeg's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8192 {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-8192:]...)
	}
	return len(p), nil
}

// lastLines is the last n non-blank lines, joined with "; ".
func (t *tailBuffer) lastLines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for _, l := range bytes.Split(t.buf, []byte("\n")) {
		if s := strings.TrimSpace(string(l)); s != "" {
			lines = append(lines, s)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

// filterArg escapes a value for an ffmpeg filter option inside a filter
// graph: once for the option parser (\ ' :) and once for the graph parser
// (\ ' , ; [ ]).
func filterArg(s string) string {
	opt := strings.NewReplacer(`\`, `\\`, `'`, `\'`, `:`, `\:`).Replace(s)
	return strings.NewReplacer(`\`, `\\`, `'`, `\'`, `,`, `\,`, `;`, `\;`, `[`, `\[`, `]`, `\]`).Replace(opt)
}

// fontDirs are searched when fontconfig does not answer.
var fontDirs = []string{"/usr/share/fonts", "/usr/local/share/fonts", "/usr/share/fonts/truetype"}

var (
	fontMu    sync.Mutex
	fontFound string
)

// findFont finds a TrueType/OpenType font for titles: fontconfig's "sans"
// if fc-match is installed, else DejaVuSans.ttf (Debian's ffmpeg pulls in
// fonts-dejavu-core), else any sans .ttf, else any .ttf/.otf under the
// font directories. A success is cached; a failure is not (fonts may be
// installed while the worker runs).
func findFont() (string, error) {
	fontMu.Lock()
	defer fontMu.Unlock()
	if fontFound != "" {
		return fontFound, nil
	}
	if out, err := exec.Command("fc-match", "-f", "%{file}", "sans").Output(); err == nil {
		p := strings.TrimSpace(string(out))
		if isFontFile(p) {
			fontFound = p
			return p, nil
		}
	}
	var best, sans, anyFont string
	for _, dir := range fontDirs {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !isFontFile(p) {
				return nil
			}
			base := strings.ToLower(filepath.Base(p))
			switch {
			case base == "dejavusans.ttf" && best == "":
				best = p
			case strings.Contains(base, "sans") && !strings.Contains(base, "mono") && sans == "":
				sans = p
			case anyFont == "":
				anyFont = p
			}
			return nil
		})
	}
	for _, p := range []string{best, sans, anyFont} {
		if p != "" {
			fontFound = p
			return p, nil
		}
	}
	return "", &FailedError{Step: "render", Message: "no TrueType font is installed on the render worker for the video title (install fonts-dejavu-core or set LocalVideo.FontFile)"}
}

func isFontFile(p string) bool {
	ext := strings.ToLower(filepath.Ext(p))
	if ext != ".ttf" && ext != ".otf" {
		return false
	}
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
