package tools

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

const composeFile = "../compose.yaml"

// loadCompose parses and validates the compose file as Compose itself does
// (the compose-spec schema, then the project's consistency: references to
// services, networks and volumes that exist).
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	abs, err := filepath.Abs(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  filepath.Dir(abs),
		ConfigFiles: []types.ConfigFile{{Filename: abs}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("conduit", true) })
	if err != nil {
		t.Fatalf("%s does not load: %v", composeFile, err)
	}
	return p
}

// The compose file's conduit services run the production binary, built by
// deploy/Dockerfile, as its roles: migrate first, a frontend and workers,
// each command one the binary has (app/cli.go), pointed at services of
// the same file.
func TestComposeFileMatchesTheBinary(t *testing.T) {
	p := loadCompose(t)
	roles := productionRoles(t)

	dockerfile, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	build := regexp.MustCompile(`(?m)^RUN .*go build .*-o (\S+) (\./cmd/conduit)\s*$`).FindSubmatch(dockerfile)
	entry := regexp.MustCompile(`(?m)^ENTRYPOINT \["([^"]+)"\]\s*$`).FindSubmatch(dockerfile)
	if build == nil || entry == nil || filepath.Base(string(build[1])) != filepath.Base(string(entry[1])) {
		t.Fatalf("deploy/Dockerfile must build ./cmd/conduit (the production binary) and make it the ENTRYPOINT")
	}
	binary := string(entry[1])

	commands := map[string]types.ServiceConfig{}
	for name, s := range p.Services {
		if s.Build == nil {
			// Someone else's image: pinned to a version.
			if i := strings.LastIndex(s.Image, ":"); i < 0 || s.Image[i+1:] == "latest" {
				t.Errorf("service %s: image %q is not pinned to a version", name, s.Image)
			}
			continue
		}
		if s.Build.Dockerfile != "deploy/Dockerfile" || filepath.Clean(s.Build.Context) != filepath.Clean(filepath.Join(p.WorkingDir, "..")) {
			t.Errorf("service %s: build %+v is not the repository root with deploy/Dockerfile", name, s.Build)
		}
		if len(s.Entrypoint) != 0 {
			t.Errorf("service %s: entrypoint %v replaces the binary", name, s.Entrypoint)
		}
		if len(s.Command) != 1 || !slices.Contains(roles, s.Command[0]) {
			t.Errorf("service %s: command %v is not one of the binary's commands %v", name, s.Command, roles)
			continue
		}
		commands[s.Command[0]] = s
		// The database and Temporal it is given are services of this file.
		env := s.Environment
		db, ok := env["CONDUIT_DATABASE_URL"]
		if !ok || db == nil {
			t.Errorf("service %s: no CONDUIT_DATABASE_URL", name)
		} else if u, err := url.Parse(*db); err != nil || u.Scheme != "postgres" || !hasService(p, u.Hostname()) {
			t.Errorf("service %s: CONDUIT_DATABASE_URL %q is not a postgres:// URL to a service of this file", name, *db)
		}
		if s.Command[0] != "migrate" {
			tmp, ok := env["CONDUIT_TEMPORAL_ADDRESS"]
			if !ok || tmp == nil {
				t.Errorf("service %s: no CONDUIT_TEMPORAL_ADDRESS", name)
			} else if host, _, err := net.SplitHostPort(*tmp); err != nil || !hasService(p, host) {
				t.Errorf("service %s: CONDUIT_TEMPORAL_ADDRESS %q is not host:port of a service of this file", name, *tmp)
			}
			// Its health check is the binary's own.
			if hc := s.HealthCheck; hc == nil || len(hc.Test) < 3 || hc.Test[0] != "CMD" || hc.Test[1] != binary || !slices.Contains(roles, hc.Test[2]) {
				t.Errorf("service %s: health check %+v is not %s health", name, s.HealthCheck, binary)
			}
			// It starts after the migrations finished.
			if d, ok := s.DependsOn["migrate"]; !ok || d.Condition != types.ServiceConditionCompletedSuccessfully {
				t.Errorf("service %s: does not wait for migrate to complete (%+v)", name, s.DependsOn)
			}
		}
	}
	for _, want := range []string{"migrate", "frontend", "worker"} {
		if _, ok := commands[want]; !ok {
			t.Errorf("no service runs `conduit %s` (commands: %v)", want, commands)
		}
	}
	if w, ok := commands["worker"]; ok && (w.Deploy == nil || w.Deploy.Replicas == nil || *w.Deploy.Replicas < 2) {
		t.Errorf("the worker is not scaled out: %+v", w.Deploy)
	}
}

func hasService(p *types.Project, name string) bool {
	_, ok := p.Services[name]
	return ok
}

// compose-go refuses what Compose would: the check above stands on it.
func TestComposeLoaderIsStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"an unknown field":          "services:\n  a:\n    image: x:1\n    comand: [frontend]\n",
		"a missing dependency":      "services:\n  a:\n    image: x:1\n    depends_on: [b]\n",
		"a wrong type":              "services:\n  a:\n    image: x:1\n    ports: 8080\n",
		"an unknown depends_on key": "services:\n  a:\n    image: x:1\n    depends_on: {b: {condtion: service_started}}\n  b:\n    image: y:1\n",
	} {
		dir := t.TempDir()
		f := filepath.Join(dir, "compose.yaml")
		if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{WorkingDir: dir, ConfigFiles: []types.ConfigFile{{Filename: f}}, Environment: types.Mapping{}},
			func(o *loader.Options) { o.SetProjectName("x", true) })
		if err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}
