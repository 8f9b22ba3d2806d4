package frontend_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"conduit/frontend"
	"conduit/internal/money"
	"conduit/internal/siwx"
	"conduit/internal/x402"
)

// signInChallenge asks the purchases endpoint for its challenge.
func signInChallenge(t *testing.T) siwx.Challenge {
	t.Helper()
	r := env.Do(t, "GET", frontend.PurchasesPath, nil)
	if r.Status != http.StatusPaymentRequired {
		t.Fatalf("purchases without a proof: %d %s", r.Status, r.Body)
	}
	pr, err := x402.DecodePaymentRequired(r.Header.Get("PAYMENT-REQUIRED"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(pr.Extensions[siwx.ExtensionKey])
	var ch siwx.Challenge
	if err := json.Unmarshal(raw, &ch); err != nil || ch.Info.Nonce == "" {
		t.Fatalf("challenge %s: %v", raw, err)
	}
	// The offers only name the networks to sign in from: nothing is for
	// sale here.
	if len(pr.Accepts) != len(ch.SupportedChains) || pr.Resource.URL != env.URL+frontend.PurchasesPath {
		t.Fatalf("%+v", pr)
	}
	for i, a := range pr.Accepts {
		if a.Amount != "0" || a.Network != ch.SupportedChains[i].ChainID {
			t.Fatalf("offer %d: %+v", i, a)
		}
	}
	return ch
}

func listWith(t *testing.T, p siwx.Proof) *http.Response {
	t.Helper()
	h, err := siwx.EncodeHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", env.URL+frontend.PurchasesPath, nil)
	req.Header.Set("SIGN-IN-WITH-X", h)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func decode(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPurchasesListEveryPurchaseOfTheSigningWallet(t *testing.T) {
	w := newWallet(t, 10*money.USD)
	video := wantStatus(t, buyVideo(t, w, map[string]any{"prompt": "purchases: a windmill at dusk", "async": true}), http.StatusOK)
	speech := wantStatus(t, buy(t, frontend.SpeechPath, w, map[string]any{"text": "Thank you for your purchase."}), http.StatusOK)
	music := wantStatus(t, buy(t, frontend.MusicPath, w, map[string]any{"prompt": "gentle ambient pads", "seconds": 15}), http.StatusOK)
	top := wantStatus(t, env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", w.pay(t, challenge(t))), http.StatusOK)
	// Someone else's purchase must never show.
	other := newWallet(t, money.USD)
	theirs := wantStatus(t, buy(t, frontend.SpeechPath, other, map[string]any{"text": "Not yours."}), http.StatusOK)
	awaitWorkflow(t, video["runId"].(string))

	ch := signInChallenge(t)
	// The test API listens on a random port: the domain names it, as the
	// official client's origin check expects.
	if ch.Info.Domain != strings.TrimPrefix(env.URL, "http://") || !strings.HasPrefix(ch.Info.Domain, "127.0.0.1:") || ch.Info.URI != env.URL+frontend.PurchasesPath || len(ch.SupportedChains) != 2 ||
		ch.SupportedChains[0].ChainID != "eip155:8453" || ch.SupportedChains[0].Type != "eip191" || ch.SupportedChains[1].Type != "ed25519" {
		t.Fatalf("%+v", ch)
	}
	p, err := siwx.SignEVM(ch, "eip155:8453", w.key)
	if err != nil {
		t.Fatal(err)
	}
	resp := listWith(t, p)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %v", resp.StatusCode, decode(t, resp))
	}
	body := decode(t, resp)
	list := body["purchases"].([]any)
	got := map[string]map[string]any{}
	for _, x := range list {
		x := x.(map[string]any)
		got[x["kind"].(string)] = x
		if x["runId"] == theirs["runId"] {
			t.Fatal("another wallet's purchase was listed")
		}
	}
	if len(list) != 4 || body["payer"] != w.addr.Hex() || body["network"] != "eip155:8453" ||
		got["video"]["runId"] != video["runId"] || got["speech"]["runId"] != speech["runId"] || got["music"]["runId"] != music["runId"] ||
		got["topup"]["transaction"] != top["transaction"] || usd(got["topup"]["amountUsd"]) != 5*money.USD {
		t.Fatalf("%v", body)
	}
	// Each listed run opens at its fresh statusUrl, and its file downloads.
	rec := wantStatus(t, get(t, got["video"]["statusUrl"].(string)), http.StatusOK)
	if rec["status"] != "success" || got["video"]["video"] == nil {
		t.Fatalf("%v / %v", rec, got["video"])
	}
	probeMP4(t, got["video"]["video"].(string))
	fetchAudio(t, got["speech"]["audio"].(string))

	// The nonce is spent.
	resp = listWith(t, p)
	if e := decode(t, resp); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(e["error"].(string), "already used") || resp.Header.Get("PAYMENT-REQUIRED") == "" {
		t.Fatalf("reused nonce: %d %v", resp.StatusCode, e)
	}
}

func TestPurchasesSignInRefusals(t *testing.T) {
	key, _ := crypto.GenerateKey()
	intruder, _ := crypto.GenerateKey()
	fresh := func() siwx.Challenge { return signInChallenge(t) }
	sign := func(ch siwx.Challenge) siwx.Proof {
		p, err := siwx.SignEVM(ch, "eip155:8453", key)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name  string
		proof func() siwx.Proof
		words string
	}{
		{"wrong domain", func() siwx.Proof { ch := fresh(); ch.Info.Domain = "evil.example"; return sign(ch) }, "domain"},
		{"domain without its port", func() siwx.Proof { ch := fresh(); ch.Info.Domain = "127.0.0.1"; return sign(ch) }, "domain"},
		{"wrong uri", func() siwx.Proof {
			ch := fresh()
			ch.Info.URI, ch.Info.Resources = "https://evil.example/api/x402/purchases", []string{"https://evil.example/api/x402/purchases"}
			return sign(ch)
		}, "uri"},
		{"issued too long ago", func() siwx.Proof {
			ch := fresh()
			ch.Info.IssuedAt = time.Now().Add(-6 * time.Minute).UTC().Format("2006-01-02T15:04:05.000Z")
			return sign(ch)
		}, "5 minutes"},
		{"issued in the future", func() siwx.Proof {
			ch := fresh()
			ch.Info.IssuedAt = time.Now().Add(5 * time.Minute).UTC().Format("2006-01-02T15:04:05.000Z")
			return sign(ch)
		}, "future"},
		{"expired", func() siwx.Proof {
			ch := fresh()
			ch.Info.ExpirationTime = time.Now().Add(-time.Second).UTC().Format("2006-01-02T15:04:05.000Z")
			return sign(ch)
		}, "expired"},
		{"nonce never issued", func() siwx.Proof { ch := fresh(); ch.Info.Nonce = "0123456789abcdef0123456789abcdef"; return sign(ch) }, "not issued"},
		{"signed by another key", func() siwx.Proof {
			p := sign(fresh())
			forged, err := siwx.SignEVM(siwx.Challenge{Info: p.Info, SupportedChains: []siwx.Chain{{ChainID: "eip155:8453", Type: "eip191"}}}, "eip155:8453", intruder)
			if err != nil {
				t.Fatal(err)
			}
			p.Signature = forged.Signature
			return p
		}, "signature"},
		{"field changed after signing", func() siwx.Proof { p := sign(fresh()); p.Statement = "Sign in to steal"; return p }, "signature"},
		{"unsupported chain", func() siwx.Proof {
			ch := fresh()
			ch.SupportedChains = []siwx.Chain{{ChainID: "eip155:1", Type: "eip191"}}
			p, err := siwx.SignEVM(ch, "eip155:1", key)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}, "chain"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := listWith(t, c.proof())
			e := decode(t, resp)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(e["error"].(string), c.words) {
				t.Fatalf("%d %v", resp.StatusCode, e)
			}
		})
	}
	// Not even a proof.
	req, _ := http.NewRequest("GET", env.URL+frontend.PurchasesPath, nil)
	req.Header.Set("SIGN-IN-WITH-X", base64.StdEncoding.EncodeToString([]byte(`{"nonsense":true}`)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if e := decode(t, resp); resp.StatusCode != http.StatusUnauthorized || e["error"] == "" {
		t.Fatalf("%d %v", resp.StatusCode, e)
	}
}

func TestPurchasesOnSolana(t *testing.T) {
	k := solWallet(t, 2*money.USD)
	body := map[string]any{"text": "Paid from Solana."}
	rec := wantStatus(t, env.Do(t, "POST", frontend.SpeechPath, body, "PAYMENT-SIGNATURE", solPay(t, k, challengeFor(t, frontend.SpeechPath, body))), http.StatusOK)
	if rec["status"] != "success" || !strings.HasPrefix(rec["network"].(string), "solana:") {
		t.Fatalf("%v", rec)
	}
	ch := signInChallenge(t)
	p, err := siwx.SignSolana(ch, rec["network"].(string), ed25519.PrivateKey(k))
	if err != nil {
		t.Fatal(err)
	}
	resp := listWith(t, p)
	list := decode(t, resp)
	if resp.StatusCode != http.StatusOK || list["payer"] != k.PublicKey().String() || len(list["purchases"].([]any)) != 1 ||
		list["purchases"].([]any)[0].(map[string]any)["runId"] != rec["runId"] {
		t.Fatalf("%d %v", resp.StatusCode, list)
	}
}
