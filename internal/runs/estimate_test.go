package runs

import (
	"strings"
	"testing"

	"conduit/internal/config"
	"conduit/internal/graph"
	"conduit/internal/library"
	"conduit/internal/models"
	"conduit/internal/money"
	"conduit/internal/pricing"
)

func testService(t *testing.T) *Service {
	t.Helper()
	cat, err := models.NewCatalog(config.Models{Catalog: []config.ModelEntry{
		{ID: "cheap", Provider: "local", PromptPer1KUSD: "1", CompletionPer1KUSD: "2", ContextTokens: 100},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return &Service{Catalog: cat}
}

// The estimate renders the prompts as a run would and prices their real
// tokens (the minimum); the maximum is the hold. A downstream model's
// prompt counts its upstream model's answer as empty.
func TestEstimateRendersPromptsAndBoundsByTheHold(t *testing.T) {
	s := testService(t)
	g, err := graph.Parse([]byte(`{"nodes":[
		{"id":"q","type":"input","key":"q"},
		{"id":"p","type":"prompt","template":"Say: {{q}}"},
		{"id":"shout","type":"prompt","transform":"upper","source":"p"},
		{"id":"m1","type":"model","model":"cheap","system":"Be brief.","prompt":"{{shout}}","maxTokens":10},
		{"id":"m2","type":"model","model":"cheap","prompt":"{{m1}}","maxTokens":20},
		{"id":"out","type":"output","key":"a","from":"m2"}],
		"edges":[{"from":"q","to":"p"},{"from":"p","to":"shout"},{"from":"shout","to":"m1"},{"from":"m1","to":"m2"},{"from":"m2","to":"out"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	est, err := s.Estimate(g, map[string]string{"q": "hello world"})
	if err != nil {
		t.Fatal(err)
	}
	if len(est.Nodes) != 2 {
		t.Fatalf("nodes %+v", est.Nodes)
	}
	m1, m2 := est.Nodes[0], est.Nodes[1]
	wantTokens := models.CountTokens("Be brief.") + models.CountTokens("SAY: HELLO WORLD")
	if m1.ID != "m1" || m1.PromptTokens != wantTokens || m1.MaxTokens != 10 {
		t.Fatalf("m1 %+v, want %d prompt tokens", m1, wantTokens)
	}
	if m2.PromptTokens != 0 || m2.MinUSD != 0 {
		t.Fatalf("m2 counts its upstream answer as empty: %+v", m2)
	}
	// 1 USD per 1k prompt tokens: 1,000 micro-USD per token.
	if m1.MinUSD != money.Micros(1000*wantTokens) || est.MinUSD != m1.MinUSD {
		t.Fatalf("min %s (m1 %s)", est.MinUSD, m1.MinUSD)
	}
	if est.MaxUSD != s.HoldFor(g) || est.MaxUSD != m1.MaxUSD+m2.MaxUSD || est.MaxUSD <= est.MinUSD {
		t.Fatalf("max %s, hold %s", est.MaxUSD, s.HoldFor(g))
	}
	// A prompt longer than the context window is priced at the window.
	long, _ := s.Estimate(g, map[string]string{"q": strings.Repeat("word ", 500)})
	if long.Nodes[0].PromptTokens != 100 {
		t.Fatalf("capped at the context window: %+v", long.Nodes[0])
	}
}

// Generation nodes are priced from the media menus: the estimate's
// minimum pays each for the text it renders, the maximum (the hold) a
// speech template at its longest text.
func TestEstimatePricesGenerationNodes(t *testing.T) {
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := pricing.NewVideoCatalog(cfg.Media.Video)
	sp, _ := pricing.NewSpeechCatalog(cfg.Media.Speech)
	mu, _ := pricing.NewMusicCatalog(cfg.Media.Music)
	s := testService(t)
	s.Library = &library.Service{Generation: pricing.Generation{Video: v, Speech: sp, Music: mu}}
	g, err := graph.Parse([]byte(`{"nodes":[
		{"id":"q","type":"input","key":"q"},
		{"id":"say","type":"speech","text":"{{q}}"},
		{"id":"bed","type":"music","prompt":"calm","seconds":60},
		{"id":"out","type":"output","key":"a","from":"say"}],
		"edges":[{"from":"q","to":"say"},{"from":"say","to":"out"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	est, err := s.Estimate(g, map[string]string{"q": strings.Repeat("a", 1000)})
	if err != nil {
		t.Fatal(err)
	}
	if est.MinUSD != money.Cents(42)+money.Cents(10) || est.MaxUSD != money.Cents(126)+money.Cents(10) || est.MaxUSD != s.HoldFor(g) {
		t.Fatalf("%+v", est)
	}
	// Without the media library a graph with generation nodes cannot run.
	s.Library = nil
	if _, _, err := s.Start(t.Context(), "acct", &Target{Graph: g}, Request{}); err == nil || !strings.Contains(err.Error(), "generation nodes") {
		t.Fatalf("%v", err)
	}
}
