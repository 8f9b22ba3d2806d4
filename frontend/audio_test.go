package frontend_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"conduit/frontend"
	"conduit/internal/audiotest"
	"conduit/internal/money"
)

// audio is a downloaded MP3 as ffprobe and ffmpeg read it.
type audio struct {
	codec    string
	duration float64
	// pcm is the decoded mono signal at pcmRate.
	pcm []float32
}

const pcmRate = 11025

// fetchAudio downloads a file URL as given and decodes it.
func fetchAudio(t *testing.T, fileURL string) audio {
	t.Helper()
	r := get(t, fileURL)
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "audio/mpeg" {
		t.Fatalf("downloading %s: %d %s", fileURL, r.Status, r.Header.Get("Content-Type"))
	}
	path := filepath.Join(t.TempDir(), "a.mp3")
	if err := os.WriteFile(path, r.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var p struct {
		Streams []struct {
			CodecName string `json:"codec_name"`
		} `json:"streams"`
		Format struct {
			Duration string `json:"duration"`
		} `json:"format"`
	}
	if err := json.Unmarshal(out, &p); err != nil || len(p.Streams) != 1 {
		t.Fatalf("ffprobe: %v %s", err, out)
	}
	a := audio{codec: p.Streams[0].CodecName}
	a.duration, _ = strconv.ParseFloat(p.Format.Duration, 64)
	raw, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-ac", "1", "-ar", strconv.Itoa(pcmRate), "-f", "f32le", "-").Output()
	if err != nil {
		t.Fatalf("decoding: %v", err)
	}
	a.pcm = make([]float32, len(raw)/4)
	for i := range a.pcm {
		a.pcm[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return a
}

// bpm is the tempo a listener would tap to the audio's kick drum.
func bpm(pcm []float32) float64 {
	if p := audiotest.BeatPeriod(pcm, pcmRate); p > 0 {
		return 60 / p
	}
	return 0
}

func rms(pcm []float32) float64 {
	s := 0.0
	for _, v := range pcm {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(max(len(pcm), 1)))
}

func TestSpeechMenu(t *testing.T) {
	m := wantStatus(t, env.Do(t, "GET", frontend.SpeechPath, nil), http.StatusOK)
	voices, models := m["voices"].([]any), m["models"].([]any)
	defaults, premium := 0, 0
	for _, v := range voices {
		v := v.(map[string]any)
		if v["default"] == true {
			defaults++
		}
		if v["priceMultiplier"] != nil {
			premium++
		}
		if v["id"] == "" || v["description"] == "" {
			t.Fatalf("voice %v", v)
		}
	}
	first := models[0].(map[string]any)
	if m["service"] != "Pay-per-speech" || len(voices) <= 30 || defaults != 1 || premium == 0 || len(models) != 2 ||
		first["id"] != "speech-v3" || first["default"] != true || m["limits"].(map[string]any)["maxTextChars"].(float64) != 3000 ||
		!strings.Contains(m["pricing"].(string), "0.42") || m["fields"].(map[string]any)["voice"] == nil || m["offers"] != nil {
		t.Fatalf("%v", m)
	}
}

// speechVoices reads the menu's voices: the default and a premium one.
func speechVoices(t *testing.T) (def, premium string, multiplier float64) {
	t.Helper()
	m := wantStatus(t, env.Do(t, "GET", frontend.SpeechPath, nil), http.StatusOK)
	for _, v := range m["voices"].([]any) {
		v := v.(map[string]any)
		if v["default"] == true {
			def = v["id"].(string)
		}
		if f, ok := v["priceMultiplier"].(float64); ok && premium == "" {
			premium, multiplier = v["id"].(string), f
		}
	}
	return def, premium, multiplier
}

func TestSpeechChallengeQuotesTheExactPrice(t *testing.T) {
	_, premium, mult := speechVoices(t)
	for _, c := range []struct {
		body   map[string]any
		amount int64
	}{
		{map[string]any{"text": "Hi."}, 20_000},
		{map[string]any{"text": strings.Repeat("a", 1000)}, 420_000},
		{map[string]any{"text": strings.Repeat("a", 1001)}, 430_000},
		{map[string]any{"text": strings.Repeat("é", 100)}, 50_000}, // characters, not bytes
		{map[string]any{"text": strings.Repeat("a", 3000)}, 1_260_000},
		{map[string]any{"text": strings.Repeat("a", 1000), "voice": premium}, int64(math.Ceil(0.42*mult*100-1e-9)) * 10_000},
		{map[string]any{"text": "Hi.", "model": "speech-multilingual-v2"}, 20_000},
	} {
		pr := challengeFor(t, frontend.SpeechPath, c.body)
		if pr.Accepts[0].Amount != strconv.FormatInt(c.amount, 10) || pr.Resource.URL != env.URL+frontend.SpeechPath {
			t.Errorf("%.40v: %s, want %d", c.body, pr.Accepts[0].Amount, c.amount)
		}
	}
}

func TestSpeechRefusedBeforePayment(t *testing.T) {
	w := newWallet(t, money.USD)
	sig := w.pay(t, challengeFor(t, frontend.SpeechPath, map[string]any{"text": "Hello."}))
	for _, c := range []struct {
		body  any
		words string
	}{
		{map[string]any{"text": "Hello.", "speed": 2}, "speed"},
		{map[string]any{"voice": "aria"}, "text is required"},
		{map[string]any{"text": " "}, "text must not be empty"},
		{map[string]any{"text": strings.Repeat("a", 3001)}, "3001 characters"},
		{map[string]any{"text": "Hello.", "voice": "nobody"}, "voice \"nobody\" is not on the menu"},
		{map[string]any{"text": "Hello.", "voice": ""}, "not on the menu"},
		{map[string]any{"text": "Hello.", "model": "speech-v1"}, "model must be one of speech-v3, speech-multilingual-v2"},
		{map[string]any{"text": "Hello.", "model": ""}, "model must be one of"},
		{map[string]any{"text": "Hello.", "seconds": 5}, "seconds"},
	} {
		r := env.Do(t, "POST", frontend.SpeechPath, c.body, "PAYMENT-SIGNATURE", sig)
		if e := wantStatus(t, r, http.StatusBadRequest); !strings.Contains(e["error"].(string), c.words) {
			t.Errorf("%v: %v", c.body, e)
		}
	}
	if w.tokens(t) != 1_000_000 {
		t.Fatal("a refused request moved tokens")
	}
}

func TestSpeechPaidCall(t *testing.T) {
	w := newWallet(t, money.USD)
	def, _, _ := speechVoices(t)
	text := "Good morning. The train to the coast leaves from platform four."
	sig := w.pay(t, challengeFor(t, frontend.SpeechPath, map[string]any{"text": text}))
	r := env.Do(t, "POST", frontend.SpeechPath, map[string]any{"text": text}, "PAYMENT-SIGNATURE", sig)
	rec := wantStatus(t, r, http.StatusOK)
	if rec["status"] != "success" || rec["voice"] != def || rec["model"] != "speech-v3" || rec["characters"].(float64) != float64(len(text)) ||
		usd(rec["paidUsd"]) != 30_000 || rec["video"] != nil || rec["outputs"] != nil || rec["seconds"] != nil || r.Header.Get("X-Status-Url") == "" {
		t.Fatalf("%v", rec)
	}
	a := fetchAudio(t, rec["audio"].(string))
	if a.codec != "mp3" || a.duration < 2 || a.duration > 8 || rms(a.pcm) < 0.01 {
		t.Fatalf("audio %s %.2f s rms %.4f", a.codec, a.duration, rms(a.pcm))
	}
	if w.tokens(t) != 970_000 || walletBalance(t, w) != 0 {
		t.Fatalf("tokens %d balance %s", w.tokens(t), walletBalance(t, w))
	}
	// The same payment again: 409, nothing settled.
	if e := wantStatus(t, env.Do(t, "POST", frontend.SpeechPath, map[string]any{"text": text}, "PAYMENT-SIGNATURE", sig), http.StatusConflict); e["code"] != "PAYMENT_ALREADY_REDEEMED" {
		t.Fatal(e)
	}
	// Other voices and the multilingual model speak too, differently.
	w2 := newWallet(t, money.USD)
	de := wantStatus(t, buy(t, frontend.SpeechPath, w2, map[string]any{"text": "Guten Morgen. Der Zug fährt von Gleis vier.", "voice": germanVoice(t), "model": "speech-multilingual-v2", "async": true}), http.StatusOK)
	de = finished(t, de["statusUrl"].(string))
	if b := fetchAudio(t, de["audio"].(string)); de["status"] != "success" || b.duration < 1 || b.codec != "mp3" {
		t.Fatalf("%v %+v", de, b.duration)
	}
}

func germanVoice(t *testing.T) string {
	t.Helper()
	m := wantStatus(t, env.Do(t, "GET", frontend.SpeechPath, nil), http.StatusOK)
	for _, v := range m["voices"].([]any) {
		v := v.(map[string]any)
		if strings.HasPrefix(v["language"].(string), "de") {
			return v["id"].(string)
		}
	}
	t.Fatal("no German voice on the menu")
	return ""
}

// speak buys text on speech-v3 and returns the decoded audio.
func speak(t *testing.T, w wallet, text string) audio {
	t.Helper()
	rec := wantStatus(t, buy(t, frontend.SpeechPath, w, map[string]any{"text": text}), http.StatusOK)
	if rec["status"] != "success" {
		t.Fatalf("%v", rec)
	}
	return fetchAudio(t, rec["audio"].(string))
}

func TestSpeechDirectionsArePerformedNotSpoken(t *testing.T) {
	w := newWallet(t, money.USD)
	plain := speak(t, w, "Hello there. How are you?")
	paused := speak(t, w, "Hello there. [pause] How are you?")
	if d := paused.duration - plain.duration; d < 0.3 {
		t.Fatalf("[pause] added %.2f s", d)
	}
	// Speaking the word "whispers" takes time; performing it does not.
	spoken := speak(t, w, "whispers the secret is under the stone")
	whispered := speak(t, w, "[whispers] the secret is under the stone")
	normal := speak(t, w, "the secret is under the stone")
	if whispered.duration >= spoken.duration-0.2 {
		t.Fatalf("whispered %.2f s vs with the word spoken %.2f s", whispered.duration, spoken.duration)
	}
	if rms(whispered.pcm) >= rms(normal.pcm) {
		t.Fatalf("whisper rms %.4f not below normal %.4f", rms(whispered.pcm), rms(normal.pcm))
	}
	loud, soft := speak(t, w, "[loudly] open the gate now"), speak(t, w, "[softly] open the gate now")
	if rms(loud.pcm) <= rms(soft.pcm) {
		t.Fatalf("loud rms %.4f, soft %.4f", rms(loud.pcm), rms(soft.pcm))
	}
}

func TestSpeechRefusalThenRetryWithNewText(t *testing.T) {
	w := newWallet(t, money.USD)
	rec := wantStatus(t, buy(t, frontend.SpeechPath, w, map[string]any{"text": "This is a bomb threat."}), http.StatusOK)
	if rec["status"] != "error" || rec["reason"] != "prompt_refused" || rec["retryUrl"] == nil || rec["failedStep"] != nil ||
		usd(rec["balanceUsd"]) != 20_000 {
		t.Fatalf("%v", rec)
	}
	retry := rec["retryUrl"].(string)
	wantStatus(t, post(t, retry, map[string]any{"prompt": "x"}), http.StatusBadRequest)
	wantStatus(t, post(t, retry, map[string]any{"text": strings.Repeat("a", 3001)}), http.StatusBadRequest)
	again := wantStatus(t, post(t, retry, map[string]any{"text": "This is a fire drill."}), http.StatusOK)
	if again["status"] != "success" || again["retryOf"] != rec["runId"] || usd(again["paidUsd"]) != 0 || again["characters"].(float64) != 21 {
		t.Fatalf("%v", again)
	}
	fetchAudio(t, again["audio"].(string))
	if walletBalance(t, w) != 0 {
		t.Fatalf("balance %s", walletBalance(t, w))
	}
	e := wantStatus(t, post(t, retry, nil), http.StatusConflict)
	if e["retriedBy"] == nil {
		t.Fatalf("%v", e)
	}
}

func TestMusicMenu(t *testing.T) {
	m := wantStatus(t, env.Do(t, "GET", frontend.MusicPath, nil), http.StatusOK)
	offers := m["offers"].([]any)
	if m["service"] != "Pay-per-music" || len(m["models"].([]any)) == 0 || len(offers) == 0 || m["fields"].(map[string]any)["prompt"] == nil {
		t.Fatalf("%v", m)
	}
	for _, o := range offers {
		if p := o.(map[string]any)["priceUsd"].(float64); p < 0.06 || p > 0.12 {
			t.Fatalf("offer %v outside 0.06–0.12", o)
		}
	}
}

func TestMusicPaidCall(t *testing.T) {
	w := newWallet(t, money.USD)
	body := map[string]any{"prompt": "energetic house with punchy drums and synth bass at 124 bpm", "seconds": 15}
	if pr := challengeFor(t, frontend.MusicPath, body); pr.Accepts[0].Amount != "60000" {
		t.Fatalf("price %s", pr.Accepts[0].Amount)
	}
	rec := wantStatus(t, buy(t, frontend.MusicPath, w, body), http.StatusOK)
	if rec["status"] != "success" || rec["seconds"].(float64) != 15 || rec["model"] != "compose-1" || usd(rec["paidUsd"]) != 60_000 {
		t.Fatalf("%v", rec)
	}
	a := fetchAudio(t, rec["audio"].(string))
	if a.codec != "mp3" || math.Abs(a.duration-15) > 0.2 {
		t.Fatalf("%s %.2f s", a.codec, a.duration)
	}
	if got := bpm(a.pcm); math.Abs(got-124) > 124*0.03 {
		t.Fatalf("detected %.1f BPM, asked 124", got)
	}
	// A slower piece is detectably slower.
	slow := wantStatus(t, buy(t, frontend.MusicPath, w, map[string]any{"prompt": "laid-back synthwave with drums, bass and pads at 90 bpm", "seconds": 15}), http.StatusOK)
	if got := bpm(fetchAudio(t, slow["audio"].(string)).pcm); math.Abs(got-90) > 90*0.03 {
		t.Fatalf("detected %.1f BPM, asked 90", got)
	}
}

func TestMusicRefusedBeforePaymentAndByTheFilter(t *testing.T) {
	w := newWallet(t, money.USD)
	sig := w.pay(t, challengeFor(t, frontend.MusicPath, map[string]any{"prompt": "calm piano"}))
	for _, body := range []map[string]any{
		{"prompt": "calm piano", "seconds": 45},
		{"prompt": "calm piano", "seconds": 12.5},
		{"prompt": "calm piano", "model": "nope"},
		{"prompt": ""},
		{"prompt": strings.Repeat("a", 1001)},
		{"prompt": "calm piano", "voice": "aria"},
	} {
		wantStatus(t, env.Do(t, "POST", frontend.MusicPath, body, "PAYMENT-SIGNATURE", sig), http.StatusBadRequest)
	}
	if w.tokens(t) != 1_000_000 {
		t.Fatal("a refused request moved tokens")
	}
	rec := wantStatus(t, env.Do(t, "POST", frontend.MusicPath, map[string]any{"prompt": "calm piano in the style of a famous band"}, "PAYMENT-SIGNATURE",
		w.pay(t, challengeFor(t, frontend.MusicPath, map[string]any{"prompt": "calm piano in the style of a famous band"}))), http.StatusOK)
	if rec["status"] != "error" || rec["reason"] != "prompt_refused" || usd(rec["balanceUsd"]) != 80_000 {
		t.Fatalf("%v", rec)
	}
	again := wantStatus(t, post(t, rec["retryUrl"].(string), map[string]any{"prompt": "calm solo piano, slow and tender"}), http.StatusOK)
	if again["status"] != "success" || usd(again["paidUsd"]) != 0 {
		t.Fatalf("%v", again)
	}
}

func TestSpeechAsyncAndAlreadyPaid(t *testing.T) {
	w := newWallet(t, money.USD)
	body := map[string]any{"text": "Your order has shipped."}
	r := buy(t, frontend.SpeechPath, w, body, "Prefer", "respond-async")
	first := wantStatus(t, r, http.StatusOK)
	if first["status"] != "running" || r.Header.Get("Preference-Applied") != "respond-async" || r.Header.Get("Location") == "" {
		t.Fatalf("%v %v", first, r.Header)
	}
	awaitWorkflow(t, first["runId"].(string))
	// The file never reached the caller: the same request is answered with
	// it and the new payment is not taken.
	again := wantStatus(t, buy(t, frontend.SpeechPath, w, body), http.StatusOK)
	if again["runId"] != first["runId"] || again["alreadyPaid"] == nil || usd(again["paidUsd"]) != 0 || w.tokens(t) != 980_000 {
		t.Fatalf("%v tokens %d", again, w.tokens(t))
	}
	fetchAudio(t, again["audio"].(string))
}
