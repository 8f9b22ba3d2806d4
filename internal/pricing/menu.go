package pricing

import (
	"fmt"

	"conduit/internal/config"
	"conduit/internal/mediakind"
	"conduit/internal/money"
)

// HowToBuy tells an agent how to place an order.
type HowToBuy struct {
	Method string         `json:"method"`
	Body   map[string]any `json:"body"`
	Note   string         `json:"note"`
}

// MenuPrice is one length and its price on the menu.
type MenuPrice struct {
	Seconds  int          `json:"seconds"`
	PriceUSD money.Micros `json:"priceUsd"`
}

// MenuModel is one model on the video menu.
type MenuModel struct {
	ID         string      `json:"id"`
	Label      string      `json:"label"`
	Default    bool        `json:"default"`
	FirstFrame bool        `json:"firstFrame"`
	Note       string      `json:"note"`
	Prices     []MenuPrice `json:"prices"`
}

// Offer is one combination on sale.
type Offer struct {
	Model       string       `json:"model"`
	Seconds     int          `json:"seconds"`
	AspectRatio string       `json:"aspectRatio"`
	PriceUSD    money.Micros `json:"priceUsd"`
}

// VideoLimits are the request bounds.
type VideoLimits struct {
	MaxPromptChars int      `json:"maxPromptChars"`
	Seconds        []int    `json:"seconds"`
	AspectRatio    []string `json:"aspectRatio"`
	Model          []string `json:"model"`
}

// VideoMenu is the answer of GET /api/x402/video without a query (§2.7).
type VideoMenu struct {
	Service     string            `json:"service"`
	Description string            `json:"description"`
	HowToBuy    HowToBuy          `json:"howToBuy"`
	Fields      map[string]string `json:"fields"`
	Models      []MenuModel       `json:"models"`
	Offers      []Offer           `json:"offers"`
	Limits      VideoLimits       `json:"limits"`
	Delivery    string            `json:"delivery"`
	AlreadyPaid string            `json:"alreadyPaid"`
}

// MaxPromptChars bounds a video prompt (spec §8).
const MaxPromptChars = 2000

// Menu builds the video menu; endpoint is the absolute URL of the video
// endpoint and purchases that of the purchases listing.
func (c *VideoCatalog) Menu(endpoint, purchases string) VideoMenu {
	m := VideoMenu{
		Service:     "Pay-per-video",
		Description: "Text-to-video or image-to-video clips with sound, paid per request with an x402 stablecoin payment: no account and no API key.",
		HowToBuy: HowToBuy{
			Method: "POST " + endpoint,
			Body:   map[string]any{"prompt": "a paper boat sailing down a rainy street, cinematic", "seconds": 5, "aspectRatio": "16:9"},
			Note:   howToBuyNote,
		},
		Fields: map[string]string{
			"prompt":      fmt.Sprintf("required; what the clip shows, 1 to %d characters", MaxPromptChars),
			"seconds":     "optional; clip length, one the model sells (default: the model's shortest)",
			"aspectRatio": "optional; 16:9 (default) or 9:16; an image is cropped to 1280x720 or 720x1280",
			"model":       "optional; a model id from models (default: the default model without image_url, else the cheapest model taking an image at the length)",
			"image_url":   "optional; public https URL of a JPEG, PNG or WebP up to 10 MB, fetched within 4 seconds; becomes the first frame",
			"async":       "optional; true answers at once with the run's statusUrl instead of waiting",
		},
		Limits:      VideoLimits{MaxPromptChars: MaxPromptChars, Seconds: c.Lengths(), AspectRatio: config.AspectRatios},
		Delivery:    delivery("clip", mediakind.Video),
		AlreadyPaid: alreadyPaid(purchases),
	}
	for _, mod := range c.Models {
		mm := MenuModel{ID: mod.ID, Label: mod.Label, Default: mod.Default, FirstFrame: mod.FirstFrame, Note: mod.Note}
		for _, p := range mod.Prices {
			mm.Prices = append(mm.Prices, MenuPrice{Seconds: p.Seconds, PriceUSD: p.Price})
			for _, ar := range config.AspectRatios {
				m.Offers = append(m.Offers, Offer{Model: mod.ID, Seconds: p.Seconds, AspectRatio: ar, PriceUSD: p.Price})
			}
		}
		m.Models = append(m.Models, mm)
		m.Limits.Model = append(m.Limits.Model, mod.ID)
	}
	return m
}

const howToBuyNote = "The first call answers 402 with a Payment-Required challenge quoting the exact price; pay it and send the same request again with the payment-signature header. Nothing is settled for a request that fails validation."

// delivery says how a paid call answers a kind: the record's file URL is
// in the kind's file field.
func delivery(what, kind string) string {
	k, _ := mediakind.Of(kind)
	field := k.FileField
	return "A paid call answers 200 at once with an X-Status-Url header, sends a whitespace byte every 2 seconds while the " + what + " renders, then one JSON run record whose " + field + " field is the file's URL (use it exactly as given). " +
		"Prefer: wait=N (at most 720) bounds the wait; async true or Prefer: respond-async answers at once. Poll the statusUrl for a run still rendering. A failed render is never charged and carries a retryUrl for one free retry."
}

func alreadyPaid(purchases string) string {
	return "Every purchase stays collectable at its statusUrl; the wallet that paid can list them all, with fresh statusUrls, by signing in with the wallet (Sign-In-With-X) at GET " + purchases + ". Sending the same request again from the same wallet when the finished file never reached you returns that file without taking the new payment."
}

// AudioMenuModel is a speech or music model on its menu.
type AudioMenuModel struct {
	ID      string      `json:"id"`
	Label   string      `json:"label"`
	Default bool        `json:"default"`
	Note    string      `json:"note"`
	Prices  []MenuPrice `json:"prices,omitempty"`
}

// MenuVoice is a voice on the speech menu.
type MenuVoice struct {
	ID              string   `json:"id"`
	Description     string   `json:"description"`
	Language        string   `json:"language"`
	Default         bool     `json:"default"`
	PriceMultiplier *float64 `json:"priceMultiplier,omitempty"`
}

// SpeechMenu is the answer of GET /api/x402/speech without a query (§2.7).
type SpeechMenu struct {
	Service     string            `json:"service"`
	Description string            `json:"description"`
	HowToBuy    HowToBuy          `json:"howToBuy"`
	Pricing     string            `json:"pricing"`
	Fields      map[string]string `json:"fields"`
	Models      []AudioMenuModel  `json:"models"`
	Voices      []MenuVoice       `json:"voices"`
	Limits      struct {
		MaxTextChars int `json:"maxTextChars"`
	} `json:"limits"`
	Delivery    string `json:"delivery"`
	AlreadyPaid string `json:"alreadyPaid"`
}

// Menu builds the speech menu.
func (c *SpeechCatalog) Menu(endpoint, purchases string) SpeechMenu {
	m := SpeechMenu{
		Service:     "Pay-per-speech",
		Description: "Text-to-speech as an MP3, paid per request with an x402 stablecoin payment: no account and no API key.",
		HowToBuy: HowToBuy{
			Method: "POST " + endpoint,
			Body:   map[string]any{"text": "Welcome aboard. [pause] Please keep your seatbelt fastened.", "voice": c.defaultVoice()},
			Note:   howToBuyNote,
		},
		Pricing: fmt.Sprintf("%s USD per 1,000 characters of text, rounded up to the cent, at least %s USD; a voice with priceMultiplier costs that multiple; at most %s USD per request.",
			c.Per1000, c.Min, c.Max),
		Fields: map[string]string{
			"text":  fmt.Sprintf("required; what to say, 1 to %d characters (the price is by characters)", c.MaxChars),
			"voice": "optional; a voices[].id (default: the voice flagged default)",
			"model": "optional; a models[].id (default: the model flagged default)",
			"async": "optional; true answers at once with the run's statusUrl instead of waiting",
		},
		Delivery:    delivery("speech", mediakind.Speech),
		AlreadyPaid: alreadyPaid(purchases),
	}
	m.Limits.MaxTextChars = c.MaxChars
	for _, mod := range c.Models {
		m.Models = append(m.Models, AudioMenuModel{ID: mod.ID, Label: mod.Label, Default: mod.Default, Note: mod.Note})
	}
	for _, v := range c.Voices {
		mv := MenuVoice{ID: v.ID, Description: v.Description, Language: v.Language, Default: v.Default}
		if v.Multiplier != money.USD {
			f := float64(v.Multiplier) / float64(money.USD)
			mv.PriceMultiplier = &f
		}
		m.Voices = append(m.Voices, mv)
	}
	return m
}

func (c *SpeechCatalog) defaultVoice() string {
	v, _ := c.Voice("")
	return v.ID
}

// MusicOffer is one model and length on sale.
type MusicOffer struct {
	Model    string       `json:"model"`
	Seconds  int          `json:"seconds"`
	PriceUSD money.Micros `json:"priceUsd"`
}

// MusicMenu is the answer of GET /api/x402/music without a query.
type MusicMenu struct {
	Service     string            `json:"service"`
	Description string            `json:"description"`
	HowToBuy    HowToBuy          `json:"howToBuy"`
	Fields      map[string]string `json:"fields"`
	Models      []AudioMenuModel  `json:"models"`
	Offers      []MusicOffer      `json:"offers"`
	Limits      struct {
		MaxPromptChars int      `json:"maxPromptChars"`
		Seconds        []int    `json:"seconds"`
		Model          []string `json:"model"`
	} `json:"limits"`
	Delivery    string `json:"delivery"`
	AlreadyPaid string `json:"alreadyPaid"`
}

// Menu builds the music menu.
func (c *MusicCatalog) Menu(endpoint, purchases string) MusicMenu {
	m := MusicMenu{
		Service:     "Pay-per-music",
		Description: "An original instrumental track as an MP3, composed from a description of genre, mood, instruments and tempo, paid per request with an x402 stablecoin payment: no account and no API key.",
		HowToBuy: HowToBuy{
			Method: "POST " + endpoint,
			Body:   map[string]any{"prompt": "calm lo-fi hip hop with warm piano, soft drums and bass at 84 bpm", "seconds": 30},
			Note:   howToBuyNote,
		},
		Fields: map[string]string{
			"prompt":  fmt.Sprintf("required; the track: genre, mood, instruments, tempo (\"at 120 bpm\" or words like slow, upbeat), 1 to %d characters", c.MaxPromptChars),
			"seconds": fmt.Sprintf("optional; track length, one the model sells (default: %d)", DefaultMusicSeconds),
			"model":   "optional; a models[].id (default: the model flagged default)",
			"async":   "optional; true answers at once with the run's statusUrl instead of waiting",
		},
		Delivery:    delivery("track", mediakind.Music),
		AlreadyPaid: alreadyPaid(purchases),
	}
	m.Limits.MaxPromptChars, m.Limits.Seconds = c.MaxPromptChars, c.Lengths()
	for _, mod := range c.Models {
		am := AudioMenuModel{ID: mod.ID, Label: mod.Label, Default: mod.Default, Note: mod.Note}
		for _, p := range mod.Prices {
			am.Prices = append(am.Prices, MenuPrice{Seconds: p.Seconds, PriceUSD: p.Price})
			m.Offers = append(m.Offers, MusicOffer{Model: mod.ID, Seconds: p.Seconds, PriceUSD: p.Price})
		}
		m.Models = append(m.Models, am)
		m.Limits.Model = append(m.Limits.Model, mod.ID)
	}
	return m
}
