package frontend

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"conduit/internal/config"
	"conduit/internal/imagefetch"
	"conduit/internal/pricing"
	"conduit/internal/store"
)

// VideoPath is the pay-per-video endpoint.
const VideoPath = "/api/x402/video"

func (s *Server) videoKind() mediaKind {
	cat := s.deps.Media.Video
	model := func(r store.MediaRequest) pricing.VideoModel { m, _ := cat.Model(r.Model); return m }
	return mediaKind{
		name: "video", path: VideoPath, fileField: "video", outputs: true, failedStep: true, order: s.videoOrder,
		menu:      func() any { return cat.Menu(s.url(VideoPath), s.url(PurchasesPath)) },
		textField: "prompt", maxText: func() int { return pricing.MaxPromptChars }, setText: func(r *store.MediaRequest, t string) { r.Prompt = t },
		wait:     func(r store.MediaRequest) time.Duration { return model(r).Wait(r.Seconds) },
		deadline: func(r store.MediaRequest) time.Duration { return model(r).Deadline(r.Seconds) },
		fields: func(rec gin.H, r store.MediaRun) {
			rec["seconds"], rec["aspectRatio"] = r.Request.Seconds, r.Request.AspectRatio
			if r.Request.ImageURL != "" {
				rec["imageUrl"] = r.Request.ImageURL
			}
		},
	}
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

// videoOrder reads and checks a video request (spec §4.6), fetching its
// image, and prices it.
func (s *Server) videoOrder(c *gin.Context) (order, error) {
	var b videoRequest
	if err := decodeJSON(c, &b); err != nil {
		return order{}, err
	}
	prompt, err := checkText("prompt", b.Prompt, true, pricing.MaxPromptChars)
	if err != nil {
		return order{}, err
	}
	req := store.MediaRequest{Prompt: prompt, AspectRatio: "16:9"}
	if b.AspectRatio != nil {
		if !slices.Contains(config.AspectRatios, *b.AspectRatio) {
			return order{}, errorf(http.StatusBadRequest, "aspectRatio must be one of %s", strings.Join(config.AspectRatios, ", "))
		}
		req.AspectRatio = *b.AspectRatio
	}
	seconds := 0
	if b.Seconds != nil {
		v := *b.Seconds
		if v != math.Trunc(v) || !slices.Contains(config.VideoLengths, int(v)) {
			return order{}, errorf(http.StatusBadRequest, "seconds must be one of %v", config.VideoLengths)
		}
		seconds = int(v)
	}
	model := ""
	if b.Model != nil {
		if _, ok := s.deps.Media.Video.Model(*b.Model); !ok {
			return order{}, errorf(http.StatusBadRequest, "model must be one of %s", strings.Join(s.videoMenuModels(), ", "))
		}
		model = *b.Model
	}
	withImage := b.ImageURL != nil
	if withImage {
		if _, err := imagefetch.CheckURL(*b.ImageURL); err != nil {
			return order{}, imageError(err)
		}
	}
	sale, err := s.deps.Media.Video.Resolve(model, seconds, withImage)
	switch {
	case errors.Is(err, pricing.ErrModelNoImage):
		return order{}, &APIError{Status: http.StatusBadRequest, Code: "IMAGE_MODEL_MISMATCH", Message: fmt.Sprintf("model %s does not take image_url; leave model out to get the cheapest model that does", model)}
	case errors.Is(err, pricing.ErrLength):
		return order{}, errorf(http.StatusBadRequest, "%v", err)
	case errors.Is(err, pricing.ErrNoImageModels):
		return order{}, errorf(http.StatusBadRequest, "no model takes image_url at %d seconds", seconds)
	case err != nil:
		return order{}, errorf(http.StatusBadRequest, "%v", err)
	}
	req.Model, req.Seconds = sale.Model.ID, sale.Seconds
	o := order{kind: s.videoKind(), price: sale.Price, async: b.Async != nil && *b.Async,
		description: fmt.Sprintf("%d-second %s video (%s)", sale.Seconds, req.AspectRatio, sale.Model.ID)}
	if withImage {
		img, err := s.deps.Media.Images.Fetch(c.Request.Context(), *b.ImageURL)
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
			return "", errorf(http.StatusBadRequest, "%s is required", field)
		}
		return "", nil
	}
	n := utf8.RuneCountInString(*p)
	switch {
	case strings.TrimSpace(*p) == "":
		return "", errorf(http.StatusBadRequest, "%s must not be empty", field)
	case n > maxChars:
		return "", errorf(http.StatusBadRequest, "%s is %d characters; at most %d are allowed", field, n, maxChars)
	}
	return *p, nil
}

func imageError(err error) error {
	var ie *imagefetch.Error
	if errors.As(err, &ie) {
		return &APIError{Status: ie.Status, Code: ie.Code, Message: ie.Message}
	}
	return err
}

func (s *Server) videoMenuModels() []string {
	var out []string
	for _, m := range s.deps.Media.Video.Models {
		out = append(out, m.ID)
	}
	return out
}
