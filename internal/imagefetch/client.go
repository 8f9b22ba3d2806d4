package imagefetch

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"syscall"
)

// Client is an HTTP client for calls to a caller-named https host (a
// redaction proxy's upstream) under this package's rules: plain https on
// 443 (CheckHost judges the URL first), every resolved address public,
// the connection pinned to the checked address, TLS verified, no
// environment proxy, no redirects. field names the setting in refusals.
// Unlike Download it streams: the caller's context bounds the call.
func (f *Fetcher) Client(field string) *http.Client {
	dial := f.Dial
	if dial == nil {
		dial = (&net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || (blocked(ap.Addr()) && !f.trusted(ap.Addr())) {
				return refuse(CodeURLBlocked, "%s resolves to a private, loopback or internal address", field)
			}
			return nil
		}}).DialContext
	}
	transport := &http.Transport{
		Proxy: nil,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if _, err := checkURL("https://"+host+"/", field, f.trusted); err != nil {
				return nil, err
			}
			ip, err := f.resolve(ctx, host, field)
			if err != nil {
				return nil, err
			}
			raw, err := dial(ctx, "tcp", netip.AddrPortFrom(ip, 443).String())
			if err != nil {
				return nil, err
			}
			conn := tls.Client(raw, &tls.Config{ServerName: host, RootCAs: f.RootCAs, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
			if err := conn.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			return conn, nil
		},
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			return nil, refuse(CodeURLInvalid, "%s must be a plain https URL", field)
		},
		MaxIdleConnsPerHost: 8,
	}
	return &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
