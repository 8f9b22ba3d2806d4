package frontend_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"conduit/internal/codec"
	"conduit/internal/vault"
)

func bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }

func TestProxiesCRUDKeepTheKeyWriteOnly(t *testing.T) {
	_, key := env.NewAccount(t, "redact:proxy")
	stored := "sk-stored-SECRET-upstream-key-123"
	px := createProxy(t, key, map[string]any{"name": "crud", "style": "openai", "upstreamKey": stored,
		"policy": map[string]any{"types": []string{"EMAIL", "PHONE"}, "actions": map[string]string{"PHONE": "mask"}}, "output": "redact"})
	id := px["id"].(string)
	if px["hasUpstreamKey"] != true || strings.Contains(string(mustJSON(t, px)), stored) || px["output"] != "redact" || px["audit"] != true {
		t.Fatalf("%v", px)
	}
	list := env.Do(t, "GET", "/api/proxies", nil, bearer(key)...)
	if list.Status != 200 || !strings.Contains(string(list.Body), id) || strings.Contains(string(list.Body), stored) {
		t.Fatalf("list %d %s", list.Status, list.Body)
	}
	patched := env.Do(t, "PATCH", "/api/proxies/"+id, map[string]any{"name": "crud2", "audit": false}, bearer(key)...)
	if patched.Status != 200 || patched.JSON(t)["name"] != "crud2" || patched.JSON(t)["hasUpstreamKey"] != true || patched.JSON(t)["audit"] != false {
		t.Fatalf("patch %d %s", patched.Status, patched.Body)
	}
	// The stored key is sealed in the database, never in clear.
	conn, err := pgx.Connect(context.Background(), env.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var sealed []byte
	if err := conn.QueryRow(context.Background(), `SELECT upstream_key FROM redaction_proxies WHERE id = $1`, id).Scan(&sealed); err != nil || len(sealed) == 0 || strings.Contains(string(sealed), stored) {
		t.Fatalf("sealed %v %x", err, sealed)
	}
	// Bad input changes nothing and says what is wrong.
	for _, bad := range []map[string]any{
		{"name": "x", "style": "custom", "baseUrl": "https://127.0.0.1/v1"},
		{"name": "x", "style": "custom", "baseUrl": "http://example.com/v1"},
		{"name": "x", "style": "azure", "baseUrl": "https://metadata.internal"},
		{"name": "x", "style": "azure", "baseUrl": "https://azure.upstream.test"},
		{"name": "x", "style": "bedrock"},
		{"name": "x", "style": "openai", "policy": map[string]any{"types": []string{"PASSPORT"}}},
		{"name": "x", "style": "openai", "policy": map[string]any{"actions": map[string]string{"EMAIL": "shred"}}},
		{"name": "crud2", "style": "openai"},
		{"name": "x", "style": "openai", "apiKey": "unknown field"},
	} {
		r := env.Do(t, "POST", "/api/proxies", bad, bearer(key)...)
		if r.Status != 400 && r.Status != 409 {
			t.Fatalf("%v: %d %s", bad, r.Status, r.Body)
		}
	}
	var n int
	_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM redaction_proxies WHERE account_id = (SELECT account_id FROM redaction_proxies WHERE id = $1)`, id).Scan(&n)
	if n != 1 {
		t.Fatalf("%d proxies after refusals", n)
	}
	// Another account sees none of it.
	_, other := env.NewAccount(t, "redact:proxy")
	if r := env.Do(t, "GET", "/api/proxies/"+id, nil, bearer(other)...); r.Status != 404 {
		t.Fatalf("other account: %d", r.Status)
	}
	if r := env.Do(t, "DELETE", "/api/proxies/"+id, nil, bearer(key)...); r.Status != 204 {
		t.Fatalf("delete %d", r.Status)
	}
	if r := env.Do(t, "GET", "/api/proxies/"+id, nil, bearer(key)...); r.Status != 404 {
		t.Fatalf("after delete %d", r.Status)
	}
	_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM redaction_proxies WHERE id = $1 AND upstream_key IS NOT NULL`, id).Scan(&n)
	if n != 0 {
		t.Fatal("a deleted proxy kept its key")
	}
}

func TestRedactionScopesAreEnforced(t *testing.T) {
	_, key := env.NewAccount(t, "pipelines:read")
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/proxies"}, {"POST", "/api/proxies"}, {"GET", "/api/redact/log"}, {"GET", "/api/redact/log/verify"},
		{"POST", "/api/pii/tokens"}, {"GET", "/api/pii/tokens/pii_00"}, {"PUT", "/api/pii/tokens/pii_00"}, {"DELETE", "/api/pii/subjects/s1"},
		{"POST", "/api/pii/consents"}, {"GET", "/api/pii/consents"}, {"GET", "/api/pii/audit"},
	} {
		if r := env.Do(t, c.method, c.path, map[string]any{}, bearer(key)...); r.Status != http.StatusForbidden {
			t.Fatalf("%s %s: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	// The chat endpoint refuses in OpenAI's error shape.
	client := openai.NewClient(option.WithBaseURL(env.URL+"/api/redact/"), option.WithAPIKey(key), option.WithMaxRetries(0), option.WithHeader("x-svc-proxy", "any"))
	_, err := client.Chat.Completions.New(context.Background(), chatParams())
	var apiErr *openai.Error
	if !errorsAs(err, &apiErr) || apiErr.StatusCode != 403 || apiErr.Type != "permission_error" {
		t.Fatalf("%v", err)
	}
	if r := env.Do(t, "GET", "/api/redact/attest", nil, bearer(key)...); r.Status != 200 || r.JSON(t)["attested"] != false || r.JSON(t)["howToEnable"] == "" {
		t.Fatalf("attest %d %s", r.Status, r.Body)
	}
}

func TestRedactChatErrors(t *testing.T) {
	_, key := env.NewAccount(t)
	up := &fakeUpstream{style: "openai", status: 401}
	env.Internet.Host(t, "refusing.upstream.test", up)
	createProxy(t, key, map[string]any{"name": "refusing", "style": "openai", "baseUrl": "https://refusing.upstream.test/v1"})
	createProxy(t, key, map[string]any{"name": "blocking", "style": "openai", "baseUrl": "https://refusing.upstream.test/v1",
		"policy": map[string]any{"actions": map[string]string{"EMAIL": "block"}}})
	errOf := func(client openai.Client) *openai.Error {
		_, err := client.Chat.Completions.New(context.Background(), chatParams())
		var apiErr *openai.Error
		if !errorsAs(err, &apiErr) {
			t.Fatalf("%v", err)
		}
		return apiErr
	}
	if e := errOf(redactClient(key, "refusing", "sk-x")); e.StatusCode != 502 || !strings.Contains(e.Message, "upstream says no") {
		t.Fatalf("%d %s", e.StatusCode, e.Message)
	}
	if e := errOf(redactClient(key, "nope", "sk-x")); e.StatusCode != 404 {
		t.Fatalf("%d %s", e.StatusCode, e.Message)
	}
	if e := errOf(redactClient(key, "refusing", "")); e.StatusCode != 400 || !strings.Contains(e.Message, "x-model-key") {
		t.Fatalf("%d %s", e.StatusCode, e.Message)
	}
	before := len(up.bodies)
	if e := errOf(redactClient(key, "blocking", "sk-x")); e.StatusCode != 422 || strings.Contains(e.Message, "alice@") {
		t.Fatalf("%d %s", e.StatusCode, e.Message)
	}
	if paths, _, _ := up.received(); len(paths) != before {
		t.Fatal("a blocked request reached the upstream")
	}
}

func TestRedactionAuditChain(t *testing.T) {
	acct, key := env.NewAccount(t)
	up := &fakeUpstream{style: "openai"}
	env.Internet.Host(t, "audit.upstream.test", up)
	px := createProxy(t, key, map[string]any{"name": "audited", "style": "openai", "baseUrl": "https://audit.upstream.test/v1", "upstreamKey": "sk-stored"})
	client := redactClient(key, "audited", "")
	for i := 0; i < 3; i++ {
		if _, err := client.Chat.Completions.New(context.Background(), chatParams()); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, bodies := up.received(); len(bodies) != 3 {
		t.Fatalf("%d upstream calls", len(bodies))
	}
	if _, h, _ := up.received(); h[0].Get("Authorization") != "Bearer sk-stored" {
		t.Fatal("the stored key was not used")
	}
	page := env.Do(t, "GET", "/api/redact/log?limit=2&proxy="+px["id"].(string), nil, bearer(key)...)
	if page.Status != 200 {
		t.Fatalf("%d %s", page.Status, page.Body)
	}
	for _, v := range piiValues {
		if strings.Contains(string(page.Body), v) {
			t.Fatalf("the log holds a value: %s", page.Body)
		}
	}
	body := page.JSON(t)
	entries := body["entries"].([]any)
	first := entries[0].(map[string]any)
	if len(entries) != 2 || body["nextAfter"] == nil || first["upstreamStatus"] != float64(200) || first["proxyId"] != px["id"] ||
		first["entityCountsByType"].(map[string]any)["EMAIL"] != float64(2) {
		t.Fatalf("%s", page.Body)
	}
	next := env.Do(t, "GET", "/api/redact/log?limit=2&after="+body["nextAfter"].(string), nil, bearer(key)...)
	if n := len(next.JSON(t)["entries"].([]any)); n != 1 {
		t.Fatalf("second page %d", n)
	}
	verify := func() map[string]any {
		r := env.Do(t, "GET", "/api/redact/log/verify", nil, bearer(key)...)
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		return r.JSON(t)
	}
	if v := verify(); v["valid"] != true || v["entries"] != float64(3) {
		t.Fatalf("%v", v)
	}
	conn, err := pgx.Connect(context.Background(), env.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// An edited entry breaks the chain.
	var original string
	if err := conn.QueryRow(context.Background(), `SELECT counts::text FROM redaction_log WHERE account_id = $1 AND seq = 2`, acct).Scan(&original); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `UPDATE redaction_log SET counts = '{"EMAIL":999}' WHERE account_id = $1 AND seq = 2`, acct); err != nil {
		t.Fatal(err)
	}
	if v := verify(); v["valid"] != false || v["brokenAt"] != float64(2) {
		t.Fatalf("after edit %v", v)
	}
	if _, err := conn.Exec(context.Background(), `UPDATE redaction_log SET counts = $2::jsonb WHERE account_id = $1 AND seq = 2`, acct, original); err != nil {
		t.Fatal(err)
	}
	if v := verify(); v["valid"] != true {
		t.Fatalf("restored %v", v)
	}
	// So does a removed one, the newest too.
	if _, err := conn.Exec(context.Background(), `DELETE FROM redaction_log WHERE account_id = $1 AND seq = 3`, acct); err != nil {
		t.Fatal(err)
	}
	if v := verify(); v["valid"] != false {
		t.Fatalf("after removal %v", v)
	}
}

func TestVaultRoundTripAndShredding(t *testing.T) {
	_, key := env.NewAccount(t, "pii:ingest", "pii:read", "pii:write", "pii:delete", "pii:consent", "pii:audit")
	in := env.Do(t, "POST", "/api/pii/tokens", map[string]any{"subjectId": "user-42", "items": []any{
		map[string]any{"type": "EMAIL", "value": "alice@example.com", "deterministic": true},
		map[string]any{"type": "NAME", "value": "Alice O'Brien \"Al\""},
	}}, bearer(key)...)
	if in.Status != 201 {
		t.Fatalf("%d %s", in.Status, in.Body)
	}
	toks := in.JSON(t)["tokens"].([]any)
	det, rnd := toks[0].(map[string]any)["token"].(string), toks[1].(map[string]any)["token"].(string)
	again := env.Do(t, "POST", "/api/pii/tokens", map[string]any{"subjectId": "user-43", "items": []any{
		map[string]any{"type": "EMAIL", "value": "alice@example.com", "deterministic": true}}}, bearer(key)...)
	if again.JSON(t)["tokens"].([]any)[0].(map[string]any)["token"] != det {
		t.Fatalf("join token differs: %s", again.Body)
	}
	read := func(tok string) *struct {
		status int
		value  string
	} {
		r := env.Do(t, "GET", "/api/pii/tokens/"+tok, nil, bearer(key)...)
		out := &struct {
			status int
			value  string
		}{status: r.Status}
		if r.Status == 200 {
			out.value, _ = r.JSON(t)["value"].(string)
		}
		return out
	}
	if r := read(rnd); r.status != 200 || r.value != "Alice O'Brien \"Al\"" {
		t.Fatalf("%+v", r)
	}
	if r := env.Do(t, "PUT", "/api/pii/tokens/"+rnd, map[string]any{"value": "Alice Smith"}, bearer(key)...); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := read(rnd); r.value != "Alice Smith" {
		t.Fatalf("%+v", r)
	}
	// Values are sealed at rest.
	conn, err := pgx.Connect(context.Background(), env.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var leaks int
	_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM pii_tokens t WHERE strpos(encode(ciphertext, 'escape'), 'Alice') > 0 OR strpos(encode(ciphertext, 'escape'), 'alice@') > 0`).Scan(&leaks)
	if leaks != 0 {
		t.Fatal("a value is stored in clear")
	}
	// Deleting the subject destroys its key: its tokens are unreadable.
	del := env.Do(t, "DELETE", "/api/pii/subjects/user-42", nil, bearer(key)...)
	if del.Status != 200 || del.JSON(t)["tokens"] != float64(2) {
		t.Fatalf("%d %s", del.Status, del.Body)
	}
	if r := read(rnd); r.status != http.StatusGone {
		t.Fatalf("after shredding: %+v", r)
	}
	// The join token still reads through the subject that keeps it.
	if r := read(det); r.status != 200 || r.value != "alice@example.com" {
		t.Fatalf("join token of the other subject: %+v", r)
	}
	env.Do(t, "DELETE", "/api/pii/subjects/user-43", nil, bearer(key)...)
	if r := read(det); r.status != http.StatusGone {
		t.Fatalf("after both subjects: %+v", r)
	}
	var keys int
	_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM pii_subjects WHERE subject_id IN ('user-42', 'user-43') AND keyset IS NOT NULL`).Scan(&keys)
	if keys != 0 {
		t.Fatal("a shredded subject kept its key")
	}
	if r := env.Do(t, "POST", "/api/pii/tokens", map[string]any{"subjectId": "user-42", "items": []any{map[string]any{"type": "EMAIL", "value": "x@y.zz"}}}, bearer(key)...); r.Status != http.StatusGone {
		t.Fatalf("ingest into a shredded subject: %d", r.Status)
	}
	// Consent per subject and purpose; the latest decision is in force.
	for _, g := range []bool{true, false} {
		if r := env.Do(t, "POST", "/api/pii/consents", map[string]any{"subjectId": "user-7", "purpose": "marketing", "granted": g}, bearer(key)...); r.Status != 201 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	cs := env.Do(t, "GET", "/api/pii/consents?subjectId=user-7", nil, bearer(key)...).JSON(t)
	if len(cs["records"].([]any)) != 2 || cs["current"].(map[string]any)["marketing"].(map[string]any)["granted"] != false {
		t.Fatalf("%v", cs)
	}
	// Every access is in the audit trail, without values.
	au := env.Do(t, "GET", "/api/pii/audit?limit=100", nil, bearer(key)...)
	if au.Status != 200 || strings.Contains(string(au.Body), "alice@") || strings.Contains(string(au.Body), "Alice") {
		t.Fatalf("%d %s", au.Status, au.Body)
	}
	actions := map[string]int{}
	for _, e := range au.JSON(t)["entries"].([]any) {
		actions[e.(map[string]any)["action"].(string)+"/"+e.(map[string]any)["outcome"].(string)]++
	}
	if actions["ingest/ok"] != 2 || actions["read/ok"] < 3 || actions["read/gone"] < 2 || actions["delete/ok"] != 2 || actions["write/ok"] != 1 || actions["consent/ok"] != 2 {
		t.Fatalf("%v", actions)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// TestVaultKeyRotation rewraps every wrapped key under a new primary
// master key: values read with the new key alone, then the keys go back
// under the platform's own key for the tests after this one.
func TestVaultKeyRotation(t *testing.T) {
	acct, key := env.NewAccount(t)
	in := env.Do(t, "POST", "/api/pii/tokens", map[string]any{"subjectId": "rot-1", "items": []any{map[string]any{"type": "NAME", "value": "Rota Tion"}}}, bearer(key)...)
	tok := in.JSON(t)["tokens"].([]any)[0].(map[string]any)["token"].(string)
	createProxy(t, key, map[string]any{"name": "rot", "style": "openai", "upstreamKey": "sk-rotated"})
	old := env.Config.VaultKeys()
	fresh := codec.NewKey("rotated")
	both, err := vault.NewMaster(fresh + "," + old)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if n, err := (&vault.Service{Store: env.Platform.Store, Master: both}).Rewrap(ctx); err != nil || n < 2 {
		t.Fatalf("%d %v", n, err)
	}
	onlyNew, _ := vault.NewMaster(fresh)
	v, err := (&vault.Service{Store: env.Platform.Store, Master: onlyNew}).Read(ctx, vault.Caller{AccountID: acct}, tok)
	if err != nil || v.Value != "Rota Tion" {
		t.Fatalf("%+v %v", v, err)
	}
	back, _ := vault.NewMaster(old + "," + fresh)
	if _, err := (&vault.Service{Store: env.Platform.Store, Master: back}).Rewrap(ctx); err != nil {
		t.Fatal(err)
	}
	if r := env.Do(t, "GET", "/api/pii/tokens/"+tok, nil, bearer(key)...); r.Status != 200 || r.JSON(t)["value"] != "Rota Tion" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

// hangingUpstream sends one event, then waits for the proxy to hang up.
type hangingUpstream struct{ cancelled chan struct{} }

func (h *hangingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`+"\n\n")
	w.(http.Flusher).Flush()
	select {
	case <-r.Context().Done():
		close(h.cancelled)
	case <-time.After(time.Minute):
	}
}

// TestRedactChatCancellationReachesTheUpstream: a caller that hangs up
// mid-stream ends the upstream call too.
func TestRedactChatCancellationReachesTheUpstream(t *testing.T) {
	_, key := env.NewAccount(t)
	up := &hangingUpstream{cancelled: make(chan struct{})}
	env.Internet.Host(t, "hanging.upstream.test", up)
	createProxy(t, key, map[string]any{"name": "hanging", "style": "openai", "baseUrl": "https://hanging.upstream.test/v1"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := redactClient(key, "hanging", "sk-x")
	stream := client.Chat.Completions.NewStreaming(ctx, chatParams())
	if !stream.Next() || stream.Current().Choices[0].Delta.Content != "Hello" {
		t.Fatalf("first chunk: %v", stream.Err())
	}
	cancel()
	select {
	case <-up.cancelled:
	case <-time.After(time.Minute):
		t.Fatal("the upstream call outlived the caller")
	}
	_ = stream.Close()
}
