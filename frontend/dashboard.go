package frontend

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"conduit/frontend/pages"
	"conduit/internal/accounts"
	"conduit/internal/errs"
	"conduit/internal/humans"
)

// CreditsPagePath is the human page topUpUrl points at.
const CreditsPagePath = "/dashboard/credits"

// SignUpPagePath is the dashboard's sign-up form, which the credits page
// offers a visitor beside sign-in.
const SignUpPagePath = "/dashboard/signup"

// CreditsCheckoutPath is the credits page's Buy form.
const CreditsCheckoutPath = CreditsPagePath + "/checkout"

// creditsPage: GET /dashboard/credits, where a human tops up (topUpUrl of
// every balance and 402): the credit packs and how they are bought, and
// how agents top up with x402 on this deployment. Server-rendered, no
// script.
func (s *Server) creditsPage(c *gin.Context) {
	v := pages.CreditsView{BalanceURL: s.url("/api/account/balance"), Packs: pages.Packs(accounts.Packs)}
	if pay := s.deps.Payments; pay.Enabled() {
		x := &pages.X402View{URL: s.url(pay.Path()), PerCall: pages.USD(pay.PerCall())}
		for _, o := range pay.Offers() {
			token, _ := o.Extra["name"].(string)
			x.Networks = append(x.Networks, pages.OfferView{Network: o.Network, Token: token, Asset: o.Asset, PayTo: o.PayTo})
		}
		v.X402 = x
	}
	h, session, err := s.signedIn(c)
	signedIn := err == nil
	if err != nil && !errors.Is(err, humans.ErrNoSession) {
		fail(c, err)
		return
	}
	if signedIn {
		bal, err := s.deps.Accounts.Balance(c.Request.Context(), h.Login.AccountID)
		if err != nil {
			fail(c, err)
			return
		}
		v.Balance, v.BalanceExact, v.Email = pages.Cents(bal), bal.String(), h.Login.Email
	}
	if co := s.deps.Checkout; co.Enabled() {
		if signedIn {
			v.Buy = &pages.BuyView{Action: CreditsCheckoutPath, CSRF: humans.CSRFToken(session), Email: h.Login.Email, TestMode: !co.Provider.Livemode()}
		} else {
			v.SignInURL = SignInPath + "?next=" + url.QueryEscape(CreditsPagePath)
			v.SignUpURL = SignUpPagePath
		}
	}
	switch c.Query("checkout") {
	case "success":
		v.Notice = "Thank you: your payment is being confirmed, and the pack's credit appears on your balance in a moment."
	case "cancel":
		v.Notice = "The checkout was cancelled; nothing was charged."
	}
	c.Header("Cache-Control", "no-store")
	renderPage(c, http.StatusOK, pages.Credits, v)
}

// creditsCheckout: POST /dashboard/credits/checkout {csrf, pack}: the
// credits page's Buy button. Opens a checkout for the signed-in human and
// sends the browser to pay; back to the credits page afterwards.
func (s *Server) creditsCheckout(c *gin.Context) {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxForm)
	if err := s.crossOrigin.Check(c.Request); err != nil {
		failPage(c, "This form came from another site", errs.Forbiddenf("Open the credits page on this site and buy there."))
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
		failPage(c, "This form has expired", errs.Forbiddenf("Reload the credits page and try again."))
		return
	}
	cs, err := s.deps.Checkout.Open(c.Request.Context(), h.Login.AccountID, c.PostForm("pack"), s.url(defaultSuccess), s.url(defaultCancel))
	if err != nil {
		failPage(c, "The checkout could not be opened", err)
		return
	}
	c.Redirect(http.StatusSeeOther, cs.URL)
}
