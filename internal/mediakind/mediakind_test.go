package mediakind

import "testing"

func TestDescriptors(t *testing.T) {
	if got := Names(); len(got) != 3 || got[0] != Speech || got[1] != Music || got[2] != Video {
		t.Fatalf("names %v", got)
	}
	for _, k := range Kinds {
		if !Is(k.Name) || TextField(k.Name) != k.TextField || k.FileField == "" {
			t.Fatalf("%+v", k)
		}
	}
	if Is("prompt") || TextField("model") != "prompt" {
		t.Fatal("a node type that is no media kind")
	}
	var r Request
	speech, _ := Of(Speech)
	speech.SetText(&r, "héllo")
	if r.Text != "héllo" || r.Characters != 5 || r.Prompt != "" {
		t.Fatalf("%+v", r)
	}
	music, _ := Of(Music)
	music.SetText(&r, "calm piano")
	if r.Prompt != "calm piano" {
		t.Fatalf("%+v", r)
	}
	rec := map[string]any{}
	video, _ := Of(Video)
	video.Fields(rec, Request{Seconds: 5, AspectRatio: "9:16"})
	if rec["seconds"] != 5 || rec["aspectRatio"] != "9:16" || rec["imageUrl"] != nil {
		t.Fatalf("%v", rec)
	}
}
