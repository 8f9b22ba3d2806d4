package app

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"

	"conduit/activities"
	"conduit/frontend"
	"conduit/internal/blob"
	"conduit/internal/config"
	"conduit/internal/imagefetch"
	"conduit/internal/library"
	"conduit/internal/media"
	"conduit/internal/mediakind"
	"conduit/internal/money"
	"conduit/internal/paycall"
	"conduit/internal/pricing"
	"conduit/internal/ticket"
)

// Media is pay-per-call rendering as configured: what the pay-per-call
// service reads (the catalogs, the signers, the blob store, the image
// fetcher), plus the renderers and the library's job price. When it
// cannot be offered, Err says why and the endpoints answer 503.
type Media struct {
	paycall.Media
	Renderers map[string]media.Renderer
	// JobPrice is the least a library job costs; JobRate what it costs
	// by the seconds of media it makes.
	JobPrice money.Micros
	JobRate  pricing.JobRate
}

// openMedia builds the media parts. A missing secret disables pay-per-call
// (Err); a broken blob store or catalog fails the start.
func openMedia(ctx context.Context, cfg *config.Config) (*Media, error) {
	verdicts := imagefetch.NewVerdicts(cfg.Media.Images.VerdictEntries, cfg.Media.Images.VerdictTTL)
	m := &Media{Media: paycall.Media{Images: &imagefetch.Fetcher{Verdicts: verdicts},
		HeartbeatTimeout: cfg.Media.HeartbeatTimeout, KeepAlive: cfg.Media.KeepAlive}}
	var err error
	if m.Video, err = pricing.NewVideoCatalog(cfg.Media.Video); err != nil {
		return nil, err
	}
	if m.Speech, err = pricing.NewSpeechCatalog(cfg.Media.Speech); err != nil {
		return nil, err
	}
	if m.Music, err = pricing.NewMusicCatalog(cfg.Media.Music); err != nil {
		return nil, err
	}
	switch cfg.Media.Blob.Backend {
	case "s3":
		s3 := cfg.Media.Blob.S3
		m.Blob, err = blob.NewS3(ctx, blob.S3Config{
			Bucket: s3.Bucket, Prefix: s3.Prefix, Region: s3.Region, Endpoint: s3.Endpoint, PathStyle: s3.PathStyle,
			AccessKeyID: s3.AccessKeyID, SecretAccessKey: s3.SecretAccessKey,
		})
	default:
		dir := cfg.Media.Blob.Dir
		if dir == "" {
			dir = filepath.Join(cfg.Dev.DataDir, "blobs")
		}
		m.Blob, err = blob.NewLocal(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("the blob store could not open: %w", err)
	}
	m.Renderers, err = renderers(cfg.Media)
	if err != nil {
		return nil, err
	}
	if m.JobPrice, err = money.ParseUSD(cfg.Media.Library.JobPrice); err != nil {
		return nil, err
	}
	perSecond, err := money.ParseUSD(cfg.Media.Library.PricePerSecond)
	if err != nil {
		return nil, err
	}
	m.JobRate = pricing.JobRate{PerSecond: perSecond, Minimum: m.JobPrice}
	if err := cfg.Media.Ready(); err != nil {
		m.Err = err
		return m, nil
	}
	secret := []byte(cfg.Media.Secret)
	if m.Tickets, err = ticket.New(secret, cfg.Media.TicketTTL); err != nil {
		return nil, err
	}
	// File URLs get their own key, derived, so a ticket can never pass for
	// a file signature or the other way round.
	if m.Files, err = blob.NewSigner(append([]byte("files/"), secret...)); err != nil {
		return nil, err
	}
	// Library links too, so a purchase's file signature, a claim ticket
	// and a library link never stand in for each other.
	if m.Links, err = blob.NewLinks(append([]byte("library-files/"), secret...), cfg.Media.Library.LinkTTL); err != nil {
		return nil, err
	}
	return m, nil
}

// library is the media library service (answering 503 while media is
// off: it needs the signing secret for its file URLs).
func (m *Media) library(p *Platform, tc client.Client) *library.Service {
	return &library.Service{
		Store: p.Store, Temporal: tc, Blob: m.Blob, Links: m.Links, Generation: m.Generation(), Fetcher: m.Images,
		Config: p.Config.Media.Library, JobPrice: m.JobPrice, Rate: m.JobRate, HeartbeatTimeout: p.Config.Media.HeartbeatTimeout,
		BaseURL: p.Config.BaseURL(), TopUpURL: p.Config.BaseURL() + frontend.CreditsPagePath, Err: m.Err,
	}
}

// libraryActivities are the worker's library activities (nil when off).
func (m *Media) libraryActivities(p *Platform, renders *activities.Renders) *activities.Library {
	if renders == nil {
		return nil
	}
	lib := p.Library
	return &activities.Library{
		Store: p.Store, Blob: m.Blob, Renders: renders, Generation: m.Generation(),
		Editor: &media.Editor{FFmpeg: p.Config.Media.FFmpeg}, FFprobe: p.Config.Media.Library.FFprobe, Fetcher: m.Images,
		ImportMaxBytes: p.Config.Media.Library.ImportMaxBytes, ImportTimeout: p.Config.Media.Library.ImportTimeout,
		FileURL: func(key string) string { u, _ := lib.FileURL(key); return u },
	}
}

// renderers maps every model of every media kind to its renderer: a
// local one (ffmpeg, espeak-ng, the synthesizer) with the model's content
// filter, or the configured hosted API. Every kind named by
// internal/mediakind needs its entry in renderKinds.
func renderers(cfg config.Media) (map[string]media.Renderer, error) {
	kinds := renderKinds(cfg)
	filters, upstream := map[string]*media.Filter{}, map[string]string{}
	for _, d := range mediakind.Kinds {
		k, ok := kinds[d.Name]
		if !ok {
			return nil, fmt.Errorf("media kind %s has no renderer", d.Name)
		}
		for _, m := range k.models {
			f, err := media.NewFilter(m.refuse)
			if err != nil {
				return nil, fmt.Errorf("media model %s: %w", m.id, err)
			}
			filters[m.id], upstream[m.id] = f, m.upstream
		}
	}
	out := map[string]media.Renderer{}
	for _, d := range mediakind.Kinds {
		k := kinds[d.Name]
		local, hosted := k.renderers(filters, upstream)
		for _, m := range k.models {
			out[m.id] = pick(m.hosted, hosted, local)
		}
	}
	return out, nil
}

// renderKind is one media kind's models as configured and its two
// renderers, local and hosted, built over every model's content filter
// and upstream id.
type renderKind struct {
	models    []renderModel
	renderers func(filters map[string]*media.Filter, upstream map[string]string) (local, hosted media.Renderer)
}

type renderModel struct {
	id, upstream string
	refuse       []string
	hosted       bool
}

// renderKinds is each media kind's renderers, by kind name.
func renderKinds(cfg config.Media) map[string]renderKind {
	audio := func(models []config.AudioModel) []renderModel {
		var out []renderModel
		for _, m := range models {
			out = append(out, renderModel{id: m.ID, upstream: m.Upstream, refuse: m.Refuse, hosted: m.Provider == "hosted"})
		}
		return out
	}
	var video []renderModel
	heights := map[string]int{}
	for _, v := range cfg.Video {
		video = append(video, renderModel{id: v.ID, upstream: v.Upstream, refuse: v.Refuse, hosted: v.Provider == "queue"})
		if v.Height > 0 {
			heights[v.ID] = v.Height
		}
	}
	return map[string]renderKind{
		mediakind.Video: {models: video, renderers: func(filters map[string]*media.Filter, upstream map[string]string) (media.Renderer, media.Renderer) {
			return &media.LocalVideo{FFmpeg: cfg.FFmpeg, Filters: filters, Heights: heights},
				&media.QueueVideo{BaseURL: cfg.Queue.BaseURL, APIKey: cfg.Queue.APIKey, PollEvery: cfg.Queue.PollEvery, Models: upstream, Filters: filters}
		}},
		mediakind.Speech: {models: audio(cfg.Speech.Models), renderers: func(filters map[string]*media.Filter, upstream map[string]string) (media.Renderer, media.Renderer) {
			voices, hostedVoices := map[string]media.SpeechVoice{}, map[string]string{}
			for _, v := range cfg.Speech.Voices {
				voices[v.ID] = media.SpeechVoice{ID: v.ID, Language: v.Language, Espeak: v.Espeak, Variant: v.Variant, Pitch: v.Pitch, Rate: v.Rate}
				hostedVoices[v.ID] = v.Upstream
			}
			return &media.LocalSpeech{FFmpeg: cfg.FFmpeg, Voices: voices, Filters: filters},
				&media.HostedSpeech{BaseURL: cfg.Speech.Hosted.BaseURL, APIKey: cfg.Speech.Hosted.APIKey, Voices: hostedVoices, Models: upstream, Filters: filters}
		}},
		mediakind.Music: {models: audio(cfg.Music.Models), renderers: func(filters map[string]*media.Filter, upstream map[string]string) (media.Renderer, media.Renderer) {
			return &media.LocalMusic{FFmpeg: cfg.FFmpeg, Filters: filters},
				&media.HostedMusic{BaseURL: cfg.Music.Hosted.BaseURL, APIKey: cfg.Music.Hosted.APIKey, Models: upstream, Filters: filters}
		}},
	}
}

func pick(hosted bool, remote, local media.Renderer) media.Renderer {
	if hosted {
		return remote
	}
	return local
}

// activities is the worker's render activities (nil when off).
func (m *Media) activities(p *Platform) *activities.Renders {
	if m.Err != nil {
		return nil
	}
	base := p.Config.BaseURL()
	return &activities.Renders{
		Store: p.Store, Blob: m.Blob, Renderers: m.Renderers,
		FileURL:        func(key string) string { return paycall.FileURL(base, m.Files, key) },
		HeartbeatEvery: min(5*time.Second, p.Config.Media.HeartbeatTimeout/3),
	}
}
