package frontend_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"conduit/frontend"
	"conduit/internal/config"
)

// secServer starts one more real API server — frontend.Server.Serve, with
// its timeouts — on the test platform, its configuration changed by mut.
func secServer(t *testing.T, mut func(*config.Config)) string {
	t.Helper()
	cfg := *env.Config
	mut(&cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	deps := env.Platform.FrontendDeps()
	deps.Config = &cfg
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- frontend.New(deps).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// secCall sends a request from the local address from (127.0.0.0/8) and
// returns the status and body; headers come in name, value pairs.
func secCall(t *testing.T, from, method, url string, body io.Reader, headers ...string) (int, http.Header, string) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// accessLog finds the access-log line of the request with this id.
func accessLog(t *testing.T, requestID string) map[string]any {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(env.Logs()))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), `"request_id":"`+requestID+`"`) || !strings.Contains(sc.Text(), `"msg":"http request"`) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Fatalf("no access-log line for request %s", requestID)
	return nil
}

// Audit item 2: X-Forwarded-For and X-Real-IP were believed from anyone,
// so the per-address limit and the logged client_ip were the caller's
// choice. They count only from http.trusted_proxies.
func TestForwardingHeadersCountOnlyFromTrustedProxies(t *testing.T) {
	// No proxies configured: the TCP peer is the client, whatever it says.
	base := secServer(t, func(c *config.Config) { c.X402.RateLimit = "2-M" })
	for i, spoof := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"} {
		want := http.StatusPaymentRequired
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		id := "sec-spoof-" + spoof
		if status, _, body := secCall(t, "127.0.0.1", "POST", base+topUpPath, nil, "X-Forwarded-For", spoof, "X-Real-IP", spoof, frontend.RequestIDHeader, id); status != want {
			t.Fatalf("call %d claiming %s: %d %s, want %d", i, spoof, status, body, want)
		}
		if ip := accessLog(t, id)["client_ip"]; ip != "127.0.0.1" {
			t.Fatalf("logged client_ip %v, want the peer 127.0.0.1", ip)
		}
	}

	// Behind a proxy at 127.0.0.5: its headers name the client, read from
	// the right up to the first address that is not a trusted proxy.
	base = secServer(t, func(c *config.Config) {
		c.X402.RateLimit = "2-M"
		c.HTTP.TrustedProxies = []string{"127.0.0.5"}
	})
	viaProxy := func(xff, id string) int {
		status, _, _ := secCall(t, "127.0.0.5", "POST", base+topUpPath, nil, "X-Forwarded-For", xff, frontend.RequestIDHeader, id)
		return status
	}
	if s := viaProxy("198.51.100.7", "sec-proxy-1"); s != http.StatusPaymentRequired {
		t.Fatalf("first call of a proxied client: %d", s)
	}
	if ip := accessLog(t, "sec-proxy-1")["client_ip"]; ip != "198.51.100.7" {
		t.Fatalf("logged client_ip %v, want the proxied client 198.51.100.7", ip)
	}
	// A client that writes its own X-Forwarded-For before the proxy appends
	// the real address still spends its own budget.
	if s := viaProxy("203.0.113.50, 198.51.100.7", "sec-proxy-2"); s != http.StatusPaymentRequired {
		t.Fatalf("second call: %d", s)
	}
	if s := viaProxy("203.0.113.51, 198.51.100.7", "sec-proxy-3"); s != http.StatusTooManyRequests {
		t.Fatalf("third call of one client through the proxy: %d, want 429", s)
	}
	// Another client behind the same proxy has its own budget.
	if s := viaProxy("198.51.100.8", "sec-proxy-4"); s != http.StatusPaymentRequired {
		t.Fatalf("another proxied client: %d", s)
	}
	// A peer that is not a proxy is itself the client, headers or not.
	for i := range 2 {
		id := "sec-direct-" + string(rune('a'+i))
		if status, _, body := secCall(t, "127.0.0.6", "POST", base+topUpPath, nil, "X-Forwarded-For", "198.51.100.8", "X-Real-IP", "198.51.100.8", frontend.RequestIDHeader, id); status != http.StatusPaymentRequired {
			t.Fatalf("direct call %d naming a proxied client: %d %s", i, status, body)
		}
		if ip := accessLog(t, id)["client_ip"]; ip != "127.0.0.6" {
			t.Fatalf("logged client_ip %v, want the peer 127.0.0.6", ip)
		}
	}
}
