package apptest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// Internet is the far edge the platform's image fetcher reaches in tests:
// host names resolve through it to public-looking addresses, and a dial to
// such an address reaches a local TLS server whose certificate a test CA
// signed. Everything between — URL rules, address checks, dialing the
// checked address, TLS verification, limits — is the real fetcher's.
type Internet struct {
	mu      sync.Mutex
	names   map[string][]netip.Addr
	routes  map[netip.Addr]string
	lookups map[string]int
	dials   []string
	next    byte
	ca      *x509.Certificate
	caKey   *ecdsa.PrivateKey
	Pool    *x509.CertPool
}

func newInternet() (*Internet, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "conduit test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &Internet{names: map[string][]netip.Addr{}, routes: map[netip.Addr]string{}, lookups: map[string]int{},
		ca: ca, caKey: key, Pool: pool}, nil
}

// LookupNetIP resolves registered names.
func (n *Internet) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lookups[host]++
	addrs, ok := n.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

// Dial reaches the local server behind a public-looking address.
func (n *Internet) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	n.dials = append(n.dials, addr)
	ap, err := netip.ParseAddrPort(addr)
	local, ok := n.routes[ap.Addr()]
	n.mu.Unlock()
	if err != nil || !ok || ap.Port() != 443 {
		return nil, fmt.Errorf("dial %s: no route to host", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, local)
}

// Resolve makes host resolve to addrs (any addresses: private ones test
// the block).
func (n *Internet) Resolve(host string, addrs ...netip.Addr) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.names[host] = addrs
}

// Lookups is how often host was resolved.
func (n *Internet) Lookups(host string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lookups[host]
}

// Dials lists every address dialed so far.
func (n *Internet) Dials() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.dials...)
}

// Host serves h over TLS as https://host/ on a fresh public-looking
// address, and returns that address.
func (n *Internet) Host(t testing.TB, host string, h http.Handler) netip.Addr {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	cert, err := n.leaf(host)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.next++
	ip := netip.AddrFrom4([4]byte{93, 184, 215, n.next})
	n.routes[ip] = srv.Listener.Addr().String()
	n.names[host] = []netip.Addr{ip}
	return ip
}

func (n *Internet) leaf(host string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, n.ca, &key.PublicKey, n.caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
