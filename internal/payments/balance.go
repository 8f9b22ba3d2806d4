package payments

import (
	"context"

	"conduit/internal/money"
	"conduit/internal/pricing"
	"conduit/internal/store"
)

// Balance is an account's spendable credit as its owner sees it (spec
// §2.6): the balance endpoint and the get_credit_balance tool answer it.
type Balance struct {
	// Fields in alphabetical order: the answer's bytes are the same as
	// when the endpoint wrote a map.
	BalanceUSD money.Micros `json:"balanceUsd" jsonschema:"spendable credit in USD (credit held by running work is not in it)"`
	TopUpURL   string       `json:"topUpUrl" jsonschema:"the page where a human buys credit"`
	// TypicalVideoChargeUSD is the price of a video request that sets
	// only a prompt (the default model at its shortest length).
	TypicalVideoChargeUSD money.Micros `json:"typicalVideoChargeUsd" jsonschema:"the price of a typical video request, in USD"`
	X402                  *TopUpOffer  `json:"x402,omitempty" jsonschema:"agent top-up by x402 payment; present only where this deployment enables it"`
}

// TopUpOffer is how an agent tops up with an x402 payment.
type TopUpOffer struct {
	Network         string       `json:"network"`
	TopUpPerCallUSD money.Micros `json:"topUpPerCallUsd"`
	URL             string       `json:"url"`
}

// Balance reads account's balance; the x402 offer appears only when agent
// top-up is enabled. baseURL and topUpURL are the API's public addresses.
func (s *Service) Balance(ctx context.Context, st *store.Store, account, baseURL, topUpURL string) (Balance, error) {
	bal, err := st.Balance(ctx, account)
	if err != nil {
		return Balance{}, err
	}
	out := Balance{BalanceUSD: bal, TypicalVideoChargeUSD: pricing.TypicalVideoCharge, TopUpURL: topUpURL}
	if s.Enabled() {
		out.X402 = &TopUpOffer{URL: baseURL + s.Path(), TopUpPerCallUSD: s.PerCall(), Network: s.NetworkID()}
	}
	return out, nil
}
