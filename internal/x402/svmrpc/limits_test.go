package svmrpc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Parameters whose arithmetic overflows uint64 answer -32602, and a batch
// holding such a call still answers every other call (a panic used to cut
// the connection, so the whole batch went unanswered).
func TestOverflowingParams(t *testing.T) {
	f := newFixture(t)
	slice := `{"jsonrpc":"2.0","id":2,"method":"getAccountInfo","params":["` + f.mint.String() + `",{"encoding":"base64","dataSlice":{"offset":10,"length":18446744073709551615}}]}`
	multi := `{"jsonrpc":"2.0","id":3,"method":"getMultipleAccounts","params":[["` + f.mint.String() + `"],{"encoding":"base64","dataSlice":{"offset":1,"length":18446744073709551615}}]}`
	rent := `{"jsonrpc":"2.0","id":4,"method":"getMinimumBalanceForRentExemption","params":[18446744073709551615]}`
	resp, err := http.Post(f.url, "application/json", strings.NewReader(`[{"jsonrpc":"2.0","id":1,"method":"getHealth"},`+slice+`,`+multi+`,`+rent+`,{"jsonrpc":"2.0","id":5,"method":"getHealth"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var batch []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&batch); err != nil || len(batch) != 5 {
		t.Fatalf("batch %+v %v", batch, err)
	}
	if string(batch[0].Result) != `"ok"` || string(batch[4].Result) != `"ok"` {
		t.Errorf("the healthy calls: %s %s", batch[0].Result, batch[4].Result)
	}
	for _, a := range batch[1:4] {
		if a.Error == nil || a.Error.Code != -32602 || !strings.Contains(a.Error.Message, "Invalid params") {
			t.Errorf("call %d: %s %+v, want -32602", a.ID, a.Result, a.Error)
		}
	}
	// Within range, a slice past the end is empty, as before.
	raw := f.call(t, `{"jsonrpc":"2.0","id":1,"method":"getAccountInfo","params":["`+f.mint.String()+`",{"encoding":"base64","dataSlice":{"offset":1000,"length":5}}]}`)
	if raw["error"] != nil {
		t.Fatalf("slice past the end: %v", raw)
	}
}

func TestBatchAndBodyLimits(t *testing.T) {
	f := newFixture(t)
	one := `{"jsonrpc":"2.0","id":1,"method":"getHealth"}`
	ok := "[" + strings.TrimSuffix(strings.Repeat(one+",", 100), ",") + "]"
	resp, err := http.Post(f.url, "application/json", strings.NewReader(ok))
	if err != nil {
		t.Fatal(err)
	}
	var batch []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&batch); err != nil || len(batch) != 100 {
		t.Fatalf("100 calls: %d %v", len(batch), err)
	}
	resp.Body.Close()

	raw := f.call(t, "["+strings.TrimSuffix(strings.Repeat(one+",", 101), ",")+"]")
	got, _ := json.Marshal(raw["error"])
	if want := `{"code":-32600,"message":"Invalid request: a batch holds at most 100 calls"}`; string(got) != want {
		t.Errorf("101 calls: %s, want %s", got, want)
	}

	big := `{"jsonrpc":"2.0","id":1,"method":"getHealth","params":["` + strings.Repeat("a", 1<<20) + `"]}`
	raw = f.call(t, big)
	if e, _ := raw["error"].(map[string]any); e == nil || e["code"] != json.Number("-32600") {
		t.Errorf("a body over 1 MiB: %v", raw)
	}
}

// The listener's server carries the API's connection limits.
func TestServerLimits(t *testing.T) {
	f := newFixture(t)
	s := f.net.Server()
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 || s.Handler == nil {
		t.Fatalf("server limits %+v", s)
	}
}

// FuzzRPC posts arbitrary bodies to the handler: it must never panic and
// must always answer one well-formed JSON-RPC response or a batch of them.
func FuzzRPC(f *testing.F) {
	fx := newFixture(f)
	mint, ata, payer, sig := fx.mint.String(), fx.payerATA.String(), fx.payer.PublicKey().String(), fx.settledSig.String()
	call := func(method, params string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	}
	for _, s := range []string{
		call("getLatestBlockhash", `[]`),
		call("isBlockhashValid", `["11111111111111111111111111111111"]`),
		call("getAccountInfo", `["`+mint+`",{"encoding":"jsonParsed"}]`),
		call("getAccountInfo", `["`+ata+`",{"encoding":"base64","dataSlice":{"offset":10,"length":18446744073709551615}}]`),
		call("getAccountInfo", `["`+ata+`",{"encoding":"base58","dataSlice":{"offset":18446744073709551615,"length":1}}]`),
		call("getMultipleAccounts", `[["`+mint+`","`+ata+`"],{"encoding":"base64+zstd","dataSlice":{"offset":5,"length":18446744073709551612}}]`),
		call("getBalance", `["`+payer+`"]`),
		call("getTokenAccountBalance", `["`+ata+`"]`),
		call("getTokenAccountsByOwner", `["`+payer+`",{"mint":"`+mint+`"},{"encoding":"jsonParsed"}]`),
		call("getTokenAccountsByOwner", `["`+payer+`",{"programId":"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"},{"dataSlice":{"offset":1,"length":18446744073709551615}}]`),
		call("getSignatureStatuses", `[["`+sig+`"],{"searchTransactionHistory":true}]`),
		call("getTransaction", `["`+sig+`",{"encoding":"json","maxSupportedTransactionVersion":0}]`),
		call("getTransaction", `["`+sig+`",{"encoding":"base64","maxSupportedTransactionVersion":0}]`),
		call("getMinimumBalanceForRentExemption", `[165]`),
		call("getMinimumBalanceForRentExemption", `[18446744073709551615]`),
		call("getMinimumBalanceForRentExemption", `[-1]`),
		call("getSlot", `[]`), call("getBlockHeight", `[]`), call("getHealth", `[]`), call("getGenesisHash", `[]`), call("getVersion", `[]`),
		`[` + call("getHealth", `[]`) + `,` + call("getMinimumBalanceForRentExemption", `[18446744073709551615]`) + `]`,
		`[]`, `[1,2]`, `{}`, `null`, `{"jsonrpc":"2.0","id":1,"method"`,
	} {
		f.Add([]byte(s))
	}
	h := fx.net.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
		if w.Code != http.StatusOK {
			t.Fatalf("status %d", w.Code)
		}
		// An answer has jsonrpc "2.0", an id (null included) and exactly
		// one of result and error; an error a code and a message.
		type answer map[string]json.RawMessage
		check := func(a answer) {
			_, hasID := a["id"]
			_, hasResult := a["result"]
			var e struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			rawErr, hasErr := a["error"]
			if hasErr && (json.Unmarshal(rawErr, &e) != nil || e.Code == 0 || e.Message == "") {
				t.Fatalf("malformed error %s", w.Body.Bytes())
			}
			if string(a["jsonrpc"]) != `"2.0"` || !hasID || hasResult == hasErr {
				t.Fatalf("malformed answer %s", w.Body.Bytes())
			}
		}
		out := w.Body.Bytes()
		if bytes.HasPrefix(out, []byte("[")) {
			var as []answer
			if err := json.Unmarshal(out, &as); err != nil || len(as) == 0 {
				t.Fatalf("batch answer %s: %v", out, err)
			}
			for _, a := range as {
				check(a)
			}
			return
		}
		var a answer
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatalf("answer %s: %v", out, err)
		}
		check(a)
	})
}
