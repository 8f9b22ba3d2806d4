package groth16_test

import (
	"testing"

	"conduit/internal/groth16"
)

// BenchmarkVerify is one proof's verification (signals already parsed, the
// key's per-key work done at registration); BenchmarkPairingCheck is the
// bare four-pair check on the same proof, nothing precomputed: the floor.
// Run on one core: go test -bench . -cpu 1 ./internal/groth16
func BenchmarkVerify(b *testing.B) {
	f := load(b, "proof.json", "public.json")
	for b.Loop() {
		if err := groth16.Verify(f.vk, f.proof, f.pub); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseAndVerify adds parsing and checking the proof's points.
func BenchmarkParseAndVerify(b *testing.B) {
	f := load(b, "proof.json", "public.json")
	proof, pub := read(b, "proof.json"), read(b, "public.json")
	for b.Loop() {
		p, err := groth16.ParseProof(proof)
		if err != nil {
			b.Fatal(err)
		}
		s, err := groth16.ParsePublicSignals(pub)
		if err != nil {
			b.Fatal(err)
		}
		if err := groth16.Verify(f.vk, p, s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPairingCheck(b *testing.B) {
	f := load(b, "proof.json", "public.json")
	x := vkx(f.vk, f.pub)
	for b.Loop() {
		if ok, err := groth16.PairingCheck(f.vk, f.proof, x); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
