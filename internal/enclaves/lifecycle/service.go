package lifecycle

import (
	"context"
	"errors"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"conduit/activities"
	"conduit/internal/codec"
	"conduit/internal/enclaves"
	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/quota"
	"conduit/internal/store"
	"conduit/workflows"
)

// Service is the enclave API's one domain service: it creates enclaves
// (their lifecycle admits itself), reads, patches and deletes their
// records, asks their lifecycles for pause, resume, terminate and retry,
// reads their logs, and has them attest and sign (signing.go). The HTTP
// handlers decode, call one method, encode.
type Service struct {
	Store    *store.Store
	Temporal client.Client
	// Namespace is the Temporal namespace (the stuck list's query).
	Namespace string
	// Secrets seals registry credentials, github tokens and raw keys; nil
	// refuses private registries, github tokens and raw keys.
	Secrets *codec.Codec
	// Builds says github sources can be built (enclaves.build_registry).
	Builds bool
	// Providers are the providerIds (and regions) enclaves may be created
	// with; nil means the local provider alone.
	Providers enclaves.Offered
	// The lifecycle's timings, carried in its input.
	LogEvery, HeartbeatTimeout, RetryMax, GiveUpAfter time.Duration
	// Limit bounds the enclaves an account holds (quota.enclaves; 0:
	// none); MeterEvery is how often a DEPLOYED enclave's uptime is
	// metered (metering.enclave_period; 0: not metered), carried in the
	// lifecycle's input.
	Limit      int64
	MeterEvery time.Duration
}

// Load reads enclave id on behalf of account: another account's enclave
// does not exist for the caller (NotFound).
func (s *Service) Load(ctx context.Context, account, id string) (enclaves.Enclave, error) {
	e, err := s.Store.Enclave(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return e, enclaves.NotFound(id)
	}
	if err != nil {
		return e, err
	}
	return enclaves.Owned(e, account)
}

// Usage is the bytes the account's enclaves take on their providers'
// disks (their unpacked images), as recorded when each was prepared; the
// quota is enclaves.limits.account_bytes (docs/enclaves.md, "Limits").
func (s *Service) Usage(ctx context.Context, account string) (int64, error) {
	return s.Store.EnclaveDiskBytes(ctx, account)
}

// List is the account's enclaves.
func (s *Service) List(ctx context.Context, account string) ([]enclaves.Enclave, error) {
	return s.Store.Enclaves(ctx, account)
}

// Create validates c, seals its secrets and starts the enclave's
// lifecycle, whose first step writes the record (PENDING_DEPLOY, or
// PENDING_BUILD for a github source); the record is answered. Nothing is
// written unless the lifecycle exists (workflows.Enclave, admit).
func (s *Service) Create(ctx context.Context, account string, c enclaves.Create) (enclaves.Enclave, error) {
	if err := c.ValidateFor(s.Providers); err != nil {
		return enclaves.Enclave{}, err
	}
	id := store.NewEnclaveID()
	n := activities.NewEnclave{ID: id, Account: account, Status: enclaves.PendingDeploy}
	if c.SourceType == enclaves.SourceGitHub {
		n.Status = enclaves.PendingBuild
		if !s.Builds {
			return enclaves.Enclave{}, errs.Invalidf(`sourceType "github" is not available: no registry to push built images to is configured (enclaves.build_registry)`)
		}
		if c.GitHub.Token != "" {
			if s.Secrets == nil {
				return enclaves.Enclave{}, errs.Invalidf(`githubConnection.token cannot be kept: no key to keep secrets is configured (enclaves.secret_keys); leave it out for a public repository`)
			}
			var err error
			if n.GitHubToken, err = s.Secrets.Seal([]byte(c.GitHub.Token), enclaves.GitHubSecretPurpose(id)); err != nil {
				return enclaves.Enclave{}, err
			}
		}
	}
	if c.SourceType == enclaves.SourcePrivateRegistry {
		if s.Secrets == nil {
			return enclaves.Enclave{}, errs.Invalidf(`sourceType "private-registry" is not available: no key to keep registry credentials is configured (enclaves.secret_keys)`)
		}
		var err error
		if n.RegistrySecret, err = s.Secrets.Seal([]byte(c.RegistryPassword), enclaves.SecretPurpose(id)); err != nil {
			return enclaves.Enclave{}, err
		}
	}
	// Plain secrets stay out of the workflow's history: only their sealed
	// forms travel.
	c.RegistryPassword = ""
	if c.GitHub != nil {
		gh := *c.GitHub
		gh.Token = ""
		c.GitHub = &gh
	}
	n.Create = c
	// The account's place is taken before the lifecycle starts and held
	// until its record is written: a full account starts nothing, and two
	// creates at once cannot both take the last place (store.Slot).
	slot, err := s.Store.TakeSlot(ctx, account, quota.Enclaves, s.Limit)
	if err != nil {
		return enclaves.Enclave{}, err
	}
	defer slot.Release(ctx)
	in := workflows.EnclaveInput{ID: id, Account: account, Ref: c.ProviderConfig.DockerImage, Source: c.SourceType, Provider: c.ProviderID,
		HeartbeatTimeout: s.HeartbeatTimeout, LogEvery: s.LogEvery, RetryMax: s.RetryMax, GiveUpAfter: s.GiveUpAfter, Admit: &n,
		MeterEvery: s.MeterEvery}
	_, err = s.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.EnclaveWorkflowID(id), TaskQueue: workflows.EnclaveQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: workflows.EnclaveSearchAttributes(id, account, n.Status, time.Now()),
	}, workflows.WfEnclave, in)
	if err != nil {
		// Nothing was written: the record comes only after its lifecycle.
		logging.From(ctx).Error("starting an enclave's lifecycle failed", "enclave", id, "err", err)
		return enclaves.Enclave{}, &errs.Error{Kind: errs.Unavailable, Msg: "the enclave could not be started now; try again shortly", Extra: map[string]any{"id": id}}
	}
	// The lifecycle's first step writes the same record; written here too,
	// the answer and the record are there at once, even before a worker
	// takes the lifecycle up.
	rec, err := slot.CreateEnclave(ctx, n.Record())
	if err != nil {
		// The lifecycle writes it when it runs: the enclave is created.
		logging.From(ctx).Warn("an enclave's record is left to its lifecycle", "enclave", id, "err", err)
		now := time.Now()
		rec = enclaves.Enclave{ID: id, AccountID: account, Name: c.Name, Description: c.Description, ProviderID: c.ProviderID,
			Region: c.Region, ProviderConfig: *c.ProviderConfig, SourceType: c.SourceType, RegistryUsername: c.RegistryUsername,
			Status: n.Status, CreatedAt: now, UpdatedAt: now}
		if c.GitHub != nil {
			rec.GitHub = enclaves.GitHubConnection{IsConnected: len(n.GitHubToken) > 0, Username: c.GitHub.Username,
				SelectedRepo: c.GitHub.SelectedRepo, SelectedBranch: c.GitHub.SelectedBranch}
		}
	}
	// The answer is the enclave as admitted: a quick worker may have moved
	// the record on (BUILDING, DEPLOYING) before it was read.
	rec.Status = n.Status
	return rec, nil
}

// Patch changes name, description or providerConfig, only before
// deployment (409 naming the state otherwise).
func (s *Service) Patch(ctx context.Context, e enclaves.Enclave, pt enclaves.Patch) (enclaves.Enclave, error) {
	if err := pt.ValidateFor(e.SourceType); err != nil {
		return e, err
	}
	var allowed []enclaves.Status
	for st := range enclaves.Transitions {
		if enclaves.Allowed(enclaves.Update, st) == nil {
			allowed = append(allowed, st)
		}
	}
	slices.Sort(allowed)
	e, changed, err := s.Store.PatchEnclave(ctx, e.ID, pt, allowed)
	if err != nil {
		return e, err
	}
	if !changed {
		return e, enclaves.Allowed(enclaves.Update, e.Status)
	}
	return e, nil
}

// Delete removes a DESTROYED or FAILED enclave's record (409 otherwise).
func (s *Service) Delete(ctx context.Context, e enclaves.Enclave) error {
	ok, err := s.Store.DeleteEnclave(ctx, e.ID)
	if err != nil || ok {
		return err
	}
	if e, err = s.Store.Enclave(ctx, e.ID); err != nil {
		return err
	}
	return enclaves.Allowed(enclaves.Delete, e.Status)
}

// Updates name the lifecycle update of each action a caller may ask.
var Updates = map[enclaves.Action]string{
	enclaves.Pause: workflows.EnclavePause, enclaves.Resume: workflows.EnclaveResume,
	enclaves.Terminate: workflows.EnclaveTerminate, enclaves.Retry: workflows.EnclaveRetry,
}

// Act asks e's lifecycle for a (pause, resume, terminate, retry). The
// workflow's validator decides against the live state: a refusal is a
// Conflict naming it, and nothing changes. The answer is the record
// after the update.
func (s *Service) Act(ctx context.Context, e enclaves.Enclave, a enclaves.Action) (enclaves.Enclave, error) {
	if e.Status == enclaves.Destroyed || e.Status == enclaves.Failed {
		// The lifecycle has ended: nothing is running to ask.
		return e, enclaves.Allowed(a, e.Status)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	_, err := Ask(waitCtx, s.Temporal, e.ID, Updates[a])
	switch _, refused := errs.As(err); {
	case err == nil:
	case refused:
		return e, err
	case errors.Is(err, ErrEnded):
		// The workflow ended between the read and the update.
		if e, err = s.Store.Enclave(ctx, e.ID); err != nil {
			return e, err
		}
		return e, enclaves.Allowed(a, e.Status)
	default:
		logging.From(ctx).Error("an enclave update failed", "enclave", e.ID, "update", Updates[a], "err", err)
		return e, errs.Unavailablef("the enclave could not be reached now; try again shortly")
	}
	return s.Store.Enclave(ctx, e.ID)
}

// Logs answers e's log entries of typ ("all" or one of enclaves.LogTypes),
// the newest limit of them, oldest first. The stepfunctions entries are
// the lifecycle's history, read from Temporal.
func (s *Service) Logs(ctx context.Context, e enclaves.Enclave, typ string, limit int) ([]enclaves.LogEntry, error) {
	if typ != "all" && !slices.Contains(enclaves.LogTypes, typ) {
		return nil, errs.Invalidf("logType must be all, application, ecs, stepfunctions, lambda, build or errors")
	}
	if limit < 1 || limit > enclaves.MaxLogLimit {
		return nil, errs.Invalidf("limit must be a whole number from 1 to %d", enclaves.MaxLogLimit)
	}
	var logs []enclaves.LogEntry
	var err error
	if typ != "stepfunctions" {
		if logs, err = s.Store.EnclaveLogs(ctx, e.ID, typ, limit); err != nil {
			return nil, err
		}
	}
	if typ == "stepfunctions" || typ == "all" {
		steps, err := History(ctx, s.Temporal, e.ID)
		if err != nil {
			logging.From(ctx).Error("reading an enclave's history failed", "enclave", e.ID, "err", err)
			return nil, errs.Unavailablef("the enclave's lifecycle history could not be read now; try again shortly")
		}
		logs = enclaves.Newest(append(logs, steps...), limit)
	}
	if logs == nil {
		logs = []enclaves.LogEntry{}
	}
	return logs, nil
}

// Stuck lists the enclaves building or deploying for longer than d, with
// the step each waits on and its last failure (the operator's list).
func (s *Service) Stuck(ctx context.Context, d time.Duration) ([]Stuck, error) {
	list, err := ListStuck(ctx, s.Temporal, s.Namespace, d)
	if err != nil {
		logging.From(ctx).Error("listing stuck enclaves failed", "err", err)
		return nil, errs.Unavailablef("Temporal could not be asked now; try again shortly")
	}
	if list == nil {
		list = []Stuck{}
	}
	return list, nil
}

// RetryNow has the step of enclave id that waits to be retried run now,
// whoever owns it (the operator's resume); the answer is the lifecycle's
// state.
func (s *Service) RetryNow(ctx context.Context, id string) (workflows.EnclaveState, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := Ask(ctx, s.Temporal, id, workflows.EnclaveRetry)
	if errors.Is(err, ErrEnded) && s.Store == nil {
		// Without the store (the operator's CLI talks to Temporal only)
		// an ended lifecycle cannot be told from a missing enclave.
		return st, err
	}
	if errors.Is(err, ErrEnded) {
		e, rerr := s.Store.Enclave(ctx, id)
		switch {
		case errors.Is(rerr, store.ErrNotFound):
			err = errs.NotFoundf("no enclave %s", id)
		case rerr == nil:
			err = errs.Conflictf("the enclave is %s; its lifecycle has ended", e.Status)
		}
	}
	if _, known := errs.As(err); err != nil && !known {
		logging.From(ctx).Error("retrying an enclave's step failed", "enclave", id, "err", err)
		err = errs.Unavailablef("the enclave could not be reached now; try again shortly")
	}
	return st, err
}
