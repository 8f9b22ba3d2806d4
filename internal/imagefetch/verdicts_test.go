package imagefetch

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// hostedImages serves images at https://img.example.com/ (resolved to a
// public address, dialled to a local TLS server) and counts the requests
// that reach it.
func hostedImages(t *testing.T, files map[string][]byte) (*Fetcher, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	pool := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	f := &Fetcher{
		Resolver: staticResolver{"img.example.com": {netip.MustParseAddr("93.184.215.14")}},
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
		},
		RootCAs:  pool,
		Verdicts: NewVerdicts(100, time.Hour),
	}
	return f, &hits
}

func TestUnpaidChecksRememberTheURLsVerdict(t *testing.T) {
	files := map[string][]byte{"/good.png": encode(t, 300, 300, "png"), "/page.html": []byte("<!doctype html>")}
	f, hits := hostedImages(t, files)
	ctx := context.Background()
	spent := 0
	spend := func() error { spent++; return nil }

	if err := f.CheckUnpaid(ctx, "https://img.example.com/good.png", spend); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 1 || spent != 1 {
		t.Fatalf("first check: %d fetches, %d spent", hits.Load(), spent)
	}
	// The same URL however it is spelled (host case, the default port, a
	// fragment the server never sees): the verdict answers, nothing is
	// fetched or spent.
	for _, same := range []string{"https://img.example.com/good.png", "https://IMG.EXAMPLE.com/good.png", "https://img.example.com:443/good.png",
		"https://img.example.com./good.png", "https://img.example.com/good.png#top"} {
		if err := f.CheckUnpaid(ctx, same, spend); err != nil {
			t.Fatalf("%s: %v", same, err)
		}
	}
	if hits.Load() != 1 || spent != 1 {
		t.Fatalf("repeated checks fetched %d times, spent %d", hits.Load(), spent)
	}
	// Another path or query is another URL.
	if err := f.CheckUnpaid(ctx, "https://img.example.com/good.png?v=2", spend); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 2 || spent != 2 {
		t.Fatalf("another URL: %d fetches, %d spent", hits.Load(), spent)
	}

	// A refusal is remembered too, with its code.
	for range 3 {
		if err := f.CheckUnpaid(ctx, "https://img.example.com/page.html", spend); codeOf(err) != CodeUnsupportedType {
			t.Fatalf("%v", err)
		}
	}
	for range 2 {
		if err := f.CheckUnpaid(ctx, "https://img.example.com/missing.png", spend); codeOf(err) != CodeFetchFailed {
			t.Fatalf("%v", err)
		}
	}
	if hits.Load() != 4 || spent != 4 {
		t.Fatalf("refusals: %d fetches, %d spent", hits.Load(), spent)
	}

	// URL rules need no verdict and spend nothing.
	if err := f.CheckUnpaid(ctx, "https://127.0.0.1/a.png", spend); codeOf(err) != CodeURLBlocked || spent != 4 {
		t.Fatalf("%v (spent %d)", err, spent)
	}

	// A spent budget stops the fetch, with its own refusal.
	budget := errors.New("budget spent")
	if err := f.CheckUnpaid(ctx, "https://img.example.com/other.png", func() error { return budget }); !errors.Is(err, budget) || hits.Load() != 4 {
		t.Fatalf("%v after %d fetches", err, hits.Load())
	}
}

// A paid fetch needs the bytes: it always fetches, and its verdict
// replaces the remembered one.
func TestPaidFetchAlwaysFetchesAndRefreshes(t *testing.T) {
	files := map[string][]byte{"/frame.png": encode(t, 300, 300, "png")}
	f, hits := hostedImages(t, files)
	ctx := context.Background()
	if err := f.CheckUnpaid(ctx, "https://img.example.com/frame.png", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(ctx, "https://img.example.com/frame.png"); err != nil || hits.Load() != 2 {
		t.Fatalf("%v, %d fetches", err, hits.Load())
	}
	files["/frame.png"] = []byte("now a page")
	if _, err := f.Fetch(ctx, "https://img.example.com/frame.png"); codeOf(err) != CodeUnsupportedType {
		t.Fatal(err)
	}
	if err := f.CheckUnpaid(ctx, "https://img.example.com/frame.png", nil); codeOf(err) != CodeUnsupportedType || hits.Load() != 3 {
		t.Fatalf("%v, %d fetches", err, hits.Load())
	}
}

// Verdicts live VerdictTTL and at most so many are kept.
func TestVerdictsExpireAndAreBounded(t *testing.T) {
	files := map[string][]byte{"/a.png": encode(t, 300, 300, "png"), "/b.png": encode(t, 300, 300, "png"), "/c.png": encode(t, 300, 300, "png")}
	f, hits := hostedImages(t, files)
	f.Verdicts = NewVerdicts(2, 50*time.Millisecond)
	ctx := context.Background()
	for _, p := range []string{"/a.png", "/b.png", "/c.png"} {
		if err := f.CheckUnpaid(ctx, "https://img.example.com"+p, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.Verdicts.Len(); n > 2 {
		t.Fatalf("%d verdicts kept", n)
	}
	// Once expired, the URL is fetched again (polled, with a bound).
	before := hits.Load()
	deadline := time.Now().Add(10 * time.Second)
	for hits.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("the verdict never expired")
		}
		if err := f.CheckUnpaid(ctx, "https://img.example.com/c.png", nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
