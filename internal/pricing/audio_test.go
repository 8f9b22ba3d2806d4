package pricing

import (
	"errors"
	"testing"

	"conduit/internal/config"
	"conduit/internal/money"
)

func speechCatalog(t *testing.T) *SpeechCatalog {
	t.Helper()
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewSpeechCatalog(cfg.Media.Speech)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSpeechPrice(t *testing.T) {
	c := speechCatalog(t)
	plain := SpeechVoice{Multiplier: money.USD}
	half := SpeechVoice{Multiplier: 1_500_000}
	double := SpeechVoice{Multiplier: 2 * money.USD}
	for _, tc := range []struct {
		chars int
		voice SpeechVoice
		want  money.Micros
	}{
		{1, plain, money.Cents(2)},      // the minimum
		{47, plain, money.Cents(2)},     // 0.01974 → 0.02
		{48, plain, money.Cents(3)},     // 0.02016 → 0.03
		{100, plain, money.Cents(5)},    // 0.042 → 0.05
		{1000, plain, money.Cents(42)},  // exactly 0.42
		{1001, plain, money.Cents(43)},  // 0.42042 → 0.43
		{3000, plain, money.Cents(126)}, // the most
		{1000, half, money.Cents(63)},
		{1, half, money.Cents(3)}, // 0.02 × 1.5
		{100, double, money.Cents(10)},
		{3000, double, money.Cents(126)}, // never more than 1.26
	} {
		if got := c.Price(tc.chars, tc.voice); got != tc.want {
			t.Errorf("%d chars × %s: %s, want %s", tc.chars, tc.voice.Multiplier, got, tc.want)
		}
	}
}

func TestSpeechMenu(t *testing.T) {
	c := speechCatalog(t)
	m := c.Menu("https://api.test/api/x402/speech", "https://api.test/api/x402/purchases")
	defaults, premium := 0, 0
	for _, v := range m.Voices {
		if v.Default {
			defaults++
		}
		if v.PriceMultiplier != nil {
			premium++
		}
	}
	if len(m.Voices) <= 30 || defaults != 1 || premium == 0 || len(m.Models) != 2 || m.Models[0].ID != "speech-v3" || !m.Models[0].Default ||
		m.Limits.MaxTextChars != 3000 || m.Pricing == "" {
		t.Fatalf("%+v", m)
	}
	if _, ok := c.Voice("nope"); ok {
		t.Fatal("an unknown voice was found")
	}
}

func TestMusicResolve(t *testing.T) {
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewMusicCatalog(cfg.Media.Music)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Resolve("", 0)
	if err != nil || s.Model.ID != "compose-1" || s.Seconds != 30 || s.Price != money.Cents(8) {
		t.Fatalf("%+v %v", s, err)
	}
	for secs, want := range map[int]money.Micros{15: money.Cents(6), 60: money.Cents(10), 120: money.Cents(12)} {
		if s, err := c.Resolve("compose-1", secs); err != nil || s.Price != want {
			t.Fatalf("%d s: %+v %v", secs, s, err)
		}
	}
	if _, err := c.Resolve("", 45); !errors.Is(err, ErrLength) || err.Error() != "compose-1 (the default) sells 15, 30, 60, 120 seconds, not 45" {
		t.Fatalf("45 s: %v", err)
	}
	if _, err := c.Resolve("nope", 30); err != ErrUnknownModel {
		t.Fatalf("%v", err)
	}
	for _, o := range c.Menu("e", "p").Offers {
		if o.PriceUSD < money.Cents(6) || o.PriceUSD > money.Cents(12) {
			t.Fatalf("offer %+v outside 0.06–0.12", o)
		}
	}
}
