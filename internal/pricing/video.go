package pricing

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"conduit/internal/config"
	"conduit/internal/money"
)

// Wait bounds (spec §4.6.2 rule 4 and §8).
const (
	MinWait = 45 * time.Second
	MaxWait = 720 * time.Second
)

// VideoModel is one model on sale with its prices.
type VideoModel struct {
	ID, Label, Note string
	Default         bool
	FirstFrame      bool
	// Prices by length, shortest first.
	Prices   []LengthPrice
	wait     time.Duration
	deadline time.Duration
}

// LengthPrice is one length on sale.
type LengthPrice struct {
	Seconds int
	Price   money.Micros
}

// Price is the model's price for a length, false when not on sale.
func (m VideoModel) Price(seconds int) (money.Micros, bool) {
	for _, p := range m.Prices {
		if p.Seconds == seconds {
			return p.Price, true
		}
	}
	return 0, false
}

// Shortest is the model's shortest length (its default).
func (m VideoModel) Shortest() int { return m.Prices[0].Seconds }

// Wait is how long a paid call waits by default for a clip of this length:
// the configured wait scaled by length, within 45 s and 720 s.
func (m VideoModel) Wait(seconds int) time.Duration {
	return min(max(m.scaled(m.wait, seconds), MinWait), MaxWait)
}

// Deadline is when a render of this length counts as late.
func (m VideoModel) Deadline(seconds int) time.Duration { return m.scaled(m.deadline, seconds) }

func (m VideoModel) scaled(d time.Duration, seconds int) time.Duration {
	return d * time.Duration(seconds) / time.Duration(m.Shortest())
}

// VideoCatalog is the video menu.
type VideoCatalog struct {
	Models []VideoModel
}

// NewVideoCatalog reads the configured (already validated) models.
func NewVideoCatalog(cfg []config.VideoModel) (*VideoCatalog, error) {
	c := &VideoCatalog{}
	for _, v := range cfg {
		m := VideoModel{ID: v.ID, Label: v.Label, Note: v.Note, Default: v.Default, FirstFrame: v.FirstFrame, wait: v.Wait, deadline: v.Deadline}
		for _, p := range v.Prices {
			usd, err := money.ParseUSD(p.USD)
			if err != nil {
				return nil, fmt.Errorf("video model %s: %w", v.ID, err)
			}
			m.Prices = append(m.Prices, LengthPrice{Seconds: p.Seconds, Price: usd})
		}
		if len(m.Prices) == 0 {
			return nil, fmt.Errorf("video model %s lists no lengths", v.ID)
		}
		slices.SortFunc(m.Prices, func(a, b LengthPrice) int { return a.Seconds - b.Seconds })
		c.Models = append(c.Models, m)
	}
	return c, nil
}

// Model finds a model by id.
func (c *VideoCatalog) Model(id string) (VideoModel, bool) {
	for _, m := range c.Models {
		if m.ID == id {
			return m, true
		}
	}
	return VideoModel{}, false
}

// Errors of Resolve; each is a 400 before payment.
var (
	ErrUnknownModel  = errors.New("unknown model")
	ErrLength        = errors.New("length not on sale")
	ErrModelNoImage  = errors.New("model takes no image")
	ErrNoImageModels = errors.New("no model takes an image at this length")
)

// LengthError is ErrLength saying what the model does sell. Default says
// why the model was picked when the request named none ("" when it did).
type LengthError struct {
	Model   string
	Default string
	Lengths []int
	Seconds int
}

func (e *LengthError) Error() string {
	name := "model " + e.Model
	if e.Default != "" {
		name = e.Model + " (" + e.Default + ")"
	}
	sold := make([]string, len(e.Lengths))
	for i, n := range e.Lengths {
		sold[i] = strconv.Itoa(n)
	}
	return fmt.Sprintf("%s sells %s seconds, not %d", name, strings.Join(sold, ", "), e.Seconds)
}

func (e *LengthError) Unwrap() error { return ErrLength }

// lengthError is the LengthError for a model selling prices asked for
// seconds.
func lengthError(model string, prices []LengthPrice, why string, seconds int) error {
	e := &LengthError{Model: model, Default: why, Seconds: seconds}
	for _, p := range prices {
		e.Lengths = append(e.Lengths, p.Seconds)
	}
	return e
}

// Sale is a resolved video request: the model, length and price sold.
type Sale struct {
	Model   VideoModel
	Seconds int
	Price   money.Micros
}

// Resolve applies the default-model rules of spec §4.6.1: without a model,
// the default model when there is no image, else the cheapest model that
// takes an image at the requested length (at its shortest length when no
// length is asked); without a length, the model's shortest.
func (c *VideoCatalog) Resolve(model string, seconds int, withImage bool) (Sale, error) {
	var m VideoModel
	why := ""
	switch {
	case model != "":
		var ok bool
		if m, ok = c.Model(model); !ok {
			return Sale{}, ErrUnknownModel
		}
		if withImage && !m.FirstFrame {
			return Sale{}, ErrModelNoImage
		}
	case !withImage:
		for _, cand := range c.Models {
			if cand.Default {
				m = cand
			}
		}
		why = "the default without image_url"
	default:
		var best *Sale
		for _, cand := range c.Models {
			if !cand.FirstFrame {
				continue
			}
			s := seconds
			if s == 0 {
				s = cand.Shortest()
			}
			if p, ok := cand.Price(s); ok && (best == nil || p < best.Price) {
				best = &Sale{Model: cand, Seconds: s, Price: p}
			}
		}
		if best == nil {
			return Sale{}, ErrNoImageModels
		}
		return *best, nil
	}
	if seconds == 0 {
		seconds = m.Shortest()
	}
	p, ok := m.Price(seconds)
	if !ok {
		return Sale{}, lengthError(m.ID, m.Prices, why, seconds)
	}
	return Sale{Model: m, Seconds: seconds, Price: p}, nil
}

// Lengths lists every length some model sells, ascending.
func (c *VideoCatalog) Lengths() []int {
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
