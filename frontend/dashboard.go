package frontend

import (
	"bytes"
	_ "embed"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"conduit/internal/accounts"
	"conduit/internal/humans"
	"conduit/internal/money"
)

// CreditsPagePath is the human page topUpUrl points at.
const CreditsPagePath = "/dashboard/credits"

//go:embed dashboard/credits.html
var creditsHTML string

var creditsTemplate = template.Must(template.New("credits").Parse(creditsHTML))

type packView struct{ ID, Name, Paid, Credit, Bonus string }

type offerView struct{ Network, Token, Asset, PayTo string }

type x402View struct {
	URL, PerCall string
	Networks     []offerView
}

type creditsView struct {
	BalanceURL string
	Packs      []packView
	X402       *x402View
	// Buy is set for a signed-in human when card checkout is on: each
	// pack gets a Buy button; SignInURL when it is on but nobody is
	// signed in. Notice says how a checkout ended.
	Buy       *buyView
	SignInURL string
	Notice    string
}

type buyView struct {
	Action, CSRF, Email string
	TestMode            bool
}

// CreditsCheckoutPath is the credits page's Buy form.
const CreditsCheckoutPath = CreditsPagePath + "/checkout"

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
		pv := packView{ID: p.String(), Name: p.String() + " USD pack", Paid: usd(p), Credit: usd(credit)}
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
	if co := s.deps.Checkout; co.Enabled() {
		h, session, err := s.signedIn(c)
		switch {
		case err == nil:
			v.Buy = &buyView{Action: CreditsCheckoutPath, CSRF: humans.CSRFToken(session), Email: h.Login.Email, TestMode: !co.Provider.Livemode()}
		case errors.Is(err, humans.ErrNoSession):
			v.SignInURL = SignInPath + "?next=" + url.QueryEscape(CreditsPagePath)
		default:
			fail(c, err)
			return
		}
	}
	switch c.Query("checkout") {
	case "success":
		v.Notice = "Thank you: your payment is being confirmed, and the pack's credit appears on your balance in a moment."
	case "cancel":
		v.Notice = "The checkout was cancelled; nothing was charged."
	}
	var page bytes.Buffer
	if err := creditsTemplate.Execute(&page, v); err != nil {
		fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
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

// creditsCheckout: POST /dashboard/credits/checkout {csrf, pack}: the
// credits page's Buy button. Opens a checkout for the signed-in human and
// sends the browser to pay; back to the credits page afterwards.
func (s *Server) creditsCheckout(c *gin.Context) {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxForm)
	if err := s.crossOrigin.Check(c.Request); err != nil {
		messagePage(c, http.StatusForbidden, "This form came from another site", "Open the credits page on this site and buy there.")
		return
	}
	h, session, err := s.signedIn(c)
	if errors.Is(err, humans.ErrNoSession) {
		c.Redirect(http.StatusSeeOther, SignInPath+"?next="+url.QueryEscape(CreditsPagePath))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	if !humans.CheckCSRF(session, c.PostForm("csrf")) {
		messagePage(c, http.StatusForbidden, "This form has expired", "Reload the credits page and try again.")
		return
	}
	cs, err := s.deps.Checkout.Open(c.Request.Context(), h.Login.AccountID, c.PostForm("pack"), s.url(defaultSuccess), s.url(defaultCancel))
	if err != nil {
		e := toAPIError(c, err)
		messagePage(c, e.Status, "The checkout could not be opened", e.Message)
		return
	}
	c.Redirect(http.StatusSeeOther, cs.URL)
}
