package paycall

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"conduit/internal/config"
	"conduit/internal/errs"
	"conduit/internal/imagefetch"
	"conduit/internal/mediakind"
	"conduit/internal/money"
	"conduit/internal/pricing"
)

// order is a validated pay-per-call request, priced. Everything that can
// refuse a request is checked here, before the payment is looked at.
type order struct {
	kind    Kind
	request mediakind.Request
	price   money.Micros
	// description is the challenge's resource description.
	description string
	// image is the fetched first frame to store before settling.
	image *imagefetch.Image
	async bool
}

// speechRequest is the body of POST /api/x402/speech; only these fields
// are read (any other is a 400 before payment).
type speechRequest struct {
	Text  *string `json:"text"`
	Voice *string `json:"voice"`
	Model *string `json:"model"`
	Async *bool   `json:"async"`
}

// speechOrder prices speech by its characters and voice.
func (s *Service) speechOrder(_ context.Context, p Purchase) (order, error) {
	cat := s.Media.Speech
	var b speechRequest
	if err := p.Decode(&b); err != nil {
		return order{}, err
	}
	text, err := checkText("text", b.Text, true, cat.MaxChars)
	if err != nil {
		return order{}, err
	}
	model, ok := cat.Model(deref(b.Model))
	if !ok || b.Model != nil && *b.Model == "" {
		return order{}, errs.Invalidf("model must be one of %s", strings.Join(audioModelIDs(cat.Models), ", "))
	}
	voice, ok := cat.Voice(deref(b.Voice))
	if !ok || b.Voice != nil && *b.Voice == "" {
		return order{}, errs.Invalidf("voice %q is not on the menu; GET %s lists the voices", deref(b.Voice), SpeechPath)
	}
	k := s.kind(mediakind.Speech)
	req := mediakind.Request{Model: model.ID, Voice: voice.ID}
	k.SetText(&req, text)
	return order{kind: k, request: req, price: cat.Price(req.Characters, voice), async: b.Async != nil && *b.Async,
		description: fmt.Sprintf("speech of %d characters (%s, %s)", req.Characters, voice.ID, model.ID)}, nil
}

// musicRequest is the body of POST /api/x402/music.
type musicRequest struct {
	Prompt  *string  `json:"prompt"`
	Seconds *float64 `json:"seconds"`
	Model   *string  `json:"model"`
	Async   *bool    `json:"async"`
}

// musicOrder prices a track by its length.
func (s *Service) musicOrder(_ context.Context, p Purchase) (order, error) {
	cat := s.Media.Music
	var b musicRequest
	if err := p.Decode(&b); err != nil {
		return order{}, err
	}
	prompt, err := checkText("prompt", b.Prompt, true, cat.MaxPromptChars)
	if err != nil {
		return order{}, err
	}
	seconds := 0
	if b.Seconds != nil {
		if v := *b.Seconds; v != math.Trunc(v) || v <= 0 || v > 3600 {
			return order{}, errs.Invalidf("seconds must be one of %v", cat.Lengths())
		}
		seconds = int(*b.Seconds)
	}
	if b.Model != nil && *b.Model == "" {
		return order{}, errs.Invalidf("model must be one of %s", strings.Join(audioModelIDs(cat.Models), ", "))
	}
	sale, err := cat.Resolve(deref(b.Model), seconds)
	switch {
	case errors.Is(err, pricing.ErrUnknownModel):
		return order{}, errs.Invalidf("model must be one of %s", strings.Join(audioModelIDs(cat.Models), ", "))
	case errors.Is(err, pricing.ErrLength):
		return order{}, errs.Invalidf("%v", err)
	case err != nil:
		return order{}, err
	}
	return order{kind: s.kind(mediakind.Music), price: sale.Price, async: b.Async != nil && *b.Async,
		request:     mediakind.Request{Model: sale.Model.ID, Prompt: prompt, Seconds: sale.Seconds},
		description: fmt.Sprintf("%d-second music track (%s)", sale.Seconds, sale.Model.ID)}, nil
}

// videoRequest is the body of POST /api/x402/video; only these fields are
// read (any other is a 400 before payment).
type videoRequest struct {
	Prompt      *string  `json:"prompt"`
	Seconds     *float64 `json:"seconds"`
	AspectRatio *string  `json:"aspectRatio"`
	Model       *string  `json:"model"`
	ImageURL    *string  `json:"image_url"`
	Async       *bool    `json:"async"`
}

// videoOrder checks a video request (spec §4.6), fetching its image, and
// prices it. Without a payment the image is only judged (its verdict may
// be remembered from a moment ago), the fetch spent from the caller's
// budget of unpaid fetches (Purchase.UnpaidFetch), and its bytes dropped.
func (s *Service) videoOrder(ctx context.Context, p Purchase) (order, error) {
	cat := s.Media.Video
	var b videoRequest
	if err := p.Decode(&b); err != nil {
		return order{}, err
	}
	prompt, err := checkText("prompt", b.Prompt, true, pricing.MaxPromptChars)
	if err != nil {
		return order{}, err
	}
	req := mediakind.Request{Prompt: prompt, AspectRatio: "16:9"}
	if b.AspectRatio != nil {
		if !slices.Contains(config.AspectRatios, *b.AspectRatio) {
			return order{}, errs.Invalidf("aspectRatio must be one of %s", strings.Join(config.AspectRatios, ", "))
		}
		req.AspectRatio = *b.AspectRatio
	}
	seconds := 0
	if b.Seconds != nil {
		v := *b.Seconds
		if v != math.Trunc(v) || !slices.Contains(config.VideoLengths, int(v)) {
			return order{}, errs.Invalidf("seconds must be one of %v", config.VideoLengths)
		}
		seconds = int(v)
	}
	model := ""
	if b.Model != nil {
		if _, ok := cat.Model(*b.Model); !ok {
			var ids []string
			for _, m := range cat.Models {
				ids = append(ids, m.ID)
			}
			return order{}, errs.Invalidf("model must be one of %s", strings.Join(ids, ", "))
		}
		model = *b.Model
	}
	withImage := b.ImageURL != nil
	if withImage {
		if _, err := imagefetch.CheckURL(*b.ImageURL); err != nil {
			return order{}, imageError(err)
		}
	}
	sale, err := cat.Resolve(model, seconds, withImage)
	switch {
	case errors.Is(err, pricing.ErrModelNoImage):
		return order{}, &errs.Error{Kind: errs.Invalid, Code: "IMAGE_MODEL_MISMATCH",
			Msg: fmt.Sprintf("model %s does not take image_url; leave model out to get the cheapest model that does", model)}
	case errors.Is(err, pricing.ErrLength):
		return order{}, errs.Invalidf("%v", err)
	case errors.Is(err, pricing.ErrNoImageModels):
		return order{}, errs.Invalidf("no model takes image_url at %d seconds", seconds)
	case err != nil:
		return order{}, errs.Invalidf("%v", err)
	}
	req.Model, req.Seconds = sale.Model.ID, sale.Seconds
	o := order{kind: s.kind(mediakind.Video), price: sale.Price, async: b.Async != nil && *b.Async,
		description: fmt.Sprintf("%d-second %s video (%s)", sale.Seconds, req.AspectRatio, sale.Model.ID)}
	switch {
	case withImage && p.Payment == "":
		if err := s.Media.Images.CheckUnpaid(ctx, *b.ImageURL, p.UnpaidFetch); err != nil {
			return order{}, imageError(err)
		}
		req.ImageURL = *b.ImageURL
	case withImage:
		img, err := s.Media.Images.Fetch(ctx, *b.ImageURL)
		if err != nil {
			return order{}, imageError(err)
		}
		req.ImageURL, o.image = *b.ImageURL, &img
	}
	o.request = req
	return o, nil
}

// checkText applies the rules of a text field (prompt, text): present
// when required, not blank, at most maxChars characters.
func checkText(field string, p *string, required bool, maxChars int) (string, error) {
	if p == nil {
		if required {
			return "", errs.Invalidf("%s is required", field)
		}
		return "", nil
	}
	n := utf8.RuneCountInString(*p)
	switch {
	case strings.TrimSpace(*p) == "":
		return "", errs.Invalidf("%s must not be empty", field)
	case n > maxChars:
		return "", errs.Invalidf("%s is %d characters; at most %d are allowed", field, n, maxChars)
	}
	return *p, nil
}

// imageError is an image refusal with its spec code (IMAGE_…): 413 for
// one too large, else 400.
func imageError(err error) error {
	var ie *imagefetch.Error
	if !errors.As(err, &ie) {
		return err
	}
	kind := errs.Invalid
	if ie.Status == http.StatusRequestEntityTooLarge {
		kind = errs.TooLarge
	}
	return &errs.Error{Kind: kind, Code: ie.Code, Msg: ie.Message}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func audioModelIDs(models []pricing.AudioModel) []string {
	var out []string
	for _, m := range models {
		out = append(out, m.ID)
	}
	return out
}
