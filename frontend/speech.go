package frontend

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/money"
	"conduit/internal/pricing"
	"conduit/internal/store"
)

// SpeechPath is the pay-per-speech endpoint (spec §4.9–4.11).
const SpeechPath = "/api/x402/speech"

func (s *Server) speechKind() mediaKind {
	cat := s.deps.Media.Speech
	setText := func(r *store.MediaRequest, t string) { r.Text, r.Characters = t, pricing.Characters(t) }
	return mediaKind{
		name: "speech", path: SpeechPath, fileField: "audio", order: s.speechOrder,
		menu:      func() any { return cat.Menu(s.url(SpeechPath), s.url(PurchasesPath)) },
		wait:      func(store.MediaRequest) time.Duration { return min(max(cat.Wait, 0), pricing.MaxWait) },
		deadline:  func(store.MediaRequest) time.Duration { return cat.LateDeadline },
		textField: "text", maxText: func() int { return cat.MaxChars }, setText: setText,
		// A retry with a new text costs what that text costs.
		reprice: func(r store.MediaRequest) money.Micros {
			v, _ := cat.Voice(r.Voice)
			return cat.Price(r.Characters, v)
		},
		fields: func(rec gin.H, r store.MediaRun) {
			rec["voice"], rec["characters"] = r.Request.Voice, r.Request.Characters
		},
	}
}

// speechRequest is the body of POST /api/x402/speech; only these fields
// are read (any other is a 400 before payment).
type speechRequest struct {
	Text  *string `json:"text"`
	Voice *string `json:"voice"`
	Model *string `json:"model"`
	Async *bool   `json:"async"`
}

// speechOrder reads and checks a speech request and prices it by its
// characters and voice.
func (s *Server) speechOrder(c *gin.Context) (order, error) {
	cat := s.deps.Media.Speech
	var b speechRequest
	if err := decodeJSON(c, &b); err != nil {
		return order{}, err
	}
	text, err := checkText("text", b.Text, true, cat.MaxChars)
	if err != nil {
		return order{}, err
	}
	model, ok := cat.Model(deref(b.Model))
	if !ok || b.Model != nil && *b.Model == "" {
		return order{}, errorf(http.StatusBadRequest, "model must be one of %s", strings.Join(audioModelIDs(cat.Models), ", "))
	}
	voice, ok := cat.Voice(deref(b.Voice))
	if !ok || b.Voice != nil && *b.Voice == "" {
		return order{}, errorf(http.StatusBadRequest, "voice %q is not on the menu; GET %s lists the voices", deref(b.Voice), SpeechPath)
	}
	req := store.MediaRequest{Model: model.ID, Voice: voice.ID}
	s.speechKind().setText(&req, text)
	return order{kind: s.speechKind(), request: req, price: cat.Price(req.Characters, voice), async: b.Async != nil && *b.Async,
		description: fmt.Sprintf("speech of %d characters (%s, %s)", req.Characters, voice.ID, model.ID)}, nil
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
