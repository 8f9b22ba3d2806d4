package library

import (
	"errors"
	"strings"
	"time"

	"conduit/internal/errs"
	"conduit/internal/graph"
	"conduit/internal/money"
	"conduit/internal/pricing"
	"conduit/workflows"
)

// request is a generation node's settings as the menus read them; the
// text is the node's template, judged only when it is fixed text.
func request(n *graph.Node) (pricing.GenRequest, bool) {
	_, t := n.TextTemplate()
	refs, err := graph.TemplateRefs(t)
	fixed := err == nil && len(refs) == 0
	return pricing.GenRequest{Kind: n.Type, Model: n.Model, Voice: n.Voice, Seconds: n.Seconds, AspectRatio: n.AspectRatio, Text: t}, fixed && t != ""
}

// CheckNode is the graph.GenerationCheck of this deployment: a
// generation node's model, voice, length and aspect ratio must be on the
// menus, and a fixed text within its kind's limit; without the media
// library nothing can be generated at all.
func (s *Service) CheckNode(n *graph.Node) []graph.Problem {
	if s.ready() != nil {
		return []graph.Problem{{NodeID: n.ID, Field: "type", Message: "media generation is not available on this deployment (media.secret is not set)"}}
	}
	req, fixed := request(n)
	_, err := s.Generation.Resolve(req, fixed)
	var fe *pricing.FieldError
	if errors.As(err, &fe) {
		return []graph.Problem{{NodeID: n.ID, Field: fe.Field, Message: fe.Msg}}
	}
	return nil
}

// Plan is what a run of g needs for its generation nodes: the most they
// can cost together (held with the run: a speech template is priced at
// the longest text it may render to) and their render bounds (the menus'
// deadline and twice as long again to collect, as for a purchase).
func (s *Service) Plan(g *graph.Graph) (money.Micros, workflows.GenerationBounds) {
	var hold money.Micros
	var b workflows.GenerationBounds
	if s.ready() != nil {
		return 0, b
	}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if !graph.IsGeneration(n.Type) {
			continue
		}
		req, fixed := request(n)
		sale, err := s.Generation.Resolve(req, fixed)
		if err != nil {
			continue // the node fails when it runs, saying why; it costs nothing
		}
		hold += sale.Price
		if b.Timeouts == nil {
			b.Timeouts = map[string]time.Duration{}
		}
		b.Timeouts[n.ID] = 3 * s.Generation.Deadline(sale.Kind, sale.Model, sale.Seconds)
	}
	b.Heartbeat = s.HeartbeatTimeout
	return hold, b
}

// Runnable refuses a run of a graph with generation nodes on a deployment
// without the media library (published before it was turned off).
func (s *Service) Runnable(g *graph.Graph) error {
	if s.ready() == nil {
		return nil
	}
	for _, n := range g.Nodes {
		if graph.IsGeneration(n.Type) {
			return &errs.Error{Kind: errs.Unavailable, Msg: "this pipeline has generation nodes (" + n.ID + ") and media generation is not available on this deployment"}
		}
	}
	return nil
}

// Price is what a generation node costs rendering text (an empty text, one
// not known before the run, at the least its kind can cost), false when
// the menus would refuse it.
func (s *Service) Price(n *graph.Node, text string) (money.Micros, bool) {
	if s.ready() != nil {
		return 0, false
	}
	req, _ := request(n)
	req.Text = text
	if strings.TrimSpace(text) == "" {
		req.Text = "."
	}
	sale, err := s.Generation.Resolve(req, true)
	return sale.Price, err == nil
}
