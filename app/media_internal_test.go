package app

import (
	"strings"
	"testing"

	"conduit/internal/config"
	"conduit/internal/media"
)

// Every model of every media kind gets its kind's local or hosted
// renderer, sharing the models' content filters and upstream ids.
func TestMediaRenderers(t *testing.T) {
	cfg := config.Media{
		FFmpeg: "ffmpeg",
		Video:  []config.VideoModel{{ID: "v-local", Refuse: []string{"kite"}}, {ID: "v-queue", Provider: "queue", Upstream: "up/v"}},
		Speech: config.Speech{
			Models: []config.AudioModel{{ID: "s-local"}, {ID: "s-hosted", Provider: "hosted", Upstream: "up/s"}},
			Voices: []config.Voice{{ID: "aria", Upstream: "up-aria"}},
		},
		Music: config.Music{Models: []config.AudioModel{{ID: "m-local"}, {ID: "m-hosted", Provider: "hosted"}}},
	}
	out, err := renderers(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 6 {
		t.Fatalf("%d renderers", len(out))
	}
	lv, ok := out["v-local"].(*media.LocalVideo)
	if !ok || lv.Filters["v-local"] == nil || lv.Filters["s-hosted"] == nil {
		t.Fatalf("v-local %T", out["v-local"])
	}
	if q, ok := out["v-queue"].(*media.QueueVideo); !ok || q.Models["v-queue"] != "up/v" {
		t.Fatalf("v-queue %T", out["v-queue"])
	}
	if s, ok := out["s-local"].(*media.LocalSpeech); !ok || s.Voices["aria"].ID != "aria" {
		t.Fatalf("s-local %T", out["s-local"])
	}
	if h, ok := out["s-hosted"].(*media.HostedSpeech); !ok || h.Voices["aria"] != "up-aria" || h.Models["s-hosted"] != "up/s" {
		t.Fatalf("s-hosted %T", out["s-hosted"])
	}
	if _, ok := out["m-local"].(*media.LocalMusic); !ok {
		t.Fatalf("m-local %T", out["m-local"])
	}
	if _, ok := out["m-hosted"].(*media.HostedMusic); !ok {
		t.Fatalf("m-hosted %T", out["m-hosted"])
	}

	cfg.Music.Models[0].Refuse = []string{"("}
	if _, err := renderers(cfg); err == nil || !strings.HasPrefix(err.Error(), "media model m-local: ") {
		t.Fatalf("a broken filter: %v", err)
	}
}
