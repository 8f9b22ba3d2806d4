package vault

import (
	"bytes"
	"testing"

	"conduit/internal/codec"

	"github.com/tink-crypto/tink-go/v2/aead"
)

func TestMasterRotation(t *testing.T) {
	old, fresh := codec.NewKey("2026-01"), codec.NewKey("2026-07")
	m1, err := NewMaster(old)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := m1.Seal([]byte("sk-upstream"), "purpose-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m1.Open(sealed, "purpose-b"); err == nil {
		t.Fatal("opened under another purpose")
	}
	_, wrapped, err := m1.newKeyset(aead.AES256GCMKeyTemplate(), "subject-1")
	if err != nil {
		t.Fatal(err)
	}
	// The new key first, the old one kept: old ciphertexts still open,
	// new ones are made with the new key.
	m2, err := NewMaster(fresh + "," + old)
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := m2.Open(sealed, "purpose-a"); err != nil || !bytes.Equal(pt, []byte("sk-upstream")) {
		t.Fatalf("%s %v", pt, err)
	}
	if _, err := m2.unwrap(wrapped, "subject-2"); err == nil {
		t.Fatal("a keyset moved to another subject")
	}
	rewrapped, err := m2.Rewrap(wrapped, "subject-1")
	if err != nil {
		t.Fatal(err)
	}
	// Once everything is rewrapped, the old key can go.
	m3, err := NewMaster(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m3.unwrap(rewrapped, "subject-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := m3.unwrap(wrapped, "subject-1"); err == nil {
		t.Fatal("the retired key still unwraps")
	}
	for _, bad := range []string{"", "x:short", old + "," + old} {
		if _, err := NewMaster(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}
