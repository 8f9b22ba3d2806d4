// Package quota is the per-account bound on what a caller can create
// (docs/accounts.md, "Quotas"): the resources, their limits from
// configuration, the one refusal every create path answers when the last
// slot is taken, and the usage report the owner reads. The counting and
// the race-safe check live in the store (store.Quota): the count and the
// insert share one transaction under a per-account, per-resource lock, so
// two concurrent creates cannot both take the last slot.
package quota

import (
	"context"
	"fmt"

	"conduit/internal/errs"
)

// Resource names a bounded resource, as the usage report names it.
type Resource string

// The resources this package bounds by count; MediaBytes is counted by
// the library (internal/library), which plugs in as a Source.
const (
	Enclaves   Resource = "enclaves"
	Tasks      Resource = "tasks"
	APIKeys    Resource = "apiKeys"
	Pipelines  Resource = "pipelines"
	MediaBytes Resource = "mediaBytes"
	// The PII vault's subjects and tokens (internal/vault, which plugs in
	// as a Source). Deleted subjects and their tokens count too: their
	// rows stay (the key destroyed) so a read answers 410 Gone.
	PIISubjects Resource = "piiSubjects"
	PIITokens   Resource = "piiTokens"
	// ZKKeys are verification keys an account registered first; ZKJobs
	// its proof jobs still open (docs/proofs.md).
	ZKKeys Resource = "zkKeys"
	ZKJobs Resource = "zkJobs"
	// KYCProofs are an account's KYC proofs not yet expired.
	KYCProofs Resource = "kycProofs"
	// ZKPassportRequests are open zkPassport requests (internal/zkpassport;
	// limit zkpassport.max_open).
	ZKPassportRequests Resource = "zkpassportRequests"
)

// Code is the machine-readable code of a quota refusal.
const Code = "QUOTA_EXCEEDED"

// Limits are the per-account limits (config quota.*). Zero means no
// limit: a deliberate configuration choice, never a default.
type Limits struct {
	Enclaves  int64
	Tasks     int64
	APIKeys   int64
	Pipelines int64
	// The PII vault's (internal/vault checks these itself).
	PIISubjects int64
	PIITokens   int64
}

// Of is the limit of r (0: none).
func (l Limits) Of(r Resource) int64 {
	switch r {
	case Enclaves:
		return l.Enclaves
	case Tasks:
		return l.Tasks
	case APIKeys:
		return l.APIKeys
	case Pipelines:
		return l.Pipelines
	case PIISubjects:
		return l.PIISubjects
	case PIITokens:
		return l.PIITokens
	}
	return 0
}

// what says what one unit of a resource is, in a sentence.
var what = map[Resource]string{
	Enclaves:           "enclaves (not DESTROYED or FAILED)",
	Tasks:              "scheduled tasks",
	APIKeys:            "API keys",
	Pipelines:          "pipelines",
	MediaBytes:         "bytes of media",
	PIISubjects:        "PII vault subjects (deleted ones included)",
	PIITokens:          "PII vault tokens (those of deleted subjects included)",
	ZKKeys:             "registered verification keys",
	ZKJobs:             "proof jobs still open",
	KYCProofs:          "KYC proofs not yet expired",
	ZKPassportRequests: "open zkPassport requests (neither verified nor expired)",
}

// free says how the owner frees a slot.
var free = map[Resource]string{
	Enclaves:           "terminate one you no longer need",
	Tasks:              "delete one you no longer need",
	APIKeys:            "delete one you no longer use",
	Pipelines:          "reuse an existing pipeline",
	MediaBytes:         "delete media you no longer need",
	ZKKeys:             "reuse a registered key by its vkHash",
	ZKJobs:             "wait for open jobs to finish",
	KYCProofs:          "wait for older proofs to expire",
	ZKPassportRequests: "wait for one to be verified or to expire",
}

// Exceeded is the refusal of a create that would pass the limit: 429
// with code QUOTA_EXCEEDED and the resource, its use and its limit beside
// the message. Nothing was created.
func Exceeded(r Resource, used, limit int64) *errs.Error {
	return ExceededBy(r, used, 1, limit)
}

// ExceededBy is Exceeded for a create of several units at once (a batch
// of vault tokens): used plus adding would pass the limit.
func ExceededBy(r Resource, used, adding, limit int64) *errs.Error {
	msg := fmt.Sprintf("quota exceeded: this account has %d of its %d %s", used, limit, what[r])
	if adding > 1 {
		msg += fmt.Sprintf(" and this request would add %d", adding)
	}
	msg += "; nothing was created"
	if f := free[r]; f != "" {
		msg += "; " + f + ", or ask the operator to raise the quota"
	} else {
		msg += "; ask the operator to raise the quota"
	}
	e := &errs.Error{Kind: errs.TooManyRequests, Code: Code, Msg: msg,
		Extra: map[string]any{"resource": string(r), "used": used, "limit": limit}}
	if adding > 1 {
		e.Extra["requested"] = adding
	}
	return e
}

// Item is one resource's use. Limit is null on the wire when there is
// none.
type Item struct {
	Resource Resource `json:"resource"`
	Used     int64    `json:"used"`
	Limit    *int64   `json:"limit"`
}

// Source reports the use of some resources for an account. The store
// counts enclaves, tasks, API keys and pipelines; the media library adds
// media bytes and the PII vault its subjects and tokens (their own Sources).
type Source interface {
	Usage(ctx context.Context, account string) ([]Item, error)
}

// Counter counts an account's use of the count-bounded resources (the
// store).
type Counter interface {
	Count(ctx context.Context, account string, r Resource) (int64, error)
}

// Counted is the Source of the count-bounded resources, with their limits.
type Counted struct {
	Counter Counter
	Limits  Limits
}

// Usage counts each count-bounded resource.
func (c Counted) Usage(ctx context.Context, account string) ([]Item, error) {
	var bounds []Bound
	for _, r := range []Resource{Enclaves, Tasks, APIKeys, Pipelines} {
		bounds = append(bounds, Bound{r, c.Limits.Of(r)})
	}
	return CountEach(ctx, c.Counter, account, bounds...)
}

// Bound is a counted resource and its limit (0: none).
type Bound struct {
	Resource Resource
	Limit    int64
}

// CountEach is account's use of each bounded resource, as the usage
// report lists it: how a service whose own quotas it checks (the vault,
// the proofs) reports them.
func CountEach(ctx context.Context, c Counter, account string, bounds ...Bound) ([]Item, error) {
	out := make([]Item, 0, len(bounds))
	for _, b := range bounds {
		n, err := c.Count(ctx, account, b.Resource)
		if err != nil {
			return nil, err
		}
		out = append(out, Item{Resource: b.Resource, Used: n, Limit: limitPtr(b.Limit)})
	}
	return out, nil
}

// limitPtr is an Item's limit from a configured value (0: none).
func limitPtr(n int64) *int64 {
	if n <= 0 {
		return nil
	}
	return &n
}

// Usage is the owner's usage report.
type Usage struct {
	Resources []Item `json:"resources"`
}

// Service answers the owner's usage from its sources, in order.
type Service struct {
	Sources []Source
}

// Usage is account's use of every bounded resource.
func (s *Service) Usage(ctx context.Context, account string) (Usage, error) {
	out := Usage{Resources: []Item{}}
	for _, src := range s.Sources {
		items, err := src.Usage(ctx, account)
		if err != nil {
			return Usage{}, err
		}
		out.Resources = append(out.Resources, items...)
	}
	return out, nil
}
