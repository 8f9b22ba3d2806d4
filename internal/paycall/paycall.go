// Package paycall is pay-per-call media (spec §4.6–4.13): selling a render
// for an x402 payment, the already-paid rule, starting the render
// workflow and reading its admission, claim tickets, the run record,
// retries on the paying wallet's balance, file links and the wallet's
// purchases list. Refusals are *errs.Error; the HTTP layer (frontend)
// only decodes, sets headers and streams the keep-alive answer.
package paycall

import (
	"context"
	"log/slog"
	"net/url"
	"time"

	"go.temporal.io/sdk/client"

	"conduit/internal/blob"
	"conduit/internal/errs"
	"conduit/internal/imagefetch"
	"conduit/internal/library"
	"conduit/internal/mediakind"
	"conduit/internal/payments"
	"conduit/internal/pricing"
	"conduit/internal/store"
	"conduit/internal/ticket"
)

// The pay-per-call endpoints: /api/x402/<kind>.
const (
	VideoPath  = "/api/x402/" + mediakind.Video
	SpeechPath = "/api/x402/" + mediakind.Speech
	// MusicPath: spec §4.12; the request and record are ours (docs/audio.md).
	MusicPath = "/api/x402/" + mediakind.Music
	// PurchasesPath lists a wallet's purchases (spec §4.13).
	PurchasesPath = "/api/x402/purchases"
	// FilesPath prefixes signed file URLs (the library's links share it).
	FilesPath = library.FilesPath
)

// PollAfter is what a running run suggests between polls.
const PollAfter = 5 * time.Second

// Media is pay-per-call as configured: the catalogs, the signers, the
// blob store and the image fetcher.
type Media struct {
	// Err says why pay-per-call is off (nil when it is on).
	Err     error
	Video   *pricing.VideoCatalog
	Speech  *pricing.SpeechCatalog
	Music   *pricing.MusicCatalog
	Tickets *ticket.Signer
	Files   blob.Signer
	// Links sign the media library's expiring file URLs.
	Links  *blob.Links
	Blob   blob.Store
	Images *imagefetch.Fetcher
	// HeartbeatTimeout and KeepAlive come from media config.
	HeartbeatTimeout time.Duration
	KeepAlive        time.Duration
}

// Generation is the priced half of the kinds' descriptors.
func (m Media) Generation() pricing.Generation {
	return pricing.Generation{Video: m.Video, Speech: m.Speech, Music: m.Music}
}

// FileURL is the signed URL of a stored file: the one rule for the URLs
// the run record, the purchases list and the render activity give out.
func FileURL(baseURL string, files blob.Signer, key string) string {
	return baseURL + FilesPath + key + "?c=" + files.Sign(key)
}

// Service sells and answers pay-per-call renders.
type Service struct {
	Store    *store.Store
	Temporal client.Client
	Payments *payments.Service
	Media    Media
	// BaseURL is the public URL the links in records start with.
	BaseURL string
	Log     *slog.Logger

	deliveries *deliveries
}

// New is the service s with its delivery recorder.
func New(s Service) *Service {
	s.deliveries = &deliveries{store: s.Store, log: s.Log}
	return &s
}

// Kind is a media kind as sold here: its descriptor, its endpoint
// (/api/x402/<name>) and the order that reads and prices its request.
type Kind struct {
	mediakind.Kind
	Path  string
	order func(s *Service, ctx context.Context, p Purchase) (order, error)
}

// orderOf is a kind's request reader: what a buyer may ask of each kind
// is the one thing pay-per-call does not read from the descriptor.
func orderOf(name string) func(s *Service, ctx context.Context, p Purchase) (order, error) {
	switch name {
	case mediakind.Speech:
		return (*Service).speechOrder
	case mediakind.Music:
		return (*Service).musicOrder
	}
	return (*Service).videoOrder
}

// Kinds are the kinds on sale, each with its endpoint.
func (s *Service) Kinds() []Kind {
	out := make([]Kind, 0, len(mediakind.Kinds))
	for _, k := range mediakind.Kinds {
		out = append(out, s.kind(k.Name))
	}
	return out
}

func (s *Service) kind(name string) Kind {
	k, _ := mediakind.Of(name)
	return Kind{Kind: k, Path: "/api/x402/" + name, order: orderOf(name)}
}

// notConfigured is the spec's words for a deployment without x402.
const notConfigured = "x402 payments are not configured on this deployment"

// selling refuses (503) unless payments and media are configured.
func (s *Service) selling() error {
	if !s.Payments.Enabled() {
		return errs.Unavailablef(notConfigured)
	}
	if s.Media.Err != nil {
		return errs.Unavailablef("pay-per-call is not available on this deployment")
	}
	return nil
}

// claims refuses (503) unless claim tickets and file links can be
// checked: they need the signing secret (media.secret), not payments. The
// ticket and file signers are made from that secret together, so a
// missing ticket signer means the file signer has no key either.
func (s *Service) claims() error {
	if s.Media.Tickets == nil {
		return errs.Unavailablef("claim tickets and file links cannot be checked on this deployment (media.secret is not set)")
	}
	return nil
}

// Menu is a kind's menu (GET on its endpoint without a query): only
// selling depends on pay-per-call being on.
func (s *Service) Menu(kind string) (any, error) {
	if err := s.selling(); err != nil {
		return nil, err
	}
	return s.Media.Generation().Menu(kind, s.BaseURL+s.kind(kind).Path, s.BaseURL+PurchasesPath), nil
}

func (s *Service) statusURL(k Kind, runID string) string {
	return s.BaseURL + k.Path + "?" + s.ticketQuery(k, runID)
}

func (s *Service) retryURL(k Kind, runID string) string {
	return s.BaseURL + k.Path + "/retry?" + s.ticketQuery(k, runID)
}

func (s *Service) ticketQuery(k Kind, runID string) string {
	return "runId=" + url.QueryEscape(runID) + "&token=" + url.QueryEscape(s.Media.Tickets.Issue(k.Name, runID))
}

func (s *Service) fileURL(key string) string { return FileURL(s.BaseURL, s.Media.Files, key) }
