// Package enclaves is the enclave domain: the record a caller sees, the
// lifecycle state table of spec §3.3 as data, and validation of what a
// caller may create or change. The lifecycle itself runs as one durable
// workflow per enclave (workflows.Enclave); the PostgreSQL record is its
// projection.
package enclaves

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"conduit/internal/enclaves/build"
	"conduit/internal/errs"
)

// Status is a lifecycle state (spec §3.3).
type Status string

const (
	PendingBuild   Status = "PENDING_BUILD"
	Building       Status = "BUILDING"
	BuildFailed    Status = "BUILD_FAILED"
	PendingDeploy  Status = "PENDING_DEPLOY"
	Deploying      Status = "DEPLOYING"
	Deployed       Status = "DEPLOYED"
	Pausing        Status = "PAUSING"
	Paused         Status = "PAUSED"
	Resuming       Status = "RESUMING"
	PendingDestroy Status = "PENDING_DESTROY"
	Destroying     Status = "DESTROYING"
	Destroyed      Status = "DESTROYED"
	Failed         Status = "FAILED"
)

// Action is what a caller asks of a live enclave.
type Action string

const (
	Pause     Action = "pause"
	Resume    Action = "resume"
	Terminate Action = "terminate"
	Delete    Action = "delete"
	Update    Action = "update"
	// Retry runs a build or deployment step that is waiting to be retried
	// now.
	Retry Action = "retry"
)

// Transitions is the §3.3 table: the states each state may move to. The
// workflow moves only along it (TestTransitionsAreTheTable checks the
// workflow's steps against it).
var Transitions = map[Status][]Status{
	PendingBuild:   {Building, PendingDestroy, Failed},
	Building:       {BuildFailed, PendingDeploy, PendingDestroy, Failed},
	BuildFailed:    {PendingDestroy},
	PendingDeploy:  {Deploying, PendingDestroy, Failed},
	Deploying:      {Deployed, PendingDestroy, Failed},
	Deployed:       {Pausing, PendingDestroy, Failed},
	Pausing:        {Paused, Failed},
	Paused:         {Resuming, PendingDestroy, Failed},
	Resuming:       {Deployed, Failed},
	PendingDestroy: {Destroying},
	Destroying:     {Destroyed, Failed},
	Destroyed:      nil,
	// A failed enclave runs nothing (its provider resources are removed
	// when it fails); it can only be deleted.
	Failed: nil,
}

// CanMove says whether the table allows from → to.
func CanMove(from, to Status) bool {
	for _, s := range Transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Allowed says whether a caller's action is allowed in state s; when it
// is not, the error is a Conflict naming the state (409).
func Allowed(a Action, s Status) error {
	ok := false
	switch a {
	case Pause:
		ok = s == Deployed
	case Resume:
		ok = s == Paused
	case Terminate:
		ok = CanMove(s, PendingDestroy)
	case Delete:
		ok = s == Destroyed || s == Failed
	case Update:
		ok = s == PendingBuild || s == Building || s == BuildFailed || s == PendingDeploy
	case Retry:
		ok = s == PendingBuild || s == Building || s == PendingDeploy || s == Deploying
	}
	if ok {
		return nil
	}
	e := errs.Conflictf("the enclave is %s; %s", s, refusal(a, s))
	e.Extra = map[string]any{"status": string(s)}
	return e
}

func refusal(a Action, s Status) string {
	switch a {
	case Pause:
		return "only a DEPLOYED enclave can be paused"
	case Resume:
		return "only a PAUSED enclave can be resumed"
	case Terminate:
		if s == Destroyed {
			return "it is already destroyed"
		}
		if s == Failed {
			return "nothing runs in a failed enclave; delete it"
		}
		return "it cannot be terminated while " + strings.ToLower(string(s)) + "; try again in a moment"
	case Delete:
		return "only a DESTROYED or FAILED enclave can be deleted; terminate it first"
	case Retry:
		return "only an enclave that is building or deploying can have a step waiting to be retried"
	case Update:
		return "name, description and providerConfig can only change before it is deployed"
	}
	return "that is not possible now"
}

// Final says whether s never changes again.
func (s Status) Final() bool { return s == Destroyed }

// Source types.
const (
	SourceRegistry        = "registry"
	SourcePrivateRegistry = "private-registry"
	SourceGitHub          = "github"
)

// ProviderConfig is how the enclave runs.
type ProviderConfig struct {
	DockerImage string `json:"dockerImage"`
	CPUCount    int    `json:"cpuCount"`
	MemoryMiB   int    `json:"memoryMiB"`
}

// GitHubConnection is the github source (the token is write-only).
type GitHubConnection struct {
	IsConnected    bool   `json:"isConnected"`
	Username       string `json:"username"`
	SelectedRepo   string `json:"selectedRepo"`
	SelectedBranch string `json:"selectedBranch"`
}

// Enclave is the record (spec §2.8).
type Enclave struct {
	ID               string
	AccountID        string
	Name             string
	Description      string
	ProviderID       string
	Region           string
	ProviderConfig   ProviderConfig
	SourceType       string
	RegistryUsername string
	GitHub           GitHubConnection
	// BuiltImage is the image a github source's build pushed (by digest),
	// BuiltCommit the commit it was built from; empty until built.
	BuiltImage    string
	BuiltCommit   string
	Status        Status
	ErrorMessage  string
	WalletAddress string
	PCRs          map[string]string
	Endpoint      string
	// LastFailure is the last failed attempt of a step being retried
	// (empty once the step succeeded or the enclave moved on).
	LastFailure Failure
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Failure is a failed attempt of a provisioning step that is retried.
type Failure struct {
	Message string    `json:"message"`
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
}

// Create is what a caller asks for. Secrets are write-only.
type Create struct {
	Name             string          `json:"name"`
	Description      string          `json:"description"`
	ProviderID       string          `json:"providerId"`
	Region           string          `json:"region"`
	ProviderConfig   *ProviderConfig `json:"providerConfig"`
	SourceType       string          `json:"sourceType"`
	RegistryUsername string          `json:"registryUsername"`
	RegistryPassword string          `json:"registryPassword"`
	GitHub           *GitHubCreate   `json:"githubConnection"`
}

// GitHubCreate is a github connection as a caller writes it.
type GitHubCreate struct {
	Username       string `json:"username"`
	SelectedRepo   string `json:"selectedRepo"`
	SelectedBranch string `json:"selectedBranch"`
	Token          string `json:"token"`
}

// Patch is what may change before deployment.
type Patch struct {
	Name           *string         `json:"name"`
	Description    *string         `json:"description"`
	ProviderConfig *ProviderConfig `json:"providerConfig"`
}

// Providers this platform runs, and their regions.
const (
	ProviderLocal    = "local"
	RegionLocal      = "local"
	ProviderAWSNitro = "aws-nitro" // when configured (enclaves.aws), in its one region
)

// Offered lists the providers a deployment runs, by providerId, with the
// regions each serves (the first is the default).
type Offered map[string][]string

// LocalOnly is what a deployment without other providers offers.
var LocalOnly = Offered{ProviderLocal: {RegionLocal}}

func (o Offered) ids() string {
	ids := make([]string, 0, len(o))
	for id := range o {
		ids = append(ids, fmt.Sprintf("%q", id))
	}
	slices.Sort(ids)
	return strings.Join(ids, ", ")
}

// Limits of a providerConfig.
const (
	MaxCPUCount  = 16
	MinMemoryMiB = 16
	MaxMemoryMiB = 65536
	MaxName      = 100
	MaxDesc      = 1000
)

// Validate checks a create request against the local provider alone; see
// ValidateFor.
func (c *Create) Validate() error { return c.ValidateFor(nil) }

// ValidateFor checks a create request and fills defaults (providerId local,
// region the provider's first, cpuCount 1, memoryMiB 256, sourceType
// registry). providerId must be one the deployment offers (nil: LocalOnly)
// and region one of that provider's.
func (c *Create) ValidateFor(offered Offered) error {
	if offered == nil {
		offered = LocalOnly
	}
	var p errs.Problems
	c.Name = strings.TrimSpace(c.Name)
	switch {
	case c.Name == "":
		p.Add("name", "is required")
	case len(c.Name) > MaxName:
		p.Add("name", fmt.Sprintf("is longer than %d characters", MaxName))
	}
	if len(c.Description) > MaxDesc {
		p.Add("description", fmt.Sprintf("is longer than %d characters", MaxDesc))
	}
	if c.ProviderID == "" {
		c.ProviderID = ProviderLocal
	}
	regions, ok := offered[c.ProviderID]
	switch {
	case !ok && c.ProviderID == ProviderAWSNitro:
		p.Add("providerId", fmt.Sprintf("%q is not configured here (enclaves.aws); use one of %s", c.ProviderID, offered.ids()))
	case !ok:
		p.Add("providerId", fmt.Sprintf("%q is not a provider here; use one of %s", c.ProviderID, offered.ids()))
	default:
		if c.Region == "" && len(regions) > 0 {
			c.Region = regions[0]
		}
		if !slices.Contains(regions, c.Region) {
			p.Add("region", fmt.Sprintf("%q is not a region of provider %q; use %q", c.Region, c.ProviderID, strings.Join(regions, `", "`)))
		}
	}
	if c.SourceType == "" {
		c.SourceType = SourceRegistry
	}
	switch c.SourceType {
	case SourceRegistry:
		if c.RegistryUsername != "" || c.RegistryPassword != "" {
			p.Add("registryUsername", `credentials are for sourceType "private-registry"`)
		}
	case SourcePrivateRegistry:
		if c.RegistryUsername == "" || c.RegistryPassword == "" {
			p.Add("registryPassword", "registryUsername and registryPassword are required for a private registry")
		}
	case SourceGitHub:
		if c.RegistryUsername != "" || c.RegistryPassword != "" {
			p.Add("registryUsername", `credentials are for sourceType "private-registry"`)
		}
		c.GitHub.validate(&p)
		if c.ProviderConfig == nil {
			c.ProviderConfig = &ProviderConfig{}
		}
	default:
		p.Add("sourceType", `must be "registry", "private-registry" or "github"`)
	}
	if c.GitHub != nil && c.SourceType != SourceGitHub {
		p.Add("githubConnection", `is only for sourceType "github"`)
	}
	if c.ProviderConfig == nil {
		p.Add("providerConfig", "is required (dockerImage, cpuCount, memoryMiB)")
	} else {
		c.ProviderConfig.validate(&p, "providerConfig.", c.SourceType)
	}
	return p.Err("the enclave")
}

// MaxGitHubUsername and MaxGitHubToken bound a github connection.
const (
	MaxGitHubUsername = 100
	MaxGitHubToken    = 1000
	DefaultBranch     = "main"
)

// validate checks a github connection and fills the default branch
// (main). githubConnection is required for a github source.
func (g *GitHubCreate) validate(p *errs.Problems) {
	if g == nil {
		p.Add("githubConnection", `is required for sourceType "github" (selectedRepo "owner/name", selectedBranch, username, token)`)
		return
	}
	g.SelectedRepo = strings.TrimSpace(g.SelectedRepo)
	g.SelectedBranch = strings.TrimSpace(g.SelectedBranch)
	g.Username = strings.TrimSpace(g.Username)
	if g.SelectedRepo == "" {
		p.Add("githubConnection.selectedRepo", `is required ("owner/name")`)
	} else if why := build.ValidRepo(g.SelectedRepo); why != "" {
		p.Add("githubConnection.selectedRepo", why)
	}
	if g.SelectedBranch == "" {
		g.SelectedBranch = DefaultBranch
	}
	if why := build.ValidBranch(g.SelectedBranch); why != "" {
		p.Add("githubConnection.selectedBranch", "is not a branch name: "+why)
	}
	if len(g.Username) > MaxGitHubUsername || strings.ContainsAny(g.Username, " :/\t\n") {
		p.Add("githubConnection.username", fmt.Sprintf("must be a user name of at most %d characters, without spaces, \":\" or \"/\"", MaxGitHubUsername))
	}
	if len(g.Token) > MaxGitHubToken || strings.ContainsAny(g.Token, " \t\r\n") {
		p.Add("githubConnection.token", fmt.Sprintf("must be a token of at most %d characters, without spaces", MaxGitHubToken))
	}
}

func (pc *ProviderConfig) validate(p *errs.Problems, prefix, source string) {
	pc.DockerImage = strings.TrimSpace(pc.DockerImage)
	if source == SourceGitHub {
		if pc.DockerImage != "" {
			p.Add(prefix+"dockerImage", `is set by the build for sourceType "github"; leave it out`)
		}
	} else if pc.DockerImage == "" {
		p.Add(prefix+"dockerImage", "is required")
	} else if !validRef(pc.DockerImage) {
		p.Add(prefix+"dockerImage", "is not an image reference (registry/name:tag or registry/name@sha256:…)")
	}
	if pc.CPUCount == 0 {
		pc.CPUCount = 1
	}
	if pc.CPUCount < 1 || pc.CPUCount > MaxCPUCount {
		p.Add(prefix+"cpuCount", fmt.Sprintf("must be between 1 and %d", MaxCPUCount))
	}
	if pc.MemoryMiB == 0 {
		pc.MemoryMiB = 256
	}
	if pc.MemoryMiB < MinMemoryMiB || pc.MemoryMiB > MaxMemoryMiB {
		p.Add(prefix+"memoryMiB", fmt.Sprintf("must be between %d and %d", MinMemoryMiB, MaxMemoryMiB))
	}
}

func validRef(s string) bool {
	if strings.Contains(s, "://") || !strings.Contains(s, "/") {
		return false
	}
	_, err := name.ParseReference(s, name.StrictValidation)
	if err != nil {
		_, err = name.ParseReference(s)
	}
	return err == nil
}

// Validate checks a patch of a registry-sourced enclave.
func (pt *Patch) Validate() error { return pt.ValidateFor(SourceRegistry) }

// ValidateFor checks a patch of an enclave of the source type (a github
// source's providerConfig has no dockerImage: the build sets it).
func (pt *Patch) ValidateFor(source string) error {
	var p errs.Problems
	if pt.Name == nil && pt.Description == nil && pt.ProviderConfig == nil {
		p.Add("body", "nothing to change: send name, description or providerConfig")
	}
	if pt.Name != nil {
		n := strings.TrimSpace(*pt.Name)
		pt.Name = &n
		if n == "" || len(n) > MaxName {
			p.Add("name", fmt.Sprintf("must be 1 to %d characters", MaxName))
		}
	}
	if pt.Description != nil && len(*pt.Description) > MaxDesc {
		p.Add("description", fmt.Sprintf("is longer than %d characters", MaxDesc))
	}
	if pt.ProviderConfig != nil {
		pt.ProviderConfig.validate(&p, "providerConfig.", source)
	}
	return p.Err("the enclave")
}

// Owned returns e when account owns it, else NotFound: another account's
// enclave does not exist for the caller.
func Owned(e Enclave, account string) (Enclave, error) {
	if e.AccountID != account {
		return Enclave{}, NotFound(e.ID)
	}
	return e, nil
}

// NotFound is the 404 of an enclave id.
func NotFound(id string) error { return errs.NotFoundf("enclave %q does not exist", id) }

// Log types (getEnclaveLogs).
var LogTypes = []string{"application", "ecs", "stepfunctions", "lambda", "build", "errors"}

// Log limits (spec §8).
const (
	DefaultLogLimit = 100
	MaxLogLimit     = 1000
)

// LogEntry is one log entry (spec §2.8).
type LogEntry struct {
	Timestamp time.Time `json:"timestamp"`
	Message   string    `json:"message"`
	Source    string    `json:"source"`
	Stream    string    `json:"stream"`
	LogGroup  string    `json:"logGroup"`
	Type      string    `json:"type"`
}

// Newest orders entries by time and keeps the newest limit of them,
// oldest first.
func Newest(l []LogEntry, limit int) []LogEntry {
	slices.SortStableFunc(l, func(a, b LogEntry) int { return a.Timestamp.Compare(b.Timestamp) })
	if len(l) > limit {
		l = l[len(l)-limit:]
	}
	return l
}

// LogGroup is the group an enclave's entries of a type are in.
func LogGroup(id, typ string) string { return "/conduit/enclaves/" + id + "/" + typ }

// SecretPurpose binds a sealed registry secret to its enclave.
func SecretPurpose(id string) string { return "enclave/" + id + "/registry" }

// GitHubSecretPurpose binds a sealed github token to its enclave (a
// registry secret cannot be opened as a token, nor the other way round).
func GitHubSecretPurpose(id string) string { return "enclave/" + id + "/github" }
