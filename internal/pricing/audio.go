package pricing

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"conduit/internal/config"
	"conduit/internal/money"
)

// AudioModel is a speech or music model on sale.
type AudioModel struct {
	ID, Label, Note string
	Default         bool
	// Prices by length, shortest first (music).
	Prices []LengthPrice
}

// Price is the model's price for a length, false when not on sale.
func (m AudioModel) Price(seconds int) (money.Micros, bool) {
	for _, p := range m.Prices {
		if p.Seconds == seconds {
			return p.Price, true
		}
	}
	return 0, false
}

// SpeechVoice is a voice on the speech menu.
type SpeechVoice struct {
	ID, Description, Language string
	Default                   bool
	// Multiplier is the price factor in millionths (1_000_000 is 1x).
	Multiplier money.Micros
}

// SpeechCatalog prices speech by characters (spec §4.9).
type SpeechCatalog struct {
	Models             []AudioModel
	Voices             []SpeechVoice
	Per1000, Min, Max  money.Micros
	MaxChars           int
	Wait, LateDeadline time.Duration
}

// ErrUnknownVoice: the voice is not on the menu.
var ErrUnknownVoice = errors.New("unknown voice")

// NewSpeechCatalog reads the (validated) speech configuration.
func NewSpeechCatalog(cfg config.Speech) (*SpeechCatalog, error) {
	c := &SpeechCatalog{MaxChars: cfg.MaxChars, Wait: cfg.Wait, LateDeadline: cfg.Deadline}
	var err error
	for dst, src := range map[*money.Micros]string{&c.Per1000: cfg.PricePer1000, &c.Min: cfg.MinPrice, &c.Max: cfg.MaxPrice} {
		if *dst, err = money.ParseUSD(src); err != nil {
			return nil, fmt.Errorf("speech price: %w", err)
		}
	}
	if c.Models, err = audioModels(cfg.Models); err != nil {
		return nil, err
	}
	for _, v := range cfg.Voices {
		sv := SpeechVoice{ID: v.ID, Description: v.Description, Language: v.Language, Default: v.Default, Multiplier: money.USD}
		if v.PriceMultiplier != "" {
			if sv.Multiplier, err = money.ParseUSD(v.PriceMultiplier); err != nil {
				return nil, fmt.Errorf("voice %s: %w", v.ID, err)
			}
		}
		c.Voices = append(c.Voices, sv)
	}
	return c, nil
}

func audioModels(cfg []config.AudioModel) ([]AudioModel, error) {
	var out []AudioModel
	for _, m := range cfg {
		am := AudioModel{ID: m.ID, Label: m.Label, Note: m.Note, Default: m.Default}
		for _, p := range m.Prices {
			usd, err := money.ParseUSD(p.USD)
			if err != nil {
				return nil, fmt.Errorf("model %s: %w", m.ID, err)
			}
			am.Prices = append(am.Prices, LengthPrice{Seconds: p.Seconds, Price: usd})
		}
		slices.SortFunc(am.Prices, func(a, b LengthPrice) int { return a.Seconds - b.Seconds })
		out = append(out, am)
	}
	return out, nil
}

// model finds id among models ("" is the default one).
func model(models []AudioModel, id string) (AudioModel, bool) {
	for _, m := range models {
		if m.ID == id || id == "" && m.Default {
			return m, true
		}
	}
	return AudioModel{}, false
}

// Model finds a speech model ("" is the default).
func (c *SpeechCatalog) Model(id string) (AudioModel, bool) { return model(c.Models, id) }

// Voice finds a voice ("" is the default).
func (c *SpeechCatalog) Voice(id string) (SpeechVoice, bool) {
	for _, v := range c.Voices {
		if v.ID == id || id == "" && v.Default {
			return v, true
		}
	}
	return SpeechVoice{}, false
}

// Price is the price of speaking chars characters in voice: pro rata per
// 1,000 characters rounded up to the cent, at least Min, times the voice's
// multiplier (rounded up to the cent again), never more than Max.
func (c *SpeechCatalog) Price(chars int, voice SpeechVoice) money.Micros {
	base := max(ceilCent(ceilDiv(int64(chars)*int64(c.Per1000), 1000)), c.Min)
	p := ceilCent(ceilDiv(int64(base)*int64(voice.Multiplier), int64(money.USD)))
	return min(p, c.Max)
}

// ceilDiv divides rounding up: a price is never rounded down.
func ceilDiv(n, d int64) money.Micros { return money.Micros((n + d - 1) / d) }

func ceilCent(m money.Micros) money.Micros {
	cent := money.Cents(1)
	return (m + cent - 1) / cent * cent
}

// MusicCatalog prices music by length (spec §4.12: 0.06–0.12 USD).
type MusicCatalog struct {
	Models         []AudioModel
	MaxPromptChars int
	Wait           time.Duration
	LateDeadline   time.Duration
}

// NewMusicCatalog reads the (validated) music configuration.
func NewMusicCatalog(cfg config.Music) (*MusicCatalog, error) {
	models, err := audioModels(cfg.Models)
	if err != nil {
		return nil, err
	}
	return &MusicCatalog{Models: models, MaxPromptChars: cfg.MaxPromptChars, Wait: cfg.Wait, LateDeadline: cfg.Deadline}, nil
}

// Model finds a music model ("" is the default).
func (c *MusicCatalog) Model(id string) (AudioModel, bool) { return model(c.Models, id) }

// DefaultMusicSeconds is a track's length when none is asked (or the
// model's shortest when it does not sell it).
const DefaultMusicSeconds = 30

// MusicSale is a resolved music request.
type MusicSale struct {
	Model   AudioModel
	Seconds int
	Price   money.Micros
}

// Resolve picks the model (the default without one) and length.
func (c *MusicCatalog) Resolve(id string, seconds int) (MusicSale, error) {
	m, ok := c.Model(id)
	if !ok {
		return MusicSale{}, ErrUnknownModel
	}
	if seconds == 0 {
		seconds = DefaultMusicSeconds
		if _, ok := m.Price(seconds); !ok {
			seconds = m.Prices[0].Seconds
		}
	}
	p, ok := m.Price(seconds)
	if !ok {
		why := ""
		if id == "" {
			why = "the default"
		}
		return MusicSale{}, lengthError(m.ID, m.Prices, why, seconds)
	}
	return MusicSale{Model: m, Seconds: seconds, Price: p}, nil
}

// WaitFor is a track's default wait (the configured wait, scaled for tracks
// longer than a minute), within 45 s and 720 s.
func (c *MusicCatalog) WaitFor(seconds int) time.Duration {
	return min(max(c.Wait*time.Duration(max(seconds, 60))/60, MinWait), MaxWait)
}

// Deadline is when a track's render counts as late.
func (c *MusicCatalog) Deadline(seconds int) time.Duration {
	return c.LateDeadline * time.Duration(max(seconds, 60)) / 60
}

// Lengths lists every length some music model sells, ascending.
func (c *MusicCatalog) Lengths() []int {
	var out []int
	for _, m := range c.Models {
		for _, p := range m.Prices {
			if !slices.Contains(out, p.Seconds) {
				out = append(out, p.Seconds)
			}
		}
	}
	slices.Sort(out)
	return out
}
