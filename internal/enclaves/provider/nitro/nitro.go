// Package nitro is the AWS Nitro Enclaves provider: Prepare pulls an OCI image and builds it into
// an Enclave Image File (package eif) kept in S3; Deploy launches an EC2 instance with Nitro
// Enclaves enabled whose boot script runs that EIF; its agent, on the parent instance, answers
// attestation (real NSM documents) and signing requests over vsock; CloudWatch Logs holds the
// application's output. docs/enclaves.md ("The AWS Nitro provider") is the contract with the
// parent instance.
//
// Every call is keyed by the enclave id and idempotent: instances carry the id in a tag and are
// looked up before anything is launched, RunInstances carries a client token derived from the id
// and the image, and the EIF's bytes are a function of the image and the configured boot blobs.
package nitro

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"conduit/internal/enclaves/provider"
	"conduit/internal/enclaves/provider/oci"
)

// ProviderID is the providerId of enclaves this provider runs.
const ProviderID = "aws-nitro"

// Options configure a Provider. Region, AMI, InstanceType, Bucket, LogGroup, KernelPath and
// InitPath are required.
type Options struct {
	// Limits bound the image's unpacking into the EIF's ramdisk (zero: oci.DefaultLimits).
	Limits oci.Limits
	Region string
	// AMI is the parent instance's image: it must provide the boot service of the contract
	// (docs/enclaves.md) and nitro-cli.
	AMI          string
	InstanceType string
	// SubnetID, SecurityGroupIDs and InstanceProfile (a name or an ARN) place the instance;
	// empty means the account's defaults. The instance profile must allow s3:GetObject on the
	// EIFs and logs:PutLogEvents on LogGroup.
	SubnetID         string
	SecurityGroupIDs []string
	InstanceProfile  string
	// Bucket keeps EIFs and their measurements under KeyPrefix (default "conduit/enclaves/").
	Bucket    string
	KeyPrefix string
	// LogGroup is the CloudWatch Logs group; each enclave writes the stream named by its id.
	LogGroup string
	// AgentPort is the parent agent's port on the instance's private address (default 8443);
	// AgentScheme "http" (default) or "https". AgentSecret, when set, derives a per-enclave
	// bearer token the agent requires (given to it in the user data).
	AgentPort   int
	AgentScheme string
	AgentSecret []byte
	// KernelPath, InitPath and NSMPath (optional: kernels with the NSM driver built in need none)
	// are the boot blobs of every EIF, e.g. nitro-cli's /usr/share/nitro_enclaves/blobs; Cmdline
	// the kernel command line (default: nitro-cli's x86_64 one). KernelVersion is recorded in the
	// EIF's metadata only.
	KernelPath, InitPath, NSMPath string
	Cmdline                       string
	KernelVersion                 string
	// WorkDir holds EIFs while they are built (default: the system's temporary directory).
	WorkDir string
	// EC2Endpoint, S3Endpoint and LogsEndpoint replace AWS's endpoints (tests, VPC endpoints);
	// S3PathStyle addresses buckets by path.
	EC2Endpoint, S3Endpoint, LogsEndpoint string
	S3PathStyle                           bool
	// Credentials; nil means the default AWS credential chain (instance role, environment, …).
	Credentials aws.CredentialsProvider
	// RetryMaxAttempts and RetryMaxBackoff tune the SDK's own retries of throttling and 5xx
	// (defaults 5 and 20s); what is still failing after them is returned as transient.
	RetryMaxAttempts int
	RetryMaxBackoff  time.Duration
	// BootTimeout bounds how long Deploy waits for the instance and its agent (default 15m);
	// PollEvery is the wait between looks (default 5s). A deploy that runs out of time is
	// transient: the retry finds the same instance.
	BootTimeout time.Duration
	PollEvery   time.Duration
	// AttestationRoot replaces the pinned AWS Nitro root when verifying the agent's documents.
	// Only tests set it; configuration cannot.
	AttestationRoot *x509.Certificate
	// HTTPClient talks to agents (default: 30s timeout).
	HTTPClient *http.Client
	// Now is the clock documents are verified at (default time.Now).
	Now func() time.Time
}

// DefaultCmdline is nitro-cli's kernel command line for x86_64 enclaves.
const DefaultCmdline = "reboot=k panic=30 pci=off nomodules console=ttyS0 i8042.noaux i8042.nomux i8042.nopnp i8042.dumbkbd random.trust_cpu=on"

// Provider runs enclaves on EC2 Nitro instances. It keeps no state of its own: AWS (instance
// tags, S3 objects, log streams) is the state, so any worker can serve any enclave.
type Provider struct {
	opts  Options
	ec2   *ec2.Client
	s3    *s3.Client
	logs  *cloudwatchlogs.Client
	boot  bootBlobs
	agent *http.Client

	idLocksMu sync.Mutex
	idLocks   map[string]*sync.Mutex
}

var _ provider.Provider = (*Provider)(nil)

// New checks the options, reads the boot blobs and builds the AWS clients. It calls no AWS API.
func New(ctx context.Context, opts Options) (*Provider, error) {
	var missing []string
	for name, v := range map[string]string{"region": opts.Region, "ami": opts.AMI, "instance_type": opts.InstanceType,
		"eif_bucket": opts.Bucket, "log_group": opts.LogGroup, "kernel_path": opts.KernelPath, "init_path": opts.InitPath} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("aws-nitro enclaves: %s must be set", strings.Join(slices.Sorted(slices.Values(missing)), ", "))
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "conduit/enclaves/"
	}
	if opts.AgentPort == 0 {
		opts.AgentPort = 8443
	}
	if opts.AgentPort < 1 || opts.AgentPort > 65535 {
		return nil, fmt.Errorf("aws-nitro enclaves: agent_port %d is not a TCP port", opts.AgentPort)
	}
	switch opts.AgentScheme {
	case "":
		opts.AgentScheme = "http"
	case "http", "https":
	default:
		return nil, fmt.Errorf("aws-nitro enclaves: agent scheme %q: want http or https", opts.AgentScheme)
	}
	if opts.Cmdline == "" {
		opts.Cmdline = DefaultCmdline
	}
	if opts.RetryMaxAttempts == 0 {
		opts.RetryMaxAttempts = 5
	}
	if opts.RetryMaxBackoff == 0 {
		opts.RetryMaxBackoff = 20 * time.Second
	}
	if opts.BootTimeout == 0 {
		opts.BootTimeout = 15 * time.Minute
	}
	if opts.PollEvery == 0 {
		opts.PollEvery = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.WorkDir == "" {
		opts.WorkDir = os.TempDir()
	}
	boot, err := readBootBlobs(opts.KernelPath, opts.InitPath, opts.NSMPath, opts.Cmdline)
	if err != nil {
		return nil, fmt.Errorf("aws-nitro enclaves: %w", err)
	}
	load := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRegion(opts.Region),
		awsconfig.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = opts.RetryMaxAttempts
				o.MaxBackoff = opts.RetryMaxBackoff
			})
		}),
	}
	if opts.Credentials != nil {
		load = append(load, awsconfig.WithCredentialsProvider(opts.Credentials))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("aws-nitro enclaves: %w", err)
	}
	p := &Provider{opts: opts, boot: boot, idLocks: map[string]*sync.Mutex{}, agent: opts.HTTPClient}
	p.ec2 = ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		if opts.EC2Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.EC2Endpoint)
		}
	})
	p.s3 = s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.S3Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.S3Endpoint)
		}
		o.UsePathStyle = opts.S3PathStyle
	})
	p.logs = cloudwatchlogs.NewFromConfig(cfg, func(o *cloudwatchlogs.Options) {
		if opts.LogsEndpoint != "" {
			o.BaseEndpoint = aws.String(opts.LogsEndpoint)
		}
	})
	if p.agent == nil {
		p.agent = &http.Client{Timeout: 30 * time.Second}
	}
	return p, nil
}

var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func checkID(op, id string) error {
	if !validID.MatchString(id) || strings.Contains(id, "..") {
		return provider.Errorf(provider.Permanent, op, id, "an enclave id is 1–128 letters, digits, '_', '.' or '-'")
	}
	return nil
}

// lock serialises this process's calls for one id (a retried activity may overlap the attempt
// it retries). Across processes the client token and the tag lookup keep one instance per id.
func (p *Provider) lock(op, id string) (func(), error) {
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	p.idLocksMu.Lock()
	l, ok := p.idLocks[id]
	if !ok {
		l = &sync.Mutex{}
		p.idLocks[id] = l
	}
	p.idLocksMu.Unlock()
	l.Lock()
	return l.Unlock, nil
}

// AgentToken is the bearer token the agent of enclave id requires (empty without a secret).
func (p *Provider) AgentToken(id string) string {
	if len(p.opts.AgentSecret) == 0 {
		return ""
	}
	m := hmac.New(sha256.New, p.opts.AgentSecret)
	m.Write([]byte("conduit enclave agent\x00" + id))
	return hex.EncodeToString(m.Sum(nil))
}

// wait calls check every PollEvery until it reports done, fails, or BootTimeout passes.
func (p *Provider) wait(ctx context.Context, op, id, what string, check func() (bool, error)) error {
	deadline := time.Now().Add(p.opts.BootTimeout)
	var last error
	for {
		done, err := check()
		if done {
			return nil
		}
		if err != nil && provider.IsPermanent(err) {
			return err
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			if last != nil {
				return provider.Errorf(provider.Transient, op, id, "%s: not within %s: %v", what, p.opts.BootTimeout, last)
			}
			return provider.Errorf(provider.Transient, op, id, "%s: not within %s", what, p.opts.BootTimeout)
		}
		select {
		case <-ctx.Done():
			return provider.Wrap(provider.Transient, op, id, ctx.Err())
		case <-time.After(p.opts.PollEvery):
		}
	}
}

var errNoInstance = errors.New("no instance")
