package pricing

import (
	"errors"
	"strings"
	"testing"

	"conduit/internal/config"
	"conduit/internal/mediakind"
	"conduit/internal/money"
)

func generation(t *testing.T) Generation {
	t.Helper()
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVideoCatalog(cfg.Media.Video)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMusicCatalog(cfg.Media.Music)
	if err != nil {
		t.Fatal(err)
	}
	return Generation{Video: v, Speech: speechCatalog(t), Music: m}
}

// Generation nodes cost what the pay-per-call menus charge for the same
// thing; a speech template not yet rendered is priced at its longest text.
func TestGenerationPrices(t *testing.T) {
	g := generation(t)
	for _, c := range []struct {
		req      GenRequest
		withText bool
		want     money.Micros
		model    string
	}{
		{GenRequest{Kind: mediakind.Speech, Text: strings.Repeat("a", 1000)}, true, money.Cents(42), "speech-v3"},
		{GenRequest{Kind: mediakind.Speech, Text: "{{q}}"}, false, money.Cents(126), "speech-v3"},
		{GenRequest{Kind: mediakind.Music, Text: "calm piano"}, true, money.Cents(8), "compose-1"},
		{GenRequest{Kind: mediakind.Music, Seconds: 120, Text: "calm piano"}, true, money.Cents(12), "compose-1"},
		{GenRequest{Kind: mediakind.Video, Text: "a boat"}, true, 420_000, "lumen-h3"},
		{GenRequest{Kind: mediakind.Video, Model: "vista-3.1-lite", Seconds: 8, Text: "a boat"}, true, 900_000, "vista-3.1-lite"},
	} {
		s, err := g.Resolve(c.req, c.withText)
		if err != nil || s.Price != c.want || s.Model != c.model {
			t.Errorf("%+v: %+v %v, want %s by %s", c.req, s, err, c.want, c.model)
		}
	}
}

func TestGenerationRefusalsNameTheField(t *testing.T) {
	g := generation(t)
	for _, c := range []struct {
		req   GenRequest
		field string
		msg   string
	}{
		{GenRequest{Kind: mediakind.Speech, Text: " "}, "text", "the text is empty"},
		{GenRequest{Kind: mediakind.Speech, Text: strings.Repeat("a", 3001)}, "text", "3001 characters; a speech node takes at most 3000"},
		{GenRequest{Kind: mediakind.Speech, Voice: "nobody", Text: "hi"}, "voice", `unknown voice "nobody"`},
		{GenRequest{Kind: mediakind.Speech, Seconds: 5, Text: "hi"}, "seconds", "length follows its text"},
		{GenRequest{Kind: mediakind.Music, Seconds: 45, Text: "x"}, "seconds", "compose-1 (the default) sells 15, 30, 60, 120 seconds, not 45"},
		{GenRequest{Kind: mediakind.Music, Model: "kazoo", Text: "x"}, "model", `unknown music model "kazoo"`},
		{GenRequest{Kind: mediakind.Video, AspectRatio: "4:3", Text: "x"}, "aspectRatio", "16:9 or 9:16"},
		{GenRequest{Kind: mediakind.Video, Seconds: 7, Text: "x"}, "seconds", "sells 5, 10, 15 seconds, not 7"},
	} {
		_, err := g.Resolve(c.req, true)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Msg, c.msg) {
			t.Errorf("%+v: %v, want %s: %s", c.req, err, c.field, c.msg)
		}
	}
}

func TestGenSaleRequest(t *testing.T) {
	speech := GenSale{Kind: mediakind.Speech, Model: "speech-v3", Voice: "aria", Characters: 5}
	if r := speech.Request("héllo"); r != (mediakind.Request{Model: "speech-v3", Voice: "aria", Text: "héllo", Characters: 5}) {
		t.Fatalf("speech %+v", r)
	}
	video := GenSale{Kind: mediakind.Video, Model: "local", Seconds: 5, AspectRatio: "9:16"}
	if r := video.Request("a kite"); r != (mediakind.Request{Model: "local", Prompt: "a kite", Seconds: 5, AspectRatio: "9:16"}) {
		t.Fatalf("video %+v", r)
	}
}
