package frontend_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/config"
	"conduit/internal/money"
	"conduit/internal/siwx"
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
	deps := env.Platform.FrontendDeps() // as app.Platform.Run builds them
	deps.Config = &cfg
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	deps.Deltas = env.Platform.Store.NewDeltaHub(ctx, env.Platform.Log)
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

// short are connection limits small enough for a test to outlast.
func short(c *config.Config) {
	c.HTTP.ReadHeaderTimeout, c.HTTP.ReadTimeout, c.HTTP.WriteTimeout, c.HTTP.IdleTimeout = time.Second, 2*time.Second, time.Second, time.Second
}

// trickle opens a connection, writes head, then one byte of tail every
// 200 ms. It returns what the server answered and whether the server
// closed the connection before the client had sent everything.
func trickle(t *testing.T, base, head, tail string) (answer string, cutOff bool) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	closed := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(conn) // until the server closes
		closed <- string(b)
	}()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	for i := range len(tail) {
		select {
		case answer := <-closed:
			return answer, true
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := io.WriteString(conn, tail[i:i+1]); err != nil {
			return <-closed, true
		}
	}
	_ = conn.(*net.TCPConn).CloseWrite()
	return <-closed, false
}

// Audit item 3: the server had only a header timeout; 20 slow-body
// connections stayed open 150 s. Bodies, idle connections and headers are
// bounded now (http.read_timeout, idle_timeout, read_header_timeout,
// max_header_bytes).
func TestSlowClientsAreCutOff(t *testing.T) {
	_, key := env.NewAccount(t)
	base := secServer(t, short)

	// A body sent a byte every 200 ms (40 bytes: 8 s) is cut off at the
	// read timeout with a 408, and the connection closes.
	body := `{"name":"` + strings.Repeat("s", 29) + `"}`
	head := "POST /api/keys HTTP/1.1\r\nHost: conduit\r\nAuthorization: Bearer " + key +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	start := time.Now()
	answer, cut := trickle(t, base, head, body)
	if !cut || !strings.HasPrefix(answer, "HTTP/1.1 408 ") || !strings.Contains(answer, `{"error":"the request did not arrive within 2s; send the body without pauses"}`) {
		t.Fatalf("slow body: cut off %v after %s, answer %q", cut, time.Since(start), answer)
	}
	t.Logf("slow body cut off after %s", time.Since(start))

	// Headers sent a byte every 200 ms are cut off too.
	answer, cut = trickle(t, base, "GET /healthz HTTP/1.1\r\nHost: conduit\r\n", "X-Slow: "+strings.Repeat("h", 32)+"\r\n\r\n")
	if !cut || strings.Contains(answer, "200 OK") {
		t.Fatalf("slow headers: cut off %v, answer %q", cut, answer)
	}

	// A kept-alive connection that sends nothing more is closed.
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: conduit\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(8 * time.Second))
	if rest, err := io.ReadAll(conn); err != nil || !strings.HasPrefix(string(rest), "HTTP/1.1 200 ") {
		t.Fatalf("idle connection not closed by the server (%v) after %q", err, rest)
	}

	// Headers beyond http.max_header_bytes (64 KiB) are refused with 431.
	status, _, _ := secCall(t, "127.0.0.1", "GET", base+"/healthz", nil, "X-Big", strings.Repeat("b", 100<<10))
	if status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB of headers: %d, want 431", status)
	}
	// The key was never created.
	for _, k := range wantStatus(t, do(t, "GET", "/api/keys", key, nil), http.StatusOK)["keys"].([]any) {
		if k.(map[string]any)["name"] != "test" {
			t.Fatalf("the slow request created a key: %v", k)
		}
	}
}

// Streams outlast every connection timeout: a paid call's keep-alive
// answer, a long poll and a chat stream each run longer than the 1 s and
// 2 s limits of this server and still end with their record.
func TestStreamsOutlastTheTimeouts(t *testing.T) {
	base := secServer(t, short)

	w := newWallet(t, 2*money.USD)
	prompt := "timeouts: fog rolling over a harbour"
	body := map[string]any{"prompt": prompt, "model": "kine-3.0"}
	buf, _ := json.Marshal(body)
	start := time.Now()
	status, h, answer := secCall(t, "127.0.0.1", "POST", base+frontend.VideoPath, strings.NewReader(string(buf)),
		"Content-Type", "application/json", "PAYMENT-SIGNATURE", w.pay(t, videoChallenge(t, body)), "Prefer", "wait=4")
	var rec map[string]any
	if err := json.Unmarshal([]byte(answer), &rec); err != nil || status != http.StatusOK || rec["status"] != "running" ||
		h.Get("Preference-Applied") != "wait=4" || !strings.HasPrefix(answer, " ") || time.Since(start) < 4*time.Second {
		t.Fatalf("paid call after %s: %d %v %q (%v)", time.Since(start), status, h, answer, err)
	}

	// A long poll of the same run through the same server.
	statusURL := rec["statusUrl"].(string)
	start = time.Now()
	status, _, answer = secCall(t, "127.0.0.1", "GET", base+strings.TrimPrefix(statusURL, env.URL), nil, "Prefer", "wait=3")
	if err := json.Unmarshal([]byte(answer), &rec); err != nil || status != http.StatusOK || rec["status"] != "running" || time.Since(start) < 3*time.Second {
		t.Fatalf("long poll after %s: %d %q (%v)", time.Since(start), status, answer, err)
	}
	env.Studio.Release(prompt)
	if rec := finished(t, statusURL); rec["status"] != "success" {
		t.Fatalf("%v", rec)
	}

	// A chat stream of 80 tokens at 25 ms each.
	_, key := env.NewAccount(t)
	id, _ := chatPipeline(t, key, "local-echo-slow")
	text := strings.Repeat("tock ", 80)
	chat, _ := json.Marshal(map[string]any{"stream": true, "messages": []map[string]string{{"role": "user", "content": text}}})
	start = time.Now()
	status, _, answer = secCall(t, "127.0.0.1", "POST", base+"/api/pipelines/"+id+"/chat/completions", strings.NewReader(string(chat)), "Authorization", "Bearer "+key)
	var got strings.Builder
	for _, line := range strings.Split(answer, "\n") {
		var ch struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &ch) == nil && len(ch.Choices) > 0 {
			got.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if status != http.StatusOK || got.String() != text || !strings.HasSuffix(answer, "data: [DONE]\n\n") || time.Since(start) < 2*time.Second {
		t.Fatalf("chat stream after %s: %d, streamed %q, ends %q", time.Since(start), status, got.String(), answer[max(0, len(answer)-40):])
	}
}

// Audit item 4: each paid route had its own per-address limiter, so one
// address got 8× the documented budget. One budget covers them all.
func TestPaidRoutesShareOnePerAddressBudget(t *testing.T) {
	base := secServer(t, func(c *config.Config) { c.X402.RateLimit = "4-M" })
	prompt := `{"prompt":"budget: a lighthouse"}`
	calls := []struct{ method, path, body string }{
		{"POST", topUpPath, ""},
		{"POST", frontend.VideoPath, prompt},
		{"POST", frontend.SpeechPath + "/retry?runId=a&token=b", `{}`},
		{"GET", frontend.PurchasesPath, ""},
	}
	for i, c := range calls {
		status, _, body := secCall(t, "127.0.0.7", c.method, base+c.path, strings.NewReader(c.body), "Content-Type", "application/json")
		if status == http.StatusTooManyRequests {
			t.Fatalf("call %d (%s %s) already limited: %s", i, c.method, c.path, body)
		}
	}
	// The budget is spent on every paid route now.
	for _, c := range append(calls, struct{ method, path, body string }{"POST", frontend.MusicPath, `{"prompt":"x"}`}) {
		status, h, body := secCall(t, "127.0.0.7", c.method, base+c.path, strings.NewReader(c.body), "Content-Type", "application/json")
		if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" ||
			!strings.HasPrefix(body, `{"error":"rate limit exceeded: at most 4 calls per 1m0s from one address`) {
			t.Fatalf("%s %s after the budget: %d %s", c.method, c.path, status, body)
		}
	}
	// Another address has its own budget; unpaid routes are not counted.
	if status, _, _ := secCall(t, "127.0.0.8", "POST", base+topUpPath, nil); status != http.StatusPaymentRequired {
		t.Fatalf("another address: %d", status)
	}
	if status, _, _ := secCall(t, "127.0.0.7", "GET", base+frontend.VideoPath, nil); status != http.StatusOK {
		t.Fatalf("the menu: %d", status)
	}

	// An IPv6 client counts by its /64 (named here by a trusted proxy).
	base = secServer(t, func(c *config.Config) {
		c.X402.RateLimit = "2-M"
		c.HTTP.TrustedProxies = []string{"127.0.0.1"}
	})
	for i, ip := range []string{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9", "2001:db8:1:2::3", "2001:db8:1:3::1"} {
		want := http.StatusPaymentRequired
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		if status, _, body := secCall(t, "127.0.0.1", "POST", base+topUpPath, nil, "X-Forwarded-For", ip); status != want {
			t.Fatalf("call %d from %s: %d %s, want %d", i, ip, status, body, want)
		}
	}
}

// Audit item 4: every unauthenticated sign-in challenge stored a nonce
// kept for a day after it expired. Expired nonces are forgotten when the
// next challenge is issued, so the table holds one lifetime of challenges.
func TestSignInNoncesDoNotAccumulate(t *testing.T) {
	db := dbConn(t)
	ctx := context.Background()
	var nonces []string
	for range 50 {
		nonces = append(nonces, signInChallenge(t).Info.Nonce)
	}
	var live int
	var longest time.Duration
	if err := db.QueryRow(ctx, `SELECT count(*), coalesce(max(expires_at - issued_at), '0') FROM siwx_nonces WHERE nonce = ANY($1)`, nonces).Scan(&live, &longest); err != nil {
		t.Fatal(err)
	}
	if live != len(nonces) || longest > 5*time.Minute+time.Second {
		t.Fatalf("%d of %d challenges stored, living up to %s", live, len(nonces), longest)
	}
	// Their five minutes pass...
	if _, err := db.Exec(ctx, `UPDATE siwx_nonces SET expires_at = now() - interval '1 second', issued_at = now() - interval '301 seconds' WHERE nonce = ANY($1)`, nonces); err != nil {
		t.Fatal(err)
	}
	// ...and the next challenge forgets them.
	next := signInChallenge(t).Info.Nonce
	var left, expired int
	if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE nonce = ANY($1)), count(*) FILTER (WHERE expires_at < now()) FROM siwx_nonces`, nonces).Scan(&left, &expired); err != nil {
		t.Fatal(err)
	}
	if left != 0 || expired != 0 {
		t.Fatalf("%d of the expired challenges kept, %d expired rows in all", left, expired)
	}
	// A proof for a forgotten nonce is refused; the fresh one still works.
	key, _ := crypto.GenerateKey()
	old := signInChallenge(t)
	old.Info.Nonce = nonces[0]
	p, err := siwx.SignEVM(old, "eip155:8453", key)
	if err != nil {
		t.Fatal(err)
	}
	if resp := listWith(t, p); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("forgotten nonce: %d", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
	fresh := signInChallenge(t)
	fresh.Info.Nonce = next
	if p, err = siwx.SignEVM(fresh, "eip155:8453", key); err != nil {
		t.Fatal(err)
	}
	if resp := listWith(t, p); resp.StatusCode != http.StatusOK {
		t.Fatalf("fresh nonce: %d", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
}

// Audit item 6: answers lacked nosniff and the other headers a JSON API
// sends. Every answer carries them; a handler's own Cache-Control (a chat
// stream, a file) is kept.
func TestEveryAnswerCarriesTheSecurityHeaders(t *testing.T) {
	_, key := env.NewAccount(t)
	_, chatBase := chatPipeline(t, key, "local-echo")
	w := newWallet(t, money.USD)
	rec := wantStatus(t, buy(t, frontend.SpeechPath, w, map[string]any{"text": "Headers, please."}), http.StatusOK)
	file := strings.TrimPrefix(rec["audio"].(string), env.URL)

	const api = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
	for _, c := range []struct {
		name, method, path, body, key string
		status                        int
		cache, csp                    string
	}{
		{"health", "GET", "/healthz", "", "", 200, "no-store", api},
		{"balance", "GET", "/api/account/balance", "", key, 200, "no-store", api},
		{"keys", "GET", "/api/keys", "", key, 200, "no-store", api},
		{"no key", "GET", "/api/keys", "", "", 401, "no-store", api},
		{"no route", "GET", "/nowhere", "", "", 404, "no-store", api},
		{"menu", "GET", frontend.VideoPath, "", "", 200, "no-store", api},
		{"challenge", "POST", topUpPath, "", "", 402, "no-store", api},
		{"chat stream", "POST", strings.TrimPrefix(chatBase, env.URL) + "chat/completions", `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`, key, 200, "no-cache", api},
		{"file", "GET", file, "", "", 200, "private, max-age=86400", "frame-ancestors 'none'"},
		{"bad file link", "GET", frontend.FilesPath + "x.mp3?c=forged", "", "", 403, "no-store", "frame-ancestors 'none'"},
	} {
		var headers []string
		if c.key != "" {
			headers = apptest.Bearer(c.key)
		}
		var body any
		if c.body != "" {
			body = c.body
		}
		r := env.Do(t, c.method, c.path, body, headers...)
		h := r.Header
		if r.Status != c.status || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" ||
			h.Get("Referrer-Policy") != "no-referrer" || h.Get("Cache-Control") != c.cache || h.Get("Content-Security-Policy") != c.csp ||
			h.Get("Strict-Transport-Security") != "" {
			t.Errorf("%s: %d %v", c.name, r.Status, h)
		}
	}
	// Behind https, browsers are told to stay on it.
	base := secServer(t, func(c *config.Config) { c.HTTP.PublicURL = "https://api.example.com" })
	if _, h, _ := secCall(t, "127.0.0.1", "GET", base+"/healthz", nil); h.Get("Strict-Transport-Security") != "max-age=31536000" {
		t.Fatalf("https deployment: %v", h)
	}
}

// Audit item 6: a body over the limit on the chat endpoint answered
// server_error; it is the caller's request, in OpenAI's shape.
func TestChatOversizedBodyIsAnInvalidRequest(t *testing.T) {
	_, key := env.NewAccount(t)
	_, base := chatPipeline(t, key, "local-echo")
	big := `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 2<<20) + `"}]}`
	r := env.Do(t, "POST", strings.TrimPrefix(base, env.URL)+"chat/completions", big, apptest.Bearer(key)...)
	var body struct {
		Error struct{ Message, Type string } `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || r.Status != http.StatusRequestEntityTooLarge ||
		body.Error.Type != "invalid_request_error" || !strings.Contains(body.Error.Message, "exceeds 1048576 bytes") {
		t.Fatalf("%d %s (%v)", r.Status, r.Body, err)
	}
}
