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
		name: "video", path: VideoPath, fileField: "video",
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

// getVideo: GET /api/x402/video — the menu without a query, else the run
// its claim ticket opens.
func (s *Server) getVideo(c *gin.Context) {
	if !s.payPerCallReady(c) {
		return
	}
	if len(c.Request.URL.Query()) == 0 {
		c.JSON(http.StatusOK, s.deps.Media.Video.Menu(s.url(VideoPath), s.url("/api/x402/purchases")))
		return
	}
	s.pollMediaRun(c, s.videoKind())
}

// postVideo: POST /api/x402/video (spec §4.6). Everything that can refuse
// the request — fields, model, length, the image — is checked before the
// payment is even looked at.
func (s *Server) postVideo(c *gin.Context) {
	if !s.payPerCallReady(c) {
		return
	}
	var body videoRequest
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	o, err := s.videoOrder(c, body)
	if err != nil {
		fail(c, err)
		return
	}
	s.sell(c, o)
}

func (s *Server) videoOrder(c *gin.Context, b videoRequest) (order, error) {
	prompt, err := checkPrompt(b.Prompt, true)
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
		m, _ := s.deps.Media.Video.Model(model)
		return order{}, errorf(http.StatusBadRequest, "model %s sells %v seconds, not %d", model, lengths(m), seconds)
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

// checkPrompt applies the prompt rules (1 to 2000 characters).
func checkPrompt(p *string, required bool) (string, error) {
	if p == nil {
		if required {
			return "", errorf(http.StatusBadRequest, "prompt is required")
		}
		return "", nil
	}
	n := utf8.RuneCountInString(*p)
	switch {
	case strings.TrimSpace(*p) == "":
		return "", errorf(http.StatusBadRequest, "prompt must not be empty")
	case n > pricing.MaxPromptChars:
		return "", errorf(http.StatusBadRequest, "prompt is %d characters; at most %d are allowed", n, pricing.MaxPromptChars)
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

func lengths(m pricing.VideoModel) []int {
	var out []int
	for _, p := range m.Prices {
		out = append(out, p.Seconds)
	}
	return out
}

func (s *Server) videoMenuModels() []string {
	var out []string
	for _, m := range s.deps.Media.Video.Models {
		out = append(out, m.ID)
	}
	return out
}

// videoRetryRequest is the optional body of a video retry.
type videoRetryRequest struct {
	Prompt *string `json:"prompt"`
	Async  *bool   `json:"async"`
}

// retryVideo: POST /api/x402/video/retry?runId=&token= (spec §4.8).
func (s *Server) retryVideo(c *gin.Context) {
	if !s.payPerCallReady(c) {
		return
	}
	var body videoRetryRequest
	if c.Request.ContentLength != 0 {
		if err := decodeJSON(c, &body); err != nil {
			fail(c, err)
			return
		}
	}
	if _, err := checkPrompt(body.Prompt, false); err != nil {
		fail(c, err)
		return
	}
	s.retryMediaRun(c, s.videoKind(), func(r *store.MediaRequest) bool {
		if body.Prompt != nil {
			r.Prompt = *body.Prompt
		}
		return true
	}, body.Async != nil && *body.Async)
}
