package enclaves

import (
	"strings"
	"testing"

	"conduit/internal/errs"
)

// TestValidateForProviders: providerId "aws-nitro" is accepted only where it is configured, in its
// region (the default when none is given); elsewhere the 400 names providerId.
func TestValidateForProviders(t *testing.T) {
	image := func() *ProviderConfig { return &ProviderConfig{DockerImage: "r.example/a:1"} }
	field := func(err error) string {
		e, _ := errs.As(err)
		if e == nil || e.Kind != errs.Invalid {
			t.Fatalf("%v is not a field error", err)
		}
		ps, _ := e.Extra["problems"].([]map[string]string)
		if len(ps) != 1 {
			t.Fatalf("problems %v", e.Extra["problems"])
		}
		return ps[0]["field"] + ": " + ps[0]["message"]
	}

	c := Create{Name: "a", ProviderID: ProviderAWSNitro, ProviderConfig: image()}
	if got := field(c.Validate()); !strings.Contains(got, `providerId: "aws-nitro" is not configured here (enclaves.aws); use one of "local"`) {
		t.Errorf("local only: %s", got)
	}
	withAWS := Offered{ProviderLocal: {RegionLocal}, ProviderAWSNitro: {"eu-west-1"}}
	c = Create{Name: "a", ProviderID: ProviderAWSNitro, ProviderConfig: image()}
	if err := c.ValidateFor(withAWS); err != nil || c.Region != "eu-west-1" {
		t.Fatalf("aws-nitro configured: %v, region %q", err, c.Region)
	}
	c = Create{Name: "a", ProviderID: ProviderAWSNitro, Region: "us-east-1", ProviderConfig: image()}
	if got := field(c.ValidateFor(withAWS)); got != `region: "us-east-1" is not a region of provider "aws-nitro"; use "eu-west-1"` {
		t.Errorf("wrong region: %s", got)
	}
	c = Create{Name: "a", Region: "eu-west-1", ProviderConfig: image()}
	if got := field(c.ValidateFor(withAWS)); !strings.HasPrefix(got, `region: "eu-west-1" is not a region of provider "local"`) {
		t.Errorf("an AWS region for the local provider: %s", got)
	}
	c = Create{Name: "a", ProviderID: "gcp", ProviderConfig: image()}
	if got := field(c.ValidateFor(withAWS)); got != `providerId: "gcp" is not a provider here; use one of "aws-nitro", "local"` {
		t.Errorf("unknown provider: %s", got)
	}
	c = Create{Name: "a", ProviderConfig: image()}
	if err := c.ValidateFor(withAWS); err != nil || c.ProviderID != ProviderLocal || c.Region != RegionLocal {
		t.Errorf("defaults with AWS configured: %v %+v", err, c)
	}
}
