package provider

import (
	"strings"
	"testing"
)

type stubProvider struct{ Provider }

func TestProvidersGet(t *testing.T) {
	local := stubProvider{}
	ps := Providers{"local": local, "aws-nitro": stubProvider{}}
	if p, err := ps.Get("local"); err != nil || p != Provider(local) {
		t.Fatalf("Get(local) = %v, %v", p, err)
	}
	_, err := ps.Get("gcp")
	if !IsPermanent(err) || !strings.Contains(err.Error(), `provider "gcp" is not configured here (configured: [aws-nitro local])`) {
		t.Errorf("unknown provider: %v", err)
	}
	var none Providers
	if _, err := none.Get("local"); !IsPermanent(err) {
		t.Errorf("empty registry: %v", err)
	}
}
