package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"time"

	"github.com/ulule/limiter/v3"

	"conduit/internal/money"
)

// Media configures the pay-per-call renders (spec §4.6–4.12): the video
// catalog, the renderers, the blob store the files end up in, and the
// secret that signs claim tickets and file URLs.
type Media struct {
	// Secret keys the HMAC of claim tickets and file URLs (at least 32
	// characters). The dev command generates one; without it the paid
	// render endpoints answer 503.
	Secret string `mapstructure:"secret"`
	// TicketTTL is how long a claim ticket (statusUrl, retryUrl) works.
	TicketTTL time.Duration `mapstructure:"ticket_ttl"`
	// HeartbeatTimeout is how long a render may go without a heartbeat
	// before Temporal hands it to another worker.
	HeartbeatTimeout time.Duration `mapstructure:"heartbeat_timeout"`
	// KeepAlive is the interval of the whitespace bytes a waiting answer
	// sends (spec §6.2: 2 s).
	KeepAlive time.Duration `mapstructure:"keep_alive"`
	// FFmpeg is the ffmpeg binary the local renderers run.
	FFmpeg string `mapstructure:"ffmpeg"`
	Blob   Blob   `mapstructure:"blob"`
	// Queue is a hosted video API speaking the queue protocol
	// (submit / status / result); models with provider "queue" use it.
	Queue  QueueProvider `mapstructure:"queue"`
	Video  []VideoModel  `mapstructure:"video"`
	Speech Speech        `mapstructure:"speech"`
	Music  Music         `mapstructure:"music"`
	// Library is the media library (docs/media.md).
	Library Library `mapstructure:"library"`
	// Images bounds the first-frame fetches of video requests that carry
	// no payment yet (docs/media.md, docs/security.md).
	Images Images `mapstructure:"images"`
}

// Images bounds unpaid image fetches: a video request with image_url but
// no payment-signature makes the server download the image (the spec
// checks it before the payment), so those fetches get their own, smaller
// budget per client address and a short-lived verdict per URL.
type Images struct {
	// UnpaidRateLimit is the per-address budget of unpaid fetches
	// ("10-M": 10 a minute), separate from x402.rate_limit.
	UnpaidRateLimit string `mapstructure:"unpaid_rate_limit"`
	// VerdictTTL is how long a URL's verdict (a usable image, or why not)
	// answers unpaid requests without fetching it again.
	VerdictTTL time.Duration `mapstructure:"verdict_ttl"`
	// VerdictEntries bounds the verdicts kept (the oldest go first).
	VerdictEntries int `mapstructure:"verdict_entries"`
}

// Library bounds the media library's files and jobs.
type Library struct {
	// LinkTTL is how long a library file URL works; every answer that
	// carries one issues it fresh.
	LinkTTL time.Duration `mapstructure:"link_ttl"`
	// ImportMaxBytes and ImportTimeout bound a file imported from a URL.
	ImportMaxBytes int64         `mapstructure:"import_max_bytes"`
	ImportTimeout  time.Duration `mapstructure:"import_timeout"`
	// JobPrice is the least an import, assembly or edit costs in USD
	// ("0": no minimum).
	JobPrice string `mapstructure:"job_price"`
	// PricePerSecond is what a job costs per second of media it produces
	// (USD): the hold is the price of the longest output it may make, the
	// charge that of what it made (docs/media.md).
	PricePerSecond string `mapstructure:"price_per_second"`
	// MaxOutputSeconds and MaxOutputBytes cap one job's output, judged
	// from its inputs before any work (and enforced while it works).
	MaxOutputSeconds int   `mapstructure:"max_output_seconds"`
	MaxOutputBytes   int64 `mapstructure:"max_output_bytes"`
	// Concurrency is how many jobs one worker runs at once, on the
	// library's own task queue (library-work), apart from the renders.
	Concurrency int `mapstructure:"concurrency"`
	// AccountJobs is how many jobs one account may have running at once.
	AccountJobs int `mapstructure:"account_jobs"`
	// QuotaBytes is how many bytes of files an account's library may hold.
	QuotaBytes int64 `mapstructure:"quota_bytes"`
	// JobTimeout bounds one job's work across its attempts.
	JobTimeout time.Duration `mapstructure:"job_timeout"`
	// FFprobe is the ffprobe binary that reads imported and made files.
	FFprobe string `mapstructure:"ffprobe"`
}

// Blob selects where rendered files and fetched images are kept.
type Blob struct {
	// Backend is "local" (a folder served by the frontend) or "s3".
	Backend string `mapstructure:"backend"`
	// Dir is the local folder; empty means <dev.data_dir>/blobs.
	Dir string `mapstructure:"dir"`
	S3  S3     `mapstructure:"s3"`
}

// S3 is an S3 or S3-compatible bucket.
type S3 struct {
	Bucket          string `mapstructure:"bucket"`
	Prefix          string `mapstructure:"prefix"`
	Region          string `mapstructure:"region"`
	Endpoint        string `mapstructure:"endpoint"`
	PathStyle       bool   `mapstructure:"path_style"`
	AccessKeyID     string `mapstructure:"access_key_id"`
	SecretAccessKey string `mapstructure:"secret_access_key"`
}

// QueueProvider is a hosted render API's base address and key.
type QueueProvider struct {
	BaseURL string `mapstructure:"base_url"`
	APIKey  string `mapstructure:"api_key"`
	// PollEvery is how often a queued render's status is asked.
	PollEvery time.Duration `mapstructure:"poll_every"`
}

// VideoModel is one model on the video menu (spec §4.6.1).
type VideoModel struct {
	ID    string `mapstructure:"id"`
	Label string `mapstructure:"label"`
	Note  string `mapstructure:"note"`
	// Default marks the model used without image_url and without model.
	Default bool `mapstructure:"default"`
	// FirstFrame says the model takes image_url.
	FirstFrame bool          `mapstructure:"first_frame"`
	Prices     []LengthPrice `mapstructure:"prices"`
	// Wait is the default wait at the model's shortest length; longer
	// clips wait proportionally longer (at least 45 s, at most 720 s).
	Wait time.Duration `mapstructure:"wait"`
	// Deadline is the render deadline at the shortest length (scaled the
	// same way); a render past it is still collected, with a note.
	Deadline time.Duration `mapstructure:"deadline"`
	// Provider is "local" (ffmpeg) or "queue" (media.queue).
	Provider string `mapstructure:"provider"`
	// Height is the frame's short side in pixels (768 for "768p"), which
	// the local renderer makes; 0 is 720. The note that sells it must say
	// the same.
	Height int `mapstructure:"height"`
	// Upstream is the provider's model path (queue provider).
	Upstream string `mapstructure:"upstream"`
	// Refuse lists case-insensitive regular expressions the model's
	// content filter declines (prompt_refused).
	Refuse []string `mapstructure:"refuse"`
}

// LengthPrice is a clip length on sale and its price.
type LengthPrice struct {
	Seconds int    `mapstructure:"seconds"`
	USD     string `mapstructure:"usd"`
}

// VideoLengths and AspectRatios are what the video endpoint can sell at all.
var (
	VideoLengths = []int{4, 5, 6, 8, 10, 15}
	AspectRatios = []string{"16:9", "9:16"}
)

func prices(pairs ...any) []map[string]any {
	var out []map[string]any
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, map[string]any{"seconds": pairs[i], "usd": pairs[i+1]})
	}
	return out
}

// brandFilter is the stand-in for a strict provider filter: brands,
// broadcasts, famous scenes and real people.
var brandFilter = []string{
	`\b(brand|logo|trademark|broadcast|newscast|super ?bowl|world cup|famous scene|movie scene|celebrity|real person)\b`,
}

var mediaDefaults = map[string]any{
	"media.secret":                     "",
	"media.ticket_ttl":                 "720h",
	"media.heartbeat_timeout":          "30s",
	"media.keep_alive":                 "2s",
	"media.ffmpeg":                     "ffmpeg",
	"media.blob.backend":               "local",
	"media.blob.dir":                   "",
	"media.blob.s3.bucket":             "",
	"media.blob.s3.prefix":             "",
	"media.blob.s3.region":             "us-east-1",
	"media.blob.s3.endpoint":           "",
	"media.blob.s3.path_style":         false,
	"media.blob.s3.access_key_id":      "",
	"media.blob.s3.secret_access_key":  "",
	"media.queue.base_url":             "",
	"media.queue.api_key":              "",
	"media.queue.poll_every":           "2s",
	"media.library.link_ttl":           "24h",
	"media.library.import_max_bytes":   100 << 20,
	"media.library.import_timeout":     "60s",
	"media.library.job_price":          "0.01",
	"media.library.job_timeout":        "10m",
	"media.library.price_per_second":   "0.0002",
	"media.library.max_output_seconds": 600,
	"media.library.max_output_bytes":   200 << 20,
	"media.library.concurrency":        2,
	"media.library.account_jobs":       1,
	"media.library.quota_bytes":        2 << 30,
	"media.images.unpaid_rate_limit":   "10-M",
	"media.images.verdict_ttl":         "60s",
	"media.images.verdict_entries":     10000,
	"media.library.ffprobe":            "ffprobe",
	"media.video": []map[string]any{
		{"id": "lumen-h3", "label": "Lumen H3", "default": true, "first_frame": false,
			"note":   "768p, native audio, fewest prompt refusals",
			"prices": prices(5, "0.42", 10, "0.84", 15, "1.26"), "wait": "150s", "deadline": "300s", "provider": "local", "height": 768,
			"refuse": []string{`\b(gore|beheading)\b`}},
		{"id": "vista-3.1-lite", "label": "Vista 3.1 Lite", "first_frame": true,
			"note":   "native audio, about a minute; a safety filter may return nothing for some prompts (uncharged, retryable)",
			"prices": prices(4, "0.45", 6, "0.68", 8, "0.90"), "wait": "60s", "deadline": "120s", "provider": "local",
			"refuse": []string{`\b(gore|beheading|blood|weapon|gun|explosion)\b`}},
		{"id": "wave-2.7", "label": "Wave 2.7", "first_frame": true,
			"note":   "native audio; most permissive with photos of real people",
			"prices": prices(5, "0.70", 10, "1.40"), "wait": "120s", "deadline": "240s", "provider": "local",
			"refuse": []string{`\b(gore|beheading)\b`}},
		{"id": "vista-3.1-fast", "label": "Vista 3.1 Fast", "first_frame": true,
			"note":   "native audio, under two minutes typically",
			"prices": prices(4, "0.68", 6, "1.01", 8, "1.35"), "wait": "90s", "deadline": "180s", "provider": "local",
			"refuse": []string{`\b(gore|beheading|blood)\b`}},
		{"id": "kine-3.0", "label": "Kine 3.0", "first_frame": true,
			"note":   "720p, native audio",
			"prices": prices(5, "0.89", 10, "1.77", 15, "2.65"), "wait": "150s", "deadline": "300s", "provider": "local",
			"refuse": []string{`\b(gore|beheading)\b`}},
		{"id": "kine-3.0-pro", "label": "Kine 3.0 Pro", "first_frame": true,
			"note":   "720p, native audio, higher fidelity",
			"prices": prices(5, "1.18", 10, "2.36", 15, "3.53"), "wait": "180s", "deadline": "360s", "provider": "local",
			"refuse": []string{`\b(gore|beheading)\b`}},
		{"id": "sprout-2.5", "label": "Sprout 2.5", "first_frame": true,
			"note":   "720p, native audio; strict content filter refusing prompts resembling a brand, a broadcast or a famous scene, and photos of real people; a refusal is uncharged and carries a retryUrl",
			"prices": prices(5, "1.64", 10, "3.27", 15, "4.90"), "wait": "200s", "deadline": "400s", "provider": "local",
			"refuse": brandFilter},
		{"id": "vista-3.1", "label": "Vista 3.1", "first_frame": true,
			"note":   "top fidelity, synchronized audio",
			"prices": prices(4, "2.24", 6, "3.36", 8, "4.48"), "wait": "150s", "deadline": "300s", "provider": "local",
			"refuse": []string{`\b(gore|beheading|blood)\b`}},
	},
}

// MediaReady says why the paid render endpoints cannot be offered.
func (m Media) Ready() error {
	if len(m.Secret) < 32 {
		return errors.New("media.secret must be set (at least 32 characters) to sign claim tickets and file URLs")
	}
	return nil
}

func (c *Config) validateMedia() []error {
	m := c.Media
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if m.Secret != "" && len(m.Secret) < 32 {
		bad("media.secret (%s_MEDIA_SECRET) must be at least 32 characters", EnvPrefix)
	}
	for name, d := range map[string]time.Duration{"ticket_ttl": m.TicketTTL, "heartbeat_timeout": m.HeartbeatTimeout, "keep_alive": m.KeepAlive, "queue.poll_every": m.Queue.PollEvery,
		"library.link_ttl": m.Library.LinkTTL, "library.import_timeout": m.Library.ImportTimeout, "library.job_timeout": m.Library.JobTimeout,
		"images.verdict_ttl": m.Images.VerdictTTL} {
		if d <= 0 {
			bad("media.%s must be a positive duration", name)
		}
	}
	if m.Library.ImportMaxBytes <= 0 {
		bad("media.library.import_max_bytes must be a positive number of bytes")
	}
	if usd, err := money.ParseUSD(m.Library.JobPrice); err != nil || usd < 0 {
		bad("media.library.job_price (%s_MEDIA_LIBRARY_JOB_PRICE) must be a USD amount of 0 or more, got %q", EnvPrefix, m.Library.JobPrice)
	}
	if usd, err := money.ParseUSD(m.Library.PricePerSecond); err != nil || usd < 0 {
		bad("media.library.price_per_second (%s_MEDIA_LIBRARY_PRICE_PER_SECOND) must be a USD amount of 0 or more, got %q", EnvPrefix, m.Library.PricePerSecond)
	}
	for name, n := range map[string]int64{"max_output_seconds": int64(m.Library.MaxOutputSeconds), "max_output_bytes": m.Library.MaxOutputBytes,
		"concurrency": int64(m.Library.Concurrency), "account_jobs": int64(m.Library.AccountJobs), "quota_bytes": m.Library.QuotaBytes} {
		if n <= 0 {
			bad("media.library.%s must be a positive number", name)
		}
	}
	if m.Library.Concurrency > 256 {
		bad("media.library.concurrency must be 1 to 256")
	}
	if _, err := limiter.NewRateFromFormatted(m.Images.UnpaidRateLimit); err != nil {
		bad("media.images.unpaid_rate_limit (%s_MEDIA_IMAGES_UNPAID_RATE_LIMIT) %q must look like 10-M (count per S, M or H)", EnvPrefix, m.Images.UnpaidRateLimit)
	}
	if m.Images.VerdictEntries <= 0 {
		bad("media.images.verdict_entries must be a positive number")
	}
	switch m.Blob.Backend {
	case "local":
	case "s3":
		if m.Blob.S3.Bucket == "" {
			bad("media.blob.s3.bucket (%s_MEDIA_BLOB_S3_BUCKET) is required with the s3 backend", EnvPrefix)
		}
	default:
		bad("media.blob.backend must be local or s3, got %q", m.Blob.Backend)
	}
	if m.Queue.BaseURL != "" {
		if u, err := url.Parse(m.Queue.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("media.queue.base_url must be an absolute http(s) URL")
		}
	}
	seen, defaults := map[string]bool{}, 0
	for i, v := range m.Video {
		where := fmt.Sprintf("media.video[%d] (%s)", i, v.ID)
		if v.ID == "" || seen[v.ID] {
			bad("%s: the id must be set and unique", where)
		}
		seen[v.ID] = true
		if v.Default {
			defaults++
			if v.FirstFrame {
				bad("%s: the default model is the one for requests without image_url, so it cannot take one", where)
			}
		}
		if len(v.Prices) == 0 {
			bad("%s: lists no lengths", where)
		}
		for _, p := range v.Prices {
			if !slices.Contains(VideoLengths, p.Seconds) {
				bad("%s: %d seconds is not a length the endpoint sells (%v)", where, p.Seconds, VideoLengths)
			}
			if usd, err := money.ParseUSD(p.USD); err != nil || usd <= 0 {
				bad("%s: price %q is not a positive USD amount", where, p.USD)
			}
		}
		if v.Wait <= 0 || v.Deadline <= 0 {
			bad("%s: wait and deadline must be positive durations", where)
		}
		if v.Height != 0 && (v.Height < 144 || v.Height > 2160 || v.Height%2 != 0) {
			bad("%s: height must be an even number of pixels from 144 to 2160, got %d", where, v.Height)
		}
		switch v.Provider {
		case "local":
		case "queue":
			if m.Queue.BaseURL == "" {
				bad("%s uses provider queue but media.queue.base_url is not set", where)
			}
			if v.Upstream == "" {
				bad("%s uses provider queue but names no upstream model", where)
			}
		default:
			bad("%s: provider must be local or queue, got %q", where, v.Provider)
		}
		for _, r := range v.Refuse {
			if _, err := regexp.Compile("(?i)" + r); err != nil {
				bad("%s: refuse pattern %q is not a regular expression: %v", where, r, err)
			}
		}
	}
	if len(m.Video) > 0 && defaults != 1 {
		bad("media.video must flag exactly one model as default, found %d", defaults)
	}
	return errs
}
