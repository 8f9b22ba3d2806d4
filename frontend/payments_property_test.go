package frontend_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"conduit/frontend"
	"conduit/internal/money"
	"conduit/internal/x402"
)

// payer is one wallet of the property test, on either network.
type payer struct {
	network string
	evm     *wallet
	sol     solana.PrivateKey
	minted  money.Micros
}

func (p payer) address() string {
	if p.evm != nil {
		return p.evm.addr.Hex()
	}
	return p.sol.PublicKey().String()
}

func (p payer) sign(t *testing.T, pr x402.PaymentRequired) string {
	if p.evm != nil {
		return p.evm.pay(t, pr)
	}
	return solPay(t, p.sol, pr)
}

// onChain is what the wallet holds on its chain now.
func (p payer) onChain(t *testing.T, pr x402.PaymentRequired) money.Micros {
	if p.evm != nil {
		return money.Micros(p.evm.tokens(t))
	}
	b, err := env.Platform.Store.SVMBalance(context.Background(), pr.Accepts[1].Asset, p.sol.PublicKey().String())
	if err != nil {
		t.Fatal(err)
	}
	return money.Micros(b)
}

// presented is a genuine payment as it was sent.
type presented struct {
	path   string
	body   any
	bearer string
	header string
}

// Across random sequences of payments, replays (to the same and to other
// purchases), forgeries, answers lost after the chain settled, facilitator
// outages and concurrent submissions, what was credited and what was
// rendered equals exactly what each wallet's chain settled, once each, and
// no workflow is left running.
func TestPaymentsProperty(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	since := time.Now()
	ctx := context.Background()
	top := challenge(t)

	var payers []payer
	for range 3 {
		w := newWallet(t, 30*money.USD)
		payers = append(payers, payer{network: "eip155:8453", evm: &w, minted: 30 * money.USD})
	}
	payers = append(payers, payer{network: top.Accepts[1].Network, sol: solWallet(t, 30*money.USD), minted: 30 * money.USD})
	_, key1 := env.NewAccount(t)
	_, key2 := env.NewAccount(t)
	bearers := []string{"", key1, key2}

	var sent []presented
	newPayment := func(p payer) presented {
		if rng.IntN(2) == 0 {
			return presented{path: topUpPath, bearer: bearers[rng.IntN(len(bearers))], header: p.sign(t, top)}
		}
		body := map[string]any{"text": "Property run number " + string(rune('a'+rng.IntN(26))), "async": true}
		return presented{path: frontend.SpeechPath, body: body, header: p.sign(t, challengeFor(t, frontend.SpeechPath, body))}
	}
	send := func(s presented) int {
		r := do(t, "POST", s.path, s.bearer, s.body, "PAYMENT-SIGNATURE", s.header)
		switch r.Status {
		case http.StatusOK, http.StatusPaymentRequired, http.StatusConflict:
		default:
			t.Fatalf("%s: %d %s", s.path, r.Status, r.Body)
		}
		return r.Status
	}

	for range 30 {
		p := payers[rng.IntN(len(payers))]
		switch op := rng.IntN(7); {
		case op == 0 || len(sent) == 0: // a new payment
			s := newPayment(p)
			sent = append(sent, s)
			send(s)
		case op == 1: // the same payment again, same purchase
			send(sent[rng.IntN(len(sent))])
		case op == 2: // the same payment for another purchase
			s := sent[rng.IntN(len(sent))]
			if s.path == topUpPath {
				s.bearer = bearers[rng.IntN(len(bearers))]
			} else {
				s.path, s.body = topUpPath, nil
				s.header = rewrite(t, s.header, func(pp *x402.PaymentPayload) {
					for _, a := range top.Accepts {
						if a.Network == pp.Accepted.Network {
							pp.Accepted = a
						}
					}
				})
			}
			send(s)
		case op == 3: // a forgery of a real payment
			s := sent[rng.IntN(len(sent))]
			s.header = forge(t, s.header)
			if code := send(s); code != http.StatusPaymentRequired {
				t.Fatalf("a forgery got %d", code)
			}
		case op == 4: // one new payment sent four times at once
			s := newPayment(p)
			sent = append(sent, s)
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() { defer wg.Done(); send(s) }()
			}
			wg.Wait()
		case op == 5: // the chain settles, the answer is lost
			env.Faults.LoseSettleAnswers(1)
			s := newPayment(p)
			sent = append(sent, s)
			send(s)
		default: // the facilitator is down for a moment
			env.Faults.FailSettles(1)
			s := newPayment(p)
			sent = append(sent, s)
			send(s)
		}
	}
	env.Faults.LoseSettleAnswers(0)
	env.Faults.FailSettles(0)
	noneLeftRunning(t, since)

	conn := dbConn(t)
	for _, p := range payers {
		spent := p.minted - p.onChain(t, top)
		rows, err := conn.Query(ctx, `SELECT status, purpose, amount_micros, coalesce(transaction, '') FROM payments WHERE network = $1 AND payer = $2`,
			p.network, x402.NormalizeAddress(p.network, p.address()))
		if err != nil {
			t.Fatal(err)
		}
		type row struct {
			status, purpose, tx string
			amount              money.Micros
		}
		var list []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.status, &r.purpose, &r.amount, &r.tx); err != nil {
				t.Fatal(err)
			}
			list = append(list, r)
		}
		var settled money.Micros
		for _, r := range list {
			if r.status != "settled" {
				t.Fatalf("%s: a payment left %s: %+v", p.address(), r.status, r)
			}
			settled += r.amount
			var effects int
			var amount money.Micros
			switch {
			case strings.HasPrefix(r.purpose, "topup/"):
				err = conn.QueryRow(ctx, `SELECT count(*), coalesce(sum(amount_micros), 0) FROM ledger_entries WHERE kind = 'topup' AND idempotency_key = $1`,
					"topup/"+p.network+"/"+r.tx).Scan(&effects, &amount)
			case strings.HasPrefix(r.purpose, "render/"):
				err = conn.QueryRow(ctx, `SELECT count(*), coalesce(sum(paid_micros), 0) FROM media_runs WHERE network = $1 AND transaction = $2 AND status <> 'running'
					AND 'render/' || run_id = $3`, p.network, r.tx, r.purpose).Scan(&effects, &amount)
			}
			if err != nil || effects != 1 || amount != r.amount {
				t.Fatalf("%s: payment %+v has %d effects worth %s (%v)", p.address(), r, effects, amount, err)
			}
		}
		if settled != spent {
			t.Fatalf("%s: the chain settled %s, the platform recorded %s", p.address(), spent, settled)
		}
		t.Logf("%s: %d payments, %s settled", p.address(), len(list), settled)
	}
}
