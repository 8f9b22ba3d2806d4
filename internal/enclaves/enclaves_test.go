package enclaves

import (
	"strings"
	"testing"

	"conduit/internal/errs"
)

func TestTransitionsCoverEveryState(t *testing.T) {
	for from, tos := range Transitions {
		for _, to := range tos {
			if _, ok := Transitions[to]; !ok {
				t.Errorf("%s → %s: %s is not a state", from, to, to)
			}
		}
	}
	if len(Transitions) != 13 {
		t.Fatalf("the table has %d states, §3.3 names 13", len(Transitions))
	}
	if len(Transitions[Destroyed]) != 0 {
		t.Fatal("DESTROYED is final")
	}
}

func TestAllowedNamesTheState(t *testing.T) {
	cases := []struct {
		a  Action
		s  Status
		ok bool
	}{
		{Pause, Deployed, true}, {Pause, Paused, false}, {Pause, Deploying, false},
		{Resume, Paused, true}, {Resume, Deployed, false},
		{Terminate, Deployed, true}, {Terminate, Paused, true}, {Terminate, Deploying, true}, {Terminate, Destroyed, false}, {Terminate, Pausing, false},
		{Delete, Destroyed, true}, {Delete, Failed, true}, {Delete, Deployed, false},
		{Update, PendingDeploy, true}, {Update, Deployed, false},
	}
	for _, c := range cases {
		err := Allowed(c.a, c.s)
		if (err == nil) != c.ok {
			t.Errorf("%s in %s: %v", c.a, c.s, err)
		}
		if err != nil {
			e, _ := errs.As(err)
			if e == nil || e.Kind != errs.Conflict || !strings.Contains(e.Msg, string(c.s)) {
				t.Errorf("%s in %s: %v does not name the state as a conflict", c.a, c.s, err)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	good := Create{Name: "a", ProviderConfig: &ProviderConfig{DockerImage: "127.0.0.1:5000/app:1"}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	if good.ProviderID != "local" || good.ProviderConfig.CPUCount != 1 || good.ProviderConfig.MemoryMiB != 256 || good.SourceType != "registry" {
		t.Fatalf("defaults: %+v %+v", good, good.ProviderConfig)
	}
	for name, c := range map[string]Create{
		"no name":       {ProviderConfig: &ProviderConfig{DockerImage: "r.example/a:1"}},
		"no config":     {Name: "a"},
		"bad image":     {Name: "a", ProviderConfig: &ProviderConfig{DockerImage: "http://x/a"}},
		"github":        {Name: "a", SourceType: "github", ProviderConfig: &ProviderConfig{DockerImage: "r.example/a:1"}},
		"private, none": {Name: "a", SourceType: "private-registry", ProviderConfig: &ProviderConfig{DockerImage: "r.example/a:1"}},
		"cpu":           {Name: "a", ProviderConfig: &ProviderConfig{DockerImage: "r.example/a:1", CPUCount: 99}},
		"provider":      {Name: "a", ProviderID: "aws", ProviderConfig: &ProviderConfig{DockerImage: "r.example/a:1"}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		} else if e, _ := errs.As(err); e == nil || e.Kind != errs.Invalid || e.Extra["problems"] == nil {
			t.Errorf("%s: %v is not a field error", name, err)
		}
	}
	gh := Create{Name: "a", SourceType: "github", ProviderConfig: &ProviderConfig{DockerImage: "r.example/a:1"}}
	if err := gh.Validate(); !strings.Contains(err.Error(), "githubConnection: is required") || !strings.Contains(err.Error(), "providerConfig.dockerImage: is set by the build") {
		t.Fatalf("github: %v", err)
	}
}

func TestValidateGitHub(t *testing.T) {
	// The defaults: branch main, providerConfig without an image.
	c := Create{Name: "a", SourceType: "github", GitHub: &GitHubCreate{SelectedRepo: " octo/app ", Token: "t0ken"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.GitHub.SelectedRepo != "octo/app" || c.GitHub.SelectedBranch != "main" || c.ProviderConfig == nil ||
		c.ProviderConfig.DockerImage != "" || c.ProviderConfig.CPUCount != 1 || c.ProviderConfig.MemoryMiB != 256 {
		t.Fatalf("defaults: %+v %+v", c.GitHub, c.ProviderConfig)
	}
	for field, g := range map[string]GitHubCreate{
		"githubConnection.selectedRepo":   {SelectedRepo: ""},
		"githubConnection.selectedBranch": {SelectedRepo: "a/b", SelectedBranch: "-x"},
		"githubConnection.username":       {SelectedRepo: "a/b", Username: "a:b"},
		"githubConnection.token":          {SelectedRepo: "a/b", Token: "a b"},
	} {
		c := Create{Name: "a", SourceType: "github", GitHub: &g}
		err := c.Validate()
		e, _ := errs.As(err)
		if e == nil || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%s: %v", field, err)
		}
	}
	reg := Create{Name: "a", GitHub: &GitHubCreate{SelectedRepo: "a/b"}, ProviderConfig: &ProviderConfig{DockerImage: "r.example/a:1"}}
	if err := reg.Validate(); err == nil || !strings.Contains(err.Error(), "githubConnection: is only for") {
		t.Fatalf("a registry source with a github connection: %v", err)
	}
	// A github source's patch may not name an image; a registry one must.
	img := "r.example/a:1"
	if err := (&Patch{ProviderConfig: &ProviderConfig{DockerImage: img}}).ValidateFor(SourceGitHub); err == nil {
		t.Fatal("a github patch set the image")
	}
	if err := (&Patch{ProviderConfig: &ProviderConfig{CPUCount: 2}}).ValidateFor(SourceGitHub); err != nil {
		t.Fatal(err)
	}
	if err := (&Patch{ProviderConfig: &ProviderConfig{CPUCount: 2}}).Validate(); err == nil {
		t.Fatal("a registry patch without an image")
	}
}
