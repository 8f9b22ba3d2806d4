package pricing

import (
	"fmt"

	"conduit/internal/config"
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
			Note:   "The first call answers 402 with a Payment-Required challenge quoting the exact price; pay it and send the same request again with the payment-signature header. Nothing is settled for a request that fails validation.",
		},
		Fields: map[string]string{
			"prompt":      fmt.Sprintf("required; what the clip shows, 1 to %d characters", MaxPromptChars),
			"seconds":     "optional; clip length, one the model sells (default: the model's shortest)",
			"aspectRatio": "optional; 16:9 (default) or 9:16; an image is cropped to 1280x720 or 720x1280",
			"model":       "optional; a model id from models (default: the default model without image_url, else the cheapest model taking an image at the length)",
			"image_url":   "optional; public https URL of a JPEG, PNG or WebP up to 10 MB, fetched within 4 seconds; becomes the first frame",
			"async":       "optional; true answers at once with the run's statusUrl instead of waiting",
		},
		Limits: VideoLimits{MaxPromptChars: MaxPromptChars, Seconds: c.Lengths(), AspectRatio: config.AspectRatios},
		Delivery: "A paid call answers 200 at once with an X-Status-Url header, sends a whitespace byte every 2 seconds while the clip renders, then one JSON run record whose video field is the file's URL (use it exactly as given). " +
			"Prefer: wait=N (at most 720) bounds the wait; async true or Prefer: respond-async answers at once. Poll the statusUrl for a run still rendering. A failed render is never charged and carries a retryUrl for one free retry.",
		AlreadyPaid: "Every purchase stays collectable at its statusUrl; the wallet that paid can list them all, with fresh statusUrls, by signing in at GET " + purchases + ". Sending the same request again from the same wallet when the finished file never reached you returns that file without taking the new payment.",
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
