package frontend_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func fetch(t *testing.T, method, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, env.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// The dashboard app is served from the binary at /dashboard/: its entry
// page for the app's own paths (deep links), its hashed assets for good,
// and the server-rendered pages under /dashboard/ keep their routes.
func TestDashboardAppIsServed(t *testing.T) {
	res, index := fetch(t, "GET", "/dashboard/")
	if res.StatusCode != http.StatusOK || !strings.Contains(index, `<div id="root">`) ||
		res.Header.Get("Cache-Control") != "no-cache" || !strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("GET /dashboard/: %d %v\n%s", res.StatusCode, res.Header, index)
	}
	for _, p := range []string{"/dashboard/pipelines", "/dashboard/pipelines/pl_123", "/dashboard/runs/2026-01-01T00:00:00Z%2300000000", "/dashboard/billing?checkout=success"} {
		if res, body := fetch(t, "GET", p); res.StatusCode != http.StatusOK || body != index {
			t.Errorf("GET %s: %d, the entry page: %v", p, res.StatusCode, body == index)
		}
	}
	if res, body := fetch(t, "HEAD", "/dashboard/keys"); res.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD /dashboard/keys: %d %q", res.StatusCode, body)
	}
	if res, _ := fetch(t, "GET", "/dashboard"); res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/dashboard/" {
		t.Errorf("GET /dashboard: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	// The base URL opens the dashboard; /healthz and the API are untouched.
	if res, _ := fetch(t, "GET", "/"); res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/dashboard/" {
		t.Errorf("GET /: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ := fetch(t, "GET", "/healthz"); res.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz: %d", res.StatusCode)
	}

	// The entry page names its script; it is served with its type and
	// cached for good.
	m := regexp.MustCompile(`src="(/dashboard/assets/[^"]+\.js)"`).FindStringSubmatch(index)
	if m == nil {
		t.Fatalf("no script in the entry page:\n%s", index)
	}
	res, js := fetch(t, "GET", m[1])
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/javascript; charset=utf-8" ||
		res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || len(js) < 1000 {
		t.Fatalf("GET %s: %d %v (%d bytes)", m[1], res.StatusCode, res.Header, len(js))
	}
	for _, p := range []string{"/dashboard/assets/missing.js", "/dashboard/assets/../index.html", "/dashboard/assets/"} {
		if res, body := fetch(t, "GET", p); res.StatusCode != http.StatusNotFound || !strings.Contains(body, `"error"`) {
			t.Errorf("GET %s: %d %s", p, res.StatusCode, body)
		}
	}
	// Other methods are not the app's: the API's 404.
	if res, body := fetch(t, "POST", "/dashboard/pipelines"); res.StatusCode != http.StatusNotFound || !strings.Contains(body, `"error"`) {
		t.Errorf("POST /dashboard/pipelines: %d %s", res.StatusCode, body)
	}
	// topUpUrl's page is still the server-rendered credits page.
	if res, body := fetch(t, "GET", "/dashboard/credits"); res.StatusCode != http.StatusOK || strings.Contains(body, "<script") || !strings.Contains(body, "52.50 USD") {
		t.Errorf("GET /dashboard/credits: %d\n%s", res.StatusCode, body)
	}
	// Paths outside /dashboard/ keep the API's 404.
	if res, body := fetch(t, "GET", "/nothing-here"); res.StatusCode != http.StatusNotFound || !strings.Contains(body, `"error"`) {
		t.Errorf("GET /nothing-here: %d %s", res.StatusCode, body)
	}
}

// The dashboard plays audio and video from the platform's own signed file
// URLs and from nowhere else: its policy has exactly one media-src
// directive, the files path under the public URL, on the entry page and
// on its assets alike.
func TestDashboardPolicyAllowsOnlyOwnFilesAsMedia(t *testing.T) {
	want := "media-src " + env.Config.BaseURL() + "/files/"
	res, index := fetch(t, "GET", "/dashboard/media")
	asset := regexp.MustCompile(`src="(/dashboard/assets/[^"]+\.js)"`).FindStringSubmatch(index)
	if asset == nil {
		t.Fatalf("no script in the entry page:\n%s", index)
	}
	ares, _ := fetch(t, "GET", asset[1])
	for _, r := range []*http.Response{res, ares} {
		var media []string
		for _, d := range strings.Split(r.Header.Get("Content-Security-Policy"), ";") {
			if d = strings.TrimSpace(d); strings.HasPrefix(d, "media-src") {
				media = append(media, d)
			}
		}
		if len(media) != 1 || media[0] != want {
			t.Errorf("%s: media-src directives %q, want exactly %q", r.Request.URL.Path, media, want)
		}
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s: the policy lost default-src 'none': %q", r.Request.URL.Path, csp)
		}
	}
}
