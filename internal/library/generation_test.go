package library

import (
	"errors"
	"strings"
	"testing"
	"time"

	"conduit/internal/config"
	"conduit/internal/graph"
	"conduit/internal/money"
	"conduit/internal/pricing"
)

func service(t *testing.T) *Service {
	t.Helper()
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	v, err := pricing.NewVideoCatalog(cfg.Media.Video)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := pricing.NewSpeechCatalog(cfg.Media.Speech)
	if err != nil {
		t.Fatal(err)
	}
	mu, err := pricing.NewMusicCatalog(cfg.Media.Music)
	if err != nil {
		t.Fatal(err)
	}
	return &Service{Generation: pricing.Generation{Video: v, Speech: sp, Music: mu}, HeartbeatTimeout: 30 * time.Second}
}

func parseGraph(t *testing.T, s string) *graph.Graph {
	t.Helper()
	g, err := graph.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

const nodes = `{"nodes":[{"id":"q","type":"input","key":"q"},
	{"id":"say","type":"speech","text":"{{q}}"},
	{"id":"fixed","type":"speech","text":"Hello there."},
	{"id":"bed","type":"music","prompt":"calm","seconds":60},
	{"id":"clip","type":"video","prompt":"{{q}}","model":"vista-3.1-lite","seconds":8},
	{"id":"o","type":"output","key":"o","from":"say"}],
	"edges":[{"from":"q","to":"say"},{"from":"q","to":"clip"},{"from":"say","to":"o"}]}`

// A run holds each generation node's worst case: a speech template at the
// longest text it may say, fixed text at its own price, music and video
// at the menu price of their length; each render is bounded by three
// times the menu's deadline.
func TestPlanHoldsTheWorstCase(t *testing.T) {
	s := service(t)
	hold, b := s.Plan(parseGraph(t, nodes))
	want := money.Cents(126) + money.Cents(2) + money.Cents(10) + money.Cents(90)
	if hold != want {
		t.Fatalf("hold %s, want %s", hold, want)
	}
	if b.Timeouts["say"] != 3*90*time.Second || b.Timeouts["bed"] != 3*90*time.Second || b.Timeouts["clip"] != 3*2*120*time.Second || b.Heartbeat != 30*time.Second {
		t.Fatalf("bounds %+v", b)
	}
	if s.Runnable(parseGraph(t, nodes)) != nil {
		t.Fatal("refused on a deployment with media")
	}
}

func TestCheckNodeNamesTheField(t *testing.T) {
	s := service(t)
	g := parseGraph(t, `{"nodes":[{"id":"a","type":"speech","text":"`+strings.Repeat("x", 3001)+`"},
		{"id":"b","type":"video","prompt":"x","model":"wave-2.7","seconds":15}]}`)
	err := g.Validate(nil, s.CheckNode)
	var ve *graph.ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 2 ||
		ve.Problems[0].Field != "text" || !strings.Contains(ve.Problems[0].Message, "3001 characters") ||
		ve.Problems[1].Field != "seconds" || !strings.Contains(ve.Problems[1].Message, "model wave-2.7 sells 5, 10 seconds, not 15") {
		t.Fatalf("%v", err)
	}
}

// Without the library (no media.secret) nothing can be generated: drafts
// say so, runs are refused, nothing is held.
func TestWithoutTheLibrary(t *testing.T) {
	var off *Service
	g := parseGraph(t, nodes)
	if p := off.CheckNode(&g.Nodes[1]); len(p) != 1 || !strings.Contains(p[0].Message, "not available") {
		t.Fatalf("%v", p)
	}
	if hold, _ := off.Plan(g); hold != 0 {
		t.Fatalf("hold %s", hold)
	}
	if err := off.Runnable(g); err == nil || !strings.Contains(err.Error(), "generation nodes (say)") {
		t.Fatalf("%v", err)
	}
	if err := off.Runnable(parseGraph(t, `{"nodes":[{"id":"q","type":"input","key":"q"}]}`)); err != nil {
		t.Fatalf("a graph without generation nodes was refused: %v", err)
	}
}
