package media

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Info is what ffprobe says about a media file.
type Info struct {
	// Format is ffprobe's format name ("mp3", "mov,mp4,m4a,3gp,3g2,mj2", …).
	Format   string
	Duration time.Duration
	// HasVideo counts only moving pictures: an MP3's cover art is not video.
	HasVideo      bool
	HasAudio      bool
	Width, Height int
	VideoCodec    string
	AudioCodec    string
}

// MaxProbeDuration bounds what the library accepts as one file's length;
// past it a file is refused rather than edited for hours.
const MaxProbeDuration = 3 * time.Hour

// Probe runs ffprobe (bin; "" is "ffprobe" from PATH) on path. A file
// ffprobe cannot read is a non-retryable *FailedError at step "probe".
func Probe(ctx context.Context, bin, path string) (Info, error) {
	if bin == "" {
		bin = "ffprobe"
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Info{}, &FailedError{Step: "probe", Message: err.Error()}
	}
	cmd := exec.CommandContext(ctx, bin, "-v", "error", "-show_streams", "-show_format", "-of", "json", "file:"+abs)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return Info{}, ctx.Err()
	}
	if err != nil {
		var execErr *exec.Error
		if errors.As(err, &execErr) || errors.Is(err, os.ErrNotExist) {
			return Info{}, &FailedError{Step: "probe", Message: fmt.Sprintf("ffprobe (%s) is not installed on the worker", bin)}
		}
		msg := firstLine(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return Info{}, &FailedError{Step: "probe", Message: "the file could not be read as audio or video: " + msg}
	}
	return parseProbe(out)
}

type probeJSON struct {
	Streams []struct {
		CodecType   string `json:"codec_type"`
		CodecName   string `json:"codec_name"`
		Width       int    `json:"width"`
		Height      int    `json:"height"`
		Duration    string `json:"duration"`
		Disposition struct {
			AttachedPic int `json:"attached_pic"`
		} `json:"disposition"`
	} `json:"streams"`
	Format struct {
		FormatName string `json:"format_name"`
		Duration   string `json:"duration"`
	} `json:"format"`
}

func parseProbe(out []byte) (Info, error) {
	var p probeJSON
	if err := json.Unmarshal(out, &p); err != nil {
		return Info{}, &FailedError{Step: "probe", Message: "ffprobe answered something unreadable"}
	}
	info := Info{Format: p.Format.FormatName, Duration: seconds(p.Format.Duration)}
	for _, s := range p.Streams {
		switch s.CodecType {
		case "video":
			if s.Disposition.AttachedPic == 1 || info.HasVideo {
				continue
			}
			info.HasVideo, info.Width, info.Height, info.VideoCodec = true, s.Width, s.Height, s.CodecName
		case "audio":
			if !info.HasAudio {
				info.HasAudio, info.AudioCodec = true, s.CodecName
			}
		}
		if info.Duration == 0 {
			info.Duration = seconds(s.Duration)
		}
	}
	return info, nil
}

// seconds reads ffprobe's "12.345000" (or "N/A") as a duration.
func seconds(s string) time.Duration {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// Sniffed is a file's type judged by its first bytes.
type Sniffed struct {
	ContentType string
	Ext         string
	// Kind is "image" when the bytes say so; "" for audio and video
	// containers, whose kind the streams decide (Probe).
	Kind string
}

// Sniff judges a file by its first bytes (at least 16 are needed), never
// by its name or a Content-Type header: the containers the library takes
// (MP4/MOV/M4A, WebM/Matroska, MP3, WAV, Ogg, FLAC) and still images
// (JPEG, PNG, WebP, GIF). ok is false for anything else.
func Sniff(head []byte) (s Sniffed, ok bool) {
	has := func(off int, sig string) bool {
		return len(head) >= off+len(sig) && string(head[off:off+len(sig)]) == sig
	}
	switch {
	case has(4, "ftyp"):
		brand := ""
		if len(head) >= 12 {
			brand = string(head[8:12])
		}
		switch brand {
		case "M4A ", "M4B ":
			return Sniffed{ContentType: "audio/mp4", Ext: "m4a"}, true
		case "qt  ":
			return Sniffed{ContentType: "video/quicktime", Ext: "mov"}, true
		}
		return Sniffed{ContentType: "video/mp4", Ext: "mp4"}, true
	case has(0, "\x1a\x45\xdf\xa3"):
		return Sniffed{ContentType: "video/webm", Ext: "webm"}, true
	case has(0, "ID3"), len(head) >= 2 && head[0] == 0xFF && head[1]&0xE0 == 0xE0 && head[1]&0x06 != 0:
		// An ID3 tag, or an MPEG audio frame header (sync bits, a layer).
		return Sniffed{ContentType: "audio/mpeg", Ext: "mp3"}, true
	case has(0, "RIFF") && has(8, "WAVE"):
		return Sniffed{ContentType: "audio/wav", Ext: "wav"}, true
	case has(0, "RIFF") && has(8, "WEBP"):
		return Sniffed{ContentType: "image/webp", Ext: "webp", Kind: "image"}, true
	case has(0, "OggS"):
		return Sniffed{ContentType: "audio/ogg", Ext: "ogg"}, true
	case has(0, "fLaC"):
		return Sniffed{ContentType: "audio/flac", Ext: "flac"}, true
	case has(0, "\xff\xd8\xff"):
		return Sniffed{ContentType: "image/jpeg", Ext: "jpg", Kind: "image"}, true
	case has(0, "\x89PNG\r\n\x1a\n"):
		return Sniffed{ContentType: "image/png", Ext: "png", Kind: "image"}, true
	case has(0, "GIF87a"), has(0, "GIF89a"):
		return Sniffed{ContentType: "image/gif", Ext: "gif", Kind: "image"}, true
	}
	return Sniffed{}, false
}

// Classify settles a sniffed audio or video container by its streams:
// moving pictures make it video, else sound makes it audio (an MP4 or
// WebM with sound only is audio, with the matching type); neither is
// refused.
func Classify(s Sniffed, info Info) (Sniffed, error) {
	if s.Kind == "image" {
		return s, nil
	}
	switch {
	case info.HasVideo:
		s.Kind = "video"
		if s.ContentType == "audio/ogg" {
			s.ContentType = "video/ogg"
		}
	case info.HasAudio:
		s.Kind = "audio"
		switch s.ContentType {
		case "video/mp4", "video/quicktime":
			s.ContentType, s.Ext = "audio/mp4", "m4a"
		case "video/webm":
			s.ContentType = "audio/webm"
		}
	default:
		return s, &FailedError{Step: "probe", Message: "the file has no audio or video stream"}
	}
	if info.Duration <= 0 {
		return s, &FailedError{Step: "probe", Message: "the file's length could not be read"}
	}
	if info.Duration > MaxProbeDuration {
		return s, &FailedError{Step: "probe", Message: fmt.Sprintf("the file is %s long; the library takes files up to %s", info.Duration.Round(time.Second), MaxProbeDuration)}
	}
	return s, nil
}
