package frontend_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"conduit/internal/apikey"
)

// Audit item 1: a key holding only keys:manage minted an all-scopes key and
// widened its own scopes. A key grants at most what it holds, and changes
// only keys that hold no more than it does.
func TestKeyGrantsAtMostWhatItHolds(t *testing.T) {
	acct, admin := env.NewAccount(t)
	mgr := wantStatus(t, do(t, "POST", "/api/keys", admin, map[string]any{"name": "manager", "permissions": []string{"keys:manage"}}), http.StatusCreated)
	mgrKey, mgrID := mgr["key"].(string), mgr["id"].(string)
	strong := wantStatus(t, do(t, "POST", "/api/keys", admin, map[string]any{"name": "strong", "permissions": apikey.AllScopes()}), http.StatusCreated)
	strongID := strong["id"].(string)
	wantStatus(t, do(t, "PATCH", "/api/keys/"+strongID, admin, map[string]any{"status": "inactive"}), http.StatusOK)
	before := keySnapshot(t, acct)

	allButManage := slices.DeleteFunc(apikey.AllScopes(), func(s string) bool { return s == "keys:manage" })
	refusals := []struct {
		method, path string
		body         any
		want         string
		missing      []string
	}{
		{"POST", "/api/keys", map[string]any{"name": "root", "permissions": apikey.AllScopes()}, "cannot grant permissions it does not hold", allButManage},
		{"POST", "/api/keys", map[string]any{"name": "default"}, "cannot grant the default permissions it does not hold", []string{"pipelines:read", "pipelines:run"}},
		{"PATCH", "/api/keys/" + mgrID, map[string]any{"permissions": []string{"keys:manage", "pipelines:write"}}, "cannot grant permissions it does not hold: pipelines:write", []string{"pipelines:write"}},
		{"PATCH", "/api/keys/" + strongID, map[string]any{"status": "active"}, "cannot change a key that holds permissions it does not hold", allButManage},
		{"PATCH", "/api/keys/" + strongID, map[string]any{"permissions": []string{"keys:manage"}, "status": "active"}, "cannot change a key", allButManage},
		{"DELETE", "/api/keys/" + strongID, nil, "cannot delete a key that holds permissions it does not hold", allButManage},
	}
	for _, c := range refusals {
		body := wantStatus(t, do(t, c.method, c.path, mgrKey, c.body), http.StatusForbidden)
		msg, _ := body["error"].(string)
		var missing []string
		for _, m := range body["missingPermissions"].([]any) {
			missing = append(missing, m.(string))
		}
		if !strings.Contains(msg, c.want) || !slices.Equal(missing, c.missing) {
			t.Errorf("%s %s %v: %s, want %q and missing %v", c.method, c.path, c.body, body, c.want, c.missing)
		}
	}
	if after := keySnapshot(t, acct); after != before {
		t.Fatalf("a refused request changed keys:\n%s\n→\n%s", before, after)
	}
	// The manager still cannot read pipelines, and the strong key stays off.
	wantStatus(t, do(t, "GET", "/api/pipelines", mgrKey, nil), http.StatusForbidden)
	wantStatus(t, do(t, "GET", "/api/account/balance", strong["key"].(string), nil), http.StatusUnauthorized)

	// Within its own permissions it works: a key for the same job, renamed,
	// narrowed and deleted.
	sub := wantStatus(t, do(t, "POST", "/api/keys", mgrKey, map[string]any{"name": "rotated", "permissions": []string{"keys:manage"}}), http.StatusCreated)
	wantStatus(t, do(t, "PATCH", "/api/keys/"+sub["id"].(string), mgrKey, map[string]any{"name": "rotated twice", "permissions": []string{}}), http.StatusOK)
	wantStatus(t, do(t, "DELETE", "/api/keys/"+sub["id"].(string), mgrKey, nil), http.StatusNoContent)
	// The all-scopes key still manages everything.
	wantStatus(t, do(t, "PATCH", "/api/keys/"+mgrID, admin, map[string]any{"permissions": []string{"keys:manage", "pipelines:read"}}), http.StatusOK)
	wantStatus(t, do(t, "GET", "/api/pipelines", mgrKey, nil), http.StatusOK)
}

// keySnapshot renders the account's keys (name, status, permissions).
func keySnapshot(t *testing.T, acct string) string {
	t.Helper()
	keys, err := env.Platform.Store.APIKeys(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k.ID + " " + k.Name + " " + k.Status + " " + strings.Join(k.Permissions, ",") + "\n")
	}
	return b.String()
}
