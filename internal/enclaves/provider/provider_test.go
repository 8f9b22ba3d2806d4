package provider

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorKinds(t *testing.T) {
	perm := Errorf(Permanent, "prepare", "enc_1", "no such image")
	trans := Wrap(Transient, "prepare", "enc_1", errors.New("connection refused"))
	if !IsPermanent(perm) || IsPermanent(trans) || IsPermanent(errors.New("plain")) || IsPermanent(nil) {
		t.Fatal("IsPermanent sorts wrongly")
	}
	wrapped := fmt.Errorf("activity: %w", perm)
	var p interface{ Permanent() bool }
	if !errors.As(wrapped, &p) || !p.Permanent() {
		t.Fatal("a wrapped permanent error must still say Permanent()")
	}
	if Wrap(Transient, "deploy", "enc_1", perm) != perm {
		t.Error("Wrap must keep an error's own kind")
	}
	if Wrap(Permanent, "x", "y", nil) != nil {
		t.Error("Wrap(nil) must be nil")
	}
	if got := perm.Error(); got != "enclave enc_1: prepare (permanent): no such image" {
		t.Errorf("message %q", got)
	}
	if !errors.Is(Wrap(Permanent, "attest", "e", ErrNotRunning), ErrNotRunning) {
		t.Error("ErrNotRunning must stay visible")
	}
}
