package frontend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"conduit/app/apptest"
	"conduit/internal/apikey"
	"conduit/internal/quota"
)

const commitment = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func kycBody(mod func(p map[string]any)) map[string]any {
	p := map[string]any{
		"commitment":   commitment,
		"proof":        strings.Repeat("ab", 40),
		"publicInputs": []string{"0x01"},
		"timestamp":    time.Now().UTC().Format(time.RFC3339),
		"algorithm":    "Pedersen-SHA256",
	}
	if mod != nil {
		mod(p)
	}
	return map[string]any{"userId": "user-1", "proof": p, "deviceInfo": map[string]any{"platform": "ios", "version": "17.2"}}
}

type kycAnswer struct {
	ProofID                   string    `json:"proofId"`
	Status                    string    `json:"status"`
	CryptographicallyVerified bool      `json:"cryptographicallyVerified"`
	VerificationNote          string    `json:"verificationNote"`
	ChainTxHash               string    `json:"chainTxHash"`
	BlockchainProofID         string    `json:"blockchainProofId"`
	VerificationURL           string    `json:"verificationUrl"`
	ExpiresAt                 time.Time `json:"expiresAt"`
}

func submitKYC(t *testing.T, key string, body map[string]any) kycAnswer {
	t.Helper()
	r := env.Do(t, "POST", "/api/kyc/proof", body, "Authorization", "Bearer "+key)
	if r.Status != http.StatusCreated {
		t.Fatalf("POST /api/kyc/proof: %d %s", r.Status, r.Body)
	}
	var a kycAnswer
	if err := json.Unmarshal(r.Body, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

type kycVerification struct {
	IsValid                   bool      `json:"isValid"`
	CryptographicallyVerified bool      `json:"cryptographicallyVerified"`
	PublicInputs              []string  `json:"publicInputs"`
	ChainVerified             bool      `json:"chainVerified"`
	ExpiresAt                 time.Time `json:"expiresAt"`
}

func verifyKYC(t *testing.T, id string) kycVerification {
	t.Helper()
	r := env.Do(t, "GET", "/api/kyc/proof/"+id+"/verify", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("verify: %d %s", r.Status, r.Body)
	}
	var v kycVerification
	_ = json.Unmarshal(r.Body, &v)
	return v
}

// Each of the spec's rules has its own 400, naming its field, and a
// refused proof leaves nothing behind.
func TestKYCProofValidationPerRule(t *testing.T) {
	acct, key := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	cases := []struct {
		name  string
		mod   func(p map[string]any)
		field string
	}{
		{"commitment 63 hex", func(p map[string]any) { p["commitment"] = commitment[:63] }, "proof.commitment"},
		{"commitment not hex", func(p map[string]any) { p["commitment"] = "zz" + commitment[2:] }, "proof.commitment"},
		{"commitment with 0x", func(p map[string]any) { p["commitment"] = "0x" + commitment[2:] }, "proof.commitment"},
		{"proof 64 characters", func(p map[string]any) { p["proof"] = strings.Repeat("a", 64) }, "proof.proof"},
		{"timestamp two hours old", func(p map[string]any) { p["timestamp"] = time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339) }, "proof.timestamp"},
		{"timestamp two hours ahead", func(p map[string]any) { p["timestamp"] = time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339) }, "proof.timestamp"},
		{"timestamp not a time", func(p map[string]any) { p["timestamp"] = "yesterday" }, "proof.timestamp"},
		{"no public inputs", func(p map[string]any) { p["publicInputs"] = []string{} }, "proof.publicInputs"},
		{"public input not hex", func(p map[string]any) { p["publicInputs"] = []string{"0x01", "isAdult:true"} }, "proof.publicInputs[1]"},
		{"algorithm empty", func(p map[string]any) { p["algorithm"] = "" }, "proof.algorithm"},
		{"algorithm not a name", func(p map[string]any) { p["algorithm"] = "rm -rf" }, "proof.algorithm"},
		{"groth16 without a key", func(p map[string]any) { p["algorithm"] = "groth16" }, "proof.vkHash"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := env.Do(t, "POST", "/api/kyc/proof", kycBody(c.mod), "Authorization", "Bearer "+key)
			if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), c.field) {
				t.Fatalf("%d %s; want 400 naming %s", r.Status, r.Body, c.field)
			}
		})
	}
	r := env.Do(t, "POST", "/api/kyc/proof", map[string]any{"userId": "u"}, "Authorization", "Bearer "+key)
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "proof") {
		t.Fatalf("no proof: %d %s", r.Status, r.Body)
	}
	if n, err := env.Platform.Store.Count(context.Background(), acct, quota.KYCProofs); err != nil || n != 0 {
		t.Fatalf("proofs after refusals: %d %v", n, err)
	}
	// Submitting needs a key with proofs:write.
	_, reader := env.NewAccount(t, apikey.ProofsRead)
	if r := env.Do(t, "POST", "/api/kyc/proof", kycBody(nil), "Authorization", "Bearer "+reader); r.Status != http.StatusForbidden {
		t.Fatalf("without proofs:write: %d", r.Status)
	}
}

// A Groth16 KYC proof is verified against the registered key it names and
// recorded on the chain: verified once its block is in, chainVerified
// read back from the contract. The same proof with another input fails
// and is not recorded.
func TestKYCGroth16ProofVerifiedAndOnChain(t *testing.T) {
	_, key := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	vkHash, _ := registerVK(t, key, fixture(t, "vk.json"))
	good := submitKYC(t, key, kycBody(func(p map[string]any) {
		p["algorithm"], p["vkHash"], p["proof"] = "groth16", vkHash, string(fixture(t, "proof.json"))
		p["publicInputs"] = []string{"0x21", "0x0b"} // 33, 11
	}))
	if !good.CryptographicallyVerified || good.ChainTxHash == "" || good.Status == "failed" || good.BlockchainProofID == "" ||
		!strings.HasSuffix(good.VerificationURL, "/api/kyc/proof/"+good.ProofID+"/verify") {
		t.Fatalf("answer %+v", good)
	}
	if d := time.Until(good.ExpiresAt); d < 7*24*time.Hour-time.Minute || d > 7*24*time.Hour {
		t.Fatalf("expiresAt %s is not 7 days out", good.ExpiresAt)
	}
	var v kycVerification
	apptest.Eventually(t, 20*time.Second, "the proof verified on chain", func() error {
		v = verifyKYC(t, good.ProofID)
		if !v.IsValid || !v.ChainVerified {
			return fmt.Errorf("%+v", v)
		}
		return nil
	})
	rc, err := env.Platform.Proofs.Registry.Chain.Receipt(context.Background(), common.HexToHash(good.ChainTxHash))
	if err != nil || rc.Status != 1 {
		t.Fatalf("the chain has no successful transaction %s: %v", good.ChainTxHash, err)
	}
	if len(v.PublicInputs) != 2 || v.PublicInputs[0] != "0x21" {
		t.Fatalf("publicInputs %v", v.PublicInputs)
	}

	bad := submitKYC(t, key, kycBody(func(p map[string]any) {
		p["algorithm"], p["vkHash"], p["proof"] = "groth16", vkHash, string(fixture(t, "proof.json"))
		p["publicInputs"] = []string{"0x21", "0x0c"} // 33, 12: not what was proven
	}))
	if bad.Status != "failed" || bad.CryptographicallyVerified || bad.ChainTxHash != "" || !strings.Contains(bad.VerificationNote, "does not verify") {
		t.Fatalf("answer %+v", bad)
	}
	if v := verifyKYC(t, bad.ProofID); v.IsValid || v.ChainVerified {
		t.Fatalf("a failed proof: %+v", v)
	}
}

// An algorithm we cannot verify is recorded on the chain but never
// reported verified.
func TestKYCUnverifiableAlgorithmIsNeverVerified(t *testing.T) {
	_, key := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	a := submitKYC(t, key, kycBody(nil))
	if a.CryptographicallyVerified || a.Status != "pending" || a.ChainTxHash == "" || !strings.Contains(a.VerificationNote, "never reported verified") {
		t.Fatalf("answer %+v", a)
	}
	apptest.Eventually(t, 20*time.Second, "the record on chain", func() error {
		v := verifyKYC(t, a.ProofID)
		if v.IsValid || v.CryptographicallyVerified {
			t.Fatalf("reported valid: %+v", v)
		}
		if !v.ChainVerified {
			return fmt.Errorf("%+v", v)
		}
		return nil
	})
	r := env.Do(t, "GET", "/api/kyc/proof/"+a.ProofID, nil)
	if m := r.JSON(t); r.Status != http.StatusOK || m["status"] != "pending" || m["cryptographicallyVerified"] != false {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

// The public record leaves the proof out; includePrivate=true needs a key
// of the owning account.
func TestKYCIncludePrivateNeedsTheOwnersKey(t *testing.T) {
	_, owner := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	_, stranger := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	a := submitKYC(t, owner, kycBody(nil))
	path := "/api/kyc/proof/" + a.ProofID
	r := env.Do(t, "GET", path, nil)
	if m := r.JSON(t); r.Status != http.StatusOK || m["proof"] != nil || m["userId"] != nil || m["commitment"] != commitment {
		t.Fatalf("public: %d %s", r.Status, r.Body)
	}
	if r := env.Do(t, "GET", path+"?includePrivate=true", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("private without a key: %d %s", r.Status, r.Body)
	}
	if r := env.Do(t, "GET", path+"?includePrivate=true", nil, "Authorization", "Bearer "+stranger); r.Status != http.StatusForbidden {
		t.Fatalf("private with another account's key: %d %s", r.Status, r.Body)
	}
	r = env.Do(t, "GET", path+"?includePrivate=true", nil, "Authorization", "Bearer "+owner)
	m := r.JSON(t)
	if r.Status != http.StatusOK || m["proof"] != strings.Repeat("ab", 40) || m["userId"] != "user-1" || m["timestamp"] == nil ||
		m["deviceInfo"].(map[string]any)["platform"] != "ios" {
		t.Fatalf("private with the owner's key: %d %s", r.Status, r.Body)
	}
	if r := env.Do(t, "GET", "/api/kyc/proof/00000000-0000-4000-8000-000000000000", nil); r.Status != http.StatusNotFound {
		t.Fatalf("a missing proof: %d", r.Status)
	}
}

// Seven days on (the service's clock moved), a proof is gone: 410 with
// its expiry.
func TestKYCProofExpiresAfterSevenDays(t *testing.T) {
	_, key := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	a := submitKYC(t, key, kycBody(nil))
	if r := env.Do(t, "GET", "/api/kyc/proof/"+a.ProofID+"/verify", nil); r.Status != http.StatusOK {
		t.Fatalf("before expiry: %d %s", r.Status, r.Body)
	}
	svc := env.Platform.Proofs.KYC
	svc.Now = func() time.Time { return time.Now().Add(7*24*time.Hour - time.Minute) }
	t.Cleanup(func() { svc.Now = nil })
	if r := env.Do(t, "GET", "/api/kyc/proof/"+a.ProofID+"/verify", nil); r.Status != http.StatusOK {
		t.Fatalf("a minute before expiry: %d %s", r.Status, r.Body)
	}
	svc.Now = func() time.Time { return time.Now().Add(7*24*time.Hour + time.Minute) }
	for _, p := range []string{"/api/kyc/proof/" + a.ProofID + "/verify", "/api/kyc/proof/" + a.ProofID} {
		r := env.Do(t, "GET", p, nil)
		if m := r.JSON(t); r.Status != http.StatusGone || !strings.Contains(fmt.Sprint(m), "Proof expired") || m["expiresAt"] == nil {
			t.Fatalf("%s after expiry: %d %s", p, r.Status, r.Body)
		}
	}
}

// A proof's life is its workflow: once confirmed it waits for its expiry
// and then writes it (here a proof submitted with the service's clock set
// almost seven days back, so it expires seconds after it is recorded).
func TestKYCProofLifeEndsExpired(t *testing.T) {
	_, key := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	vkHash, _ := registerVK(t, key, fixture(t, "vk.json"))
	svc := env.Platform.Proofs.KYC
	back := time.Now().Add(-7*24*time.Hour + 3*time.Second)
	svc.Now = func() time.Time { return back }
	t.Cleanup(func() { svc.Now = nil })
	a := submitKYC(t, key, kycBody(func(p map[string]any) {
		p["algorithm"], p["vkHash"], p["proof"] = "groth16", vkHash, string(fixture(t, "proof2.json"))
		p["publicInputs"] = []string{"0x23", "0x05"} // 35, 5
		p["timestamp"] = back.UTC().Format(time.RFC3339)
	}))
	svc.Now = nil
	if !a.CryptographicallyVerified || a.ChainTxHash == "" {
		t.Fatalf("answer %+v", a)
	}
	apptest.Eventually(t, 30*time.Second, "the proof's workflow expired it", func() error {
		p, err := env.Platform.Store.KYCProofByID(context.Background(), a.ProofID)
		if err != nil || p.Status != "expired" || p.VerifiedAt == nil || p.ChainBlockHash == "" {
			return fmt.Errorf("%+v %v", p, err)
		}
		return nil
	})
	if r := env.Do(t, "GET", "/api/kyc/proof/"+a.ProofID+"/verify", nil); r.Status != http.StatusGone {
		t.Fatalf("after its workflow expired it: %d %s", r.Status, r.Body)
	}
}
