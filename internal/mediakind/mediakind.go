// Package mediakind says, once, what each kind of rendered media (video,
// speech, music) is: its name, the text it renders from, the request as
// sold, the record fields it adds and the field its file travels in. Pay-
// per-call, the pipeline's generation nodes, the renderers and the menus
// all read these descriptors; what a kind costs, how long it may take and
// how long a caller waits for it is priced from the menus by
// pricing.Generation, keyed by the same names.
//
// The package is pure (standard library only): internal/graph, which runs
// inside workflow code, reads it.
package mediakind

import "unicode/utf8"

// The kinds' names: a generation node's type, a run's kind, a claim
// ticket's scope.
const (
	Video  = "video"
	Speech = "speech"
	Music  = "music"
)

// Kind describes one media kind.
type Kind struct {
	Name string
	// TextField names the text a request renders from: "text" (spoken) or
	// "prompt" (described). A retry may change it.
	TextField string
	// FileField names the record field carrying the finished file's URL.
	FileField string
	// Outputs and FailedStep say whether the record carries them.
	Outputs, FailedStep bool
	// fields adds the kind's own settings to a record.
	fields func(rec map[string]any, r Request)
}

// Kinds are the kinds on sale, in the order menus and messages list them.
var Kinds = []Kind{
	{Name: Speech, TextField: "text", FileField: "audio", fields: func(rec map[string]any, r Request) {
		rec["voice"], rec["characters"] = r.Voice, r.Characters
	}},
	{Name: Music, TextField: "prompt", FileField: "audio", fields: func(rec map[string]any, r Request) {
		rec["seconds"] = r.Seconds
	}},
	{Name: Video, TextField: "prompt", FileField: "video", Outputs: true, FailedStep: true, fields: func(rec map[string]any, r Request) {
		rec["seconds"], rec["aspectRatio"] = r.Seconds, r.AspectRatio
		if r.ImageURL != "" {
			rec["imageUrl"] = r.ImageURL
		}
	}},
}

// Names lists the kinds' names.
func Names() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = k.Name
	}
	return out
}

// Of is the kind named name.
func Of(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Is says whether name is a media kind.
func Is(name string) bool {
	_, ok := Of(name)
	return ok
}

// TextField is the text field of the kind named name ("prompt" for any
// other name: a described render is the default).
func TextField(name string) string {
	if k, ok := Of(name); ok {
		return k.TextField
	}
	return "prompt"
}

// Request is a render as sold (a pay-per-call purchase, its retry, a
// generation node's render). Kinds use the fields that apply to them.
type Request struct {
	Model       string `json:"model"`
	Prompt      string `json:"prompt,omitempty"`
	Seconds     int    `json:"seconds,omitempty"`
	AspectRatio string `json:"aspectRatio,omitempty"`
	ImageURL    string `json:"imageUrl,omitempty"`
	// ImageKey is the fetched image in the blob store.
	ImageKey string `json:"imageKey,omitempty"`
	Voice    string `json:"voice,omitempty"`
	Text     string `json:"text,omitempty"`
	// Characters is what a speech run is priced by.
	Characters int `json:"characters,omitempty"`
}

// Characters is how a text is counted, limited and priced: its Unicode
// characters as sent (speech directions included: they are read, if not
// spoken).
func Characters(text string) int { return utf8.RuneCountInString(text) }

// SetText puts t in the request's text field (with its character count
// when the kind speaks it).
func (k Kind) SetText(r *Request, t string) {
	if k.TextField == "text" {
		r.Text, r.Characters = t, Characters(t)
		return
	}
	r.Prompt = t
}

// Fields adds the kind's own settings to a run record.
func (k Kind) Fields(rec map[string]any, r Request) {
	if k.fields != nil {
		k.fields(rec, r)
	}
}
