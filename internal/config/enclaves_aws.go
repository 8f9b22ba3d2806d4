package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// EnclavesAWS configures the AWS Nitro enclave provider (providerId
// "aws-nitro"; docs/enclaves.md, "The AWS Nitro provider"). Off unless
// enabled; then enclaves may be created with providerId "aws-nitro" in
// Region.
type EnclavesAWS struct {
	Enabled bool   `mapstructure:"enabled"`
	Region  string `mapstructure:"region"`
	// AMI is the parent instance's image (with nitro-cli and the boot
	// service of the contract); InstanceType must support Nitro Enclaves.
	AMI          string `mapstructure:"ami"`
	InstanceType string `mapstructure:"instance_type"`
	// Subnet, SecurityGroup (comma-separated ids) and InstanceProfile
	// (name or ARN) place the instance; empty means the account's defaults.
	Subnet          string `mapstructure:"subnet"`
	SecurityGroup   string `mapstructure:"security_group"`
	InstanceProfile string `mapstructure:"instance_profile"`
	// EIFBucket keeps the enclave image files under EIFPrefix.
	EIFBucket string `mapstructure:"eif_bucket"`
	EIFPrefix string `mapstructure:"eif_prefix"`
	// LogGroup is the CloudWatch Logs group the parents write to, one
	// stream per enclave id.
	LogGroup string `mapstructure:"log_group"`
	// AgentPort is the parent agent's port; AgentScheme http or https;
	// AgentSecret derives each enclave's agent bearer token.
	AgentPort   int    `mapstructure:"agent_port"`
	AgentScheme string `mapstructure:"agent_scheme"`
	AgentSecret string `mapstructure:"agent_secret"`
	// KernelPath, InitPath and NSMPath (optional) are the EIF boot blobs;
	// Cmdline the kernel command line (empty: nitro-cli's).
	KernelPath string `mapstructure:"kernel_path"`
	InitPath   string `mapstructure:"init_path"`
	NSMPath    string `mapstructure:"nsm_path"`
	Cmdline    string `mapstructure:"cmdline"`
	// EC2Endpoint, S3Endpoint and LogsEndpoint replace AWS's endpoints
	// (VPC endpoints, tests); S3PathStyle addresses the bucket by path.
	EC2Endpoint  string `mapstructure:"ec2_endpoint"`
	S3Endpoint   string `mapstructure:"s3_endpoint"`
	LogsEndpoint string `mapstructure:"logs_endpoint"`
	S3PathStyle  bool   `mapstructure:"s3_path_style"`
	// BootTimeout bounds one deploy attempt's wait for the instance and
	// its agent.
	BootTimeout time.Duration `mapstructure:"boot_timeout"`
}

// SecurityGroups splits SecurityGroup.
func (a EnclavesAWS) SecurityGroups() []string {
	var out []string
	for _, g := range strings.Split(a.SecurityGroup, ",") {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}

var enclavesAWSDefaults = map[string]any{
	"enclaves.aws.enabled":          false,
	"enclaves.aws.region":           "",
	"enclaves.aws.ami":              "",
	"enclaves.aws.instance_type":    "m5.xlarge",
	"enclaves.aws.subnet":           "",
	"enclaves.aws.security_group":   "",
	"enclaves.aws.instance_profile": "",
	"enclaves.aws.eif_bucket":       "",
	"enclaves.aws.eif_prefix":       "conduit/enclaves/",
	"enclaves.aws.log_group":        "/conduit/enclaves",
	"enclaves.aws.agent_port":       8443,
	"enclaves.aws.agent_scheme":     "http",
	"enclaves.aws.agent_secret":     "",
	"enclaves.aws.kernel_path":      "/usr/share/nitro_enclaves/blobs/bzImage",
	"enclaves.aws.init_path":        "/usr/share/nitro_enclaves/blobs/init",
	"enclaves.aws.nsm_path":         "/usr/share/nitro_enclaves/blobs/nsm.ko",
	"enclaves.aws.cmdline":          "",
	"enclaves.aws.ec2_endpoint":     "",
	"enclaves.aws.s3_endpoint":      "",
	"enclaves.aws.logs_endpoint":    "",
	"enclaves.aws.s3_path_style":    false,
	"enclaves.aws.boot_timeout":     "15m",
}

var awsRegion = regexp.MustCompile(`^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d$`)

// validateEnclavesAWS checks the AWS provider's settings when it is on.
func (c *Config) validateEnclavesAWS() []error {
	a := c.Enclaves.AWS
	if !a.Enabled {
		return nil
	}
	env := func(key string) string { return EnvPrefix + "_ENCLAVES_AWS_" + strings.ToUpper(key) }
	var errs []error
	for key, v := range map[string]string{"region": a.Region, "ami": a.AMI, "instance_type": a.InstanceType, "eif_bucket": a.EIFBucket,
		"log_group": a.LogGroup, "kernel_path": a.KernelPath, "init_path": a.InitPath} {
		if v == "" {
			errs = append(errs, fmt.Errorf("enclaves.aws.%s (%s) is required when enclaves.aws.enabled", key, env(key)))
		}
	}
	if a.Region != "" && !awsRegion.MatchString(a.Region) {
		errs = append(errs, fmt.Errorf("enclaves.aws.region (%s) %q is not an AWS region name (us-east-1)", env("region"), a.Region))
	}
	if a.AMI != "" && !strings.HasPrefix(a.AMI, "ami-") {
		errs = append(errs, fmt.Errorf("enclaves.aws.ami (%s) %q is not an AMI id (ami-…)", env("ami"), a.AMI))
	}
	if a.AgentPort < 1 || a.AgentPort > 65535 {
		errs = append(errs, fmt.Errorf("enclaves.aws.agent_port (%s) %d is not a port number (1-65535)", env("agent_port"), a.AgentPort))
	}
	if a.AgentScheme != "http" && a.AgentScheme != "https" {
		errs = append(errs, fmt.Errorf("enclaves.aws.agent_scheme (%s) %q must be http or https", env("agent_scheme"), a.AgentScheme))
	}
	if a.AgentSecret != "" && len(a.AgentSecret) < 32 {
		errs = append(errs, fmt.Errorf("enclaves.aws.agent_secret (%s) must be at least 32 characters", env("agent_secret")))
	}
	for key, v := range map[string]string{"ec2_endpoint": a.EC2Endpoint, "s3_endpoint": a.S3Endpoint, "logs_endpoint": a.LogsEndpoint} {
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("enclaves.aws.%s (%s) %q must be an absolute http(s) URL", key, env(key), v))
		}
	}
	if a.BootTimeout <= 0 {
		errs = append(errs, fmt.Errorf("enclaves.aws.boot_timeout (%s) must be positive", env("boot_timeout")))
	}
	return errs
}
