package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"time"

	"conduit/internal/money"
)

// Speech is the pay-per-speech catalog (spec §4.9): the price per 1,000
// characters, the models and the voices.
type Speech struct {
	// PricePer1000 is the USD price of 1,000 characters; a request costs
	// that pro rata, rounded up to the cent, at least MinPrice, times the
	// voice's multiplier, never more than MaxPrice.
	PricePer1000 string `mapstructure:"price_per_1000"`
	MinPrice     string `mapstructure:"min_price"`
	MaxPrice     string `mapstructure:"max_price"`
	MaxChars     int    `mapstructure:"max_chars"`
	// Wait is the default wait of a paid call; Deadline is when a render
	// counts as late.
	Wait     time.Duration `mapstructure:"wait"`
	Deadline time.Duration `mapstructure:"deadline"`
	Models   []AudioModel  `mapstructure:"models"`
	Voices   []Voice       `mapstructure:"voices"`
	// Hosted is a hosted text-to-speech API (models with provider
	// "hosted").
	Hosted HostedAPI `mapstructure:"hosted"`
}

// Music is the pay-per-music catalog (spec §4.12; the shape is ours, see
// docs/audio.md).
type Music struct {
	MaxPromptChars int           `mapstructure:"max_prompt_chars"`
	Wait           time.Duration `mapstructure:"wait"`
	Deadline       time.Duration `mapstructure:"deadline"`
	Models         []AudioModel  `mapstructure:"models"`
	Hosted         HostedAPI     `mapstructure:"hosted"`
}

// AudioModel is a speech or music model on the menu.
type AudioModel struct {
	ID      string `mapstructure:"id"`
	Label   string `mapstructure:"label"`
	Note    string `mapstructure:"note"`
	Default bool   `mapstructure:"default"`
	// Prices are the lengths on sale (music only; speech is priced by
	// characters).
	Prices []LengthPrice `mapstructure:"prices"`
	// Provider is "local" (espeak-ng or the synthesizer) or "hosted".
	Provider string `mapstructure:"provider"`
	// Upstream is the hosted provider's model id.
	Upstream string   `mapstructure:"upstream"`
	Refuse   []string `mapstructure:"refuse"`
}

// Voice is one speech voice: what the menu shows, and how the local
// renderer speaks it (an espeak-ng voice, variant, pitch and rate).
type Voice struct {
	ID          string `mapstructure:"id"`
	Description string `mapstructure:"description"`
	Default     bool   `mapstructure:"default"`
	// PriceMultiplier ("1.5") makes a voice cost that multiple; "" is 1.
	PriceMultiplier string `mapstructure:"price_multiplier"`
	Language        string `mapstructure:"language"`
	Espeak          string `mapstructure:"espeak"`
	Variant         string `mapstructure:"variant"`
	Pitch           int    `mapstructure:"pitch"`
	Rate            int    `mapstructure:"rate"`
	// Upstream is the hosted provider's voice id.
	Upstream string `mapstructure:"upstream"`
}

// HostedAPI is a hosted render API's base address and key.
type HostedAPI struct {
	BaseURL string `mapstructure:"base_url"`
	APIKey  string `mapstructure:"api_key"`
}

// MusicLengths are the track lengths the music endpoint can sell.
var MusicLengths = []int{15, 30, 60, 120}

var audioDefaults = map[string]any{
	"media.speech.price_per_1000":  "0.42",
	"media.speech.min_price":       "0.02",
	"media.speech.max_price":       "1.26",
	"media.speech.max_chars":       3000,
	"media.speech.wait":            "45s",
	"media.speech.deadline":        "90s",
	"media.speech.hosted.base_url": "",
	"media.speech.hosted.api_key":  "",
	"media.speech.models": []map[string]any{
		{"id": "speech-v3", "label": "Speech v3", "default": true, "provider": "local",
			"note":   "most expressive; performs inline square-bracket directions such as [pause], [whispers], [softly], [loudly], [faster], [slower] without speaking them",
			"refuse": []string{`\b(kill yourself|bomb threat)\b`}},
		{"id": "speech-multilingual-v2", "label": "Speech Multilingual v2", "provider": "local",
			"note":   "steadiest for long narration; speaks the voice's language (29 languages); square-bracket directions are left out, not performed",
			"refuse": []string{`\b(kill yourself|bomb threat)\b`}},
	},
	"media.speech.voices":          speechVoiceDefaults,
	"media.music.max_prompt_chars": 1000,
	"media.music.wait":             "45s",
	"media.music.deadline":         "90s",
	"media.music.hosted.base_url":  "",
	"media.music.hosted.api_key":   "",
	"media.music.models": []map[string]any{
		{"id": "compose-1", "label": "Compose 1", "default": true, "provider": "local",
			"note":   "an original instrumental from a description of genre, mood, instruments and tempo (e.g. \"upbeat synthwave with arpeggiated bass and drums at 118 bpm\")",
			"prices": prices(15, "0.06", 30, "0.08", 60, "0.10", 120, "0.12"),
			"refuse": []string{`\b(in the style of|sounds? like|cover of|remix of)\b`}},
	},
}

func (c *Config) validateAudio() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	sp := c.Media.Speech
	for name, v := range map[string]string{"price_per_1000": sp.PricePer1000, "min_price": sp.MinPrice, "max_price": sp.MaxPrice} {
		if usd, err := money.ParseUSD(v); err != nil || usd <= 0 {
			bad("media.speech.%s %q is not a positive USD amount", name, v)
		}
	}
	if sp.MaxChars <= 0 {
		bad("media.speech.max_chars must be positive")
	}
	if c.Media.Music.MaxPromptChars <= 0 {
		bad("media.music.max_prompt_chars must be positive")
	}
	for kind, d := range map[string][2]time.Duration{"speech": {sp.Wait, sp.Deadline}, "music": {c.Media.Music.Wait, c.Media.Music.Deadline}} {
		if d[0] <= 0 || d[1] <= 0 {
			bad("media.%s.wait and deadline must be positive durations", kind)
		}
	}
	errs = append(errs, validateModels("media.speech", sp.Models, sp.Hosted, nil)...)
	errs = append(errs, validateModels("media.music", c.Media.Music.Models, c.Media.Music.Hosted, MusicLengths)...)

	// Renderers are found by model id, so ids are unique across kinds.
	ids := map[string]string{}
	for _, v := range c.Media.Video {
		ids[v.ID] = "video"
	}
	for kind, models := range map[string][]AudioModel{"speech": sp.Models, "music": c.Media.Music.Models} {
		for _, m := range models {
			if other, ok := ids[m.ID]; ok && other != kind {
				bad("media.%s model id %q is also a %s model; ids must be unique across kinds", kind, m.ID, other)
			}
			ids[m.ID] = kind
		}
	}

	seen, defaults := map[string]bool{}, 0
	for i, v := range sp.Voices {
		where := fmt.Sprintf("media.speech.voices[%d] (%s)", i, v.ID)
		if !regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`).MatchString(v.ID) || seen[v.ID] {
			bad("%s: the id must be unique, lowercase letters, digits and dashes", where)
		}
		seen[v.ID] = true
		if v.Default {
			defaults++
		}
		if v.PriceMultiplier != "" {
			if m, err := money.ParseUSD(v.PriceMultiplier); err != nil || m < money.USD {
				bad("%s: price_multiplier %q must be a number of at least 1", where, v.PriceMultiplier)
			}
		}
		if v.Espeak == "" || v.Language == "" {
			bad("%s: language and espeak must be set", where)
		}
	}
	if defaults != 1 {
		bad("media.speech.voices must flag exactly one voice as default, found %d", defaults)
	}
	return errs
}

// validateModels checks a speech or music model list; lengths, when not
// nil, are the lengths a model may sell (and must).
func validateModels(key string, models []AudioModel, hosted HostedAPI, lengths []int) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if hosted.BaseURL != "" {
		if u, err := url.Parse(hosted.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("%s.hosted.base_url must be an absolute http(s) URL", key)
		}
	}
	seen, defaults := map[string]bool{}, 0
	for i, m := range models {
		where := fmt.Sprintf("%s.models[%d] (%s)", key, i, m.ID)
		if m.ID == "" || seen[m.ID] {
			bad("%s: the id must be set and unique", where)
		}
		seen[m.ID] = true
		if m.Default {
			defaults++
		}
		if lengths != nil && len(m.Prices) == 0 {
			bad("%s: lists no lengths", where)
		}
		for _, p := range m.Prices {
			if lengths != nil && !slices.Contains(lengths, p.Seconds) {
				bad("%s: %d seconds is not a length on sale (%v)", where, p.Seconds, lengths)
			}
			if usd, err := money.ParseUSD(p.USD); err != nil || usd <= 0 {
				bad("%s: price %q is not a positive USD amount", where, p.USD)
			}
		}
		switch m.Provider {
		case "local":
		case "hosted":
			if hosted.BaseURL == "" {
				bad("%s uses provider hosted but %s.hosted.base_url is not set", where, key)
			}
			if m.Upstream == "" {
				bad("%s uses provider hosted but names no upstream model", where)
			}
		default:
			bad("%s: provider must be local or hosted, got %q", where, m.Provider)
		}
		for _, r := range m.Refuse {
			if _, err := regexp.Compile("(?i)" + r); err != nil {
				bad("%s: refuse pattern %q is not a regular expression: %v", where, r, err)
			}
		}
	}
	if defaults != 1 {
		bad("%s.models must flag exactly one model as default, found %d", key, defaults)
	}
	return errs
}
