package frontend

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/pricing"
	"conduit/internal/store"
)

// MusicPath is the pay-per-music endpoint (spec §4.12; the request and
// record are ours, docs/audio.md).
const MusicPath = "/api/x402/music"

func (s *Server) musicKind() mediaKind {
	cat := s.deps.Media.Music
	return mediaKind{
		name: "music", path: MusicPath, fileField: "audio", order: s.musicOrder,
		menu:      func() any { return cat.Menu(s.url(MusicPath), s.url(PurchasesPath)) },
		wait:      func(r store.MediaRequest) time.Duration { return cat.WaitFor(r.Seconds) },
		deadline:  func(r store.MediaRequest) time.Duration { return cat.Deadline(r.Seconds) },
		textField: "prompt", maxText: func() int { return cat.MaxPromptChars },
		setText: func(r *store.MediaRequest, t string) { r.Prompt = t },
		fields: func(rec gin.H, r store.MediaRun) {
			rec["seconds"] = r.Request.Seconds
		},
	}
}

// musicRequest is the body of POST /api/x402/music.
type musicRequest struct {
	Prompt  *string  `json:"prompt"`
	Seconds *float64 `json:"seconds"`
	Model   *string  `json:"model"`
	Async   *bool    `json:"async"`
}

// musicOrder reads and checks a music request and prices it by length.
func (s *Server) musicOrder(c *gin.Context) (order, error) {
	cat := s.deps.Media.Music
	var b musicRequest
	if err := decodeJSON(c, &b); err != nil {
		return order{}, err
	}
	prompt, err := checkText("prompt", b.Prompt, true, cat.MaxPromptChars)
	if err != nil {
		return order{}, err
	}
	seconds := 0
	if b.Seconds != nil {
		if v := *b.Seconds; v != math.Trunc(v) || v <= 0 || v > 3600 {
			return order{}, errorf(http.StatusBadRequest, "seconds must be one of %v", cat.Lengths())
		}
		seconds = int(*b.Seconds)
	}
	if b.Model != nil && *b.Model == "" {
		return order{}, errorf(http.StatusBadRequest, "model must be one of %s", strings.Join(audioModelIDs(cat.Models), ", "))
	}
	sale, err := cat.Resolve(deref(b.Model), seconds)
	switch {
	case errors.Is(err, pricing.ErrUnknownModel):
		return order{}, errorf(http.StatusBadRequest, "model must be one of %s", strings.Join(audioModelIDs(cat.Models), ", "))
	case errors.Is(err, pricing.ErrLength):
		return order{}, errorf(http.StatusBadRequest, "%v", err)
	case err != nil:
		return order{}, err
	}
	return order{kind: s.musicKind(), price: sale.Price, async: b.Async != nil && *b.Async,
		request:     store.MediaRequest{Model: sale.Model.ID, Prompt: prompt, Seconds: sale.Seconds},
		description: fmt.Sprintf("%d-second music track (%s)", sale.Seconds, sale.Model.ID)}, nil
}
