package paycall

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"conduit/internal/blob"
	"conduit/internal/errs"
	"conduit/internal/imagefetch"
	"conduit/internal/mediakind"
	"conduit/internal/money"
	"conduit/internal/store"
	"conduit/internal/ticket"
)

func testService(t *testing.T) *Service {
	t.Helper()
	tickets, err := ticket.New([]byte("0123456789abcdef0123456789abcdef"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	files, err := blob.NewSigner([]byte("files/0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return New(Service{BaseURL: "https://conduit.example", Media: Media{Tickets: tickets, Files: files}})
}

// Every kind on sale has its endpoint under /api/x402/ and a reader for
// its request.
func TestKindsHaveTheirEndpoints(t *testing.T) {
	s := testService(t)
	want := map[string]string{mediakind.Video: VideoPath, mediakind.Speech: SpeechPath, mediakind.Music: MusicPath}
	kinds := s.Kinds()
	if len(kinds) != len(want) {
		t.Fatalf("%d kinds, want %d", len(kinds), len(want))
	}
	for _, k := range kinds {
		if k.Path != want[k.Name] || k.order == nil {
			t.Fatalf("kind %s: path %q (want %q), order set %v", k.Name, k.Path, want[k.Name], k.order != nil)
		}
	}
}

// The request hash names what the buyer chose: a fetched image's key and
// a derived character count do not make a request different, any chosen
// field and the kind do.
func TestRequestHashIsWhatTheBuyerChose(t *testing.T) {
	r := mediakind.Request{Model: "speech-v3", Voice: "aria", Text: "hello"}
	h := requestHash(mediakind.Speech, r)
	derived := r
	derived.Characters, derived.ImageKey = 5, "images/abc.png"
	if requestHash(mediakind.Speech, derived) != h {
		t.Fatal("derived fields changed the hash")
	}
	other := r
	other.Voice = "basil"
	if requestHash(mediakind.Speech, other) == h || requestHash(mediakind.Music, r) == h {
		t.Fatal("a chosen field or the kind did not change the hash")
	}
}

// Each reason a run cannot be retried is a typed refusal with the fields
// the spec puts beside it.
func TestRetryRefusals(t *testing.T) {
	s := testService(t)
	k := s.kind(mediakind.Video)
	cases := []struct {
		refusal store.RetryRefusal
		kind    errs.Kind
		msg     string
		extra   []string
	}{
		{store.RetryRefusal{Why: store.RetryInsufficient, Balance: 10, Price: money.USD}, errs.PaymentRequired, "no longer covers", []string{"balanceUsd", "priceUsd", "payUrl"}},
		{store.RetryRefusal{Why: store.RetryRetried, RetriedBy: "2026-11-22T10:00:00.000Z#1a2b3c4d"}, errs.Conflict, "already retried", []string{"retriedBy"}},
		{store.RetryRefusal{Why: store.RetrySucceeded}, errs.Conflict, "succeeded", nil},
		{store.RetryRefusal{Why: store.RetryCollecting}, errs.Conflict, "still being collected", nil},
		{store.RetryRefusal{Why: store.RetryRendering}, errs.Conflict, "still rendering", nil},
	}
	for _, tc := range cases {
		e, ok := errs.As(s.retryRefused(k, &tc.refusal))
		if !ok || e.Kind != tc.kind || !strings.Contains(e.Msg, tc.msg) {
			t.Fatalf("%s: %#v", tc.refusal.Why, e)
		}
		for _, f := range tc.extra {
			if _, ok := e.Extra[f]; !ok {
				t.Fatalf("%s: no %s in %v", tc.refusal.Why, f, e.Extra)
			}
		}
	}
	e, _ := errs.As(s.retryRefused(k, &store.RetryRefusal{Why: store.RetryRetried, RetriedBy: "r#2"}))
	by := e.Extra["retriedBy"].(map[string]any)
	if u, _ := url.Parse(by["statusUrl"].(string)); u.Path != VideoPath || u.Query().Get("runId") != "r#2" || u.Query().Get("token") == "" {
		t.Fatalf("retriedBy: %v", by)
	}
	if e, _ := errs.As(s.retryRefused(k, &store.RetryRefusal{Why: store.RetryInsufficient})); e.Extra["payUrl"] != "https://conduit.example/api/billing/credits/x402" {
		t.Fatalf("payUrl: %v", e.Extra["payUrl"])
	}
}

// A run a retry cannot open is refused before any workflow starts.
func TestRetryBlockedBeforeStarting(t *testing.T) {
	for _, tc := range []struct {
		run  store.MediaRun
		want store.RetryWhy
	}{
		{store.MediaRun{Status: "error", RetriedBy: "x#1"}, store.RetryRetried},
		{store.MediaRun{Status: "success"}, store.RetrySucceeded},
		{store.MediaRun{Status: "running", Note: "late"}, store.RetryCollecting},
		{store.MediaRun{Status: "running"}, store.RetryRendering},
		{store.MediaRun{Status: "error"}, ""},
		{store.MediaRun{Status: "partial"}, ""},
	} {
		if got := store.RetryBlocked(tc.run); got != tc.want {
			t.Fatalf("%+v: %q, want %q", tc.run, got, tc.want)
		}
	}
}

func TestCheckText(t *testing.T) {
	p := func(s string) *string { return &s }
	for _, tc := range []struct {
		text     *string
		required bool
		msg      string
	}{
		{nil, true, "prompt is required"},
		{nil, false, ""},
		{p("  "), false, "must not be empty"},
		{p("ééééé"), true, ""},
		{p("éééééé"), true, "6 characters; at most 5"},
	} {
		_, err := checkText("prompt", tc.text, tc.required, 5)
		if tc.msg == "" && err != nil || tc.msg != "" && (err == nil || !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), tc.msg)) {
			t.Fatalf("%v %v: %v, want %q", tc.text, tc.required, err, tc.msg)
		}
	}
}

// An image refusal keeps its spec code; one too large is 413.
func TestImageErrors(t *testing.T) {
	e, _ := errs.As(imageError(&imagefetch.Error{Code: "IMAGE_TOO_LARGE", Status: 413, Message: "too large"}))
	if e.Kind != errs.TooLarge || e.Code != "IMAGE_TOO_LARGE" {
		t.Fatalf("%#v", e)
	}
	e, _ = errs.As(imageError(&imagefetch.Error{Code: "IMAGE_URL_BLOCKED", Status: 400, Message: "blocked"}))
	if e.Kind != errs.Invalid || e.Code != "IMAGE_URL_BLOCKED" {
		t.Fatalf("%#v", e)
	}
	plain := errors.New("boom")
	if imageError(plain) != plain {
		t.Fatal("a non-image error changed")
	}
}

// The record carries the kind's own fields and its file in the kind's
// field; a failed run offers its retry, a retried one names its retry.
func TestRecord(t *testing.T) {
	s := testService(t)
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	done := at.Add(3 * time.Second)
	run := store.MediaRun{RunID: "2026-11-22T10:00:00.000Z#1a2b3c4d", Kind: mediakind.Video, Status: "success", FileKey: "videos/x.mp4",
		Request: mediakind.Request{Model: "lumen-h3", Seconds: 5, AspectRatio: "16:9"}, StartedAt: at, FinishedAt: &done}
	rec := s.record(s.kind(mediakind.Video), run)
	want := FileURL(s.BaseURL, s.Media.Files, "videos/x.mp4")
	if rec["video"] != want || rec["outputs"].(map[string]any)["video"] != want || rec["seconds"] != 5 || rec["durationMs"] != int64(3000) {
		t.Fatalf("%v", rec)
	}
	speech := store.MediaRun{RunID: "r#1", Kind: mediakind.Speech, Status: "error", Request: mediakind.Request{Voice: "aria", Characters: 12}, StartedAt: at}
	rec = s.record(s.kind(mediakind.Speech), speech)
	if rec["voice"] != "aria" || rec["characters"] != 12 || rec["retryable"] != true || !strings.Contains(rec["retryUrl"].(string), SpeechPath+"/retry?") || rec["failedStep"] != nil {
		t.Fatalf("%v", rec)
	}
	speech.RetriedBy = "r#2"
	if rec = s.record(s.kind(mediakind.Speech), speech); rec["retryable"] != false || rec["retriedByRunId"] != "r#2" || rec["retryUrl"] != nil {
		t.Fatalf("%v", rec)
	}
}

// Without the signing secret no ticket can be checked: 503, whatever the
// ticket.
func TestClaimWithoutSecret(t *testing.T) {
	s := New(Service{})
	if _, err := s.Claim(context.Background(), mediakind.Speech, "r#1", "t"); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("%v", err)
	}
	s = testService(t)
	for _, tc := range []struct {
		runID, token string
		kind         errs.Kind
	}{
		{"2026-11-22T10:00:00.000Z", "t", errs.NotFound}, // the '#' was sent raw
		{"r#1", "", errs.Invalid},
		{"r#1", "forged", errs.Forbidden},
	} {
		if _, err := s.Claim(context.Background(), mediakind.Speech, tc.runID, tc.token); !errs.Is(err, tc.kind) {
			t.Fatalf("%s %s: %v", tc.runID, tc.token, err)
		}
	}
}
