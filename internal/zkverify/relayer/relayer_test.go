package relayer_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"conduit/internal/zkverify/relayer"
	"conduit/internal/zkverify/relayer/relayertest"
)

func TestRegisterSubmitAndFollow(t *testing.T) {
	srv := relayertest.New("key-1")
	defer srv.Close()
	c := relayer.New(srv.BaseURL(), "key-1")
	ctx := context.Background()
	vk := json.RawMessage(`"0x0102"`)
	r, err := c.RegisterVK(ctx, relayer.RegisterVK{ProofType: "ultrahonk", VK: vk})
	if err != nil || r.VKHash == "" || r.AlreadyRegistered {
		t.Fatalf("register: %+v %v", r, err)
	}
	// Registering again: the relayer's error body carries the hash.
	again, err := c.RegisterVK(ctx, relayer.RegisterVK{ProofType: "ultrahonk", VK: vk})
	if err != nil || again.VKHash != r.VKHash || !again.AlreadyRegistered {
		t.Fatalf("again: %+v %v", again, err)
	}
	chain := int64(11155111)
	sub, err := c.SubmitProof(ctx, relayer.SubmitProof{ProofType: "ultrahonk", VKRegistered: true, ChainID: &chain,
		ProofData: relayer.ProofData{Proof: json.RawMessage(`"0xabcd"`), VK: r.VKHash}})
	if err != nil || sub.OptimisticVerify != "success" {
		t.Fatalf("submit: %+v %v", sub, err)
	}
	var seen []string
	for range 10 {
		js, err := c.JobStatus(ctx, sub.JobID)
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) == 0 || seen[len(seen)-1] != js.Status {
			seen = append(seen, js.Status)
		}
		if js.Status == "AggregationPublished" {
			if js.AggregationDetails == nil || js.AggregationDetails.Receipt == "" || js.AggregationID == nil || js.StatusID != 7 {
				t.Fatalf("published without details: %+v", js)
			}
			break
		}
	}
	if len(seen) != 7 || seen[len(seen)-1] != "AggregationPublished" {
		t.Fatalf("statuses %v", seen)
	}
}

func TestRefusals(t *testing.T) {
	srv := relayertest.New("key-1")
	defer srv.Close()
	ctx := context.Background()
	// A wrong API key is a permanent refusal, and the error does not
	// carry the key.
	_, err := relayer.New(srv.BaseURL(), "wrong-key").RegisterVK(ctx, relayer.RegisterVK{ProofType: "sp1", VK: json.RawMessage(`"0x01"`)})
	var re *relayer.Error
	if !errors.As(err, &re) || re.Status != 401 || !re.Permanent() {
		t.Fatalf("wrong key: %v", err)
	}
	c := relayer.New(srv.BaseURL(), "key-1")
	r, _ := c.RegisterVK(ctx, relayer.RegisterVK{ProofType: "sp1", VK: json.RawMessage(`"0x01"`)})
	_, err = c.SubmitProof(ctx, relayer.SubmitProof{ProofType: "sp1", VKRegistered: true,
		ProofData: relayer.ProofData{Proof: json.RawMessage(`"` + relayertest.RejectedProof + `"`), VK: r.VKHash}})
	if !errors.As(err, &re) || re.Status != 400 || re.Msg != "Optimistic verification failed" {
		t.Fatalf("rejected proof: %v", err)
	}
	// An unreachable relayer is transient, and its error does not name
	// the URL (which carries the key).
	srv.Close()
	_, err = c.JobStatus(ctx, "x")
	if err == nil || errors.As(err, &re) {
		t.Fatalf("closed server: %v", err)
	}
	if s := err.Error(); contains(s, "key-1") {
		t.Fatalf("the error leaks the API key: %s", s)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
