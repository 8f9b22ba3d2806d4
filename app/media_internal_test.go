package app

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
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

// Every local video model makes the resolution its menu note sells ("768p"
// → 768 lines; a note that names none gets 720p), read back with ffprobe.
func TestLocalVideoMakesTheResolutionItSells(t *testing.T) {
	for _, bin := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is required (the test command installs it): %v", bin, err)
		}
	}
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	out, err := renderers(cfg.Media)
	if err != nil {
		t.Fatal(err)
	}
	sold := regexp.MustCompile(`\b(\d{3,4})p\b`)
	for _, m := range cfg.Media.Video {
		if m.Provider != "local" {
			continue
		}
		want := 720
		if s := sold.FindStringSubmatch(m.Note); s != nil {
			want, _ = strconv.Atoi(s[1])
		}
		dir := t.TempDir()
		res, err := out[m.ID].Render(context.Background(), media.Job{RunID: "res-" + m.ID, Kind: media.KindVideo, Model: m.ID, Prompt: "a lighthouse at dusk", Seconds: 1}, dir, func(string) {})
		if err != nil {
			t.Fatalf("%s: %v", m.ID, err)
		}
		probe, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of", "csv=p=0", res.Path).Output()
		if err != nil {
			t.Fatalf("ffprobe %s: %v", m.ID, err)
		}
		var w, h int
		if _, err := fmt.Sscanf(strings.TrimSpace(string(probe)), "%d,%d", &w, &h); err != nil || h != want || w != (want*16/9+1)&^1 {
			t.Errorf("%s is sold as %dp (%q) and renders %dx%d", m.ID, want, m.Note, w, h)
		}
	}
}
