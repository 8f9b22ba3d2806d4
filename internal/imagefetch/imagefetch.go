// Package imagefetch fetches and checks the image a caller names by URL
// (the first frame of a video) before anything is paid, without letting
// the URL reach inside our network: only plain https on the default port,
// every resolved address must be public, and the connection goes to the
// address that was checked (so a DNS answer that changes between the check
// and the connect — rebinding — changes nothing). The type is judged by
// the bytes, the size is capped while reading, and the whole fetch has a
// deadline.
package imagefetch

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // decoders for DecodeConfig
	_ "image/png"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
	_ "golang.org/x/image/webp"

	"conduit/internal/telemetry"
)

// Codes of the refusals (spec §7).
const (
	CodeURLInvalid      = "IMAGE_URL_INVALID"
	CodeURLBlocked      = "IMAGE_URL_BLOCKED"
	CodeFetchFailed     = "IMAGE_FETCH_FAILED"
	CodeUnsupportedType = "IMAGE_UNSUPPORTED_TYPE"
	CodeDimensions      = "IMAGE_DIMENSIONS"
	CodeTooLarge        = "IMAGE_TOO_LARGE"
)

// Limits of an acceptable image.
const (
	DefaultTimeout  = 4 * time.Second
	DefaultMaxBytes = 10 << 20
	MinSide         = 256
	MaxSide         = 8192
	// MaxAspect bounds the longer side over the shorter.
	MaxAspect = 4
	maxURLLen = 2048
)

// Error is a refusal with its code, HTTP status and a sentence for the
// caller.
type Error struct {
	Code    string
	Status  int
	Message string
	// Answered is the HTTP status the URL answered with, when it answered
	// (a redirect, a 404): asking again will not change it.
	Answered int
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func refuse(code, format string, args ...any) *Error {
	status := http.StatusBadRequest
	if code == CodeTooLarge {
		status = http.StatusRequestEntityTooLarge
	}
	return &Error{Code: code, Status: status, Message: fmt.Sprintf(format, args...)}
}

// Image is a fetched and checked image.
type Image struct {
	Bytes         []byte
	ContentType   string
	Ext           string
	Width, Height int
}

// Resolver resolves host names (*net.Resolver is one).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Fetcher fetches images. The zero value uses the system resolver, a
// plain dialer, the system roots and the spec's limits.
type Fetcher struct {
	Resolver Resolver
	// Dial connects to an already checked "ip:443".
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	RootCAs  *x509.CertPool
	Timeout  time.Duration
	MaxBytes int64
	// Trusted networks are exempt from the address block (operators who
	// host images on a private network).
	Trusted []netip.Prefix
	// Verdicts (may be nil) remembers what fetches of a URL concluded,
	// for CheckUnpaid.
	Verdicts *Verdicts
}

// CheckURL applies the rules that need no network: plain https, no
// credentials, no port but 443, and no literal internal address or
// internal name.
func CheckURL(raw string) (*url.URL, error) {
	return checkURL(raw, "image_url", nil)
}

// checkURL is CheckURL for the request field named field.
func checkURL(raw, field string, trusted func(netip.Addr) bool) (*url.URL, error) {
	if len(raw) > maxURLLen {
		return nil, refuse(CodeURLInvalid, "%s is longer than %d characters", field, maxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Opaque != "" || u.Host == "" {
		return nil, refuse(CodeURLInvalid, "%s must be a plain https URL without credentials or a port", field)
	}
	if u.User != nil {
		return nil, refuse(CodeURLInvalid, "%s must not carry credentials", field)
	}
	if p := u.Port(); p != "" && p != "443" {
		return nil, refuse(CodeURLInvalid, "%s must use the default https port, not %s", field, p)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return nil, refuse(CodeURLInvalid, "%s has no host", field)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if blocked(ip) && (trusted == nil || !trusted(ip)) {
			return nil, refuse(CodeURLBlocked, "%s points at a private, loopback or internal address", field)
		}
		return u, nil
	}
	if internalName(host) {
		return nil, refuse(CodeURLBlocked, "%s names an internal host", field)
	}
	return u, nil
}

// internalName catches names that only mean something inside a network,
// and numeric forms of IPv4 addresses that resolvers may accept
// ("2130706433", "0x7f000001", "127.1").
func internalName(host string) bool {
	if !strings.Contains(host, ".") {
		return true
	}
	for _, suffix := range []string{".localhost", ".local", ".internal", ".home.arpa", ".lan", ".intranet", ".corp"} {
		if strings.HasSuffix(host, suffix) {
			return true
		}
	}
	if host == "localhost" {
		return true
	}
	numeric := true
	for _, part := range strings.Split(host, ".") {
		if _, err := strconv.ParseUint(part, 0, 32); err != nil {
			numeric = false
		}
	}
	return numeric
}

// guard judges addresses against the IANA special-purpose address
// registries for IPv4 and IPv6 (code.dny.dev/ssrf keeps its lists
// generated from them): every IPv4 special-purpose block and multicast is
// refused, and for IPv6 only global unicast (2000::/3) passes, less the
// special-purpose blocks inside it: Teredo and the other IETF protocol
// assignments (2001::/23), documentation (2001:db8::/32, 3fff::/20), 6to4
// (2002::/16), AS112. Outside 2000::/3 that refuses ::/96 (unspecified,
// loopback, the deprecated IPv4-compatible form), IPv4-mapped ::ffff:0:0/96,
// the local-use NAT64 prefix 64:ff9b:1::/48, discard-only 100::/64,
// unique-local fc00::/7, link-local fe80::/10, SRv6 SIDs 5f00::/16 and
// multicast ff00::/8. Ports are the URL rules' business, not the guard's.
var guard = ssrf.New(ssrf.WithAnyNetwork(), ssrf.WithAnyPort())

// nat64 is the well-known NAT64 prefix (RFC 6052), the one translation
// prefix the IPv6 registry marks globally reachable: a DNS64 resolver on an
// IPv6-only network answers it for IPv4-only hosts, and the gateway then
// connects to the IPv4 address in its last 32 bits, so that address is the
// one judged.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// blocked says an address is not on the public internet: not globally
// reachable by the IANA registries (which covers the cloud metadata
// addresses 169.254.169.254, fd00:ec2::254 and 100.100.100.200 too).
// 6to4 and Teredo addresses are refused whole rather than judged by the
// IPv4 addresses they embed: they reach those through relays we do not
// control, and no image host needs them.
func blocked(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Zone() != "" {
		return true
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		return blocked(netip.AddrFrom4([4]byte(b[12:])))
	}
	return guard.SafeAddr(ip) != nil
}

func (f *Fetcher) trusted(ip netip.Addr) bool {
	for _, p := range f.Trusted {
		if p.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}

// Fetch checks the URL, resolves it once, checks every address, fetches
// from the checked address within the deadline and checks the bytes.
func (f *Fetcher) Fetch(ctx context.Context, raw string) (Image, error) {
	limit := f.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	var buf bytes.Buffer
	if _, _, err := f.download(ctx, raw, &buf, request{field: "image_url", what: "the image", accept: "image/jpeg, image/png, image/webp", limit: limit, timeout: f.Timeout}); err != nil {
		if ctx.Err() == nil {
			f.fetched(raw, err)
		}
		return Image{}, err
	}
	img, err := Sniff(buf.Bytes())
	f.fetched(raw, err)
	return img, err
}

// Download is for other files than first frames: the same rules (plain
// https on 443, every resolved address public, the connection pinned to
// the checked address, TLS verified, no redirects, one deadline for the
// whole fetch) for the URL in the request field named field. It streams
// the body into w and stops one byte past maxBytes (a Content-Length over
// it is refused unread), answering how many bytes it wrote and the
// Content-Type the server claimed (for logs only: judge the bytes).
// Refusals are *Error with the same codes as Fetch's.
func (f *Fetcher) Download(ctx context.Context, raw, field string, w io.Writer, maxBytes int64, timeout time.Duration) (int64, string, error) {
	return f.download(ctx, raw, w, request{field: field, what: "the file", accept: "*/*", limit: maxBytes, timeout: timeout})
}

// CheckHost applies the URL rules and resolves the host once, checking
// every address, without fetching anything: a request naming an internal
// target is refused at once (Download checks again when it connects).
func (f *Fetcher) CheckHost(ctx context.Context, raw, field string, timeout time.Duration) error {
	u, err := checkURL(raw, field, f.trusted)
	if err != nil {
		return err
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err = f.resolve(ctx, u.Hostname(), field)
	return err
}

type request struct {
	field, what, accept string
	limit               int64
	timeout             time.Duration
}

func (f *Fetcher) download(ctx context.Context, raw string, w io.Writer, r request) (int64, string, error) {
	u, err := checkURL(raw, r.field, f.trusted)
	if err != nil {
		return 0, "", err
	}
	timeout := r.timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	host := u.Hostname()
	addr, err := f.resolve(ctx, host, r.field)
	if err != nil {
		return 0, "", err
	}
	dial := f.Dial
	if dial == nil {
		// The address was checked; the dialer checks what it connects to
		// once more, so no later change of this code can skip the rule.
		dial = (&net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || (blocked(ap.Addr()) && !f.trusted(ap.Addr())) {
				return refuse(CodeURLBlocked, "%s resolves to a private, loopback or internal address", r.field)
			}
			return nil
		}}).DialContext
	}
	checked := netip.AddrPortFrom(addr, 443).String()
	transport := &http.Transport{
		Proxy: nil, // never through an environment proxy
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dial(ctx, "tcp", checked)
		},
		TLSClientConfig:   &tls.Config{ServerName: host, RootCAs: f.RootCAs, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
		ForceAttemptHTTP2: false,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{
		Transport:     telemetry.ExternalTransport(transport),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, "", refuse(CodeURLInvalid, "%s could not be requested", r.field)
	}
	req.Header.Set("Accept", r.accept)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", fetchFailed(ctx, err, r.what)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		e := refuse(CodeFetchFailed, "%s answered a redirect (%d); give the final URL of %s", r.field, resp.StatusCode, r.what)
		e.Answered = resp.StatusCode
		return 0, "", e
	}
	if resp.StatusCode != http.StatusOK {
		e := refuse(CodeFetchFailed, "%s answered HTTP %d", r.field, resp.StatusCode)
		e.Answered = resp.StatusCode
		return 0, "", e
	}
	if resp.ContentLength > r.limit {
		return 0, "", tooLarge(r)
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, r.limit+1))
	if err != nil {
		return n, "", fetchFailed(ctx, err, r.what)
	}
	if n > r.limit {
		return n, "", tooLarge(r)
	}
	return n, resp.Header.Get("Content-Type"), nil
}

func tooLarge(r request) error {
	return refuse(CodeTooLarge, "%s is larger than %d MB", r.what, r.limit>>20)
}

// resolve returns the one address to connect to, after checking all.
func (f *Fetcher) resolve(ctx context.Context, host, field string) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, nil
	}
	r := f.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.Addr{}, refuse(CodeFetchFailed, "the host of %s could not be resolved", field)
	}
	if len(addrs) == 0 {
		return netip.Addr{}, refuse(CodeURLBlocked, "the host of %s has no address", field)
	}
	for _, a := range addrs {
		if blocked(a) && !f.trusted(a) {
			return netip.Addr{}, refuse(CodeURLBlocked, "the host of %s resolves to a private, loopback or internal address", field)
		}
	}
	return addrs[0], nil
}

func fetchFailed(ctx context.Context, err error, what string) error {
	var refused *Error
	if errors.As(err, &refused) { // the dialer's own address check
		return refused
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return refuse(CodeFetchFailed, "%s could not be downloaded within the time limit", what)
	}
	return refuse(CodeFetchFailed, "%s could not be downloaded: %s", what, shortReason(err))
}

func shortReason(err error) string {
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return "the server's TLS certificate is not valid for this host"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// Sniff judges bytes by their content: JPEG, PNG or WebP that decode, of
// usable dimensions.
func Sniff(b []byte) (Image, error) {
	var ct, ext string
	switch {
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		ct, ext = "image/jpeg", "jpg"
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		ct, ext = "image/png", "png"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		ct, ext = "image/webp", "webp"
	default:
		return Image{}, refuse(CodeUnsupportedType, "the image must be a JPEG, PNG or WebP file")
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil || (format != "jpeg" && format != "png" && format != "webp") {
		return Image{}, refuse(CodeUnsupportedType, "the image could not be read as a JPEG, PNG or WebP file")
	}
	w, h := cfg.Width, cfg.Height
	long, short := max(w, h), min(w, h)
	if short < MinSide || long > MaxSide || long > MaxAspect*short {
		return Image{}, refuse(CodeDimensions, "the image is %dx%d; each side must be %d to %d pixels and the longer side at most %d times the shorter",
			w, h, MinSide, MaxSide, MaxAspect)
	}
	return Image{Bytes: b, ContentType: ct, Ext: ext, Width: w, Height: h}, nil
}
