package pages

import (
	"strings"
	"testing"

	"conduit/internal/money"
)

// Every page renders from its view, the shared head included.
func TestEveryPageRenders(t *testing.T) {
	for name, c := range map[string]struct {
		p *Page
		v any
	}{
		"signin":   {SignIn, SignInView{Error: "The email or the password is wrong.", Action: "/signin"}},
		"consent":  {Consent, ConsentView{ClientName: "Inspector", Grant: []ScopeView{{Name: "pipelines:read", Text: "read pipelines"}}}},
		"message":  {Message, MessageView{Title: "This form has expired", Text: "Reload the page and try again."}},
		"checkout": {Checkout, CheckoutView{Pack: "25", Price: "25.00", Error: "the card was declined"}},
		"credits":  {Credits, CreditsView{BalanceURL: "/api/account/balance", Packs: Packs(map[money.Micros]money.Micros{10 * money.USD: 10 * money.USD, 25 * money.USD: 26 * money.USD})}},
	} {
		b, err := c.p.Render(c.v)
		if err != nil || !strings.Contains(string(b), "<") {
			t.Errorf("%s: %v %q", name, err, b)
		}
	}
	if b, _ := Message.Render(MessageView{Title: "Checkout expired", Text: "<x>"}); !strings.Contains(string(b), "<title>Checkout expired · Conduit</title>") || strings.Contains(string(b), "<x>") {
		t.Errorf("message page: %s", b)
	}
}

func TestPacksAndUSD(t *testing.T) {
	ps := Packs(map[money.Micros]money.Micros{25 * money.USD: 26 * money.USD, 10 * money.USD: 10 * money.USD})
	if len(ps) != 2 || ps[0].Paid != "10.00" || ps[1].Credit != "26.00" || ps[1].Bonus != "1.00 USD" || ps[0].Bonus != "" {
		t.Fatalf("%+v", ps)
	}
	if got := USD(52*money.USD + money.USD/2); got != "52.50" {
		t.Fatalf("USD: %s", got)
	}
	for m, want := range map[money.Micros]string{4_999_594: "4.99", 5 * money.USD: "5.00", 10_000: "0.01", 9_999: "0.00", -1: "-0.01", 0: "0.00"} {
		if got := Cents(m); got != want {
			t.Errorf("Cents(%d) = %s, want %s", m, got, want)
		}
	}
}
