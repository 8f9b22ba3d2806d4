package attest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"
)

// Status is the outcome of a verification.
type Status string

const (
	StatusVerified Status = "verified" // every check performed passed
	StatusFailed   Status = "failed"   // at least one check failed
)

// TrustLevel says what a verified document's trust rests on.
type TrustLevel string

const (
	// TrustHigh: the chain ends at the AWS Nitro root, so AWS hardware measured and signed it.
	TrustHigh TrustLevel = "high"
	// TrustLocal: the chain ends at another pinned root, such as this platform's local Authority.
	// The document is as trustworthy as the host that keeps that root; nothing isolates the
	// enclave from the platform's operators.
	TrustLocal TrustLevel = "local"
	// TrustNone: verification failed; nothing in the document may be relied on.
	TrustNone TrustLevel = "none"
)

// The checks Verify reports, in the order it reports them.
const (
	CheckStructure = "structure"            // a COSE_Sign1 message whose payload is a CBOR map
	CheckFields    = "fields"               // required fields present, every field well-typed, certificates parse
	CheckDigest    = "digest"               // digest is SHA384 and every PCR is 48 bytes
	CheckSignature = "signature"            // ES384 signature by the signing certificate's P-384 key
	CheckChain     = "certificate_chain"    // signing certificate → cabundle → pinned root
	CheckValidity  = "certificate_validity" // every certificate valid at the document's timestamp
	CheckDebugMode = "debug_mode"           // PCR0, PCR1 and PCR2 present and not all zero
	CheckPCRs      = "pcrs"                 // PCRs equal the expected values (skipped when none are given)
	CheckNonce     = "nonce"                // nonce equals the expected one (skipped when none is given)
	CheckFreshness = "freshness"            // timestamp within MaxAge of now
)

var checksInOrder = []string{
	CheckStructure, CheckFields, CheckDigest, CheckSignature, CheckChain, CheckValidity,
	CheckDebugMode, CheckPCRs, CheckNonce, CheckFreshness,
}

// DefaultMaxAge is how far a document's timestamp may be from now when VerifyOptions.MaxAge is zero.
// Documents are requested fresh for each verification, so minutes are plenty.
const DefaultMaxAge = 5 * time.Minute

// VerifyOptions says what to trust and what to expect.
type VerifyOptions struct {
	// Root is the trust anchor: an Authority's Root for local enclaves. Nil means the AWS Nitro root,
	// pinned by AWSNitroRootFingerprint. Only the chain decides; the document's own cabundle[0] is
	// never trusted as a root.
	Root *x509.Certificate
	// PCRs are the expected values, by index; each listed PCR must be in the document and equal.
	// Typically PCR0–2 (and 8 for signed images) as the build measured them.
	PCRs map[int][]byte
	// Nonce, when non-nil, must equal the document's nonce: the challenge that makes a document
	// useless for replay.
	Nonce []byte
	// MaxAge bounds |now − timestamp|; zero means DefaultMaxAge.
	MaxAge time.Duration
	// Now is the clock; nil means time.Now. Tests of captured documents pin it to their timestamp.
	Now func() time.Time
}

// Check is the outcome of one check.
type Check struct {
	Name string `json:"name"`
	// OK means the check was performed and passed.
	OK bool `json:"ok"`
	// Skipped means the check was not performed: nothing was given to compare with, or a check it
	// depends on failed. A skipped check is not a failure, but it vouches for nothing.
	Skipped bool   `json:"skipped,omitempty"`
	Detail  string `json:"detail"`
}

// Failed reports whether the check was performed and did not pass.
func (c Check) Failed() bool { return !c.OK && !c.Skipped }

// Report is the outcome of Verify: every check, and the verdict they add up to.
type Report struct {
	Checks             []Check    `json:"checks"`
	VerificationStatus Status     `json:"verificationStatus"`
	TrustLevel         TrustLevel `json:"trustLevel"`
	// IntegrityScore is 0 when any check failed; otherwise the percentage of all checks that were
	// performed and passed. 100 means everything the format allows was checked, including the code
	// (PCRs) and replay protection (nonce); 80 means both of those were skipped.
	IntegrityScore int `json:"integrityScore"`
	// Document is the decoded payload once it decodes, even when verification failed, so that a
	// failure can be shown with what the document claimed. Rely on it only when Verified.
	Document *Document `json:"-"`
}

// Verified reports whether every performed check passed.
func (r *Report) Verified() bool { return r.VerificationStatus == StatusVerified }

// Check returns the named check.
func (r *Report) Check(name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// Verify decodes an attestation document and runs every check on it. It never stops at the first
// failure (except where a later check cannot run at all), so the report shows everything wrong.
func Verify(doc []byte, opts VerifyOptions) Report {
	v := verifier{opts: opts}
	v.run(doc)
	return v.report()
}

type verifier struct {
	opts   VerifyOptions
	root   *x509.Certificate
	checks []Check
	doc    *decodedDocument
}

func (v *verifier) pass(name, detail string) {
	v.checks = append(v.checks, Check{Name: name, OK: true, Detail: detail})
}

func (v *verifier) fail(name, detail string) {
	v.checks = append(v.checks, Check{Name: name, Detail: detail})
}

func (v *verifier) skip(name, detail string) {
	v.checks = append(v.checks, Check{Name: name, Skipped: true, Detail: detail})
}

func (v *verifier) outcome(name string, err error, okDetail string) {
	if err != nil {
		v.fail(name, err.Error())
		return
	}
	v.pass(name, okDetail)
}

func (v *verifier) run(raw []byte) {
	v.root = v.opts.Root
	if v.root == nil {
		v.root = AWSNitroRoot()
	}
	msg, err := decodeEnvelope(raw)
	var fields map[string]cbor.RawMessage
	if err == nil {
		fields, err = payloadFields(msg.Payload)
	}
	if err != nil {
		v.fail(CheckStructure, err.Error())
		return
	}
	v.pass(CheckStructure, "COSE_Sign1 message with a CBOR map payload")

	d, err := decodeFields(fields)
	if err != nil {
		v.fail(CheckFields, err.Error())
		return
	}
	v.doc = d
	v.pass(CheckFields, "required fields present and well-typed")

	v.outcome(CheckDigest, checkDigestAndLengths(d), "SHA384, every PCR 48 bytes")
	v.outcome(CheckSignature, checkSignature(msg, d.leaf), "ES384 signature by the signing certificate's key")
	chainDetail, err := checkChain(d, v.root)
	v.outcome(CheckChain, err, chainDetail)
	anchor := v.root
	if err != nil {
		anchor = nil // the root is not part of a chain that does not reach it
	}
	v.outcome(CheckValidity, checkValidity(d, anchor), "every certificate valid at "+d.Timestamp.Format(time.RFC3339Nano))
	v.outcome(CheckDebugMode, checkNotDebug(d.PCRs), "PCR0, PCR1 and PCR2 are measurements, not debug-mode zeros")

	if len(v.opts.PCRs) == 0 {
		v.skip(CheckPCRs, "no expected PCR values were given")
	} else {
		v.outcome(CheckPCRs, checkPCRs(d.PCRs, v.opts.PCRs), "match the expected "+pcrList(v.opts.PCRs))
	}
	if v.opts.Nonce == nil {
		v.skip(CheckNonce, "no nonce was given")
	} else {
		v.outcome(CheckNonce, checkNonce(d.Nonce, v.opts.Nonce), "matches the challenge")
	}
	now := time.Now
	if v.opts.Now != nil {
		now = v.opts.Now
	}
	maxAge := v.opts.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	v.outcome(CheckFreshness, checkFreshness(d.Timestamp, now(), maxAge), fmt.Sprintf("within %v of now", maxAge))
}

func (v *verifier) report() Report {
	// Checks that could not run because an earlier one failed are reported as skipped, so that
	// every report names every check.
	for _, name := range checksInOrder[len(v.checks):] {
		v.skip(name, "not evaluated: the document did not decode")
	}
	r := Report{Checks: v.checks, VerificationStatus: StatusVerified}
	if v.doc != nil {
		d := v.doc.Document
		r.Document = &d
	}
	passed := 0
	for _, c := range v.checks {
		if c.Failed() {
			r.VerificationStatus, r.TrustLevel, r.IntegrityScore = StatusFailed, TrustNone, 0
			return r
		}
		if c.OK {
			passed++
		}
	}
	r.TrustLevel = TrustLocal
	if Fingerprint(v.root.Raw) == AWSNitroRootFingerprint {
		r.TrustLevel = TrustHigh
	}
	r.IntegrityScore = passed * 100 / len(v.checks)
	return r
}

func checkDigestAndLengths(d *decodedDocument) error {
	if d.Digest != DigestSHA384 {
		return fmt.Errorf("digest is %q, want %s", d.Digest, DigestSHA384)
	}
	for _, i := range sortedIndexes(d.PCRs) {
		if len(d.PCRs[i]) != PCRSize {
			return fmt.Errorf("PCR%d is %d bytes; SHA384 values are %d", i, len(d.PCRs[i]), PCRSize)
		}
	}
	return nil
}

func checkSignature(msg *cose.Sign1Message, leaf *x509.Certificate) error {
	alg, err := msg.Headers.Protected.Algorithm()
	if err != nil {
		return fmt.Errorf("the protected header names no algorithm: %v", err)
	}
	if alg != cose.AlgorithmES384 {
		return fmt.Errorf("the algorithm is %v, want ES384", alg)
	}
	key, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || key.Curve != elliptic.P384() {
		return errors.New("the signing certificate's key is not ECDSA P-384")
	}
	verifier, err := cose.NewVerifier(cose.AlgorithmES384, key)
	if err != nil {
		return fmt.Errorf("the signing certificate's key: %v", err)
	}
	if err := msg.Verify(nil, verifier); err != nil {
		return fmt.Errorf("the COSE signature does not verify with the signing certificate's key: %v", err)
	}
	return nil
}

// checkChain builds signing certificate → cabundle → pinned root and checks the signatures, the CA
// constraints and the key usages Nitro's guide asks for. Validity periods are the business of
// checkValidity: the chain is checked at the document's time moved into the span when every
// certificate is valid, so an expired certificate is reported once, as expired, and not also as
// a broken chain.
func checkChain(d *decodedDocument, root *x509.Certificate) (string, error) {
	if d.leaf.IsCA {
		return "", errors.New("the signing certificate is a CA certificate")
	}
	if d.leaf.KeyUsage != 0 && d.leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return "", errors.New("the signing certificate may not make digital signatures")
	}
	all := append([]*x509.Certificate{d.leaf, root}, d.bundle...)
	at, ok := withinAll(d.Timestamp, all)
	if !ok {
		return "", errors.New("there is no time at which all the certificates are valid together")
	}
	intermediates := x509.NewCertPool()
	for _, c := range d.bundle {
		intermediates.AddCert(c)
	}
	roots := x509.NewCertPool()
	roots.AddCert(root)
	chains, err := d.leaf.Verify(x509.VerifyOptions{
		Intermediates: intermediates,
		Roots:         roots,
		CurrentTime:   at,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	if err != nil {
		return "", fmt.Errorf("the signing certificate does not chain to the pinned root %s (%s): %v",
			root.Subject.CommonName, Fingerprint(root.Raw), err)
	}
	chain := chains[0]
	for _, ca := range chain[1:] {
		if ca.KeyUsage&x509.KeyUsageCertSign == 0 {
			return "", fmt.Errorf("CA %q may not sign certificates (no keyCertSign usage)", ca.Subject.CommonName)
		}
	}
	return fmt.Sprintf("%d certificates up to the pinned root %s (SHA-256 %s)",
		len(chain), root.Subject.CommonName, Fingerprint(root.Raw)), nil
}

// withinAll moves t into the span in which every certificate is valid, if there is one.
func withinAll(t time.Time, certs []*x509.Certificate) (time.Time, bool) {
	from, until := certs[0].NotBefore, certs[0].NotAfter
	for _, c := range certs[1:] {
		if c.NotBefore.After(from) {
			from = c.NotBefore
		}
		if c.NotAfter.Before(until) {
			until = c.NotAfter
		}
	}
	if from.After(until) {
		return time.Time{}, false
	}
	if t.Before(from) {
		return from, true
	}
	if t.After(until) {
		return until, true
	}
	return t, true
}

// checkValidity checks the signing certificate, every cabundle certificate and, when the chain
// reached it, the pinned root, at the document's timestamp: a document is judged by the time it
// was made, not by the time it is checked (freshness covers that).
func checkValidity(d *decodedDocument, root *x509.Certificate) error {
	type named struct {
		what string
		cert *x509.Certificate
	}
	certs := []named{{"the signing certificate", d.leaf}}
	rootInBundle := false
	for i, c := range d.bundle {
		certs = append(certs, named{fmt.Sprintf("cabundle[%d]", i), c})
		rootInBundle = rootInBundle || (root != nil && bytes.Equal(c.Raw, root.Raw))
	}
	if root != nil && !rootInBundle {
		certs = append(certs, named{"the pinned root", root})
	}
	var problems []string
	for _, n := range certs {
		if d.Timestamp.Before(n.cert.NotBefore) || d.Timestamp.After(n.cert.NotAfter) {
			problems = append(problems, fmt.Sprintf("%s (%s) is valid from %s until %s, not at the document's time %s",
				n.what, n.cert.Subject.CommonName, n.cert.NotBefore.Format(time.RFC3339),
				n.cert.NotAfter.Format(time.RFC3339), d.Timestamp.Format(time.RFC3339Nano)))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// checkNotDebug refuses documents from debug-mode enclaves: their PCRs are all zero and, in AWS's
// words, such documents "can't be used for cryptographic attestation". A document missing one of
// the three measurements is refused for the same reason: it does not say what runs.
func checkNotDebug(pcrs map[int][]byte) error {
	var zero []string
	for _, i := range []int{PCRImage, PCRRuntime, PCRApplication} {
		v, ok := pcrs[i]
		if !ok {
			return fmt.Errorf("PCR%d is missing", i)
		}
		if isZero(v) {
			zero = append(zero, fmt.Sprintf("PCR%d", i))
		}
	}
	if len(zero) > 0 {
		return fmt.Errorf("%s all zero: a debug-mode enclave, whose documents prove nothing", strings.Join(zero, ", "))
	}
	return nil
}

func checkPCRs(got, want map[int][]byte) error {
	var problems []string
	for _, i := range sortedIndexes(want) {
		g, ok := got[i]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("PCR%d is missing", i))
		case !bytes.Equal(g, want[i]):
			problems = append(problems, fmt.Sprintf("PCR%d is %s, want %s", i, hex.EncodeToString(g), hex.EncodeToString(want[i])))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func checkNonce(got, want []byte) error {
	if got == nil {
		return errors.New("the document carries no nonce")
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("the nonce is %s, want %s", hex.EncodeToString(got), hex.EncodeToString(want))
	}
	return nil
}

func checkFreshness(docTime, now time.Time, maxAge time.Duration) error {
	age := now.Sub(docTime)
	if age > maxAge {
		return fmt.Errorf("the document is from %s, %v before now; at most %v allowed", docTime.Format(time.RFC3339Nano), age.Round(time.Second), maxAge)
	}
	if -age > maxAge {
		return fmt.Errorf("the document is from %s, %v in the future; at most %v allowed", docTime.Format(time.RFC3339Nano), (-age).Round(time.Second), maxAge)
	}
	return nil
}

func sortedIndexes(m map[int][]byte) []int {
	idx := make([]int, 0, len(m))
	for i := range m {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	return idx
}

func pcrList(m map[int][]byte) string {
	var names []string
	for _, i := range sortedIndexes(m) {
		names = append(names, fmt.Sprintf("PCR%d", i))
	}
	return strings.Join(names, ", ")
}
