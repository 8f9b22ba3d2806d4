package codec

import (
	"bytes"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func TestSealOpenRotate(t *testing.T) {
	spec1 := NewKey("k1")
	old, err := Parse(spec1)
	if err != nil {
		t.Fatal(err)
	}
	secret := "PAYMENT-SIGNATURE eyJ4NDAyVmVyc2lvbiI6Mn0 and a prompt"
	p, err := converter.GetDefaultDataConverter().ToPayload(secret)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := old.Encode([]*commonpb.Payload{p})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed[0].Data, []byte("prompt")) || string(sealed[0].Metadata[MetaKey]) != "k1" {
		t.Fatal("the payload is not sealed")
	}
	// Rotation: a new first key seals, the old one still opens.
	both, err := Parse(NewKey("k2") + "," + spec1)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := both.Decode(sealed)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := converter.GetDefaultDataConverter().FromPayload(opened[0], &got); err != nil || got != secret {
		t.Fatalf("%q %v", got, err)
	}
	resealed, _ := both.Encode(opened)
	if string(resealed[0].Metadata[MetaKey]) != "k2" {
		t.Fatal("new payloads are not sealed with the first key")
	}
	// Without its key a payload does not open; tampering is detected;
	// never-encrypted payloads pass through.
	if _, err := old.Decode(resealed); err == nil || !strings.Contains(err.Error(), `"k2"`) {
		t.Fatalf("%v", err)
	}
	sealed[0].Data[len(sealed[0].Data)-1] ^= 1
	if _, err := both.Decode(sealed); err == nil {
		t.Fatal("a tampered payload opened")
	}
	if plain, err := old.Decode([]*commonpb.Payload{p}); err != nil || plain[0] != p {
		t.Fatal("a plain payload did not pass through")
	}
}

func TestParseRefusesBadKeys(t *testing.T) {
	for _, spec := range []string{"", "k1", "k1:notbase64!", "k1:AAAA", NewKey("a") + "," + NewKey("a")} {
		if _, err := Parse(spec); err == nil {
			t.Errorf("%q parsed", spec)
		}
	}
}

func TestSealOpenSecret(t *testing.T) {
	c, err := Parse(NewKey("a"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Seal([]byte("hunter2"), "enclave/x/registry")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(s), "hunter2") {
		t.Fatal("the secret is in the clear")
	}
	got, err := c.Open(s, "enclave/x/registry")
	if err != nil || string(got) != "hunter2" {
		t.Fatalf("open = %q, %v", got, err)
	}
	if _, err := c.Open(s, "enclave/y/registry"); err == nil {
		t.Fatal("a secret opened for another purpose")
	}
	s[len(s)-1] ^= 1
	if _, err := c.Open(s, "enclave/x/registry"); err == nil {
		t.Fatal("a tampered secret opened")
	}
}
