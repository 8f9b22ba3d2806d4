package pricing

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"conduit/internal/config"
	"conduit/internal/mediakind"
	"conduit/internal/money"
)

// GenRequest is what a generation node asks for: its settings and, once
// rendered, its text (speech: what to say; music and video: the
// description).
type GenRequest struct {
	Kind        string `json:"kind"`
	Model       string `json:"model,omitempty"`
	Voice       string `json:"voice,omitempty"`
	Seconds     int    `json:"seconds,omitempty"`
	AspectRatio string `json:"aspectRatio,omitempty"`
	Text        string `json:"text,omitempty"`
}

// GenSale is a resolved generation: defaults filled in, and its price.
type GenSale struct {
	Kind        string       `json:"kind"`
	Model       string       `json:"model"`
	Voice       string       `json:"voice,omitempty"`
	Seconds     int          `json:"seconds,omitempty"`
	AspectRatio string       `json:"aspectRatio,omitempty"`
	Characters  int          `json:"characters,omitempty"`
	Price       money.Micros `json:"-"`
}

// FieldError is a setting the menus do not sell, naming the node field.
type FieldError struct {
	Field, Msg string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Generation is the priced half of the media kinds' descriptors
// (internal/mediakind has the rest): from the pay-per-call catalogs it
// says, per kind, which settings exist, their defaults, how long the text
// may be, what it costs, how long a render may take and how long a caller
// waits for one. Pay-per-call and generation nodes both read it.
type Generation struct {
	Video  *VideoCatalog
	Speech *SpeechCatalog
	Music  *MusicCatalog
}

// MaxText is how many characters a kind's text may have.
func (g Generation) MaxText(kind string) int {
	switch kind {
	case mediakind.Speech:
		return g.Speech.MaxChars
	case mediakind.Music:
		return g.Music.MaxPromptChars
	}
	return MaxPromptChars
}

// Menu is a kind's menu (GET on its endpoint): endpoint is where it is
// sold, purchases where a wallet lists what it bought.
func (g Generation) Menu(kind, endpoint, purchases string) any {
	switch kind {
	case mediakind.Speech:
		return g.Speech.Menu(endpoint, purchases)
	case mediakind.Music:
		return g.Music.Menu(endpoint, purchases)
	}
	return g.Video.Menu(endpoint, purchases)
}

// Wait is how long a caller waits by default for a render of a model
// ("" is the default) and length (0 when the kind has none).
func (g Generation) Wait(kind, model string, seconds int) time.Duration {
	switch kind {
	case mediakind.Speech:
		return min(max(g.Speech.Wait, 0), MaxWait)
	case mediakind.Music:
		return g.Music.WaitFor(seconds)
	}
	m, _ := g.Video.Model(model)
	return m.Wait(seconds)
}

// Deadline is how long a render of a model and length may take before it
// counts as late.
func (g Generation) Deadline(kind, model string, seconds int) time.Duration {
	switch kind {
	case mediakind.Speech:
		return g.Speech.LateDeadline
	case mediakind.Music:
		return g.Music.Deadline(seconds)
	}
	if m, ok := g.Video.Model(model); ok {
		return m.Deadline(seconds)
	}
	return 0
}

// Reprice is what a request costs once its text changed, false when a
// kind's price does not follow its text (it stays as sold).
func (g Generation) Reprice(kind string, r mediakind.Request) (money.Micros, bool) {
	if kind != mediakind.Speech {
		return 0, false
	}
	v, _ := g.Speech.Voice(r.Voice)
	return g.Speech.Price(r.Characters, v), true
}

// Resolve checks a request's settings against the menus and prices it.
// With withText false the text is not looked at (a template not yet
// rendered): a speech sale is then priced at the longest text it may
// speak, the most it can cost. Refusals are *FieldError.
func (g Generation) Resolve(r GenRequest, withText bool) (GenSale, error) {
	if withText {
		n := utf8.RuneCountInString(r.Text)
		field := mediakind.TextField(r.Kind)
		switch {
		case strings.TrimSpace(r.Text) == "":
			return GenSale{}, fieldErr(field, "the %s is empty", field)
		case n > g.MaxText(r.Kind):
			return GenSale{}, fieldErr(field, "the %s is %d characters; a %s node takes at most %d", field, n, r.Kind, g.MaxText(r.Kind))
		}
	}
	switch r.Kind {
	case mediakind.Speech:
		return g.speech(r, withText)
	case mediakind.Music:
		return g.music(r)
	case mediakind.Video:
		return g.video(r)
	}
	return GenSale{}, fieldErr("type", "%q is not a generation kind (%s)", r.Kind, strings.Join(mediakind.Names(), ", "))
}

func (g Generation) speech(r GenRequest, withText bool) (GenSale, error) {
	if r.Seconds != 0 {
		return GenSale{}, fieldErr("seconds", "a speech node's length follows its text; seconds is not a setting")
	}
	if r.AspectRatio != "" {
		return GenSale{}, fieldErr("aspectRatio", "a speech node has no aspect ratio")
	}
	m, ok := g.Speech.Model(r.Model)
	if !ok {
		return GenSale{}, fieldErr("model", "unknown speech model %q (%s)", r.Model, ids(g.Speech.Models))
	}
	v, ok := g.Speech.Voice(r.Voice)
	if !ok {
		return GenSale{}, fieldErr("voice", "unknown voice %q (GET /api/x402/speech lists the voices)", r.Voice)
	}
	chars := g.Speech.MaxChars
	if withText {
		chars = mediakind.Characters(r.Text)
	}
	return GenSale{Kind: mediakind.Speech, Model: m.ID, Voice: v.ID, Characters: chars, Price: g.Speech.Price(chars, v)}, nil
}

func (g Generation) music(r GenRequest) (GenSale, error) {
	if r.Voice != "" {
		return GenSale{}, fieldErr("voice", "a music node has no voice")
	}
	if r.AspectRatio != "" {
		return GenSale{}, fieldErr("aspectRatio", "a music node has no aspect ratio")
	}
	s, err := g.Music.Resolve(r.Model, r.Seconds)
	switch {
	case errors.Is(err, ErrUnknownModel):
		return GenSale{}, fieldErr("model", "unknown music model %q (%s)", r.Model, ids(g.Music.Models))
	case err != nil:
		return GenSale{}, fieldErr("seconds", "%v", err)
	}
	return GenSale{Kind: mediakind.Music, Model: s.Model.ID, Seconds: s.Seconds, Price: s.Price}, nil
}

func (g Generation) video(r GenRequest) (GenSale, error) {
	if r.Voice != "" {
		return GenSale{}, fieldErr("voice", "a video node has no voice")
	}
	if r.AspectRatio != "" && !slices.Contains(config.AspectRatios, r.AspectRatio) {
		return GenSale{}, fieldErr("aspectRatio", "aspectRatio must be %s, not %q", strings.Join(config.AspectRatios, " or "), r.AspectRatio)
	}
	s, err := g.Video.Resolve(r.Model, r.Seconds, false)
	switch {
	case errors.Is(err, ErrUnknownModel):
		var known []string
		for _, m := range g.Video.Models {
			known = append(known, m.ID)
		}
		return GenSale{}, fieldErr("model", "unknown video model %q (%s)", r.Model, strings.Join(known, ", "))
	case err != nil:
		return GenSale{}, fieldErr("seconds", "%v", err)
	}
	ar := r.AspectRatio
	if ar == "" {
		ar = config.AspectRatios[0]
	}
	return GenSale{Kind: mediakind.Video, Model: s.Model.ID, Seconds: s.Seconds, AspectRatio: ar, Price: s.Price}, nil
}

func ids(models []AudioModel) string {
	var out []string
	for _, m := range models {
		out = append(out, m.ID)
	}
	return strings.Join(out, ", ")
}

// Request is the sale as a render request whose text is text, put in
// its kind's text field.
func (s GenSale) Request(text string) mediakind.Request {
	r := mediakind.Request{Model: s.Model, Voice: s.Voice, Seconds: s.Seconds, AspectRatio: s.AspectRatio}
	if k, ok := mediakind.Of(s.Kind); ok {
		k.SetText(&r, text)
	}
	return r
}

// Describe is a sale as the menus would say it ("speech-v3, voice aria,
// 120 characters"), for logs and provenance.
func (s GenSale) Describe() string {
	parts := []string{s.Model}
	if s.Voice != "" {
		parts = append(parts, "voice "+s.Voice)
	}
	if s.Seconds > 0 {
		parts = append(parts, strconv.Itoa(s.Seconds)+" s")
	}
	if s.AspectRatio != "" {
		parts = append(parts, s.AspectRatio)
	}
	if s.Characters > 0 {
		parts = append(parts, strconv.Itoa(s.Characters)+" characters")
	}
	return strings.Join(parts, ", ")
}
