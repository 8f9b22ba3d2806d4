package imagefetch

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/netip"
	"strings"
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

// Audit item 5: ::/96 and Teredo (2001::/32) were fetchable. Every block of
// the IANA special-purpose registries is refused; one row per range, with
// public neighbours that must stay fetchable.
func TestBlockedFollowsTheSpecialPurposeRegistries(t *testing.T) {
	cases := []struct {
		addr    string
		blocked bool
		why     string
	}{
		// IPv4 special-purpose registry.
		{"0.0.0.0", true, "0.0.0.0/8 this network"},
		{"0.255.255.255", true, "0.0.0.0/8 this network"},
		{"10.0.0.1", true, "10.0.0.0/8 private"},
		{"100.64.0.1", true, "100.64.0.0/10 shared (CGNAT)"},
		{"100.127.255.254", true, "100.64.0.0/10 shared (CGNAT)"},
		{"100.100.100.200", true, "100.64.0.0/10: a cloud metadata address"},
		{"100.63.255.255", false, "just below 100.64.0.0/10"},
		{"100.128.0.0", false, "just above 100.64.0.0/10"},
		{"127.0.0.1", true, "127.0.0.0/8 loopback"},
		{"127.255.255.254", true, "127.0.0.0/8 loopback"},
		{"169.254.169.254", true, "169.254.0.0/16 link local: metadata"},
		{"172.16.0.1", true, "172.16.0.0/12 private"},
		{"172.31.255.255", true, "172.16.0.0/12 private"},
		{"172.32.0.1", false, "just above 172.16.0.0/12"},
		{"192.0.0.1", true, "192.0.0.0/24 IETF protocol assignments"},
		{"192.0.0.9", true, "192.0.0.9/32 PCP anycast"},
		{"192.0.0.170", true, "192.0.0.170/32 NAT64 discovery"},
		{"192.0.2.1", true, "192.0.2.0/24 TEST-NET-1"},
		{"192.31.196.1", true, "192.31.196.0/24 AS112-v4"},
		{"192.52.193.1", true, "192.52.193.0/24 AMT"},
		{"192.88.99.1", true, "192.88.99.0/24 6to4 relay anycast"},
		{"192.168.1.1", true, "192.168.0.0/16 private"},
		{"192.175.48.1", true, "192.175.48.0/24 AS112 direct delegation"},
		{"198.18.0.1", true, "198.18.0.0/15 benchmarking"},
		{"198.19.255.255", true, "198.18.0.0/15 benchmarking"},
		{"198.20.0.1", false, "just above 198.18.0.0/15"},
		{"198.51.100.1", true, "198.51.100.0/24 TEST-NET-2"},
		{"203.0.113.1", true, "203.0.113.0/24 TEST-NET-3"},
		{"224.0.0.1", true, "224.0.0.0/4 multicast"},
		{"239.255.255.250", true, "224.0.0.0/4 multicast"},
		{"240.0.0.1", true, "240.0.0.0/4 reserved"},
		{"255.255.255.255", true, "255.255.255.255/32 limited broadcast"},
		{"93.184.215.14", false, "public"},
		{"8.8.8.8", false, "public"},
		// IPv6 special-purpose registry, and everything outside 2000::/3.
		{"::", true, "::/128 unspecified"},
		{"::1", true, "::1/128 loopback"},
		{"::7f00:1", true, "::/96 IPv4-compatible 127.0.0.1"},
		{"::a00:1", true, "::/96 IPv4-compatible 10.0.0.1"},
		{"::5db8:d70e", true, "::/96 IPv4-compatible, even of a public address"},
		{"::ffff:127.0.0.1", true, "::ffff:0:0/96 IPv4-mapped loopback"},
		{"::ffff:10.1.2.3", true, "::ffff:0:0/96 IPv4-mapped private"},
		{"::ffff:93.184.215.14", true, "::ffff:0:0/96 IPv4-mapped, not globally reachable"},
		{"::ffff:0:7f00:1", true, "::ffff:0:0:0/96 IPv4-translated"},
		{"64:ff9b::7f00:1", true, "64:ff9b::/96 NAT64 of 127.0.0.1"},
		{"64:ff9b::a9fe:a9fe", true, "64:ff9b::/96 NAT64 of 169.254.169.254"},
		{"64:ff9b::c0a8:101", true, "64:ff9b::/96 NAT64 of 192.168.1.1"},
		{"64:ff9b::5db8:d70e", false, "64:ff9b::/96 NAT64 of public 93.184.215.14"},
		{"64:ff9b:1::5db8:d70e", true, "64:ff9b:1::/48 local-use NAT64"},
		{"100::1", true, "100::/64 discard-only"},
		{"100:0:0:1::1", true, "100:0:0:1::/64 dummy prefix"},
		{"2001::1", true, "2001::/32 Teredo"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", true, "2001::/32 Teredo with public server and client"},
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", true, "2001::/32 Teredo with client 10.0.0.1"},
		{"2001:1::1", true, "2001:1::1/128 PCP anycast"},
		{"2001:1::2", true, "2001:1::2/128 TURN anycast"},
		{"2001:2::1", true, "2001:2::/48 benchmarking"},
		{"2001:3::1", true, "2001:3::/32 AMT"},
		{"2001:4:112::1", true, "2001:4:112::/48 AS112-v6"},
		{"2001:10::1", true, "2001:10::/28 deprecated ORCHID"},
		{"2001:20::1", true, "2001:20::/28 ORCHIDv2"},
		{"2001:30::1", true, "2001:30::/28 DRIP"},
		{"2001:1ff:ffff::1", true, "2001::/23 IETF protocol assignments"},
		{"2001:200::1", false, "just above 2001::/23 (an APNIC block)"},
		{"2001:db8::1", true, "2001:db8::/32 documentation"},
		{"2002:7f00:1::1", true, "2002::/16 6to4 of 127.0.0.1"},
		{"2002:a9fe:a9fe::1", true, "2002::/16 6to4 of 169.254.169.254"},
		{"2002:5db8:d70e::1", true, "2002::/16 6to4, refused whole even of a public address"},
		{"2620:4f:8000::1", true, "2620:4f:8000::/48 AS112 direct delegation"},
		{"3fff::1", true, "3fff::/20 documentation"},
		{"5f00::1", true, "5f00::/16 SRv6 SIDs"},
		{"fc00::1", true, "fc00::/7 unique local"},
		{"fd00:ec2::254", true, "fc00::/7: a cloud metadata address"},
		{"fe80::1", true, "fe80::/10 link local"},
		{"fec0::1", true, "fec0::/10 deprecated site local"},
		{"ff02::1", true, "ff00::/8 multicast"},
		{"4000::1", true, "outside 2000::/3 global unicast"},
		{"2606:4700:4700::1111", false, "public"},
		{"2001:4860:4860::8888", false, "public"},
		{"2a00:1450:4001:80b::200e", false, "public"},
		{"2606:4700:4700::1111%eth0", true, "a zoned address"},
	}
	for _, c := range cases {
		ip, err := netip.ParseAddr(c.addr)
		if err != nil {
			t.Fatalf("%s: %v", c.addr, err)
		}
		if got := blocked(ip); got != c.blocked {
			t.Errorf("blocked(%s) = %v, want %v (%s)", c.addr, got, c.blocked, c.why)
		}
		// A literal address in image_url meets the same rule.
		host := c.addr
		if ip.Is6() {
			host = "[" + strings.ReplaceAll(host, "%", "%25") + "]"
		}
		want := ""
		if c.blocked {
			want = CodeURLBlocked
		}
		if _, err := CheckURL("https://" + host + "/a.png"); codeOf(err) != want {
			t.Errorf("CheckURL(%s): %v, want %q (%s)", host, err, want, c.why)
		}
	}
}

// A name resolving to any blocked address is refused before a connection,
// and the dialer refuses a blocked address itself.
func TestResolvedAddressesAreJudgedToo(t *testing.T) {
	for _, addr := range []string{"::7f00:1", "2001::a00:1", "64:ff9b::a9fe:a9fe", "2002:a00:1::1"} {
		f := &Fetcher{Resolver: staticResolver{"img.example.com": {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr(addr)}}}
		if _, err := f.Fetch(context.Background(), "https://img.example.com/a.png"); codeOf(err) != CodeURLBlocked {
			t.Errorf("a name resolving to %s: %v", addr, err)
		}
	}
	f := &Fetcher{Resolver: staticResolver{"img.example.com": {netip.MustParseAddr("127.0.0.1")}}, Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	// Trusted networks pass the check; the default dialer then connects
	// (nothing listens on 443 here, so the fetch fails, but not as blocked).
	if _, err := f.Fetch(context.Background(), "https://img.example.com/a.png"); codeOf(err) == CodeURLBlocked {
		t.Errorf("a trusted network was blocked: %v", err)
	}
}

type staticResolver map[string][]netip.Addr

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return r[host], nil
}
