package pricing

import (
	"errors"
	"testing"
	"time"

	"conduit/internal/config"
	"conduit/internal/money"
)

func defaultCatalog(t *testing.T) *VideoCatalog {
	t.Helper()
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the default configuration does not validate: %v", err)
	}
	c, err := NewVideoCatalog(cfg.Media.Video)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The default catalog is the spec's table (§4.6.1), price for price.
func TestDefaultCatalogIsTheSpecTable(t *testing.T) {
	c := defaultCatalog(t)
	want := map[string]map[int]string{
		"lumen-h3":       {5: "0.42", 10: "0.84", 15: "1.26"},
		"vista-3.1-lite": {4: "0.45", 6: "0.68", 8: "0.90"},
		"wave-2.7":       {5: "0.70", 10: "1.40"},
		"vista-3.1-fast": {4: "0.68", 6: "1.01", 8: "1.35"},
		"kine-3.0":       {5: "0.89", 10: "1.77", 15: "2.65"},
		"kine-3.0-pro":   {5: "1.18", 10: "2.36", 15: "3.53"},
		"sprout-2.5":     {5: "1.64", 10: "3.27", 15: "4.90"},
		"vista-3.1":      {4: "2.24", 6: "3.36", 8: "4.48"},
	}
	if len(c.Models) != len(want) {
		t.Fatalf("%d models, want %d", len(c.Models), len(want))
	}
	for _, m := range c.Models {
		w := want[m.ID]
		if len(m.Prices) != len(w) {
			t.Errorf("%s sells %d lengths, want %d", m.ID, len(m.Prices), len(w))
		}
		for s, usd := range w {
			p, ok := m.Price(s)
			exp, _ := money.ParseUSD(usd)
			if !ok || p != exp {
				t.Errorf("%s %ds: %s, want %s", m.ID, s, p, usd)
			}
		}
		if m.FirstFrame == (m.ID == "lumen-h3") {
			t.Errorf("%s: firstFrame %v", m.ID, m.FirstFrame)
		}
	}
}

func TestResolveDefaults(t *testing.T) {
	c := defaultCatalog(t)
	cases := []struct {
		model   string
		seconds int
		image   bool
		want    string
		wantS   int
		wantUSD string
		err     error
	}{
		{"", 0, false, "lumen-h3", 5, "0.42", nil},
		{"", 10, false, "lumen-h3", 10, "0.84", nil},
		{"", 4, false, "", 0, "", ErrLength},
		// With an image: the cheapest image-taking model for the length.
		{"", 5, true, "wave-2.7", 5, "0.70", nil},
		{"", 10, true, "wave-2.7", 10, "1.40", nil},
		{"", 15, true, "kine-3.0", 15, "2.65", nil},
		{"", 4, true, "vista-3.1-lite", 4, "0.45", nil},
		{"", 6, true, "vista-3.1-lite", 6, "0.68", nil},
		{"", 8, true, "vista-3.1-lite", 8, "0.90", nil},
		{"", 0, true, "vista-3.1-lite", 4, "0.45", nil},
		{"sprout-2.5", 0, false, "sprout-2.5", 5, "1.64", nil},
		{"sprout-2.5", 15, true, "sprout-2.5", 15, "4.90", nil},
		{"sprout-2.5", 4, false, "", 0, "", ErrLength},
		{"lumen-h3", 5, true, "", 0, "", ErrModelNoImage},
		{"nope", 5, false, "", 0, "", ErrUnknownModel},
	}
	for _, tc := range cases {
		sale, err := c.Resolve(tc.model, tc.seconds, tc.image)
		if !errors.Is(err, tc.err) {
			t.Errorf("Resolve(%q, %d, %v): err %v, want %v", tc.model, tc.seconds, tc.image, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		usd, _ := money.ParseUSD(tc.wantUSD)
		if sale.Model.ID != tc.want || sale.Seconds != tc.wantS || sale.Price != usd {
			t.Errorf("Resolve(%q, %d, %v) = %s %ds %s, want %s %ds %s", tc.model, tc.seconds, tc.image,
				sale.Model.ID, sale.Seconds, sale.Price, tc.want, tc.wantS, tc.wantUSD)
		}
	}
}

// A length the model does not sell is refused naming the model, why it was
// picked when the request named none, and the lengths it sells.
func TestLengthErrorNamesTheModelAndItsLengths(t *testing.T) {
	c := defaultCatalog(t)
	for _, tc := range []struct {
		model   string
		seconds int
		want    string
	}{
		{"", 4, "lumen-h3 (the default without image_url) sells 5, 10, 15 seconds, not 4"},
		{"vista-3.1-lite", 5, "model vista-3.1-lite sells 4, 6, 8 seconds, not 5"},
	} {
		_, err := c.Resolve(tc.model, tc.seconds, false)
		var le *LengthError
		if !errors.As(err, &le) || !errors.Is(err, ErrLength) || err.Error() != tc.want {
			t.Errorf("Resolve(%q, %d): %v, want %q", tc.model, tc.seconds, err, tc.want)
		}
	}
}

func TestWaitScalesAndIsBounded(t *testing.T) {
	c := defaultCatalog(t)
	lumen, _ := c.Model("lumen-h3")
	if got := lumen.Wait(5); got != 150*time.Second {
		t.Errorf("lumen-h3 5s waits %v, want 2.5 minutes", got)
	}
	sprout, _ := c.Model("sprout-2.5")
	if got := sprout.Wait(15); got != 600*time.Second {
		t.Errorf("sprout-2.5 15s waits %v, want 10 minutes", got)
	}
	for _, m := range c.Models {
		for _, p := range m.Prices {
			if w := m.Wait(p.Seconds); w < MinWait || w > MaxWait {
				t.Errorf("%s %ds waits %v, outside [45s, 720s]", m.ID, p.Seconds, w)
			}
		}
	}
}

func TestMenuListsEveryCombination(t *testing.T) {
	c := defaultCatalog(t)
	m := c.Menu("https://api.example/api/x402/video", "https://api.example/api/x402/purchases")
	combos := 0
	for _, mod := range c.Models {
		combos += len(mod.Prices) * 2
	}
	if len(m.Offers) != combos || combos != 46 {
		t.Errorf("%d offers for %d combinations (want 23 lengths x 2 ratios)", len(m.Offers), combos)
	}
	if len(m.Limits.Model) != 8 || m.Limits.MaxPromptChars != 2000 || len(m.Limits.AspectRatio) != 2 {
		t.Errorf("limits %+v", m.Limits)
	}
	if got := m.Limits.Seconds; len(got) != 6 || got[0] != 4 || got[5] != 15 {
		t.Errorf("lengths on sale %v", got)
	}
	for _, f := range []string{"prompt", "seconds", "aspectRatio", "model", "image_url", "async"} {
		if m.Fields[f] == "" {
			t.Errorf("field %s is not described", f)
		}
	}
}
