package frontend_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"conduit/frontend"
	"conduit/internal/money"
)

// signInOfficially lists w's purchases with the official Sign-In-With-X
// client (@x402/extensions, unmodified: interop/x402/siwx.mjs) — the
// x402Client extension, or with mode "wrap" wrapFetchWithSIWx — and
// returns the HTTP status and the decoded body.
func signInOfficially(t *testing.T, w wallet, mode ...string) (int, map[string]any) {
	t.Helper()
	out := runOfficial(t, "siwx.mjs", append([]string{env.URL + frontend.PurchasesPath, hexutil.Encode(crypto.FromECDSA(w.key))}, mode...)...)
	var res struct {
		Status  int            `json:"status"`
		Address string         `json:"address"`
		Body    map[string]any `json:"body"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Address != w.addr.Hex() {
		t.Fatalf("the client signed as %s, not %s", res.Address, w.addr.Hex())
	}
	return res.Status, res.Body
}

// TestOfficialSIWxClientListsPurchases signs in to the purchases listing
// with the official Sign-In-With-X client extension and a viem
// private-key account, against the test API on its random port (so the
// challenge's domain must carry the port for the client to sign it).
func TestOfficialSIWxClientListsPurchases(t *testing.T) {
	officialClients(t)
	if !strings.HasPrefix(env.URL, "http://127.0.0.1:") {
		t.Fatalf("the test API is not on a non-default port: %s", env.URL)
	}
	w := newWallet(t, 2*money.USD)
	mine := wantStatus(t, buy(t, frontend.SpeechPath, w, map[string]any{"text": "Signed in with the official client."}), http.StatusOK)
	other := newWallet(t, money.USD)
	theirs := wantStatus(t, buy(t, frontend.SpeechPath, other, map[string]any{"text": "Someone else's purchase."}), http.StatusOK)

	runIDs := func(body map[string]any) []string {
		var ids []string
		list, _ := body["purchases"].([]any)
		for _, x := range list {
			if id, ok := x.(map[string]any)["runId"].(string); ok {
				ids = append(ids, id)
			}
		}
		return ids
	}

	for _, mode := range []string{"extension", "wrap"} {
		status, body := signInOfficially(t, w, mode)
		if status != http.StatusOK || body["payer"] != w.addr.Hex() || body["network"] != "eip155:8453" {
			t.Fatalf("%s: %d %v", mode, status, body)
		}
		if ids := runIDs(body); len(ids) != 1 || ids[0] != mine["runId"] {
			t.Fatalf("%s: purchases %v, want only %v: %v", mode, ids, mine["runId"], body)
		}
	}
	status, body := signInOfficially(t, w)
	rec := body["purchases"].([]any)[0].(map[string]any)
	if rec["kind"] != "speech" || rec["status"] != "success" || rec["audio"] == nil || rec["statusUrl"] == nil {
		t.Fatalf("%v", rec)
	}

	// Another wallet sees its own purchase and none of w's.
	status, body = signInOfficially(t, other)
	if status != http.StatusOK || body["payer"] != other.addr.Hex() {
		t.Fatalf("%d %v", status, body)
	}
	if ids := runIDs(body); len(ids) != 1 || ids[0] != theirs["runId"] {
		t.Fatalf("the other wallet's purchases %v, want only %v: %v", ids, theirs["runId"], body)
	}
	// And a wallet that never bought anything signs in to an empty list.
	status, body = signInOfficially(t, newWallet(t, 0))
	if list, ok := body["purchases"].([]any); status != http.StatusOK || !ok || len(list) != 0 {
		t.Fatalf("%d %v", status, body)
	}
}
