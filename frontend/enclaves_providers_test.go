package frontend_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestEnclaveProviderNotConfigured: the harness runs the local provider only, so providerId
// "aws-nitro" (and a region the local provider does not serve) is a 400 naming the field, and
// nothing is written.
func TestEnclaveProviderNotConfigured(t *testing.T) {
	env.RequireEnclaves(t)
	_, key := env.NewAccount(t)
	for field, extra := range map[string]map[string]any{
		"providerId": {"providerId": "aws-nitro"},
		"region":     {"region": "us-east-1"},
	} {
		body := enclaveBody(env.Registry + "/a:1")
		for k, v := range extra {
			body[k] = v
		}
		b := wantStatus(t, do(t, "POST", "/api/enclaves", key, body), http.StatusBadRequest)
		if !strings.Contains(fmt.Sprint(b["problems"]), "field:"+field) {
			t.Errorf("%s: %v", field, b)
		}
	}
	if b := wantStatus(t, do(t, "POST", "/api/enclaves", key, map[string]any{"name": "x", "providerId": "aws-nitro",
		"providerConfig": map[string]any{"dockerImage": env.Registry + "/a:1"}}), http.StatusBadRequest); !strings.Contains(fmt.Sprint(b["error"]), `"aws-nitro" is not configured here`) {
		t.Errorf("message: %v", b)
	}
	if l := wantStatus(t, do(t, "GET", "/api/enclaves", key, nil), http.StatusOK); len(l["enclaves"].([]any)) != 0 {
		t.Fatalf("bad input wrote %v", l)
	}
}
