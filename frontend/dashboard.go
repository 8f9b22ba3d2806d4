package frontend

import (
	"bytes"
	_ "embed"
	"html/template"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"conduit/internal/accounts"
	"conduit/internal/money"
)

// CreditsPagePath is the human page topUpUrl points at.
const CreditsPagePath = "/dashboard/credits"

//go:embed dashboard/credits.html
var creditsHTML string

var creditsTemplate = template.Must(template.New("credits").Parse(creditsHTML))

type packView struct{ Name, Paid, Credit, Bonus string }

type offerView struct{ Network, Token, Asset, PayTo string }

type x402View struct {
	URL, PerCall string
	Networks     []offerView
}

type creditsView struct {
	BalanceURL string
	Packs      []packView
	X402       *x402View
}

// creditsPage: GET /dashboard/credits, where a human tops up (topUpUrl of
// every balance and 402): the credit packs and how they are bought, and
// how agents top up with x402 on this deployment. Server-rendered, no
// script.
func (s *Server) creditsPage(c *gin.Context) {
	v := creditsView{BalanceURL: s.url("/api/account/balance")}
	paid := make([]money.Micros, 0, len(accounts.Packs))
	for p := range accounts.Packs {
		paid = append(paid, p)
	}
	slices.Sort(paid)
	for _, p := range paid {
		credit := accounts.Packs[p]
		pv := packView{Name: p.String() + " USD pack", Paid: usd(p), Credit: usd(credit)}
		if credit > p {
			pv.Bonus = usd(credit-p) + " USD"
		}
		v.Packs = append(v.Packs, pv)
	}
	if pay := s.deps.Payments; pay.Enabled() {
		x := &x402View{URL: s.url(pay.Path()), PerCall: usd(pay.PerCall())}
		for _, o := range pay.Offers() {
			token, _ := o.Extra["name"].(string)
			x.Networks = append(x.Networks, offerView{Network: o.Network, Token: token, Asset: o.Asset, PayTo: o.PayTo})
		}
		v.X402 = x
	}
	var page bytes.Buffer
	if err := creditsTemplate.Execute(&page, v); err != nil {
		fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-cache")
	c.Data(http.StatusOK, "text/html; charset=utf-8", page.Bytes())
}

// usd writes an amount with two decimals ("52.50").
func usd(m money.Micros) string {
	s := m.String()
	switch i := strings.IndexByte(s, '.'); {
	case i < 0:
		return s + ".00"
	case len(s)-i == 2:
		return s + "0"
	}
	return s
}
