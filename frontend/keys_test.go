package frontend_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"conduit/app/apptest"
	"conduit/internal/money"
)

func do(t *testing.T, method, path, key string, body any, headers ...string) *apptest.Response {
	t.Helper()
	if key != "" {
		headers = append(headers, apptest.Bearer(key)...)
	}
	return env.Do(t, method, path, body, headers...)
}

func wantStatus(t *testing.T, r *apptest.Response, status int) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	if status == http.StatusNoContent {
		return nil
	}
	return r.JSON(t)
}

func TestKeyLifecycle(t *testing.T) {
	_, admin := env.NewAccount(t)

	// Create a second key with two scopes; its secret is shown once.
	created := wantStatus(t, do(t, "POST", "/api/keys", admin, map[string]any{
		"name": "ci runner", "permissions": []string{"pipelines:run", "pipelines:read"}, "walletAddress": "0x1111111111111111111111111111111111111111",
	}), http.StatusCreated)
	secret, _ := created["key"].(string)
	id, _ := created["id"].(string)
	if !strings.HasPrefix(secret, "cnd_") || id == "" || created["status"] != "active" || created["name"] != "ci runner" {
		t.Fatalf("created: %v", created)
	}
	if perms := created["permissions"].([]any); len(perms) != 2 || perms[0] != "pipelines:read" {
		t.Fatalf("permissions: %v", perms)
	}

	// Use it.
	wantStatus(t, do(t, "GET", "/api/account/balance", secret, nil), http.StatusOK)

	// The secret never comes back from a read.
	for _, path := range []string{"/api/keys", "/api/keys/" + id} {
		r := do(t, "GET", path, admin, nil)
		wantStatus(t, r, http.StatusOK)
		if strings.Contains(string(r.Body), secret[len(secret)-43:]) {
			t.Fatalf("GET %s leaks the secret: %s", path, r.Body)
		}
	}

	// Deactivate → 401; reactivate → works again.
	got := wantStatus(t, do(t, "PATCH", "/api/keys/"+id, admin, map[string]any{"status": "inactive"}), http.StatusOK)
	if got["status"] != "inactive" {
		t.Fatalf("%v", got)
	}
	r := do(t, "GET", "/api/account/balance", secret, nil)
	if body := wantStatus(t, r, http.StatusUnauthorized); body["error"] != "Invalid or expired credentials" {
		t.Fatalf("%v", body)
	}
	wantStatus(t, do(t, "PATCH", "/api/keys/"+id, admin, map[string]any{"status": "active", "name": "renamed", "walletAddress": nil}), http.StatusOK)
	wantStatus(t, do(t, "GET", "/api/account/balance", secret, nil), http.StatusOK)
	one := wantStatus(t, do(t, "GET", "/api/keys/"+id, admin, nil), http.StatusOK)
	if one["name"] != "renamed" || one["walletAddress"] != nil || one["lastUsedAt"] == nil {
		t.Fatalf("after update: %v", one)
	}

	// Delete → 401 for good, and the key is gone from the list.
	wantStatus(t, do(t, "DELETE", "/api/keys/"+id, admin, nil), http.StatusNoContent)
	wantStatus(t, do(t, "GET", "/api/account/balance", secret, nil), http.StatusUnauthorized)
	wantStatus(t, do(t, "DELETE", "/api/keys/"+id, admin, nil), http.StatusNotFound)
	wantStatus(t, do(t, "PATCH", "/api/keys/"+id, admin, map[string]any{"status": "active"}), http.StatusNotFound)
	list := wantStatus(t, do(t, "GET", "/api/keys", admin, nil), http.StatusOK)
	for _, k := range list["keys"].([]any) {
		if k.(map[string]any)["id"] == id {
			t.Fatal("deleted key still listed")
		}
	}

	// No secret ever reached the logs.
	if strings.Contains(env.Logs(), secret[len(secret)-43:]) || strings.Contains(env.Logs(), admin[len(admin)-43:]) {
		t.Fatal("an API key secret appears in the logs")
	}
}

func TestMissingAndBadCredentials(t *testing.T) {
	r := do(t, "GET", "/api/account/balance", "", nil)
	if body := wantStatus(t, r, http.StatusUnauthorized); !strings.Contains(body["error"].(string), "missing API key") {
		t.Fatalf("%v", body)
	}
	for _, auth := range []string{"Bearer nope", "Basic abc", "Bearer cnd_000000000000_" + strings.Repeat("A", 43)} {
		r := env.Do(t, "GET", "/api/account/balance", nil, "Authorization", auth)
		if body := wantStatus(t, r, http.StatusUnauthorized); body["error"] != "Invalid or expired credentials" {
			t.Fatalf("%s: %v", auth, body)
		}
	}
	// A right prefix with a wrong secret is refused too.
	_, key := env.NewAccount(t)
	last := "A"
	if strings.HasSuffix(key, "A") {
		last = "B"
	}
	forged := key[:len(key)-1] + last
	wantStatus(t, do(t, "GET", "/api/account/balance", forged, nil), http.StatusUnauthorized)
}

func TestScopesAreEnforcedPerRouteGroup(t *testing.T) {
	_, runOnly := env.NewAccount(t, "pipelines:run")
	r := do(t, "GET", "/api/keys", runOnly, nil)
	if body := wantStatus(t, r, http.StatusForbidden); body["error"] != "this API key lacks the keys:manage permission" {
		t.Fatalf("%v", body)
	}
	wantStatus(t, do(t, "POST", "/api/keys", runOnly, map[string]any{"name": "x"}), http.StatusForbidden)
	// Balance needs only a valid key.
	wantStatus(t, do(t, "GET", "/api/account/balance", runOnly, nil), http.StatusOK)
}

func TestKeysActOnlyWithinTheirAccount(t *testing.T) {
	_, alice := env.NewAccount(t)
	_, bob := env.NewAccount(t)
	bobsKey := wantStatus(t, do(t, "POST", "/api/keys", bob, map[string]any{"name": "bob's"}), http.StatusCreated)
	id := bobsKey["id"].(string)
	wantStatus(t, do(t, "GET", "/api/keys/"+id, alice, nil), http.StatusNotFound)
	wantStatus(t, do(t, "PATCH", "/api/keys/"+id, alice, map[string]any{"status": "inactive"}), http.StatusNotFound)
	wantStatus(t, do(t, "DELETE", "/api/keys/"+id, alice, nil), http.StatusNotFound)
	// Bob's key still works: nothing changed.
	wantStatus(t, do(t, "GET", "/api/account/balance", bobsKey["key"].(string), nil), http.StatusOK)
	for _, k := range wantStatus(t, do(t, "GET", "/api/keys", alice, nil), http.StatusOK)["keys"].([]any) {
		if k.(map[string]any)["id"] == id {
			t.Fatal("alice lists bob's key")
		}
	}
}

func TestBadKeyRequestsChangeNothing(t *testing.T) {
	acct, admin := env.NewAccount(t)
	before, err := env.Platform.Store.APIKeys(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, path string
		body         any
		status       int
		want         string
	}{
		{"POST", "/api/keys", map[string]any{"name": ""}, 400, "name must not be empty"},
		{"POST", "/api/keys", map[string]any{}, 400, "name is required"},
		{"POST", "/api/keys", map[string]any{"name": "x", "permissions": []string{"pipelines:run", "root"}}, 400, `unknown permission "root"`},
		{"POST", "/api/keys", map[string]any{"name": "x", "permissions": "pipelines:run"}, 400, "field permissions must be an array"},
		{"POST", "/api/keys", map[string]any{"name": "x", "walletAddress": "0x12"}, 400, "walletAddress"},
		{"POST", "/api/keys", map[string]any{"name": "x", "admin": true}, 400, `unknown field "admin"`},
		{"POST", "/api/keys", "{not json", 400, "not valid JSON"},
		{"POST", "/api/keys", "", 400, "must be a JSON object"},
		{"PATCH", "/api/keys/" + before[0].ID, map[string]any{"status": "paused"}, 400, "status must be active or inactive"},
		{"PATCH", "/api/keys/" + before[0].ID, map[string]any{"permissions": []string{"nope"}}, 400, "unknown permission"},
		{"PATCH", "/api/keys/" + before[0].ID, map[string]any{"name": ""}, 400, "name must not be empty"},
		{"PATCH", "/api/keys/" + before[0].ID, map[string]any{"secret": "x"}, 400, `unknown field "secret"`},
	}
	for _, c := range cases {
		r := do(t, c.method, c.path, admin, c.body)
		body := wantStatus(t, r, c.status)
		if msg, _ := body["error"].(string); !strings.Contains(msg, c.want) {
			t.Errorf("%s %s %v: error %q does not mention %q", c.method, c.path, c.body, msg, c.want)
		}
	}
	after, err := env.Platform.Store.APIKeys(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) || after[0].Name != before[0].Name || after[0].Status != "active" || strings.Join(after[0].Permissions, ",") != strings.Join(before[0].Permissions, ",") {
		t.Fatalf("a refused request changed keys: %+v → %+v", before, after)
	}
}

func TestBalanceForANewAccount(t *testing.T) {
	_, key := env.NewAccount(t)
	r := do(t, "GET", "/api/account/balance", key, nil)
	wantStatus(t, r, http.StatusOK)
	// The harness runs with agent top-up on (local facilitator).
	want := `{"balanceUsd":5,"topUpUrl":"` + env.URL + `/dashboard/credits","typicalVideoChargeUsd":0.42,` +
		`"x402":{"network":"eip155:8453","topUpPerCallUsd":5,"url":"` + env.URL + `/api/billing/credits/x402"}}`
	if strings.TrimSpace(string(r.Body)) != want {
		t.Fatalf("balance body %s, want %s", r.Body, want)
	}
}

func TestPackPurchaseIsIdempotentPerReference(t *testing.T) {
	acct, key := env.NewAccount(t)
	svc := env.Platform.Accounts()
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := svc.RecordPack(ctx, acct, 50*money.USD, "pay_123"+acct); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if _, err := svc.RecordPack(ctx, acct, 20*money.USD, "pay_x"); err == nil {
		t.Fatal("a 20 USD pack does not exist")
	}
	r := do(t, "GET", "/api/account/balance", key, nil)
	if body := wantStatus(t, r, http.StatusOK); body["balanceUsd"] != 57.5 {
		t.Fatalf("5 free + 52.50 pack once, got %v", body["balanceUsd"])
	}
}
