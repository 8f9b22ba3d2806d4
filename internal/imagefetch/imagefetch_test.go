package imagefetch

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"
)

func codeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestCheckURL(t *testing.T) {
	cases := map[string]string{
		"https://images.example.com/a.png":      "",
		"https://images.example.com:443/a.png":  "",
		"https://93.184.215.14/a.png":           "",
		"http://images.example.com/a.png":       CodeURLInvalid,
		"ftp://images.example.com/a.png":        CodeURLInvalid,
		"https://user:pw@images.example.com/a":  CodeURLInvalid,
		"https://images.example.com:8443/a.png": CodeURLInvalid,
		"https:///a.png":                        CodeURLInvalid,
		"not a url":                             CodeURLInvalid,
		"https://127.0.0.1/a.png":               CodeURLBlocked,
		"https://[::1]/a.png":                   CodeURLBlocked,
		"https://[::ffff:127.0.0.1]/a.png":      CodeURLBlocked,
		"https://10.1.2.3/a.png":                CodeURLBlocked,
		"https://192.168.1.1/a.png":             CodeURLBlocked,
		"https://169.254.169.254/latest":        CodeURLBlocked,
		"https://[fd00:ec2::254]/":              CodeURLBlocked,
		"https://100.100.100.200/":              CodeURLBlocked,
		"https://localhost/a.png":               CodeURLBlocked,
		"https://foo.localhost/a.png":           CodeURLBlocked,
		"https://foo.internal/a.png":            CodeURLBlocked,
		"https://metadata.google.internal/":     CodeURLBlocked,
		"https://intranet/a.png":                CodeURLBlocked,
		"https://2130706433/a.png":              CodeURLBlocked,
		"https://0x7f000001/a.png":              CodeURLBlocked,
		"https://127.1/a.png":                   CodeURLBlocked,
	}
	for raw, want := range cases {
		_, err := CheckURL(raw)
		if got := codeOf(err); got != want {
			t.Errorf("CheckURL(%q): %q (%v), want %q", raw, got, err, want)
		}
	}
}

func encode(t testing.TB, w, h int, format string) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 90, 255})
		}
	}
	var b bytes.Buffer
	var err error
	if format == "png" {
		err = png.Encode(&b, img)
	} else {
		err = jpeg.Encode(&b, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// webpVP8L is a minimal lossless WebP header declaring w x h: enough for
// DecodeConfig, which is all Sniff reads.
func webpVP8L(w, h int) []byte {
	bits := uint32(w-1) | uint32(h-1)<<14
	payload := []byte{0x2f, byte(bits), byte(bits >> 8), byte(bits >> 16), byte(bits >> 24)}
	chunk := append([]byte("VP8L"), byte(len(payload)), 0, 0, 0)
	chunk = append(chunk, payload...)
	if len(payload)%2 == 1 {
		chunk = append(chunk, 0)
	}
	size := 4 + len(chunk)
	return append([]byte{'R', 'I', 'F', 'F', byte(size), byte(size >> 8), 0, 0, 'W', 'E', 'B', 'P'}, chunk...)
}

func TestSniff(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		ct   string
		code string
	}{
		{"png", encode(t, 640, 480, "png"), "image/png", ""},
		{"jpeg", encode(t, 480, 640, "jpeg"), "image/jpeg", ""},
		{"webp", webpVP8L(800, 600), "image/webp", ""},
		{"html", []byte("<!doctype html><html><body>not an image</body></html>"), "", CodeUnsupportedType},
		{"gif", []byte("GIF89a\x01\x00\x01\x00"), "", CodeUnsupportedType},
		{"truncated png", encode(t, 640, 480, "png")[:20], "", CodeUnsupportedType},
		{"tiny", encode(t, 100, 100, "png"), "", CodeDimensions},
		{"too thin", encode(t, 2000, 300, "png"), "", CodeDimensions},
	}
	for _, c := range cases {
		img, err := Sniff(c.b)
		if got := codeOf(err); got != c.code {
			t.Errorf("%s: code %q (%v), want %q", c.name, got, err, c.code)
			continue
		}
		if c.code == "" && img.ContentType != c.ct {
			t.Errorf("%s: type %s, want %s", c.name, img.ContentType, c.ct)
		}
	}
}

func FuzzSniff(f *testing.F) {
	f.Add(encode(f, 300, 300, "png"))
	f.Add(encode(f, 300, 300, "jpeg"))
	f.Add(webpVP8L(300, 300))
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8 "))
	f.Fuzz(func(t *testing.T, b []byte) {
		img, err := Sniff(b)
		if err != nil {
			if codeOf(err) == "" {
				t.Fatalf("refusal without a code: %v", err)
			}
			return
		}
		long, short := max(img.Width, img.Height), min(img.Width, img.Height)
		if short < MinSide || long > MaxSide || long > MaxAspect*short {
			t.Fatalf("accepted %dx%d", img.Width, img.Height)
		}
	})
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://a.example.com/x.png", "https://127.0.0.1/", "https://[::ffff:10.0.0.1]/", "http://x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := CheckURL(raw)
		if err != nil {
			if codeOf(err) == "" {
				t.Fatalf("refusal without a code: %v", err)
			}
			return
		}
		if u.Scheme != "https" || u.User != nil || (u.Port() != "" && u.Port() != "443") {
			t.Fatalf("accepted %q", raw)
		}
	})
}
