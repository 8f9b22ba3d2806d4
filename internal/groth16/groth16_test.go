package groth16_test

import (
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bn254"
	"github.com/consensys/gnark-crypto/ecc/bn254/fp"
	"github.com/consensys/gnark-crypto/ecc/bn254/fr"

	"conduit/internal/groth16"
)

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type fixture struct {
	vk    *groth16.VerifyingKey
	proof *groth16.Proof
	pub   []*big.Int
}

func load(t testing.TB, proofFile, pubFile string) fixture {
	t.Helper()
	vk, err := groth16.ParseVerifyingKey(read(t, "vk.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := groth16.ParseProof(read(t, proofFile))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := groth16.ParsePublicSignals(read(t, pubFile))
	if err != nil {
		t.Fatal(err)
	}
	return fixture{vk, p, pub}
}

// The snarkjs fixtures (testdata/gen.sh) verify; swapping the signals of
// two valid proofs of one key, or changing one, does not.
func TestRealProofsVerify(t *testing.T) {
	f1 := load(t, "proof.json", "public.json")
	f2 := load(t, "proof2.json", "public2.json")
	for _, f := range []fixture{f1, f2} {
		if err := groth16.Verify(f.vk, f.proof, f.pub); err != nil {
			t.Fatalf("a real proof was refused: %v", err)
		}
	}
	if err := groth16.Verify(f1.vk, f1.proof, f2.pub); groth16.ReasonOf(err) != groth16.PairingFailed {
		t.Fatalf("another proof's signals: %v", err)
	}
	wrong := []*big.Int{f1.pub[0], big.NewInt(12)}
	if err := groth16.Verify(f1.vk, f1.proof, wrong); groth16.ReasonOf(err) != groth16.PairingFailed {
		t.Fatalf("a wrong signal: %v", err)
	}
	// The bare pairing check agrees.
	if ok, err := groth16.PairingCheck(f1.vk, f1.proof, vkx(f1.vk, f1.pub)); err != nil || !ok {
		t.Fatalf("bare pairing check: %v %v", ok, err)
	}
	if ok, _ := groth16.PairingCheck(f1.vk, f1.proof, vkx(f1.vk, wrong)); ok {
		t.Fatal("bare pairing check accepted a wrong signal")
	}
}

func vkx(vk *groth16.VerifyingKey, pub []*big.Int) bn254.G1Affine {
	var acc, term bn254.G1Jac
	acc.FromAffine(&vk.IC[0])
	for i, s := range pub {
		term.FromAffine(&vk.IC[i+1])
		term.ScalarMultiplication(&term, s)
		acc.AddAssign(&term)
	}
	var out bn254.G1Affine
	out.FromJacobian(&acc)
	return out
}

// A signal of s + r would verify as s if it were reduced: it is refused.
func TestSignalAtOrAboveModulusRefused(t *testing.T) {
	f := load(t, "proof.json", "public.json")
	over := new(big.Int).Add(f.pub[1], fr.Modulus())
	_, err := groth16.ParsePublicSignals([]byte(`["33","` + over.String() + `"]`))
	if groth16.ReasonOf(err) != groth16.SignalOutOfField || !strings.Contains(err.Error(), "publicSignals[1]") {
		t.Fatalf("got %v", err)
	}
	if err := groth16.Verify(f.vk, f.proof, []*big.Int{f.pub[0], over}); groth16.ReasonOf(err) != groth16.SignalOutOfField {
		t.Fatalf("Verify with an unreduced signal: %v", err)
	}
	if _, err := groth16.ParsePublicSignals([]byte(`["` + fr.Modulus().String() + `"]`)); groth16.ReasonOf(err) != groth16.SignalOutOfField {
		t.Fatalf("the modulus itself: %v", err)
	}
}

// mutate rewrites one JSON document through a map.
func mutate(t *testing.T, name string, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(read(t, name), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, _ := json.Marshal(m)
	return b
}

func TestKeyAndProofChecks(t *testing.T) {
	f := load(t, "proof.json", "public.json")
	cases := []struct {
		name   string
		vk     []byte
		proof  []byte
		reason groth16.Reason
		field  string
	}{
		{"pi_a off the curve", nil, mutate(t, "proof.json", func(m map[string]any) {
			m["pi_a"].([]any)[1] = "5"
		}), groth16.NotOnCurve, "proof.pi_a"},
		{"pi_a coordinate not below p", nil, mutate(t, "proof.json", func(m map[string]any) {
			x, _ := new(big.Int).SetString(m["pi_a"].([]any)[0].(string), 10)
			m["pi_a"].([]any)[0] = x.Add(x, fp.Modulus()).String()
		}), groth16.OutOfField, "proof.pi_a[0]"},
		{"pi_b on the twist, outside the subgroup", nil, mutate(t, "proof.json", func(m map[string]any) {
			p := twistPointOutsideSubgroup(t)
			m["pi_b"] = []any{[]any{p.X.A0.String(), p.X.A1.String()}, []any{p.Y.A0.String(), p.Y.A1.String()}, []any{"1", "0"}}
		}), groth16.NotInSubgroup, "proof.pi_b"},
		{"pi_c not affine", nil, mutate(t, "proof.json", func(m map[string]any) {
			m["pi_c"].([]any)[2] = "2"
		}), groth16.Malformed, "proof.pi_c"},
		{"other protocol", nil, mutate(t, "proof.json", func(m map[string]any) { m["protocol"] = "plonk" }), groth16.Unsupported, "proof.protocol"},
		{"IC too short", mutate(t, "vk.json", func(m map[string]any) { m["IC"] = m["IC"].([]any)[:2] }), nil, groth16.ICLength, "vk.IC"},
		{"too many inputs", mutate(t, "vk.json", func(m map[string]any) { m["nPublic"] = 65 }), nil, groth16.TooManyInputs, "vk.nPublic"},
		{"vk gamma off the twist", mutate(t, "vk.json", func(m map[string]any) {
			m["vk_gamma_2"].([]any)[0].([]any)[0] = "7"
		}), nil, groth16.NotOnCurve, "vk.vk_gamma_2"},
		{"vk curve", mutate(t, "vk.json", func(m map[string]any) { m["curve"] = "bls12381" }), nil, groth16.Unsupported, "vk.curve"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.vk != nil {
				_, err = groth16.ParseVerifyingKey(c.vk)
			} else {
				_, err = groth16.ParseProof(c.proof)
			}
			var ge *groth16.Error
			if err == nil || groth16.ReasonOf(err) != c.reason {
				t.Fatalf("want %s, got %v", c.reason, err)
			}
			_ = ge
			if !strings.HasPrefix(err.Error(), c.field) {
				t.Fatalf("the error should name %s: %v", c.field, err)
			}
		})
	}
	// A wrong count of signals.
	if err := groth16.Verify(f.vk, f.proof, f.pub[:1]); groth16.ReasonOf(err) != groth16.InputCount {
		t.Fatalf("one signal short: %v", err)
	}
	// A tampered proof (C swapped for A) fails the pairing.
	bad := *f.proof
	bad.C = f.proof.A
	if err := groth16.Verify(f.vk, &bad, f.pub); groth16.ReasonOf(err) != groth16.PairingFailed {
		t.Fatalf("tampered: %v", err)
	}
}

// twistPointOutsideSubgroup finds a point on the BN254 twist that is not
// in G2 (the twist's cofactor is large, so almost every point is one).
func twistPointOutsideSubgroup(t *testing.T) bn254.G2Affine {
	var b bn254.E2 // the twist's b: 3/(9+u)
	b.A0.SetUint64(9)
	b.A1.SetUint64(1)
	b.Inverse(&b)
	var three bn254.E2
	three.A0.SetUint64(3)
	b.Mul(&b, &three)
	for i := uint64(1); i < 1000; i++ {
		var p bn254.G2Affine
		p.X.A0.SetUint64(i)
		var y2 bn254.E2
		y2.Square(&p.X).Mul(&y2, &p.X).Add(&y2, &b)
		if y2.Legendre() != 1 {
			continue
		}
		p.Y.Sqrt(&y2)
		if p.IsOnCurve() && !p.IsInSubGroup() {
			return p
		}
	}
	t.Fatal("no twist point outside G2 found")
	return bn254.G2Affine{}
}

// The vkHash depends on the points, not the JSON's spelling; another key
// has another hash.
func TestHashIsOfThePoints(t *testing.T) {
	a, err := groth16.ParseVerifyingKey(read(t, "vk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(read(t, "vk.json"), &m)
	delete(m, "vk_alphabeta_12")
	compact, _ := json.Marshal(m)
	b, err := groth16.ParseVerifyingKey(compact)
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash() != b.Hash() {
		t.Fatal("the same key spelled differently hashed differently")
	}
	c, err := groth16.ParseVerifyingKey(mutate(t, "vk.json", func(m map[string]any) {
		ic := m["IC"].([]any)
		ic[1], ic[2] = ic[2], ic[1]
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Hash() == a.Hash() {
		t.Fatal("two keys hashed alike")
	}
}
