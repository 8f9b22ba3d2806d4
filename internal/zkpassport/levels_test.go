package zkpassport

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"conduit/internal/errs"
)

const (
	fixtureDomain = "localhost"
	fixtureScope  = "09df8233-77a8-49df-894e-ad7818c4914e"
	fixtureID     = "9993331391667981369032344615261176787245866814375674411672468922215950818795"
)

// fixtureDate is when zkPassport's compressed fixture was proven (its
// public input 2).
var fixtureDate = time.Unix(0x6a69cbed, 0).UTC()

func loadFixture(t *testing.T) Submission {
	t.Helper()
	b, err := os.ReadFile("testdata/verify-compressed-request.json")
	if err != nil {
		t.Fatal(err)
	}
	var s Submission
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func fixtureQuery(t *testing.T) Query {
	q, err := ParseQuery(json.RawMessage(`{"age":{"gte":18},"nationality":{"out":["AFG"]},"document_type":{"eq":"passport"},"facematch":{"mode":"strict"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	return q
}

func fixtureRequest(t *testing.T) Request {
	return Request{ID: "zkp_x", Domain: fixtureDomain, Scope: fixtureScope, Mode: "compressed", Query: fixtureQuery(t),
		CreatedAt: fixtureDate.Add(-time.Hour), ExpiresAt: fixtureDate.Add(6 * 24 * time.Hour)}
}

// zkPassport's real compressed proof passes the levels checked here for
// the request it was made for: it parses, its public inputs commit to the
// domain and scope and a date inside the window, and its query result and
// committed inputs are the query's.
func TestFixturePassesLevels(t *testing.T) {
	s, r := loadFixture(t), fixtureRequest(t)
	structure, ps := checkStructure(s)
	if structure.Status != Passed {
		t.Fatalf("structure: %+v", structure)
	}
	binding, date := checkBinding(r, s, ps, fixtureDate.Add(time.Minute))
	if binding.Status != Passed || !date.Equal(fixtureDate) {
		t.Fatalf("binding: %+v, date %s", binding, date)
	}
	constraints, _ := checkConstraints(r.Query, s, ps)
	if constraints.Status != Passed {
		t.Fatalf("constraints: %+v", constraints)
	}
	if got := uniqueIdentifier(ps); got != fixtureID {
		t.Fatalf("declared unique identifier %s, zkPassport's test expects %s", got, fixtureID)
	}
}

// The same proof fails binding for another domain, another scope, a
// request made after it or expired before it, and a declared service
// config that is not the request's.
func TestFixtureBindingFailures(t *testing.T) {
	s := loadFixture(t)
	_, ps := checkStructure(s)
	now := fixtureDate.Add(time.Minute)
	for name, mutate := range map[string]func(*Request, *Submission){
		"domain":       func(r *Request, _ *Submission) { r.Domain = "example.com" },
		"scope":        func(r *Request, _ *Submission) { r.Scope = "another" },
		"made before":  func(r *Request, _ *Submission) { r.CreatedAt = fixtureDate.Add(time.Hour) },
		"expired":      func(r *Request, _ *Submission) { r.ExpiresAt = fixtureDate.Add(-time.Hour) },
		"declared":     func(_ *Request, s *Submission) { s.ServiceConfig = &ServiceConfig{Domain: "evil.example"} },
		"dev mode":     func(_ *Request, s *Submission) { s.ServiceConfig = &ServiceConfig{DevMode: true} },
		"expired now":  func(r *Request, _ *Submission) { r.ExpiresAt = fixtureDate.Add(30 * time.Second) },
		"future proof": func(r *Request, _ *Submission) { r.CreatedAt = fixtureDate.Add(-48 * time.Hour) },
	} {
		r, sub := fixtureRequest(t), s
		mutate(&r, &sub)
		at := now
		if name == "future proof" {
			at = fixtureDate.Add(-24 * time.Hour) // the proof is dated a day after the verification
			r.ExpiresAt = fixtureDate.Add(24 * time.Hour)
		}
		if l, _ := checkBinding(r, sub, ps, at); l.Status != Failed {
			t.Errorf("%s: binding %+v", name, l)
		}
	}
}

// A proof whose bytes are not field elements, an outer proof shorter
// than its public inputs, bad numbering and a missing query result fail
// structure.
func TestStructureFailures(t *testing.T) {
	for name, mutate := range map[string]func(*Submission){
		"not hex":        func(s *Submission) { s.Proofs[0].Proof = "zz" + s.Proofs[0].Proof[2:] },
		"above modulus":  func(s *Submission) { s.Proofs[0].Proof = strings.Repeat("f", 64) + s.Proofs[0].Proof[64:] },
		"short":          func(s *Submission) { s.Proofs[0].Proof = s.Proofs[0].Proof[:64*10] },
		"odd":            func(s *Submission) { s.Proofs[0].Proof = s.Proofs[0].Proof[:100] },
		"vkey":           func(s *Submission) { s.Proofs[0].VkeyHash = "0x12" },
		"numbering":      func(s *Submission) { s.Proofs[0].Total = 2 },
		"no result":      func(s *Submission) { s.QueryResult = nil },
		"no proofs":      func(s *Submission) { s.Proofs = nil },
		"fast, no bases": func(s *Submission) { s.Proofs[0].Name = "compare_age" },
	} {
		s := loadFixture(t)
		mutate(&s)
		if l, _ := checkStructure(s); l.Status != Failed || len(l.Errors) == 0 {
			t.Errorf("%s: structure %+v", name, l)
		}
	}
}

// Constraints fail when the result is false, is for another value, is
// missing, when the originalQuery differs, and when the committed inputs
// are not the request's.
func TestFixtureConstraintFailures(t *testing.T) {
	set := func(s *Submission, field, op, raw string) {
		m := map[string]map[string]json.RawMessage{}
		for f, ops := range s.QueryResult {
			m[f] = map[string]json.RawMessage{}
			for o, v := range ops {
				m[f][o] = v
			}
		}
		m[field][op] = json.RawMessage(raw)
		s.QueryResult = m
	}
	for name, c := range map[string]struct {
		query  string
		mutate func(*Submission)
	}{
		"false result":     {"", func(s *Submission) { set(s, "age", "gte", `{"expected":18,"result":false}`) }},
		"other value":      {"", func(s *Submission) { set(s, "age", "gte", `{"expected":16,"result":true}`) }},
		"facematch":        {"", func(s *Submission) { set(s, "facematch", "passed", `false`) }},
		"asks 21":          {`{"age":{"gte":21},"nationality":{"out":["AFG"]},"document_type":{"eq":"passport"},"facematch":{"mode":"strict"}}`, nil},
		"asks more out":    {`{"age":{"gte":18},"nationality":{"out":["AFG","IRN"]},"document_type":{"eq":"passport"},"facematch":{"mode":"strict"}}`, nil},
		"asks disclose":    {`{"age":{"gte":18},"nationality":{"out":["AFG"],"disclose":true},"document_type":{"eq":"passport"},"facematch":{"mode":"strict"}}`, nil},
		"original differs": {"", func(s *Submission) { s.OriginalQuery = json.RawMessage(`{"age":{"gte":18}}`) }},
	} {
		s, q := loadFixture(t), fixtureQuery(t)
		if c.query != "" {
			var err error
			if q, err = ParseQuery(json.RawMessage(c.query)); err != nil || q.Validate() != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if c.mutate != nil {
			c.mutate(&s)
		}
		_, ps := checkStructure(s)
		if l, _ := checkConstraints(q, s, ps); l.Status != Failed {
			t.Errorf("%s: constraints %+v", name, l)
		}
	}
}

// Crafted results for every operator: a disclosed value must meet the
// request's other constraints on its field.
func TestCraftedResults(t *testing.T) {
	base := Submission{QueryResult: map[string]map[string]json.RawMessage{}}
	for _, c := range []struct {
		query, result string
		ok            bool
	}{
		{`{"nationality":{"disclose":true,"in":["FRA","DEU"]}}`, `{"nationality":{"disclose":{"result":"FRA"},"in":{"expected":["FRA","DEU"],"result":true}}}`, true},
		{`{"nationality":{"disclose":true,"in":["FRA","DEU"]}}`, `{"nationality":{"disclose":{"result":"USA"},"in":{"expected":["FRA","DEU"],"result":true}}}`, false},
		{`{"nationality":{"out":["USA"]}}`, `{"nationality":{"out":{"expected":["USA"],"result":true}}}`, true},
		{`{"issuing_country":{"eq":"FRA","disclose":true}}`, `{"issuing_country":{"eq":{"expected":"FRA","result":true},"disclose":{"result":"DEU"}}}`, false},
		{`{"age":{"gt":17,"lt":65}}`, `{"age":{"gt":{"expected":17,"result":true},"lt":{"expected":65,"result":true}}}`, true},
		{`{"age":{"lte":30}}`, `{"age":{"lte":{"expected":30,"result":false}}}`, false},
		{`{"age":{"range":[18,25]}}`, `{"age":{"range":{"expected":[18,25],"result":true}}}`, true},
		{`{"birthdate":{"range":["2000-01-01","2000-12-31"],"disclose":true}}`, `{"birthdate":{"range":{"expected":["2000-01-01T00:00:00.000Z","2000-12-31T00:00:00.000Z"],"result":true},"disclose":{"result":"2000-06-15T00:00:00.000Z"}}}`, true},
		{`{"birthdate":{"range":["2000-01-01","2000-12-31"],"disclose":true}}`, `{"birthdate":{"range":{"expected":["2000-01-01T00:00:00.000Z","2000-12-31T00:00:00.000Z"],"result":true},"disclose":{"result":"2001-06-15T00:00:00.000Z"}}}`, false},
		{`{"expiry_date":{"gte":"2026-01-01"}}`, `{"expiry_date":{"gte":{"expected":"2026-01-01T00:00:00.000Z","result":true}}}`, true},
		{`{"expiry_date":{"gt":"2026-01-01"}}`, `{"expiry_date":{"gt":{"expected":"2025-01-01T00:00:00.000Z","result":true}}}`, false},
		{`{"firstname":{"disclose":true}}`, `{"firstname":{"disclose":{"result":"ANNA"}}}`, true},
		{`{"firstname":{"disclose":true}}`, `{"firstname":{"disclose":{"result":""}}}`, false},
		{`{"document_number":{"eq":"X123"}}`, `{}`, false},
		{`{"bind":{"user_address":"0x1111111111111111111111111111111111111111"}}`, `{"bind":{"user_address":"0x1111111111111111111111111111111111111111"}}`, true},
		{`{"bind":{"user_address":"0x1111111111111111111111111111111111111111"}}`, `{"bind":{"user_address":"0x2222222222222222222222222222222222222222"}}`, false},
		{`{"sanctions":{}}`, `{"sanctions":{"passed":true}}`, true},
		{`{"sanctions":{"strict":true}}`, `{"sanctions":{"passed":false}}`, false},
	} {
		q, err := ParseQuery(json.RawMessage(c.query))
		if err != nil || q.Validate() != nil {
			t.Fatalf("%s: %v %v", c.query, err, q.Validate())
		}
		s := base
		if err := json.Unmarshal([]byte(c.result), &s.QueryResult); err != nil {
			t.Fatal(err)
		}
		l, disclosed := checkConstraints(q, s, nil)
		if (l.Status == Passed) != c.ok {
			t.Errorf("%s with %s: %+v", c.query, c.result, l)
		}
		if c.ok && strings.Contains(c.query, "disclose") && len(disclosed) == 0 {
			t.Errorf("%s: nothing disclosed", c.query)
		}
	}
}

// Every validation rule answers Invalid naming what is wrong.
func TestQueryValidation(t *testing.T) {
	for _, c := range []struct{ query, mention string }{
		{`{}`, "at least one field"},
		{`{"height":{"gte":180}}`, `unknown field "height"`},
		{`{"age":{"between":[1,2]}}`, `unknown operator "between"`},
		{`{"age":{"disclose":true}}`, `age does not take "disclose"`},
		{`{"nationality":{"gte":"FRA"}}`, `nationality does not take "gte"`},
		{`{"firstname":{"in":["A"]}}`, `firstname does not take "in"`},
		{`{"age":{}}`, "at least one operator"},
		{`{"age":{"gte":17.5}}`, "whole number"},
		{`{"age":{"gte":200}}`, "0 to 150"},
		{`{"age":{"gte":"18"}}`, "whole number"},
		{`{"age":{"gte":65,"lt":18}}`, "exclude every value"},
		{`{"age":{"range":[30,20]}}`, "start is after end"},
		{`{"age":{"range":[30]}}`, "[start, end]"},
		{`{"birthdate":{"lt":"yesterday"}}`, "must be a date"},
		{`{"nationality":{"in":[]}}`, "list of 1 to"},
		{`{"nationality":{"in":["France"]}}`, "alpha-3"},
		{`{"nationality":{"out":["FRA","FRA"]}}`, "twice"},
		{`{"nationality":{"eq":"fr"}}`, "alpha-3"},
		{`{"firstname":{"disclose":false}}`, "must be true"},
		{`{"document_number":{"eq":""}}`, "1 to 200"},
		{`{"facematch":{"mode":"loose"}}`, "facematch"},
		{`{"sanctions":{"countries":"all"}}`, "sanctions"},
		{`{"bind":{"user_address":"0x12"}}`, "user_address"},
		{`{"bind":{"custom_data":"` + strings.Repeat("x", 501) + `"}}`, "at most 500"},
		{`{"bind":{"other":"x"}}`, `unknown key "other"`},
	} {
		q, err := ParseQuery(json.RawMessage(c.query))
		if err == nil {
			err = q.Validate()
		}
		e, ok := errs.As(err)
		if !ok || e.Kind != errs.Invalid || !strings.Contains(e.Msg, c.mention) {
			t.Errorf("%s: %v, want Invalid mentioning %q", c.query, err, c.mention)
		}
	}
	for _, ok := range []string{
		`{"age":{"gte":18,"lt":65},"nationality":{"in":["FRA","DEU"],"out":["USA"]},"fullname":{"disclose":true},"birthdate":{"range":["2024-01-01T00:00:00Z","2024-12-31T00:00:00Z"]}}`,
		`{"document_type":{"eq":"passport"},"gender":{"disclose":true},"expiry_date":{"gt":"2026-01-01"},"issuing_country":{"disclose":true,"eq":"D<<"}}`,
	} {
		q, err := ParseQuery(json.RawMessage(ok))
		if err != nil || q.Validate() != nil {
			t.Errorf("%s refused: %v %v", ok, err, q.Validate())
		}
	}
}

// The wallet link carries the query in c= as base64 JSON, as the SDK does.
func TestPayloadURL(t *testing.T) {
	q := fixtureQuery(t)
	p := Payload{Domain: "example.com", Topic: "zkp_1", Config: q, Service: map[string]any{"name": "N", "purpose": "P"}, Mode: "fast"}
	u := p.URL()
	if !strings.HasPrefix(u, WalletURL+"?") || !strings.Contains(u, "d=example.com") || !strings.Contains(u, "t=zkp_1") || !strings.Contains(u, "m=fast") {
		t.Fatal(u)
	}
}

// An attestation verifies with the published key and not with another,
// nor once changed.
func TestAttestationSignature(t *testing.T) {
	s, _, err := NewSigner("")
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(map[string]any{"status": "unconfirmed"})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := VerifyJWS(jws, s.Keys())
	if err != nil || !strings.Contains(string(payload), "unconfirmed") {
		t.Fatalf("%s %v", payload, err)
	}
	other, _, _ := NewSigner("")
	if _, err := VerifyJWS(jws, other.Keys()); err == nil {
		t.Fatal("verified with another key")
	}
	parts := strings.Split(jws, ".")
	forged, _ := json.Marshal(map[string]any{"status": "verified"})
	if _, err := VerifyJWS(parts[0]+"."+b64.EncodeToString(forged)+"."+parts[2], s.Keys()); err == nil {
		t.Fatal("a changed payload verified")
	}
}
