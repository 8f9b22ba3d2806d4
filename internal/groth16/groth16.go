// Package groth16 reads snarkjs's Groth16 JSON (verification key, proof,
// public signals) on BN254 and verifies proofs with gnark-crypto. Every
// point is checked on the curve and in its prime-order subgroup, every
// coordinate below the base field's modulus and every public signal below
// the scalar field's (a signal ≥ r would be a second encoding of the same
// input: a malleable proof). A refusal is an *Error naming the reason and
// the field, so callers can answer a 400 or fail a job with it.
package groth16

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

	"github.com/consensys/gnark-crypto/ecc/bn254"
	"github.com/consensys/gnark-crypto/ecc/bn254/fp"
	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
)

// MaxPublicInputs is zkVerify's cap on a Groth16 key's public inputs.
const MaxPublicInputs = 64

// Reason says why a key, proof or signal was refused.
type Reason string

const (
	// Malformed: not the snarkjs shape (a missing or non-decimal value).
	Malformed Reason = "malformed"
	// Unsupported: another protocol or curve than groth16 on bn128/bn254.
	Unsupported Reason = "unsupported"
	// OutOfField: a coordinate ≥ the base field modulus.
	OutOfField Reason = "coordinate_out_of_field"
	// NotOnCurve: a point off the curve.
	NotOnCurve Reason = "not_on_curve"
	// NotInSubgroup: a point on the curve outside the prime-order subgroup.
	NotInSubgroup Reason = "not_in_subgroup"
	// SignalOutOfField: a public signal ≥ the scalar field modulus.
	SignalOutOfField Reason = "public_signal_out_of_field"
	// TooManyInputs: more than MaxPublicInputs public inputs.
	TooManyInputs Reason = "too_many_public_inputs"
	// ICLength: IC does not hold nPublic+1 points.
	ICLength Reason = "ic_length"
	// InputCount: the number of public signals is not the key's nPublic.
	InputCount Reason = "public_input_count"
	// PairingFailed: the proof does not verify against the key and signals.
	PairingFailed Reason = "pairing_check_failed"
)

// Error is a refusal: its reason and the JSON field it concerns.
type Error struct {
	Reason Reason
	Field  string
	Msg    string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

func fail(r Reason, field, format string, args ...any) *Error {
	return &Error{Reason: r, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// ReasonOf is err's reason ("" when err is not an *Error).
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// VerifyingKey is a parsed, checked verification key.
type VerifyingKey struct {
	NPublic            int
	Alpha              bn254.G1Affine
	Beta, Gamma, Delta bn254.G2Affine
	IC                 []bn254.G1Affine

	// alphaBeta is e(α, β), and gammaLines/deltaLines the Miller loop's
	// lines of γ and δ, computed once per key: a proof then costs one
	// variable-point loop, two fixed-point loops and one final
	// exponentiation.
	alphaBeta              bn254.GT
	gammaLines, deltaLines [2][len(bn254.LoopCounter)]bn254.LineEvaluationAff
}

// Proof is a parsed, checked proof.
type Proof struct {
	A bn254.G1Affine
	B bn254.G2Affine
	C bn254.G1Affine
}

type jsonKey struct {
	Protocol string            `json:"protocol"`
	Curve    string            `json:"curve"`
	NPublic  *int              `json:"nPublic"`
	Alpha    []json.RawMessage `json:"vk_alpha_1"`
	Beta     []json.RawMessage `json:"vk_beta_2"`
	Gamma    []json.RawMessage `json:"vk_gamma_2"`
	Delta    []json.RawMessage `json:"vk_delta_2"`
	IC       [][]json.RawMessage
}

type jsonProof struct {
	Protocol string            `json:"protocol"`
	Curve    string            `json:"curve"`
	A        []json.RawMessage `json:"pi_a"`
	B        []json.RawMessage `json:"pi_b"`
	C        []json.RawMessage `json:"pi_c"`
}

// checkHeader refuses another protocol or curve; both may be absent
// (some tools leave them out), never different.
func checkHeader(field, protocol, curve string) error {
	if protocol != "" && protocol != "groth16" {
		return fail(Unsupported, field+".protocol", "is %q; only groth16 is verified here", protocol)
	}
	if curve != "" && curve != "bn128" && curve != "bn254" {
		return fail(Unsupported, field+".curve", "is %q; only bn128 (BN254) is verified here", curve)
	}
	return nil
}

// ParseVerifyingKey reads snarkjs's verification_key.json and checks it.
func ParseVerifyingKey(data []byte) (*VerifyingKey, error) {
	var j jsonKey
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fail(Malformed, "vk", "is not a snarkjs verification key object: %v", err)
	}
	if err := checkHeader("vk", j.Protocol, j.Curve); err != nil {
		return nil, err
	}
	if j.NPublic == nil {
		return nil, fail(Malformed, "vk.nPublic", "is missing")
	}
	n := *j.NPublic
	if n < 0 {
		return nil, fail(Malformed, "vk.nPublic", "is negative")
	}
	if n > MaxPublicInputs {
		return nil, fail(TooManyInputs, "vk.nPublic", "is %d; at most %d public inputs are allowed", n, MaxPublicInputs)
	}
	if len(j.IC) != n+1 {
		return nil, fail(ICLength, "vk.IC", "holds %d points; a key with nPublic %d needs %d", len(j.IC), n, n+1)
	}
	vk := &VerifyingKey{NPublic: n, IC: make([]bn254.G1Affine, len(j.IC))}
	var err error
	if vk.Alpha, err = g1("vk.vk_alpha_1", j.Alpha); err != nil {
		return nil, err
	}
	if vk.Beta, err = g2("vk.vk_beta_2", j.Beta); err != nil {
		return nil, err
	}
	if vk.Gamma, err = g2("vk.vk_gamma_2", j.Gamma); err != nil {
		return nil, err
	}
	if vk.Delta, err = g2("vk.vk_delta_2", j.Delta); err != nil {
		return nil, err
	}
	for i, p := range j.IC {
		if vk.IC[i], err = g1(fmt.Sprintf("vk.IC[%d]", i), p); err != nil {
			return nil, err
		}
	}
	if vk.alphaBeta, err = bn254.Pair([]bn254.G1Affine{vk.Alpha}, []bn254.G2Affine{vk.Beta}); err != nil {
		return nil, fail(Malformed, "vk", "e(alpha, beta) could not be computed: %v", err)
	}
	vk.gammaLines, vk.deltaLines = bn254.PrecomputeLines(vk.Gamma), bn254.PrecomputeLines(vk.Delta)
	return vk, nil
}

// ParseProof reads snarkjs's proof.json and checks its points.
func ParseProof(data []byte) (*Proof, error) {
	var j jsonProof
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fail(Malformed, "proof", "is not a snarkjs proof object: %v", err)
	}
	if err := checkHeader("proof", j.Protocol, j.Curve); err != nil {
		return nil, err
	}
	var p Proof
	var err error
	if p.A, err = g1("proof.pi_a", j.A); err != nil {
		return nil, err
	}
	if p.B, err = g2("proof.pi_b", j.B); err != nil {
		return nil, err
	}
	if p.C, err = g1("proof.pi_c", j.C); err != nil {
		return nil, err
	}
	return &p, nil
}

// ParsePublicSignals reads snarkjs's public.json: an array of decimal
// strings (numbers are accepted too), each below the scalar field modulus.
func ParsePublicSignals(data []byte) ([]*big.Int, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fail(Malformed, "publicSignals", "must be an array of decimal strings")
	}
	if len(raw) > MaxPublicInputs {
		return nil, fail(TooManyInputs, "publicSignals", "holds %d values; at most %d are allowed", len(raw), MaxPublicInputs)
	}
	out := make([]*big.Int, len(raw))
	for i, r := range raw {
		field := fmt.Sprintf("publicSignals[%d]", i)
		v, err := decimal(field, r)
		if err != nil {
			return nil, err
		}
		if v.Cmp(fr.Modulus()) >= 0 {
			return nil, fail(SignalOutOfField, field, "is not below the BN254 scalar field modulus")
		}
		out[i] = v
	}
	return out, nil
}

// decimal reads one snarkjs number: a decimal string (or a JSON number).
func decimal(field string, r json.RawMessage) (*big.Int, error) {
	var s string
	if err := json.Unmarshal(r, &s); err != nil {
		var n json.Number
		if json.Unmarshal(r, &n) != nil {
			return nil, fail(Malformed, field, "must be a decimal string")
		}
		s = n.String()
	}
	if s == "" || len(s) > 80 {
		return nil, fail(Malformed, field, "must be a decimal string")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return nil, fail(Malformed, field, "must be a non-negative decimal integer")
		}
	}
	v, _ := new(big.Int).SetString(s, 10)
	return v, nil
}

// coord reads a base-field coordinate, refusing one ≥ p (SetString would
// reduce it silently: a second encoding of the same point).
func coord(field string, r json.RawMessage) (fp.Element, error) {
	var e fp.Element
	v, err := decimal(field, r)
	if err != nil {
		return e, err
	}
	if v.Cmp(fp.Modulus()) >= 0 {
		return e, fail(OutOfField, field, "is not below the BN254 base field modulus")
	}
	e.SetBigInt(v)
	return e, nil
}

// isValue reports whether r is the decimal string (or number) want.
func isValue(r json.RawMessage, want string) bool {
	v, err := decimal("", r)
	return err == nil && v.String() == want
}

// g1 reads [x, y, "1"] (snarkjs writes affine points with Z = 1).
func g1(field string, parts []json.RawMessage) (bn254.G1Affine, error) {
	var p bn254.G1Affine
	if len(parts) != 3 {
		return p, fail(Malformed, field, "must be [x, y, \"1\"]")
	}
	if !isValue(parts[2], "1") {
		return p, fail(Malformed, field, "must be an affine point (third coordinate \"1\")")
	}
	var err error
	if p.X, err = coord(field+"[0]", parts[0]); err != nil {
		return p, err
	}
	if p.Y, err = coord(field+"[1]", parts[1]); err != nil {
		return p, err
	}
	if !p.IsOnCurve() {
		return p, fail(NotOnCurve, field, "is not on the BN254 curve")
	}
	if !p.IsInSubGroup() {
		return p, fail(NotInSubgroup, field, "is not in the BN254 G1 subgroup")
	}
	return p, nil
}

// g2 reads [[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]; snarkjs's [c0, c1]
// is gnark-crypto's E2{A0, A1} as it is.
func g2(field string, parts []json.RawMessage) (bn254.G2Affine, error) {
	var p bn254.G2Affine
	if len(parts) != 3 {
		return p, fail(Malformed, field, "must be [[x.c0, x.c1], [y.c0, y.c1], [\"1\", \"0\"]]")
	}
	var x, y, z []json.RawMessage
	if json.Unmarshal(parts[0], &x) != nil || json.Unmarshal(parts[1], &y) != nil || json.Unmarshal(parts[2], &z) != nil ||
		len(x) != 2 || len(y) != 2 || len(z) != 2 {
		return p, fail(Malformed, field, "must be [[x.c0, x.c1], [y.c0, y.c1], [\"1\", \"0\"]]")
	}
	if !isValue(z[0], "1") || !isValue(z[1], "0") {
		return p, fail(Malformed, field, "must be an affine point (third coordinate [\"1\", \"0\"])")
	}
	var err error
	for i, dst := range []*fp.Element{&p.X.A0, &p.X.A1, &p.Y.A0, &p.Y.A1} {
		src := [][]json.RawMessage{x, y}[i/2][i%2]
		if *dst, err = coord(fmt.Sprintf("%s[%d][%d]", field, i/2, i%2), src); err != nil {
			return p, err
		}
	}
	if !p.IsOnCurve() {
		return p, fail(NotOnCurve, field, "is not on the BN254 twist")
	}
	if !p.IsInSubGroup() {
		return p, fail(NotInSubgroup, field, "is not in the BN254 G2 subgroup")
	}
	return p, nil
}

// Verify checks proof against vk and the public signals: nil when
// e(A, B) = e(α, β)·e(vk_x, γ)·e(C, δ) with vk_x = IC₀ + Σ sᵢ·ICᵢ₊₁.
// Signals must come from ParsePublicSignals (or be checked the same way).
func Verify(vk *VerifyingKey, proof *Proof, public []*big.Int) error {
	if len(public) != vk.NPublic {
		return fail(InputCount, "publicSignals", "holds %d values; the key expects %d", len(public), vk.NPublic)
	}
	for i, s := range public {
		if s == nil || s.Sign() < 0 || s.Cmp(fr.Modulus()) >= 0 {
			return fail(SignalOutOfField, fmt.Sprintf("publicSignals[%d]", i), "is not below the BN254 scalar field modulus")
		}
	}
	var acc, term bn254.G1Jac
	acc.FromAffine(&vk.IC[0])
	for i, s := range public {
		term.FromAffine(&vk.IC[i+1])
		term.ScalarMultiplication(&term, s)
		acc.AddAssign(&term)
	}
	var vkx, negVKX, negC bn254.G1Affine
	vkx.FromJacobian(&acc)
	negVKX.Neg(&vkx)
	negC.Neg(&proof.C)
	// e(A, B)·e(−vk_x, γ)·e(−C, δ) must equal e(α, β).
	ml, err := bn254.MillerLoop([]bn254.G1Affine{proof.A}, []bn254.G2Affine{proof.B})
	if err != nil {
		return fail(PairingFailed, "proof", "the pairing could not be computed: %v", err)
	}
	fixed, err := bn254.MillerLoopFixedQ([]bn254.G1Affine{negVKX, negC},
		[][2][len(bn254.LoopCounter)]bn254.LineEvaluationAff{vk.gammaLines, vk.deltaLines})
	if err != nil {
		return fail(PairingFailed, "proof", "the pairing could not be computed: %v", err)
	}
	ml.Mul(&ml, &fixed)
	if got := bn254.FinalExponentiation(&ml); !got.Equal(&vk.alphaBeta) {
		return fail(PairingFailed, "proof", "does not verify against the key and public signals")
	}
	return nil
}

// PairingCheck is the bare four-pair check with nothing precomputed: the
// floor the benchmarks compare Verify with.
func PairingCheck(vk *VerifyingKey, proof *Proof, vkx bn254.G1Affine) (bool, error) {
	var negA bn254.G1Affine
	negA.Neg(&proof.A)
	return bn254.PairingCheck([]bn254.G1Affine{negA, vk.Alpha, vkx, proof.C}, []bn254.G2Affine{proof.B, vk.Beta, vk.Gamma, vk.Delta})
}
