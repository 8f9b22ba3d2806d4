package frontend

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/frontend/pages"
	"conduit/internal/checkout"
	"conduit/internal/errs"
	"conduit/internal/humans"
	"conduit/internal/money"
)

// Card payments for credit packs (docs/accounts.md, "Card payments"): the
// pack list, opening a checkout, the provider's webhook, and the local
// TEST MODE checkout page. The rules are internal/checkout's.

// Billing paths.
const (
	PacksPath         = "/api/billing/packs"
	CheckoutPath      = "/api/billing/packs/checkout"
	StripeWebhookPath = "/api/billing/webhooks/stripe"
)

// maxWebhook bounds a webhook body (Stripe's events are a few KB).
const maxWebhook = 64 << 10

type packJSON struct {
	Credit money.Micros `json:"credit"`
	ID     string       `json:"id"`
	Price  money.Micros `json:"price"`
}

// listPacks: GET /api/billing/packs → the packs, the provider (local,
// stripe, or none when card payments are off) and whether it is test mode.
func (s *Server) listPacks(c *gin.Context) {
	packs := []packJSON{}
	for _, p := range checkout.Packs() {
		packs = append(packs, packJSON{ID: p.ID, Price: p.Price, Credit: p.Credit})
	}
	provider, test := "none", false
	if co := s.deps.Checkout; co.Enabled() {
		provider, test = co.Provider.Name(), !co.Provider.Livemode()
	}
	c.JSON(http.StatusOK, gin.H{"packs": packs, "provider": provider, "testMode": test})
}

// Where a checkout returns when the request names nothing.
const (
	defaultSuccess = CreditsPagePath + "?checkout=success&session_id={CHECKOUT_SESSION_ID}"
	defaultCancel  = CreditsPagePath + "?checkout=cancel"
)

// openCheckout: POST /api/billing/packs/checkout {pack, successUrl?,
// cancelUrl?} → 201 {id, url}: send the buyer to url to pay.
func (s *Server) openCheckout(c *gin.Context) {
	var body struct {
		Pack       string `json:"pack"`
		SuccessURL string `json:"successUrl"`
		CancelURL  string `json:"cancelUrl"`
	}
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	back := map[string]*string{"successUrl": &body.SuccessURL, "cancelUrl": &body.CancelURL}
	for name, def := range map[string]string{"successUrl": defaultSuccess, "cancelUrl": defaultCancel} {
		v := back[name]
		if *v == "" {
			*v = def
		}
		if safeNext(*v) == "" {
			fail(c, errs.Invalidf("%s must be a path on this site starting with / (like /dashboard/credits), not %q", name, *v))
			return
		}
		*v = s.url(*v)
	}
	cs, err := s.deps.Checkout.Open(c.Request.Context(), principal(c).AccountID, body.Pack, body.SuccessURL, body.CancelURL)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"id": cs.ID, "url": cs.URL})
}

// stripeWebhook: POST /api/billing/webhooks/stripe. No authentication:
// the Stripe-Signature is the credential. 400 for a bad signature or an
// event that disagrees with our record (nothing happens); 200 otherwise,
// also for a replay (nothing new happens).
func (s *Server) stripeWebhook(c *gin.Context) {
	payload, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxWebhook))
	if err != nil {
		fail(c, errs.New(errs.TooLarge, "webhook body exceeds %d bytes", maxWebhook))
		return
	}
	out, err := s.deps.Checkout.Webhook(c.Request.Context(), payload, c.GetHeader(checkout.SignatureHeader))
	if err != nil {
		fail(c, err)
		return
	}
	res := gin.H{"received": true, "started": out.Started, "duplicate": out.Duplicate}
	if out.Ignored != "" {
		res["ignored"] = out.Ignored
	}
	c.JSON(http.StatusOK, res)
}

// localCheckout finds the signed-in buyer's open local checkout, or
// answers (a sign-in redirect, a page saying why not) and reports false.
func (s *Server) localCheckout(c *gin.Context) (checkout.Session, humans.Human, string, bool) {
	if s.deps.Checkout.Local() == nil {
		failPage(c, "No local checkout here", errs.NotFoundf("This deployment does not use the local test checkout."))
		return checkout.Session{}, humans.Human{}, "", false
	}
	h, session, err := s.signedIn(c)
	if errors.Is(err, humans.ErrNoSession) {
		c.Redirect(http.StatusSeeOther, SignInPath+"?next="+url.QueryEscape(c.Request.URL.Path))
		c.Abort()
		return checkout.Session{}, h, "", false
	}
	if err != nil {
		fail(c, err)
		return checkout.Session{}, h, "", false
	}
	cs, err := s.deps.Checkout.LocalSession(c.Request.Context(), h.Login.AccountID, c.Param("id"))
	if err != nil {
		title := map[errs.Kind]string{errs.NotFound: "Checkout not found", errs.Conflict: "Already paid", errs.Gone: "Checkout expired"}
		if e, ok := errs.As(err); ok && title[e.Kind] != "" {
			failPage(c, title[e.Kind], e)
		} else {
			fail(c, err)
		}
		return cs, h, "", false
	}
	return cs, h, session, true
}

// renderCheckout shows the card form, with refusal's sentence when it is
// shown again.
func (s *Server) renderCheckout(c *gin.Context, refusal *errs.Error, cs checkout.Session, h humans.Human, session string, v pages.CheckoutView) {
	v.Pack, v.Price, v.Credit, v.AccountID, v.Email = cs.Pack, pages.USD(cs.Price), pages.USD(cs.Credit), cs.AccountID, h.Login.Email
	v.Action, v.CSRF, v.CancelURL = checkout.LocalPagePath+cs.ID, humans.CSRFToken(session), cs.CancelURL
	if refusal != nil {
		v.Error = refusal.Msg
	}
	c.Header("Cache-Control", "no-store")
	renderPage(c, pageStatus(refusal), pages.Checkout, v)
}

// checkoutPage: GET /dashboard/checkout/{id}: the local checkout's card
// form, for the signed-in buyer of an open session.
func (s *Server) checkoutPage(c *gin.Context) {
	cs, h, session, ok := s.localCheckout(c)
	if !ok {
		return
	}
	s.renderCheckout(c, nil, cs, h, session, pages.CheckoutView{})
}

// checkoutPay: POST /dashboard/checkout/{id} {csrf, name, number, expiry,
// cvc}. A valid test card "pays": the local provider signs the
// checkout.session.completed event and posts it to this deployment's
// webhook route as Stripe would, then the buyer goes to the success URL.
func (s *Server) checkoutPay(c *gin.Context) {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxForm)
	if err := s.crossOrigin.Check(c.Request); err != nil {
		failPage(c, "This form came from another site", errs.Forbiddenf("Open the checkout page on this site and pay there."))
		return
	}
	cs, h, session, ok := s.localCheckout(c)
	if !ok {
		return
	}
	if !humans.CheckCSRF(session, c.PostForm("csrf")) {
		failPage(c, "This form has expired", errs.Forbiddenf("Reload the checkout page and try again."))
		return
	}
	v := pages.CheckoutView{Name: strings.TrimSpace(c.PostForm("name")), Number: c.PostForm("number"), Expiry: strings.TrimSpace(c.PostForm("expiry"))}
	if problem := checkout.CheckTestCard(v.Name, v.Number, v.Expiry, c.PostForm("cvc"), time.Now()); problem != "" {
		s.renderCheckout(c, errs.New(errs.PaymentRequired, "%s", problem), cs, h, session, v)
		return
	}
	payload, sig, err := s.deps.Checkout.Local().Completed(cs, time.Now())
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.deliverWebhook(c, payload, sig); err != nil {
		failPage(c, "The payment could not be confirmed", errs.New(errs.Upstream, "The checkout's webhook was not accepted (%s); nothing was granted. Try again.", err))
		return
	}
	c.Redirect(http.StatusSeeOther, checkout.SuccessURL(cs))
}

// deliverWebhook posts a signed event to this deployment's own webhook
// route over HTTP, as the provider would.
func (s *Server) deliverWebhook(c *gin.Context, payload []byte, sig string) error {
	req, err := http.NewRequestWithContext(c.Request.Context(), http.MethodPost, s.url(StripeWebhookPath), bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set(checkout.SignatureHeader, sig)
	resp, err := webhookClient.Do(req)
	if err != nil {
		return errors.New("the webhook route could not be reached")
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return errors.New("the webhook route answered " + strconv.Itoa(resp.StatusCode))
	}
	return nil
}

var webhookClient = &http.Client{Timeout: 15 * time.Second}
