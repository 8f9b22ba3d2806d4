package x402

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/gagliardetto/solana-go"
	computebudget "github.com/gagliardetto/solana-go/programs/compute-budget"
	"github.com/gagliardetto/solana-go/programs/token"

	"conduit/internal/money"
)

type svmFixture struct {
	feePayer solana.PrivateKey
	payer    solana.PrivateKey
	req      PaymentRequirements
}

func newSVMFixture(t *testing.T) svmFixture {
	t.Helper()
	return newSVMFixtureF()
}

func newSVMFixtureF() svmFixture {
	fee, _ := solana.NewRandomPrivateKey()
	payer, _ := solana.NewRandomPrivateKey()
	mint, _ := solana.NewRandomPrivateKey()
	payTo, _ := solana.NewRandomPrivateKey()
	req := Challenge(ResourceInfo{URL: "u"}, 5*money.USD, []Offer{{
		Network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", Asset: mint.PublicKey().String(), PayTo: payTo.PublicKey().String(),
		Extra: map[string]any{"feePayer": fee.PublicKey().String()},
	}}, "").Accepts[0]
	return svmFixture{feePayer: fee, payer: payer, req: req}
}

func refusalReason(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

func TestVerifySVMAcceptsTheOfficialLayout(t *testing.T) {
	f := newSVMFixture(t)
	p, err := SignSVM(f.req, f.payer, solana.Hash{1})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := VerifySVM(p, f.req, f.feePayer.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Authority.Equals(f.payer.PublicKey()) || tr.Amount != 5_000_000 || tr.PayerSignature.IsZero() {
		t.Fatalf("%+v", tr)
	}
}

func TestVerifySVMRefusals(t *testing.T) {
	f := newSVMFixture(t)
	p, _ := SignSVM(f.req, f.payer, solana.Hash{1})
	other, _ := solana.NewRandomPrivateKey()

	cases := map[string]struct {
		p        PaymentPayload
		req      func(PaymentRequirements) PaymentRequirements
		feePayer solana.PublicKey
		reason   string
	}{
		"fee payer not ours": {p: p, feePayer: other.PublicKey(), reason: ReasonSVMFeePayer},
		"other amount":       {p: p, req: func(r PaymentRequirements) PaymentRequirements { r.Amount = "4000000"; return r }, reason: ReasonSVMAmount},
		"other mint":         {p: p, req: func(r PaymentRequirements) PaymentRequirements { r.Asset = other.PublicKey().String(); return r }, reason: ReasonSVMMint},
		"other payee":        {p: p, req: func(r PaymentRequirements) PaymentRequirements { r.PayTo = other.PublicKey().String(); return r }, reason: ReasonSVMRecipient},
		"not base64":         {p: withPayload(p, `{"transaction":"%%%"}`), reason: ReasonSVMDecode},
		"no transaction":     {p: withPayload(p, `{}`), reason: ReasonSVMDecode},
		"greedy price":       {p: build(t, f, 20_000, 6_000_000, f.payer), reason: ReasonSVMComputePrice},
		"fee payer pays":     {p: build(t, f, 20_000, 1, f.feePayer), reason: ReasonSVMFeePayerFunds},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			req := f.req
			if c.req != nil {
				req = c.req(req)
			}
			fp := f.feePayer.PublicKey()
			if !c.feePayer.IsZero() {
				fp = c.feePayer
			}
			if _, err := VerifySVM(c.p, req, fp); refusalReason(err) != c.reason {
				t.Fatalf("want %s, got %v", c.reason, err)
			}
		})
	}

	// A forged payer signature.
	var sp SVMPayload
	_ = json.Unmarshal(p.Payload, &sp)
	tx, _ := solana.TransactionFromBase64(sp.Transaction)
	for i := range tx.Signatures {
		if !tx.Signatures[i].IsZero() {
			tx.Signatures[i][0] ^= 0xff
		}
	}
	b64, _ := tx.ToBase64()
	if _, err := VerifySVM(withPayload(p, `{"transaction":"`+b64+`"}`), f.req, f.feePayer.PublicKey()); refusalReason(err) != ReasonSVMSignature {
		t.Fatalf("forged signature: %v", err)
	}
}

func withPayload(p PaymentPayload, raw string) PaymentPayload {
	p.Payload = json.RawMessage(raw)
	return p
}

// build makes a transfer with a chosen compute price and authority.
func build(t *testing.T, f svmFixture, limit uint32, price uint64, authority solana.PrivateKey) PaymentPayload {
	t.Helper()
	mint := solana.MustPublicKeyFromBase58(f.req.Asset)
	src, _, _ := solana.FindAssociatedTokenAddress(authority.PublicKey(), mint)
	dst, _, _ := solana.FindAssociatedTokenAddress(solana.MustPublicKeyFromBase58(f.req.PayTo), mint)
	tx, err := solana.NewTransaction([]solana.Instruction{
		computebudget.NewSetComputeUnitLimitInstruction(limit).Build(),
		computebudget.NewSetComputeUnitPriceInstruction(price).Build(),
		token.NewTransferCheckedInstruction(5_000_000, 6, src, mint, dst, authority.PublicKey(), nil).Build(),
	}, solana.Hash{2}, solana.TransactionPayer(f.feePayer.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = tx.PartialSign(func(k solana.PublicKey) *solana.PrivateKey {
		if k.Equals(authority.PublicKey()) {
			return &authority
		}
		return nil
	})
	b64, _ := tx.ToBase64()
	raw, _ := json.Marshal(SVMPayload{Transaction: b64})
	return PaymentPayload{X402Version: Version, Accepted: f.req, Payload: raw}
}
