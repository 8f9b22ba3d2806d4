package config

import (
	"strings"
	"testing"
)

// TestEnclavesAWSFromEnv: the AWS provider's keys load from CONDUIT_ENCLAVES_AWS_*, are checked
// only when it is enabled, and each problem names its setting.
func TestEnclavesAWSFromEnv(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Enclaves.AWS.Enabled || c.Enclaves.AWS.AgentPort != 8443 || c.Enclaves.AWS.EIFPrefix != "conduit/enclaves/" {
		t.Fatalf("defaults: %+v", c.Enclaves.AWS)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("disabled AWS provider must not be checked: %v", err)
	}
	t.Setenv("CONDUIT_ENCLAVES_AWS_ENABLED", "true")
	t.Setenv("CONDUIT_ENCLAVES_AWS_REGION", "eu-west-1")
	t.Setenv("CONDUIT_ENCLAVES_AWS_AMI", "ami-0123456789abcdef0")
	t.Setenv("CONDUIT_ENCLAVES_AWS_EIF_BUCKET", "eifs")
	t.Setenv("CONDUIT_ENCLAVES_AWS_SECURITY_GROUP", "sg-1, sg-2")
	t.Setenv("CONDUIT_ENCLAVES_AWS_EC2_ENDPOINT", "http://127.0.0.1:4566")
	if c, err = Load(""); err != nil {
		t.Fatal(err)
	}
	a := c.Enclaves.AWS
	if !a.Enabled || a.Region != "eu-west-1" || a.AMI != "ami-0123456789abcdef0" || a.EIFBucket != "eifs" || strings.Join(a.SecurityGroups(), "|") != "sg-1|sg-2" || a.EC2Endpoint != "http://127.0.0.1:4566" {
		t.Fatalf("env not applied: %+v", a)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid AWS settings refused: %v", err)
	}
	for _, tc := range []struct {
		mut  func(*EnclavesAWS)
		want string
	}{
		{func(a *EnclavesAWS) { a.Region = "" }, "CONDUIT_ENCLAVES_AWS_REGION"},
		{func(a *EnclavesAWS) { a.Region = "mars-1" }, "is not an AWS region"},
		{func(a *EnclavesAWS) { a.AMI = "img-1" }, "CONDUIT_ENCLAVES_AWS_AMI"},
		{func(a *EnclavesAWS) { a.EIFBucket = "" }, "CONDUIT_ENCLAVES_AWS_EIF_BUCKET"},
		{func(a *EnclavesAWS) { a.AgentPort = 0 }, "CONDUIT_ENCLAVES_AWS_AGENT_PORT"},
		{func(a *EnclavesAWS) { a.AgentScheme = "vsock" }, "CONDUIT_ENCLAVES_AWS_AGENT_SCHEME"},
		{func(a *EnclavesAWS) { a.AgentSecret = "short" }, "CONDUIT_ENCLAVES_AWS_AGENT_SECRET"},
		{func(a *EnclavesAWS) { a.LogsEndpoint = "logs.local" }, "CONDUIT_ENCLAVES_AWS_LOGS_ENDPOINT"},
		{func(a *EnclavesAWS) { a.BootTimeout = 0 }, "CONDUIT_ENCLAVES_AWS_BOOT_TIMEOUT"},
	} {
		bad := *c
		tc.mut(&bad.Enclaves.AWS)
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %s, got %v", tc.want, err)
		}
	}
}
