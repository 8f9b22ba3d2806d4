package redactproxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"conduit/internal/errs"
	"conduit/internal/imagefetch"
	"conduit/internal/paging"
	"conduit/internal/pgtext"
	"conduit/internal/redactlog"
	"conduit/internal/store"
	"conduit/internal/vault"
)

// Styles of upstream.
const (
	StyleOpenAI    = "openai"
	StyleAzure     = "azure"
	StyleAnthropic = "anthropic"
	StyleCustom    = "custom"
)

// Proxy is a redaction proxy as the API shows it: the upstream key is
// never shown, only whether one is stored.
type Proxy struct {
	ID           string            `json:"id"`
	Name         string            `json:"name"`
	Style        string            `json:"style"`
	BaseURL      string            `json:"baseUrl,omitempty"`
	APIVersion   string            `json:"apiVersion,omitempty"`
	Models       map[string]string `json:"models"`
	DefaultModel string            `json:"defaultModel,omitempty"`
	HasKey       bool              `json:"hasUpstreamKey"`
	Policy       Policy            `json:"policy"`
	Output       Output            `json:"output"`
	Audit        bool              `json:"audit"`
	CreatedAt    time.Time         `json:"createdAt"`
	UpdatedAt    time.Time         `json:"updatedAt"`

	sealedKey []byte
}

// ProxyArgs create or replace a proxy. UpstreamKey is write-only: nil
// keeps the stored one on update, "" removes it.
type ProxyArgs struct {
	Name         string            `json:"name"`
	Style        string            `json:"style"`
	BaseURL      string            `json:"baseUrl,omitempty"`
	APIVersion   string            `json:"apiVersion,omitempty"`
	Models       map[string]string `json:"models,omitempty"`
	DefaultModel string            `json:"defaultModel,omitempty"`
	UpstreamKey  *string           `json:"upstreamKey,omitempty"`
	Policy       *Policy           `json:"policy,omitempty"`
	Output       Output            `json:"output,omitempty"`
	Audit        *bool             `json:"audit,omitempty"`
}

// Service is the proxies' domain service: CRUD and the chat endpoint.
type Service struct {
	Store *store.Store
	// Master seals upstream keys (nil: keys cannot be stored).
	Master *vault.Master
	// Fetcher judges and reaches caller-named upstream hosts (its rules:
	// internal/imagefetch).
	Fetcher *imagefetch.Fetcher
	// Log records calls (nil: not recorded).
	Log *redactlog.Service
	// OpenAIURL and AnthropicURL are the default base URLs of the styles.
	OpenAIURL, AnthropicURL string
	Timeout                 time.Duration
	MaxProxies              int
	// HashKey keys the hash action (with the account id).
	HashKey []byte

	clientOnce sync.Once
	client     *http.Client
}

// httpClient is the one client every upstream call shares (its pinned,
// checked connections are kept alive between calls).
func (s *Service) httpClient() *http.Client {
	s.clientOnce.Do(func() { s.client = s.Fetcher.Client("the proxy's upstream") })
	return s.client
}

func (s *Service) check(ctx context.Context, a *ProxyArgs, update bool) error {
	var p errs.Problems
	a.Name = strings.TrimSpace(a.Name)
	if a.Name == "" || utf8.RuneCountInString(a.Name) > 100 {
		p.Add("name", "must be 1 to 100 characters")
	}
	switch a.Style {
	case StyleOpenAI, StyleAnthropic:
	case StyleAzure, StyleCustom:
		if a.BaseURL == "" {
			p.Add("baseUrl", "is required for the "+a.Style+" style")
		}
	default:
		p.Add("style", "must be openai, azure, anthropic or custom")
	}
	if a.Style == StyleAzure && a.APIVersion == "" {
		p.Add("apiVersion", "is required for the azure style (e.g. 2024-10-21)")
	}
	if len(a.APIVersion) > 40 || strings.ContainsAny(a.APIVersion, "&?#/ ") {
		p.Add("apiVersion", "must be a plain version string")
	}
	if len(a.Models) > 100 {
		p.Add("models", "may map at most 100 models")
	}
	for k, v := range a.Models {
		if k == "" || v == "" || len(k) > 200 || len(v) > 200 || strings.ContainsAny(v, "/?#") {
			p.Add("models", "each entry maps a non-empty model name to a non-empty upstream model or deployment name (no / ? #)")
			break
		}
	}
	if len(a.DefaultModel) > 200 || strings.ContainsAny(a.DefaultModel, "/?#") {
		p.Add("defaultModel", "must be a model or deployment name (no / ? #)")
	}
	if a.Output == "" {
		a.Output = OutRestore
	}
	if a.Output != OutRestore && a.Output != OutRedact {
		p.Add("output", "must be restore or redact")
	}
	if a.Policy == nil {
		a.Policy = &Policy{}
	}
	if pol, err := a.Policy.Check(); err != nil {
		p.Add("policy", err.Error())
	} else {
		a.Policy = &pol
	}
	if a.UpstreamKey != nil {
		if len(*a.UpstreamKey) > 1000 {
			p.Add("upstreamKey", "must be at most 1000 characters")
		}
		if *a.UpstreamKey != "" && s.Master == nil {
			p.Add("upstreamKey", "cannot be stored on this deployment (no vault key is configured); send x-model-key with each call instead")
		}
	}
	if err := p.Err("proxy"); err != nil {
		return err
	}
	if a.BaseURL != "" {
		a.BaseURL = strings.TrimRight(a.BaseURL, "/")
		if err := s.Fetcher.CheckHost(ctx, a.BaseURL, "baseUrl", 4*time.Second); err != nil {
			return urlError(err)
		}
		if u, _ := url.Parse(a.BaseURL); u != nil && (u.RawQuery != "" || u.Fragment != "") {
			return errs.Field("baseUrl", "must not carry a query or fragment")
		}
	}
	return nil
}

func urlError(err error) error {
	var ie *imagefetch.Error
	if errors.As(err, &ie) {
		return errs.Invalidf("%s", ie.Message).With("code", strings.Replace(ie.Code, "IMAGE_", "UPSTREAM_", 1))
	}
	return err
}

func (s *Service) toRow(accountID, id string, a ProxyArgs) (store.RedactionProxy, error) {
	models, _ := json.Marshal(orEmpty(a.Models))
	pol, _ := json.Marshal(a.Policy)
	audit := true
	if a.Audit != nil {
		audit = *a.Audit
	}
	row := store.RedactionProxy{ID: id, AccountID: accountID, Name: a.Name, Style: a.Style, BaseURL: a.BaseURL, APIVersion: a.APIVersion,
		DefaultModel: a.DefaultModel, Output: string(a.Output), Models: models, Policy: pol, Audit: audit}
	if a.UpstreamKey != nil && *a.UpstreamKey != "" {
		sealed, err := s.Master.Seal([]byte(*a.UpstreamKey), keyPurpose(id))
		if err != nil {
			return row, err
		}
		row.UpstreamKey = sealed
	}
	return row, nil
}

func keyPurpose(proxyID string) string { return "redaction-proxy-upstream-key/" + proxyID }

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func fromRow(r store.RedactionProxy) Proxy {
	p := Proxy{ID: r.ID, Name: r.Name, Style: r.Style, BaseURL: r.BaseURL, APIVersion: r.APIVersion, DefaultModel: r.DefaultModel,
		Output: Output(r.Output), Audit: r.Audit, HasKey: len(r.UpstreamKey) > 0, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, sealedKey: r.UpstreamKey}
	_ = json.Unmarshal(r.Models, &p.Models)
	_ = json.Unmarshal(r.Policy, &p.Policy)
	p.Models = orEmpty(p.Models)
	return p
}

func storeErr(err error) error {
	switch {
	case errors.Is(err, store.ErrNameTaken):
		return errs.Conflictf("another proxy of this account is already named so")
	case errors.Is(err, store.ErrLimit):
		return errs.New(errs.Conflict, "this account already has the most proxies it may keep; delete one first")
	case errors.Is(err, store.ErrNotFound):
		return errs.NotFoundf("no such proxy")
	}
	return err
}

// Create stores a new proxy.
func (s *Service) Create(ctx context.Context, accountID string, a ProxyArgs) (Proxy, error) {
	if err := s.check(ctx, &a, false); err != nil {
		return Proxy{}, err
	}
	id := store.NewID("rpx")
	row, err := s.toRow(accountID, id, a)
	if err != nil {
		return Proxy{}, err
	}
	out, err := s.Store.CreateRedactionProxy(ctx, row, s.MaxProxies)
	if err != nil {
		return Proxy{}, storeErr(err)
	}
	return fromRow(out), nil
}

// Get reads one proxy of the account.
func (s *Service) Get(ctx context.Context, accountID, id string) (Proxy, error) {
	r, err := s.Store.RedactionProxy(ctx, accountID, id)
	if err != nil {
		return Proxy{}, storeErr(err)
	}
	return fromRow(r), nil
}

// ProxyPage is a page of proxies.
type ProxyPage struct {
	Proxies   []Proxy `json:"proxies"`
	NextAfter string  `json:"nextAfter,omitempty"`
}

// List pages through the account's proxies, oldest first.
func (s *Service) List(ctx context.Context, accountID string, after paging.Token, limit int) (ProxyPage, error) {
	if limit == 0 {
		limit = 100
	}
	if limit < 1 || limit > 100 {
		return ProxyPage{}, errs.Invalidf("limit must be 1 to 100")
	}
	if after.Value != "" {
		if _, err := s.Store.RedactionProxy(ctx, accountID, after.Value); err != nil {
			return ProxyPage{}, after.Foreign()
		}
	}
	rows, err := s.Store.RedactionProxies(ctx, accountID, after.Value, limit+1)
	if err != nil {
		return ProxyPage{}, err
	}
	page := ProxyPage{Proxies: []Proxy{}}
	for i, r := range rows {
		if i == limit {
			page.NextAfter = rows[i-1].ID
			break
		}
		page.Proxies = append(page.Proxies, fromRow(r))
	}
	return page, nil
}

// Update replaces a proxy's settings; an absent upstreamKey keeps the
// stored key.
func (s *Service) Update(ctx context.Context, accountID, id string, a ProxyArgs) (Proxy, error) {
	if _, err := s.Get(ctx, accountID, id); err != nil {
		return Proxy{}, err
	}
	if err := s.check(ctx, &a, true); err != nil {
		return Proxy{}, err
	}
	row, err := s.toRow(accountID, id, a)
	if err != nil {
		return Proxy{}, err
	}
	out, err := s.Store.UpdateRedactionProxy(ctx, row, a.UpstreamKey == nil)
	if err != nil {
		return Proxy{}, storeErr(err)
	}
	return fromRow(out), nil
}

// Delete removes a proxy and forgets its key.
func (s *Service) Delete(ctx context.Context, accountID, id string) error {
	return storeErr(s.Store.DeleteRedactionProxy(ctx, accountID, id))
}

// find picks the proxy a call names in x-svc-proxy: its id or its name.
func (s *Service) find(ctx context.Context, accountID, ref string) (Proxy, error) {
	if ref == "" {
		return Proxy{}, errs.Invalidf("the x-svc-proxy header must name one of your redaction proxies (its id or name)")
	}
	if why := pgtext.Problem(ref); why != "" || len(ref) > 200 {
		return Proxy{}, errs.Invalidf("the x-svc-proxy header is not a proxy id or name")
	}
	r, err := s.Store.RedactionProxy(ctx, accountID, ref)
	if errors.Is(err, store.ErrNotFound) {
		r, err = s.Store.RedactionProxyByName(ctx, accountID, ref)
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Proxy{}, errs.NotFoundf("no redaction proxy of yours is named %q (x-svc-proxy)", ref)
		}
		return Proxy{}, err
	}
	return fromRow(r), nil
}

// upstreamKey is the key for this call: x-model-key when sent, else the
// stored one.
func (s *Service) upstreamKey(p Proxy, override string) (string, error) {
	if override != "" {
		return override, nil
	}
	if len(p.sealedKey) == 0 {
		return "", errs.Invalidf("proxy %s stores no upstream key: send one in the x-model-key header", p.Name)
	}
	if s.Master == nil {
		return "", errs.Unavailablef("the proxy's stored upstream key cannot be opened (no vault key is configured); send x-model-key")
	}
	k, err := s.Master.Open(p.sealedKey, keyPurpose(p.ID))
	if err != nil {
		return "", errs.Unavailablef("the proxy's stored upstream key cannot be opened with the configured vault keys; store it again or send x-model-key")
	}
	return string(k), nil
}
