// Package pages holds the server-rendered HTML pages: sign-in, the OAuth
// consent page, the local TEST MODE checkout, the credits page, and the
// one-message page that answers a refused form. Each is a template
// (templates/, embedded in the binary) and the view it is rendered from.
// Pages run no script and post forms to this origin only. The routes that
// serve them stay thin handlers in frontend (signin.go, oauth.go,
// checkout.go, dashboard.go), which also pick the status: frontend's
// errors.go alone maps a refusal to one.
package pages

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"regexp"
	"slices"
	"strings"

	"conduit/internal/money"
	"conduit/ui"
)

//go:embed templates/*.html
var files embed.FS

// Page is one server-rendered page.
type Page struct{ t *template.Template }

// parse is templates/<name>.html with the head every page may share
// (templates/page.html: {{template "top" "<title>"}}).
func parse(name string) *Page {
	t := template.Must(template.New(name).Funcs(template.FuncMap{"stylesheet": func() string { return stylesheet }}).
		ParseFS(files, "templates/"+name+".html", "templates/page.html"))
	return &Page{t: t.Lookup(name + ".html")}
}

// stylesheet is the dashboard's built stylesheet (ui/src/styles.css, with
// a content hash in its name), read from the build's index.html: the
// server-rendered pages link the very file the app uses, so there is one
// style for both. Empty if the build has none (the pages then read
// plainly).
var stylesheet = appStylesheet(ui.Dist())

var stylesheetLink = regexp.MustCompile(`<link rel="stylesheet"[^>]*href="([^"]+\.css)"`)

func appStylesheet(dist fs.FS) string {
	index, err := fs.ReadFile(dist, "index.html")
	if err != nil {
		return ""
	}
	if m := stylesheetLink.FindSubmatch(index); m != nil {
		return string(m[1])
	}
	return ""
}

// Stylesheet is the address of the stylesheet every page links.
func Stylesheet() string { return stylesheet }

// The pages.
var (
	SignIn   = parse("signin")
	Consent  = parse("consent")
	Message  = parse("message")
	Checkout = parse("checkout")
	Credits  = parse("credits")
	Mailbox  = parse("mailbox")
)

// Render is p rendered from v.
func (p *Page) Render(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := p.t.Execute(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// SignInView is the sign-in form, or who is signed in.
type SignInView struct {
	Error, Email, Next, CSRF string
	// SignedIn shows who is signed in and a sign-out form instead.
	SignedIn bool
	Action   string
	Out      string
}

// ScopeView is one scope on the consent page; Checked ticks its box.
type ScopeView struct {
	Name, Text string
	Checked    bool
}

// ParamView is one authorization request parameter the consent form
// posts back.
type ParamView struct{ Name, Value string }

// ConsentView is the OAuth consent page.
type ConsentView struct {
	ClientName, ClientID, RedirectHost string
	Email, AccountID, CSRF, AccessTTL  string
	Action                             string
	// Grant are the scopes the human may grant (a box each), Lacking those
	// their login cannot, Unused those the tool server has no use for.
	Grant, Lacking, Unused []ScopeView
	Params                 []ParamView
}

// MessageView is a page that says one thing, with an optional link on.
type MessageView struct{ Title, Text, Link, LinkText string }

// MailView is one message on the dev mailbox page.
type MailView struct{ Kind, To, Subject, Body, Link, At, Status string }

// MailboxView is the dev mailbox page.
type MailboxView struct{ Messages []MailView }

// CheckoutView is the local TEST MODE checkout's card form.
type CheckoutView struct {
	Pack, Price, Credit, AccountID, Email string
	Action, CSRF, CancelURL, Error        string
	Name, Number, Expiry                  string
}

// PackView is one credit pack on the credits page.
type PackView struct{ ID, Name, Paid, Credit, Bonus string }

// OfferView is one network an agent can pay on.
type OfferView struct{ Network, Token, Asset, PayTo string }

// X402View says how agents top up with x402.
type X402View struct {
	URL, PerCall string
	Networks     []OfferView
}

// CreditsView is the credits page.
type CreditsView struct {
	BalanceURL string
	Packs      []PackView
	X402       *X402View
	// Buy is set for a signed-in human when card checkout is on: each
	// pack gets a Buy button; SignInURL when it is on but nobody is
	// signed in. Notice says how a checkout ended.
	Buy       *BuyView
	SignInURL string
	// SignUpURL is offered beside SignInURL: a newcomer from a 402 has
	// no account yet.
	SignUpURL string
	// Balance is the signed-in human's balance rounded down to the cent
	// ("12.34"; what can be spent), BalanceExact to the micro-USD, Email
	// who they are; all empty for a visitor.
	Balance, BalanceExact, Email string
	Notice                       string
}

// BuyView is the credits page's Buy form.
type BuyView struct {
	Action, CSRF, Email string
	TestMode            bool
}

// Packs lists the packs (price paid → credit granted) cheapest first.
func Packs(packs map[money.Micros]money.Micros) []PackView {
	paid := make([]money.Micros, 0, len(packs))
	for p := range packs {
		paid = append(paid, p)
	}
	slices.Sort(paid)
	var out []PackView
	for _, p := range paid {
		credit := packs[p]
		pv := PackView{ID: p.String(), Name: p.String() + " USD pack", Paid: USD(p), Credit: USD(credit)}
		if credit > p {
			pv.Bonus = USD(credit-p) + " USD"
		}
		out = append(out, pv)
	}
	return out
}

// Cents writes an amount rounded down to the cent ("4.999594" → "4.99"),
// as people read a balance.
func Cents(m money.Micros) string {
	const cent = money.USD / 100
	c := m / cent * cent
	if m < 0 && m%cent != 0 {
		c -= cent
	}
	return USD(c)
}

// USD writes an amount with two decimals ("52.50").
func USD(m money.Micros) string {
	s := m.String()
	switch i := strings.IndexByte(s, '.'); {
	case i < 0:
		return s + ".00"
	case len(s)-i == 2:
		return s + "0"
	}
	return s
}
