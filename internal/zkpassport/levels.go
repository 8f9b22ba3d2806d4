package zkpassport

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Verification levels, each reported passed, failed or not_checked (a
// level is never reported passed unless it ran).
const (
	LevelStructure     = "structure"
	LevelBinding       = "binding"
	LevelConstraints   = "constraints"
	LevelCryptographic = "cryptographic"

	Passed     = "passed"
	Failed     = "failed"
	NotChecked = "not_checked"
)

// Level is one level's outcome.
type Level struct {
	Status string `json:"status"`
	// Checks name what the level looked at; Errors why it failed; Reason
	// why it was not checked.
	Checks []string `json:"checks,omitempty"`
	Errors []string `json:"errors,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

func (l *Level) fail(format string, args ...any) {
	l.Errors = append(l.Errors, fmt.Sprintf(format, args...))
}

func (l *Level) close() {
	if len(l.Errors) > 0 {
		l.Status = Failed
	} else {
		l.Status = Passed
	}
}

// Proof is one proof of a submission, as the SDK's ProofResult.
type Proof struct {
	Proof           string                     `json:"proof"`
	VkeyHash        string                     `json:"vkeyHash"`
	Version         string                     `json:"version"`
	Name            string                     `json:"name"`
	Index           int                        `json:"index"`
	Total           int                        `json:"total"`
	CommittedInputs map[string]json.RawMessage `json:"committedInputs,omitempty"`
}

// ServiceConfig is what the submitter says the proofs were made for.
type ServiceConfig struct {
	Domain                  string `json:"domain,omitempty"`
	Scope                   string `json:"scope,omitempty"`
	ValidityPeriodInSeconds int64  `json:"validityPeriodInSeconds,omitempty"`
	DevMode                 bool   `json:"devMode,omitempty"`
}

// Submission is POST /api/zkpassport/verify's body: the proofs and the
// query result the SDK's onResult gives (the shape of zkPassport's own
// verifier requests).
type Submission struct {
	RequestID     string                                `json:"requestId"`
	Proofs        []Proof                               `json:"proofs"`
	OriginalQuery json.RawMessage                       `json:"originalQuery,omitempty"`
	QueryResult   map[string]map[string]json.RawMessage `json:"queryResult"`
	ServiceConfig *ServiceConfig                        `json:"serviceConfig,omitempty"`
}

// Bounds of a submission.
const (
	MaxProofs   = 16
	MaxProofHex = 256 << 10
	// clockSkew is how far a proof's date may sit before the request was
	// made or after now (the phone's clock against ours).
	clockSkew = 5 * time.Minute
)

var (
	hex32      = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)
	circuit    = regexp.MustCompile(`^[a-z0-9_]{1,100}$`)
	semver     = regexp.MustCompile(`^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$`)
	outerCount = regexp.MustCompile(`^outer_(?:evm_)?count_(\d+)$`)
	// frModulus is BN254's scalar field: every element of an UltraHonk
	// proof (public inputs, commitments' limbs, evaluations) is one.
	frModulus, _ = new(big.Int).SetString("21888242871839275222246405745257275088548364400416034343698204186575808495617", 10)
)

// parsed is a proof's words (32-byte big-endian field elements).
type parsed struct {
	Proof
	words [][]byte
}

func isBase(name string) bool {
	return strings.HasPrefix(name, "sig_check_") || strings.HasPrefix(name, "data_check_")
}

// checkStructure: the submission parses — every proof is hex of whole
// field elements below the modulus, with a vkey hash, a circuit name and
// version, numbered 0..total-1; an outer (compressed) proof stands alone
// and holds its public inputs; a fast bundle has its three base proofs
// and at least one disclosure proof; there is a query result.
func checkStructure(s Submission) (Level, []parsed) {
	l := Level{Checks: []string{"proofs parse as BN254 field elements", "vkey hashes, circuit names and versions", "proof numbering", "bundle shape (outer proof or base + disclosure proofs)", "query result present"}}
	var out []parsed
	if len(s.Proofs) == 0 || len(s.Proofs) > MaxProofs {
		l.fail("proofs must hold 1 to %d proofs", MaxProofs)
	}
	seen := map[int]bool{}
	for i, p := range s.Proofs {
		where := fmt.Sprintf("proofs[%d]", i)
		h := strings.TrimPrefix(p.Proof, "0x")
		raw, err := hex.DecodeString(h)
		switch {
		case len(h) > MaxProofHex:
			l.fail("%s.proof is longer than %d hex characters", where, MaxProofHex)
		case err != nil || len(raw) == 0 || len(raw)%32 != 0:
			l.fail("%s.proof must be hex of whole 32-byte field elements", where)
		default:
			pp := parsed{Proof: p}
			for k := 0; k < len(raw); k += 32 {
				if new(big.Int).SetBytes(raw[k:k+32]).Cmp(frModulus) >= 0 {
					l.fail("%s.proof element %d is not below the field modulus", where, k/32)
					break
				}
				pp.words = append(pp.words, raw[k:k+32])
			}
			out = append(out, pp)
		}
		if !hex32.MatchString(p.VkeyHash) {
			l.fail("%s.vkeyHash must be 0x and 64 hex digits", where)
		}
		if !circuit.MatchString(p.Name) {
			l.fail("%s.name must be a circuit name", where)
		}
		if !semver.MatchString(p.Version) {
			l.fail("%s.version must be a version (x.y.z)", where)
		}
		if p.Total != len(s.Proofs) || p.Index < 0 || p.Index >= p.Total || seen[p.Index] {
			l.fail("%s: index %d of total %d does not number %d proofs 0..%d once each", where, p.Index, p.Total, len(s.Proofs), len(s.Proofs)-1)
		}
		seen[p.Index] = true
	}
	if len(l.Errors) == 0 {
		if n, ok := outerN(out[0].Name); ok {
			if len(out) != 1 {
				l.fail("an outer proof (%s) stands alone", out[0].Name)
			} else if len(out[0].words) < n+4 {
				l.fail("%s holds %d field elements, fewer than its %d public inputs", out[0].Name, len(out[0].words), n+4)
			}
		} else {
			for _, base := range []string{"sig_check_dsc", "sig_check_id_data", "data_check_integrity"} {
				if !slices.ContainsFunc(out, func(p parsed) bool { return strings.HasPrefix(p.Name, base) }) {
					l.fail("the bundle has no %s proof", base)
				}
			}
			if !slices.ContainsFunc(out, func(p parsed) bool { return !isBase(p.Name) }) {
				l.fail("the bundle has no disclosure proof")
			}
		}
	}
	if s.QueryResult == nil {
		l.fail("queryResult is required")
	}
	l.close()
	return l, out
}

// outerN is an outer proof's count of subproofs: its public inputs are
// the certificate registry root, the circuit registry root, the date, the
// service scope and subscope, one commitment per disclosure proof (N-3),
// the nullifier type and the scoped nullifier — N+4.
func outerN(name string) (int, bool) {
	m := outerCount.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil && n >= 4 && n <= 64
}

// ScopeHash is how zkPassport's circuits commit a domain or a scope:
// sha256 of it, shifted right one byte to fit the field.
func ScopeHash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return append([]byte{0}, h[:31]...)
}

// boundInputs finds the date, service scope and subscope the proofs
// commit to: in an outer proof, public inputs 2, 3 and 4; in a fast
// bundle, each disclosure proof carries the scope and subscope in a row
// after its date among its first public inputs.
func boundInputs(ps []parsed, scope, subscope []byte) (dates []time.Time, found int) {
	if len(ps) == 1 {
		if _, ok := outerN(ps[0].Name); ok {
			w := ps[0].words
			if string(w[3]) == string(scope) && string(w[4]) == string(subscope) {
				return []time.Time{wordTime(w[2])}, 1
			}
			return nil, 0
		}
	}
	for _, p := range ps {
		if isBase(p.Name) {
			continue
		}
		for k := 1; k+1 < min(len(p.words), 16); k++ {
			if string(p.words[k]) == string(scope) && string(p.words[k+1]) == string(subscope) {
				dates = append(dates, wordTime(p.words[k-1]))
				found++
				break
			}
		}
	}
	return dates, found
}

func wordTime(w []byte) time.Time {
	n := new(big.Int).SetBytes(w)
	if !n.IsInt64() {
		return time.Time{}
	}
	return time.Unix(n.Int64(), 0).UTC()
}

// UniqueIdentifier is an outer proof's scoped nullifier (its last public
// input), as a decimal string like the SDK's; "" for a fast bundle. It is
// what the proofs declare: only the cryptographic level makes it true.
func uniqueIdentifier(ps []parsed) string {
	if len(ps) != 1 {
		return ""
	}
	n, ok := outerN(ps[0].Name)
	if !ok || len(ps[0].words) < n+4 {
		return ""
	}
	return new(big.Int).SetBytes(ps[0].words[n+3]).String()
}

// checkBinding: the proofs commit to this platform's domain and the
// request's scope (their public inputs, not only the declared
// serviceConfig), were made within the request's life, and the request
// is still open now.
func checkBinding(r Request, s Submission, ps []parsed, now time.Time) (Level, time.Time) {
	l := Level{Checks: []string{"service scope = sha256(domain) in the proofs' public inputs", "service subscope = sha256(scope)", "proof date within the request's validity window", "request not expired"}}
	if sc := s.ServiceConfig; sc != nil {
		if sc.Domain != "" && sc.Domain != r.Domain {
			l.fail("serviceConfig.domain %q is not the request's domain %q", sc.Domain, r.Domain)
		}
		if sc.Scope != "" && sc.Scope != r.Scope {
			l.fail("serviceConfig.scope %q is not the request's scope %q", sc.Scope, r.Scope)
		}
		if sc.DevMode {
			l.fail("serviceConfig.devMode: development proofs are not accepted")
		}
	}
	dates, found := boundInputs(ps, ScopeHash(r.Domain), ScopeHash(r.Scope))
	var proofDate time.Time
	if found == 0 {
		l.fail("no proof commits to the domain %q and scope %q", r.Domain, r.Scope)
	}
	for _, d := range dates {
		if d.Before(r.CreatedAt.Add(-clockSkew)) || d.After(r.ExpiresAt) || d.After(now.Add(clockSkew)) {
			l.fail("a proof is dated %s, outside the request's window %s to %s", d.Format(time.RFC3339), r.CreatedAt.Format(time.RFC3339), r.ExpiresAt.Format(time.RFC3339))
		}
		if proofDate.IsZero() || d.Before(proofDate) {
			proofDate = d
		}
	}
	if !now.Before(r.ExpiresAt) {
		l.fail("the request expired at %s", r.ExpiresAt.Format(time.RFC3339))
	}
	l.close()
	return l, proofDate
}
