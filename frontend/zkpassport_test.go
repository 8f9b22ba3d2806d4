package frontend_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"

	"conduit/app/apptest"
	"conduit/internal/zkpassport"
	"conduit/workflows"
)

// The query zkPassport's published fixture was made for.
const fixtureQuery = `{"age":{"gte":18},"nationality":{"out":["AFG"]},"document_type":{"eq":"passport"},"facematch":{"mode":"strict"}}`

func createZKP(t *testing.T, key string, body map[string]any) *apptest.Response {
	t.Helper()
	return env.Do(t, "POST", "/api/zkpassport/request", body, apptest.Bearer(key)...)
}

func validRequest(query string) map[string]any {
	return map[string]any{"name": "Conduit test", "purpose": "Prove you are an adult", "mode": "compressed", "query": json.RawMessage(query)}
}

// Every validation rule answers 400 naming the field, operator or option,
// before a request exists; no key answers 401.
func TestZKPassportRequestValidation(t *testing.T) {
	_, key := env.NewAccount(t)
	for _, c := range []struct {
		mutate  func(map[string]any)
		mention string
	}{
		{func(b map[string]any) { b["query"] = json.RawMessage(`{"height":{"gte":1}}`) }, `unknown field \"height\"`},
		{func(b map[string]any) { b["query"] = json.RawMessage(`{"age":{"about":18}}`) }, `unknown operator \"about\"`},
		{func(b map[string]any) { b["query"] = json.RawMessage(`{"nationality":{"gte":"FRA"}}`) }, `nationality does not take \"gte\"`},
		{func(b map[string]any) { b["query"] = json.RawMessage(`{"nationality":{"in":["France"]}}`) }, "alpha-3"},
		{func(b map[string]any) { b["query"] = json.RawMessage(`{"age":{"range":[40,30]}}`) }, "start is after end"},
		{func(b map[string]any) { delete(b, "query") }, "query is required"},
		{func(b map[string]any) { b["name"] = "" }, "name must be"},
		{func(b map[string]any) { b["purpose"] = strings.Repeat("p", 501) }, "purpose must be"},
		{func(b map[string]any) { b["logo"] = "http://x.example/logo.png" }, "logo must be an https URL"},
		{func(b map[string]any) { b["mode"] = "slow" }, "mode must be one of"},
		{func(b map[string]any) { b["validity"] = 100 * 24 * 3600 }, "validity must be"},
		{func(b map[string]any) { b["devMode"] = true }, "devMode"},
		{func(b map[string]any) { b["extra"] = 1 }, "extra"},
	} {
		b := validRequest(fixtureQuery)
		c.mutate(b)
		r := createZKP(t, key, b)
		if r.Status != 400 || !strings.Contains(string(r.Body), c.mention) {
			t.Errorf("%v: %d %s, want 400 mentioning %s", b, r.Status, r.Body, c.mention)
		}
	}
	if r := env.Do(t, "POST", "/api/zkpassport/request", validRequest(fixtureQuery)); r.Status != 401 {
		t.Errorf("no key: %d", r.Status)
	}
}

// A request answers its id, the wallet link with the query in c= (base64
// JSON) and its payload; its status is open; another account cannot
// read it.
func TestZKPassportRequestCreated(t *testing.T) {
	_, key := env.NewAccount(t)
	r := createZKP(t, key, validRequest(fixtureQuery))
	if r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var out zkpassport.Created
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(out.URL)
	if err != nil || u.Host != "zkpassport.id" || u.Query().Get("t") != out.RequestID || u.Query().Get("d") != out.Domain || u.Query().Get("m") != "compressed" {
		t.Fatalf("url %s", out.URL)
	}
	c, err := base64.StdEncoding.DecodeString(u.Query().Get("c"))
	var q map[string]any
	if err != nil || json.Unmarshal(c, &q) != nil || fmt.Sprint(q["age"]) != "map[gte:18]" {
		t.Fatalf("c= %s %v", c, err)
	}
	if out.Scope != out.RequestID || !out.ExpiresAt.After(time.Now().Add(6*24*time.Hour)) {
		t.Fatalf("scope %s, expires %s", out.Scope, out.ExpiresAt)
	}
	st := env.Do(t, "GET", "/api/zkpassport/verify?requestId="+out.RequestID, nil, apptest.Bearer(key)...)
	if st.Status != 200 || st.JSON(t)["status"] != "open" {
		t.Fatalf("status %d %s", st.Status, st.Body)
	}
	_, other := env.NewAccount(t)
	if st := env.Do(t, "GET", "/api/zkpassport/verify?requestId="+out.RequestID, nil, apptest.Bearer(other)...); st.Status != 404 {
		t.Fatalf("another account read it: %d", st.Status)
	}
	if st := env.Do(t, "GET", "/api/zkpassport/verify", nil, apptest.Bearer(key)...); st.Status != 400 {
		t.Fatalf("no requestId: %d", st.Status)
	}
}

// The account's open requests are bounded (zkpassport.max_open); the
// refusal is a 429 and writes nothing.
func TestZKPassportRequestsBounded(t *testing.T) {
	svc := env.Platform.ZKPassport
	old := svc.Config.MaxOpen
	svc.Config.MaxOpen = 2
	defer func() { svc.Config.MaxOpen = old }()
	_, key := env.NewAccount(t)
	for i := range 2 {
		if r := createZKP(t, key, validRequest(fixtureQuery)); r.Status != 201 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := createZKP(t, key, validRequest(fixtureQuery))
	if m := r.JSON(t); r.Status != 429 || m["code"] != "QUOTA_EXCEEDED" || m["resource"] != "zkpassportRequests" || m["used"] != float64(2) || m["limit"] != float64(2) {
		t.Fatalf("third: %d %s", r.Status, r.Body)
	}
	// The owner's usage report counts the open requests against the limit.
	u := env.Do(t, "GET", "/api/account/usage", nil, apptest.Bearer(key)...)
	var report struct {
		Resources []struct {
			Resource    string
			Used, Limit float64
		}
	}
	if err := json.Unmarshal(u.Body, &report); err != nil || u.Status != 200 {
		t.Fatalf("usage: %d %s", u.Status, u.Body)
	}
	found := false
	for _, it := range report.Resources {
		if it.Resource == "zkpassportRequests" {
			found = true
			if it.Used != 2 || it.Limit != 2 {
				t.Fatalf("usage of zkPassport requests: %+v", it)
			}
		}
	}
	if !found {
		t.Fatalf("the usage report lacks zkPassport requests: %s", u.Body)
	}
}

// A request past its validity is expired by its workflow; verifying it
// then answers 410.
func TestZKPassportRequestExpires(t *testing.T) {
	_, key := env.NewAccount(t)
	b := validRequest(fixtureQuery)
	b["validity"] = 1
	r := createZKP(t, key, b)
	if r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["requestId"].(string)
	apptest.Eventually(t, 30*time.Second, "the workflow expiring the request", func() error {
		st := env.Do(t, "GET", "/api/zkpassport/verify?requestId="+id, nil, apptest.Bearer(key)...).JSON(t)
		if st["status"] != "expired" || st["closedAt"] == nil {
			return fmt.Errorf("%v", st)
		}
		return nil
	})
	sub := loadZKFixture(t)
	sub["requestId"] = id
	if v := env.Do(t, "POST", "/api/zkpassport/verify", sub, apptest.Bearer(key)...); v.Status != 410 {
		t.Fatalf("verify after expiry: %d %s", v.Status, v.Body)
	}
	waitZKPClosed(t, id)
}

func loadZKFixture(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../internal/zkpassport/testdata/verify-compressed-request.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func waitZKPClosed(t *testing.T, id string) {
	t.Helper()
	apptest.Eventually(t, 30*time.Second, "the request's workflow to complete", func() error {
		d, err := env.Platform.Temporal.DescribeWorkflowExecution(context.Background(), workflows.ZKPassportRequestWorkflowID(id), "")
		if err != nil {
			return err
		}
		if s := d.GetWorkflowExecutionInfo().GetStatus(); s != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
			return fmt.Errorf("status %s", s)
		}
		return nil
	})
}

// zkPassport's real compressed proof, submitted for a request made now:
// it parses (structure passed) and its query result meets the query
// (constraints passed), but it was made for another domain and scope, in
// July 2026 — binding fails, and the cryptographic level is not checked.
// A failed attempt leaves the request open.
func TestZKPassportFixtureFailsBindingForAnotherRequest(t *testing.T) {
	_, key := env.NewAccount(t)
	r := createZKP(t, key, validRequest(fixtureQuery))
	if r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["requestId"].(string)
	sub := loadZKFixture(t)
	sub["requestId"] = id
	v := env.Do(t, "POST", "/api/zkpassport/verify", sub, apptest.Bearer(key)...)
	if v.Status != 200 {
		t.Fatalf("%d %s", v.Status, v.Body)
	}
	var out zkpassport.Outcome
	if err := json.Unmarshal(v.Body, &out); err != nil {
		t.Fatal(err)
	}
	lv := out.Levels
	if out.Status != "failed" || out.RequestStatus != "open" || out.Verified || lv["structure"].Status != "passed" || lv["constraints"].Status != "passed" ||
		lv["binding"].Status != "failed" || lv["cryptographic"].Status != "not_checked" || out.UniqueIdentifier != "" {
		t.Fatalf("%s", v.Body)
	}
	errsText := strings.Join(lv["binding"].Errors, "; ")
	if !strings.Contains(errsText, "serviceConfig.domain") || !strings.Contains(errsText, "no proof commits") {
		t.Fatalf("binding errors: %s", errsText)
	}
}

// zkPassportBundle builds a compressed submission shaped like zkPassport's
// (an outer_count_7 proof whose public inputs commit the domain, scope
// and date) for the fixture's query — real in shape, not in cryptography.
func zkPassportBundle(t *testing.T, id, domain, scope string, date time.Time) map[string]any {
	sub := loadZKFixture(t)
	word := func(b []byte) string { return hex.EncodeToString(new(big.Int).SetBytes(b).FillBytes(make([]byte, 32))) }
	hash := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:31] }
	proof := sub["proofs"].([]any)[0].(map[string]any)
	orig := proof["proof"].(string)
	words := orig[:128] + word(big.NewInt(date.Unix()).Bytes()) + word(hash(domain)) + word(hash(scope)) + orig[320:]
	proof["proof"] = words
	sub["requestId"] = id
	sub["serviceConfig"] = map[string]any{"domain": domain, "scope": scope}
	return sub
}

// sidecar plays zkPassport's proof verifier service (POST /verify): it
// checks the request's shape as that service does and answers as told.
type sidecar struct {
	mu     sync.Mutex
	answer func(body map[string]any) (int, string)
	calls  []map[string]any
}

func (s *sidecar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/verify" {
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"verified":false,"error":"Missing required field: proofs (non-empty array)"}`))
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, body)
	answer := s.answer
	s.mu.Unlock()
	if p, ok := body["proofs"].([]any); !ok || len(p) == 0 {
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"verified":false,"error":"Missing required field: proofs (non-empty array)"}`))
		return
	}
	if _, ok := body["originalQuery"].(map[string]any); !ok {
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"verified":false,"error":"Missing required field: originalQuery"}`))
		return
	}
	if _, ok := body["queryResult"].(map[string]any); !ok {
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"verified":false,"error":"Missing required field: queryResult"}`))
		return
	}
	status, out := answer(body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(out))
}

// A bundle that commits to the request: without a verifier every level
// checked passes and the cryptographic one says it was not checked
// (unconfirmed); the attestation verifies with the published key and the
// request closes. With the sidecar, its verdict is the cryptographic
// level: verified (with the unique identifier), failed, or not checked
// when it cannot answer.
func TestZKPassportVerifyLevels(t *testing.T) {
	svc := env.Platform.ZKPassport
	_, key := env.NewAccount(t)
	newReq := func() (id, scope string) {
		r := createZKP(t, key, validRequest(fixtureQuery))
		if r.Status != 201 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		m := r.JSON(t)
		return m["requestId"].(string), m["scope"].(string)
	}
	verify := func(id, scope string) zkpassport.Outcome {
		v := env.Do(t, "POST", "/api/zkpassport/verify", zkPassportBundle(t, id, svc.Domain, scope, time.Now()), apptest.Bearer(key)...)
		if v.Status != 200 {
			t.Fatalf("%d %s", v.Status, v.Body)
		}
		var out zkpassport.Outcome
		if err := json.Unmarshal(v.Body, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}

	id, scope := newReq()
	out := verify(id, scope)
	if out.Status != "unconfirmed" || out.RequestStatus != "unconfirmed" || out.Verified || out.UniqueIdentifier != "" ||
		out.Levels["cryptographic"].Status != "not_checked" || !strings.Contains(out.Levels["cryptographic"].Reason, "zkpassport.verifier_url") {
		t.Fatalf("without a verifier: %+v", out)
	}
	for _, l := range []string{"structure", "binding", "constraints"} {
		if out.Levels[l].Status != "passed" {
			t.Fatalf("%s: %+v", l, out.Levels[l])
		}
	}
	keys := env.Do(t, "GET", "/api/zkpassport/keys", nil)
	var jwks zkpassport.JWKS
	if keys.Status != 200 || json.Unmarshal(keys.Body, &jwks) != nil {
		t.Fatalf("keys: %d %s", keys.Status, keys.Body)
	}
	payload, err := zkpassport.VerifyJWS(out.Attestation, jwks)
	if err != nil {
		t.Fatal(err)
	}
	var signed map[string]any
	_ = json.Unmarshal(payload, &signed)
	levels, _ := signed["levels"].(map[string]any)
	if signed["sub"] != id || signed["status"] != "unconfirmed" || levels["cryptographic"].(map[string]any)["status"] != "not_checked" || signed["verified"] != false {
		t.Fatalf("signed: %s", payload)
	}
	st := env.Do(t, "GET", "/api/zkpassport/verify?requestId="+id, nil, apptest.Bearer(key)...).JSON(t)
	if st["status"] != "unconfirmed" || st["result"].(map[string]any)["attestation"] != out.Attestation {
		t.Fatalf("status: %v", st)
	}
	if again := env.Do(t, "POST", "/api/zkpassport/verify", zkPassportBundle(t, id, svc.Domain, scope, time.Now()), apptest.Bearer(key)...); again.Status != 409 {
		t.Fatalf("a closed request verified again: %d", again.Status)
	}
	waitZKPClosed(t, id)

	side := &sidecar{}
	ts := httptest.NewServer(side)
	defer ts.Close()
	svc.Verifier = zkpassport.NewHTTPVerifier(ts.URL, 10*time.Second)
	defer func() { svc.Verifier = nil }()

	side.answer = func(body map[string]any) (int, string) {
		sc, _ := body["serviceConfig"].(map[string]any)
		if sc["domain"] != svc.Domain || sc["scope"] == "" || sc["validityPeriodInSeconds"] == nil {
			return 400, `{"verified":false,"error":"bad serviceConfig"}`
		}
		return 200, `{"verified":true,"uniqueIdentifier":"9993331391667981369032344615261176787245866814375674411672468922215950818795","uniqueIdentifierType":"non_salted"}`
	}
	id, scope = newReq()
	out = verify(id, scope)
	if out.Status != "verified" || !out.Verified || out.Levels["cryptographic"].Status != "passed" ||
		out.UniqueIdentifier != "9993331391667981369032344615261176787245866814375674411672468922215950818795" {
		t.Fatalf("sidecar verified: %+v", out)
	}
	side.mu.Lock()
	last := side.calls[len(side.calls)-1]
	side.mu.Unlock()
	if sc := last["serviceConfig"].(map[string]any); sc["scope"] != scope {
		t.Fatalf("the sidecar was asked for scope %v, want %s", sc["scope"], scope)
	}

	side.answer = func(map[string]any) (int, string) {
		return 400, `{"verified":false,"error":"Proof verification failed: {\"age\":{\"gte\":{\"message\":\"Invalid proof\"}}}"}`
	}
	id, scope = newReq()
	out = verify(id, scope)
	if out.Status != "failed" || out.Verified || out.Levels["cryptographic"].Status != "failed" || out.UniqueIdentifier != "" || out.RequestStatus != "open" ||
		!strings.Contains(strings.Join(out.Levels["cryptographic"].Errors, ""), "Invalid proof") {
		t.Fatalf("sidecar refused: %+v", out)
	}

	side.answer = func(map[string]any) (int, string) { return 502, `bad gateway` }
	id, scope = newReq()
	out = verify(id, scope)
	if out.Status != "unconfirmed" || out.Levels["cryptographic"].Status != "not_checked" || !strings.Contains(out.Levels["cryptographic"].Reason, "HTTP 502") {
		t.Fatalf("sidecar down: %+v", out)
	}
}

// Submissions that are not the request's: another account's request is
// not found; a bundle committing another scope or dated outside the
// window fails binding; unknown fields are refused.
func TestZKPassportVerifyRefusals(t *testing.T) {
	svc := env.Platform.ZKPassport
	_, key := env.NewAccount(t)
	r := createZKP(t, key, validRequest(fixtureQuery))
	id, scope := r.JSON(t)["requestId"].(string), r.JSON(t)["scope"].(string)
	_, other := env.NewAccount(t)
	if v := env.Do(t, "POST", "/api/zkpassport/verify", zkPassportBundle(t, id, svc.Domain, scope, time.Now()), apptest.Bearer(other)...); v.Status != 404 {
		t.Fatalf("another account: %d", v.Status)
	}
	for name, sub := range map[string]map[string]any{
		"scope": zkPassportBundle(t, id, svc.Domain, "another-scope", time.Now()),
		"date":  zkPassportBundle(t, id, svc.Domain, scope, time.Now().Add(-48*time.Hour)),
	} {
		v := env.Do(t, "POST", "/api/zkpassport/verify", sub, apptest.Bearer(key)...)
		var out zkpassport.Outcome
		if v.Status != 200 || json.Unmarshal(v.Body, &out) != nil || out.Levels["binding"].Status != "failed" || out.Status != "failed" {
			t.Fatalf("%s: %d %s", name, v.Status, v.Body)
		}
	}
	bad := zkPassportBundle(t, id, svc.Domain, scope, time.Now())
	bad["extra"] = true
	if v := env.Do(t, "POST", "/api/zkpassport/verify", bad, apptest.Bearer(key)...); v.Status != 400 {
		t.Fatalf("unknown field: %d", v.Status)
	}
	if v := env.Do(t, "POST", "/api/zkpassport/verify", map[string]any{"proofs": []any{}}, apptest.Bearer(key)...); v.Status != 400 {
		t.Fatalf("no requestId: %d", v.Status)
	}
	_ = errors.New
}
