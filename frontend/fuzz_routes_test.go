package frontend_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"conduit/frontend"
)

// Hostile values for path parameters and query values, written as they
// go on the wire (percent-escapes are sent as is).
var hostileParams = []string{
	"%00", "a%00b", "%FF", "%C3%28", "%ED%A0%80", // NUL, invalid UTF-8, a lone surrogate
	"2147483648", "-2147483649", "9223372036854775808", "99999999999999999999999", "-1", "0", "1e309", "NaN",
	"..", "%2E%2E", "..%2F..%2Fetc%2Fpasswd", "%2F", "%23", "%25", "%20",
	"%C3%BC%E6%97%A5%E6%9C%AC", "%F0%9F%98%80", // ü日本, an emoji
	strings.Repeat("a", 100_000), strings.Repeat("%C3%BC", 5_000),
	"null", "true", "%7B%7D", "%5B%5D",
}

// Hostile JSON values for body fields.
var hostileJSON = []string{
	`"\u0000"`, `"a\u0000b"`, `"\ud800"`, `""`, `" "`, `"` + strings.Repeat("x", 100_000) + `"`,
	`2147483648`, `-2147483649`, `9223372036854775808`, `1e309`, `-1`, `0`, `1.5`, `-0`,
	`true`, `null`, `[]`, `[1,"a",null]`, `{}`, `{"a":{"b":{"c":[]}}}`, `"..\/..\/etc\/passwd"`,
	`"ü日本😀"`, `"https://127.0.0.1/x.png"`, `"http://a"`,
	// Well-formed graphs and inputs that hide unstorable text one level down.
	`{"nodes":[{"id":"q","type":"input","key":"q","description":"\ud800"}],"edges":[]}`,
	`{"nodes":[{"id":"q","type":"input","key":"q","description":"\u0000"}],"edges":[]}`,
	`{"question":"\udfff"}`, `[{"role":"user","content":"\ud800"}]`,
}

// Whole bodies that are wrong as a whole.
var hostileBodies = []string{
	"", "{", "[]", `"a"`, "1", "null", "{}{}", "\xff\xfe", "{\"a\":\"\xff\"}", `{"a":"\u0000"}`,
	strings.Repeat("[", 100_000), `{"` + strings.Repeat("k", 100_000) + `":1}`,
	`{"name":"x"}` + strings.Repeat(" ", 1<<20), // over the 1 MiB limit
}

// The body fields any route reads.
var bodyFields = []string{
	"name", "draft", "permissions", "status", "walletAddress", "inputs", "version", "messages", "stream", "model",
	"prompt", "text", "seconds", "aspectRatio", "image_url", "async", "voice", "genre", "address", "usd",
	"operation", "items", "item", "url", "fade", "gain", "start", "end", "format", "musicVolume", "delay", "waitSeconds",
}

// hostileQueries are query strings tried on every route.
var hostileQueryNames = []string{"runId", "token", "after", "limit", "status", "c", "t", "kind", "includePrivate", "%00", "%FF"}

// Every route the router has, called with hostile path, query and body
// values, never answers 5xx: malformed input is the caller's error. The
// route list is the router's own (gin's Routes()), so a new route is
// covered without touching this test; the values come from a fixed seed.
func TestEveryRouteSurvivesHostileInput(t *testing.T) {
	_, key := env.NewAccount(t)
	pipeID, _ := chatPipeline(t, key, "local-echo")
	spare := wantStatus(t, do(t, "POST", "/api/keys", key, map[string]any{"name": "fuzz spare"}), http.StatusCreated)["id"].(string)
	deps := env.Platform.FrontendDeps()
	deps.DevTools = true
	routes := frontend.New(deps).Handler().(*gin.Engine).Routes()
	if len(routes) < 30 {
		t.Fatalf("only %d routes: is the route list wrong?", len(routes))
	}
	// Valid values for the parameters not under attack.
	valid := map[string]string{"id": pipeID, "n": "1", "key": "video/none.mp4"}
	validFor := func(route, param string) string {
		if param == "id" && strings.HasPrefix(route, "/api/keys") {
			return spare
		}
		return valid[param]
	}
	rng := rand.New(rand.NewPCG(15, 7))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }

	count := 0
	send := func(t *testing.T, method, path, rawQuery, body string, headers ...string) {
		t.Helper()
		count++
		status, raw := sendRaw(t, method, path, rawQuery, body, append(headers, "Authorization", "Bearer "+key)...)
		if status >= 500 {
			short := raw
			if len(short) > 300 {
				short = short[:300] + "…"
			}
			where := path
			if len(where) > 120 {
				where = where[:120] + "…"
			}
			t.Errorf("%s %s?%.120s with body %.120q: %d %s", method, where, rawQuery, body, status, short)
		}
	}
	// fill builds a route's path with hostile in param (nil: all valid).
	fill := func(route string, hostileIn string, value string) string {
		parts := strings.Split(route, "/")
		for i, p := range parts {
			name := strings.TrimLeft(p, ":*")
			if name == p {
				continue
			}
			v := validFor(route, name)
			if name == hostileIn {
				v = value
			}
			parts[i] = v
		}
		return strings.Join(parts, "/")
	}
	params := func(route string) []string {
		var out []string
		for _, p := range strings.Split(route, "/") {
			if strings.HasPrefix(p, ":") || strings.HasPrefix(p, "*") {
				out = append(out, p[1:])
			}
		}
		return out
	}
	writes := func(method string) bool { return method == "POST" || method == "PUT" || method == "PATCH" }

	for _, r := range routes {
		t.Run(r.Method+" "+r.Path, func(t *testing.T) {
			base := ""
			if writes(r.Method) {
				base = "{}"
			}
			// Each path parameter in turn, with every hostile value.
			for _, p := range params(r.Path) {
				for _, v := range hostileParams {
					send(t, r.Method, fill(r.Path, p, v), "", base)
				}
			}
			path := fill(r.Path, "", "")
			// Query parameters: each name with hostile values, and the
			// runId a client sends when it forgets to encode '#'.
			for _, name := range hostileQueryNames {
				for range 4 {
					send(t, r.Method, path, name+"="+pick(hostileParams), base)
				}
			}
			send(t, r.Method, path, "runId=2026-11-23T15:34:20.443Z#0a1b2c3d&token=x", base)
			send(t, r.Method, path, "runId=&token=", base)
			if !writes(r.Method) {
				return
			}
			// Bodies wrong as a whole, then every field with every value.
			for _, b := range hostileBodies {
				send(t, r.Method, path, "", b)
			}
			for _, f := range bodyFields {
				for _, v := range hostileJSON {
					send(t, r.Method, path, "", `{"`+f+`":`+v+`}`)
				}
			}
			// Random combinations of several fields and headers.
			for range 40 {
				var fields []string
				for range 1 + rng.IntN(4) {
					fields = append(fields, fmt.Sprintf("%q:%s", pick(bodyFields), pick(hostileJSON)))
				}
				send(t, r.Method, path, pick(hostileQueryNames)+"="+pick(hostileParams), "{"+strings.Join(fields, ",")+"}",
					"Idempotency-Key", pick([]string{"k\xff", "", strings.Repeat("k", 300), "ok"}),
					"Prefer", pick([]string{"wait=99999999999999999999", "wait=-5", "respond-async", "wait=abc"}),
					"PAYMENT-SIGNATURE", pick([]string{"", "%%%", "e30=", "bm90IGpzb24="}),
					"SIGN-IN-WITH-X", pick([]string{"", "e30=", "garbage"}))
			}
		})
	}
	t.Logf("%d requests over %d routes", count, len(routes))
}

// sendRaw sends a request with path and query exactly as written.
func sendRaw(t *testing.T, method, path, rawQuery, body string, headers ...string) (int, string) {
	t.Helper()
	u, err := url.Parse(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.Opaque = "//" + u.Host + path
	u.RawQuery = rawQuery
	req, err := http.NewRequestWithContext(context.Background(), method, env.URL, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.URL = u
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] != "" {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := env.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %.120s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}
