package build_test

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"conduit/internal/enclaves/build"
	"conduit/internal/enclaves/build/gittest"
	"conduit/internal/enclaves/provider"
	"conduit/internal/enclaves/provider/local"
	"conduit/internal/enclaves/provider/oci"
)

const goMod = "module example.com/hello\n\ngo 1.22\n"

const helloMain = `package main

import "fmt"

func main() { fmt.Println("hello from a built image") }
`

type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) log(stream, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, stream+": "+line)
}

func (l *logs) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func setup(t *testing.T) (*gittest.Server, *local.Registry, *build.Builder) {
	t.Helper()
	git := gittest.Start(t)
	reg, err := local.StartRegistry(local.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	b, err := build.New(build.Options{GitBaseURL: git.URL, Registry: reg.Host + "/builds", WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return git, reg, b
}

func TestBuildPushesARunnableImage(t *testing.T) {
	git, reg, b := setup(t)
	commit := git.Commit(t, "Acme/Hello", "main", map[string]string{"go.mod": goMod, "main.go": helloMain, "README.md": "hi\n"})
	var l logs
	res, err := b.Build(context.Background(), build.Request{ID: "enc_1", Repo: "Acme/Hello", Branch: "main"}, l.log)
	if err != nil {
		t.Fatalf("%v\n%s", err, l.text())
	}
	if res.Commit != commit || res.Package != "." || res.Binary != "/ko-app/hello" {
		t.Fatalf("result %+v, commit %s", res, commit)
	}
	if want := reg.Host + "/builds/acme/hello:" + commit; res.Tag != want {
		t.Fatalf("tag %s, want %s", res.Tag, want)
	}
	for _, want := range []string{"build: cloning " + git.URL + "/Acme/Hello.git (branch main)", "build: checked out main at " + commit, "build: go build -trimpath", "build: pushed " + res.Image} {
		if !strings.Contains(l.text(), want) {
			t.Fatalf("logs lack %q:\n%s", want, l.text())
		}
	}

	// The registry holds it under its tag and its digest: one layer with
	// the program, the entrypoint, linux/amd64, the source as labels.
	ref, err := name.ParseReference(res.Image)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	tagged, err := remote.Head(mustRef(t, res.Tag))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img.Digest(); d.String() != tagged.Digest.String() || !strings.HasSuffix(res.Image, "@"+d.String()) {
		t.Fatalf("digest %s, tag %s, image %s", d, tagged.Digest, res.Image)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || strings.Join(cf.Config.Entrypoint, " ") != "/ko-app/hello" ||
		cf.Config.WorkingDir != "/" || !strings.HasPrefix(cf.Config.Env[0], "PATH=/ko-app") ||
		cf.Config.Labels["org.opencontainers.image.revision"] != commit || cf.Config.Labels["org.opencontainers.image.source"] != "Acme/Hello" {
		t.Fatalf("config %+v", cf)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	bin := filepath.Join(t.TempDir(), "hello")
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "ko-app/hello" {
			if h.Mode&0o111 == 0 || h.Uid != 0 || h.ModTime.Unix() != 0 {
				t.Fatalf("binary header %+v", h)
			}
			f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
		}
	}
	if strings.Join(names, ",") != "ko-app/,ko-app/hello" {
		t.Fatalf("layer holds %v", names)
	}
	// The program is a static linux/amd64 binary (this host is one): it runs.
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "hello from a built image" {
		t.Fatalf("running the built program: %v %s", err, out)
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The same commit builds to the same image, from a fresh clone each time;
// a new commit to a new one.
func TestBuildIsReproducible(t *testing.T) {
	git, _, b := setup(t)
	git.Commit(t, "acme/hello", "main", map[string]string{"go.mod": goMod, "main.go": helloMain})
	req := build.Request{ID: "enc_1", Repo: "acme/hello", Branch: "main"}
	first, err := b.Build(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Build(context.Background(), build.Request{ID: "enc_2", Repo: "acme/hello", Branch: "main"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first != again {
		t.Fatalf("two builds of one commit differ:\n%+v\n%+v", first, again)
	}
	git.Commit(t, "acme/hello", "main", map[string]string{"main.go": strings.Replace(helloMain, "built image", "newer image", 1)})
	next, err := b.Build(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if next.Commit == first.Commit || next.Image == first.Image {
		t.Fatalf("a new commit built the old image: %+v", next)
	}
}

// Without a main package at the root, the only one under cmd/ is built
// (a library package beside it does not matter); two there are refused.
func TestBuildFindsTheMainPackageUnderCmd(t *testing.T) {
	git, _, b := setup(t)
	git.Commit(t, "acme/tool", "dev", map[string]string{
		"go.mod":             "module example.com/tool\n\ngo 1.22\n",
		"lib.go":             "package tool\n\nconst Greeting = \"hi from cmd\"\n",
		"cmd/server/main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/tool\"\n)\n\nfunc main() { fmt.Println(tool.Greeting) }\n",
	})
	res, err := b.Build(context.Background(), build.Request{ID: "enc_1", Repo: "acme/tool", Branch: "dev"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Package != "cmd/server" || res.Binary != "/ko-app/server" {
		t.Fatalf("%+v", res)
	}
	git.Commit(t, "acme/tool", "dev", map[string]string{"cmd/other/main.go": "package main\n\nfunc main() {}\n"})
	_, err = b.Build(context.Background(), build.Request{ID: "enc_1", Repo: "acme/tool", Branch: "dev"}, nil)
	if !provider.IsPermanent(err) || !strings.Contains(err.Error(), "more than one main package under cmd/ (other, server)") {
		t.Fatalf("two mains: %v", err)
	}
	git.Commit(t, "acme/lib", "main", map[string]string{"go.mod": "module example.com/lib\n\ngo 1.22\n", "lib.go": "package lib\n"})
	_, err = b.Build(context.Background(), build.Request{ID: "enc_1", Repo: "acme/lib", Branch: "main"}, nil)
	if !provider.IsPermanent(err) || !strings.Contains(err.Error(), "no main package") {
		t.Fatalf("no main: %v", err)
	}
}

func TestBuildFailuresAreSorted(t *testing.T) {
	git, reg, b := setup(t)
	git.Commit(t, "acme/hello", "main", map[string]string{"go.mod": goMod, "main.go": helloMain})
	git.Commit(t, "acme/broken", "main", map[string]string{"go.mod": goMod, "main.go": "package main\n\nfunc main() { undefinedThing() }\n"})
	ctx := context.Background()
	build1 := func(repo, branch string, l *logs) error {
		var log build.Log
		if l != nil {
			log = l.log
		}
		_, err := b.Build(ctx, build.Request{ID: "enc_1", Repo: repo, Branch: branch}, log)
		return err
	}

	// Permanent: what the repository says.
	for what, c := range map[string]struct{ repo, branch, msg string }{
		"unknown branch": {"acme/hello", "nope", `has no branch "nope"`},
		"unknown repo":   {"acme/missing", "main", "does not exist"},
		"bad repo":       {"acme/../etc", "main", `must be "owner/name"`},
		"bad branch":     {"acme/hello", "a..b", "may not contain"},
	} {
		err := build1(c.repo, c.branch, nil)
		if !provider.IsPermanent(err) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v", what, err)
		}
	}
	var l logs
	err := build1("acme/broken", "main", &l)
	if !provider.IsPermanent(err) || !strings.Contains(err.Error(), "undefined: undefinedThing") {
		t.Fatalf("compile error: %v", err)
	}
	if !strings.Contains(l.text(), "stderr: ./main.go:3:15: undefined: undefinedThing") {
		t.Fatalf("the compiler's message is not in the logs:\n%s", l.text())
	}

	// Transient: the git host failing, the registry down.
	git.Fail(http.StatusServiceUnavailable)
	if err := build1("acme/hello", "main", nil); err == nil || provider.IsPermanent(err) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("git host 503: %v", err)
	}
	git.Fail(http.StatusNotFound)
	if err := build1("acme/hello", "main", nil); !provider.IsPermanent(err) {
		t.Fatalf("git host 404: %v", err)
	}
	git.Fail(0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	down, err := build.New(build.Options{GitBaseURL: "http://" + dead, Registry: reg.Host + "/builds"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := down.Build(ctx, build.Request{ID: "enc_1", Repo: "acme/hello", Branch: "main"}, nil); err == nil || provider.IsPermanent(err) {
		t.Fatalf("git host down: %v", err)
	}
	noRegistry, err := build.New(build.Options{GitBaseURL: git.URL, Registry: dead + "/builds"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noRegistry.Build(ctx, build.Request{ID: "enc_1", Repo: "acme/hello", Branch: "main"}, nil); err == nil || provider.IsPermanent(err) || !strings.Contains(err.Error(), "registry") {
		t.Fatalf("registry down: %v", err)
	}
	// A registry that refuses the push (credentials) is permanent.
	private, err := local.StartRegistry(local.RegistryOptions{Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer private.Close()
	refused, _ := build.New(build.Options{GitBaseURL: git.URL, Registry: private.Host + "/builds"})
	if _, err := refused.Build(ctx, build.Request{ID: "enc_1", Repo: "acme/hello", Branch: "main"}, nil); !provider.IsPermanent(err) {
		t.Fatalf("registry refusing: %v", err)
	}
	allowed, _ := build.New(build.Options{GitBaseURL: git.URL, Registry: private.Host + "/builds", RegistryAuth: &authn.Basic{Username: "u", Password: "p"}})
	if _, err := allowed.Build(ctx, build.Request{ID: "enc_1", Repo: "acme/hello", Branch: "main"}, nil); err != nil {
		t.Fatalf("registry with credentials: %v", err)
	}
	// No go toolchain: permanent, and says so.
	noGo, _ := build.New(build.Options{GitBaseURL: git.URL, Registry: reg.Host + "/builds", Go: "go-that-is-not-here"})
	if _, err := noGo.Build(ctx, build.Request{ID: "enc_1", Repo: "acme/hello", Branch: "main"}, nil); !provider.IsPermanent(err) || !strings.Contains(err.Error(), "not on its PATH") {
		t.Fatalf("no go: %v", err)
	}
}

func TestBuildWithAToken(t *testing.T) {
	git, _, b := setup(t)
	git.Commit(t, "acme/private", "main", map[string]string{"go.mod": goMod, "main.go": helloMain})
	git.RequireAuth("acme/private", "octocat", "s3cret-token")
	ctx := context.Background()
	req := build.Request{ID: "enc_1", Repo: "acme/private", Branch: "main"}
	if _, err := b.Build(ctx, req, nil); !provider.IsPermanent(err) || !strings.Contains(err.Error(), "asks for credentials") {
		t.Fatalf("no token: %v", err)
	}
	req.Username, req.Token = "octocat", "wrong"
	if _, err := b.Build(ctx, req, nil); !provider.IsPermanent(err) || !strings.Contains(err.Error(), "refused the credentials") {
		t.Fatalf("wrong token: %v", err)
	}
	req.Token = "s3cret-token"
	var l logs
	if _, err := b.Build(ctx, req, l.log); err != nil {
		t.Fatalf("token: %v", err)
	}
	if strings.Contains(l.text(), "s3cret-token") {
		t.Fatalf("the token is in the logs:\n%s", l.text())
	}
}

// A symbolic link out of the checkout is refused before the go command
// could read through it; one inside is fine.
func TestBuildRefusesLinksOutOfTheRepository(t *testing.T) {
	git, _, b := setup(t)
	git.Commit(t, "acme/links", "main", map[string]string{"go.mod": goMod, "main.go": helloMain})
	// Links are committed through the git command (Commit writes files).
	addLink := func(link, target string) {
		t.Helper()
		dir := t.TempDir()
		run := func(args ...string) {
			t.Helper()
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v %s", args, err, out)
			}
		}
		run("clone", "-q", git.Path("acme/links"), ".")
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
		run("add", "-A")
		run("commit", "-q", "-m", "link")
		run("push", "-q", "origin", "main")
	}
	addLink("inside", "main.go")
	if _, err := b.Build(context.Background(), build.Request{ID: "enc_1", Repo: "acme/links", Branch: "main"}, nil); err != nil {
		t.Fatalf("a link inside: %v", err)
	}
	addLink("secret.go", "/etc/passwd")
	_, err := b.Build(context.Background(), build.Request{ID: "enc_1", Repo: "acme/links", Branch: "main"}, nil)
	if !provider.IsPermanent(err) || !strings.Contains(err.Error(), "secret.go leads outside it") {
		t.Fatalf("a link out: %v", err)
	}
}

// A replace directive naming a directory outside the checkout is refused;
// one inside it builds.
func TestBuildRefusesReplacesOutOfTheRepository(t *testing.T) {
	git, _, b := setup(t)
	git.Commit(t, "acme/rep", "main", map[string]string{
		"go.mod":       goMod + "\nrequire example.com/greet v0.0.0\n\nreplace example.com/greet => ./greet\n",
		"greet/go.mod": "module example.com/greet\n\ngo 1.22\n",
		"greet/g.go":   "package greet\n\nconst Hi = \"hi\"\n",
		"main.go":      "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/greet\"\n)\n\nfunc main() { fmt.Println(greet.Hi) }\n",
	})
	req := build.Request{ID: "enc_1", Repo: "acme/rep", Branch: "main"}
	if _, err := b.Build(context.Background(), req, nil); err != nil {
		t.Fatalf("a replace inside: %v", err)
	}
	git.Commit(t, "acme/rep", "main", map[string]string{"greet/go.mod": "module example.com/greet\n\ngo 1.22\n\nreplace example.com/x => ../../../outside\n"})
	_, err := b.Build(context.Background(), req, nil)
	if !provider.IsPermanent(err) || !strings.Contains(err.Error(), "greet/go.mod replaces example.com/x with ../../../outside, a directory outside the repository") {
		t.Fatalf("a replace out: %v", err)
	}
}

func TestValidNames(t *testing.T) {
	for _, r := range []string{"a/b", "Acme-Co/my.repo_1"} {
		if why := build.ValidRepo(r); why != "" {
			t.Errorf("%q: %s", r, why)
		}
	}
	for _, r := range []string{"", "a", "a/b/c", "../b", "a/..", "a/.git", "a b/c", "https://x/y"} {
		if build.ValidRepo(r) == "" {
			t.Errorf("%q accepted", r)
		}
	}
	for _, br := range []string{"main", "feature/x-1", "release-1.2"} {
		if why := build.ValidBranch(br); why != "" {
			t.Errorf("%q: %s", br, why)
		}
	}
	for _, br := range []string{"", "-x", "a..b", "a b", "a~1", "x.lock", "/a", "a/", "a//b", "a/.b", "@", "a@{1}", "a:b", strings.Repeat("x", 256)} {
		if build.ValidBranch(br) == "" {
			t.Errorf("%q accepted", br)
		}
	}
}

// A build's inputs and output are bounded like an image: a repository
// whose objects are over enclaves.limits.source_bytes, a checkout with too
// many files, and a program bigger than a layer may be are refused,
// permanently, naming the setting.
func TestBuildLimits(t *testing.T) {
	git, reg, _ := setup(t)
	big := strings.Repeat("// padding to be over the source limit\n", 64<<10/40+1)
	git.Commit(t, "acme/big", "main", map[string]string{"go.mod": goMod, "main.go": helloMain, "pad.go": "package main\n" + big})
	files := map[string]string{"go.mod": goMod, "main.go": helloMain}
	for i := range 20 {
		files[fmt.Sprintf("data/%d.txt", i)] = strconv.Itoa(i)
	}
	git.Commit(t, "acme/many", "main", files)
	git.Commit(t, "acme/hello", "main", map[string]string{"go.mod": goMod, "main.go": helloMain})
	for _, tc := range []struct {
		repo, setting string
		o             build.Options
	}{
		{"acme/big", "enclaves.limits.source_bytes", build.Options{SourceBytes: 32 << 10}},
		{"acme/many", "enclaves.limits.files", build.Options{Limits: oci.Limits{Files: 10}}},
		{"acme/hello", "enclaves.limits.layer_bytes", build.Options{Limits: oci.Limits{LayerBytes: 64 << 10}}},
	} {
		tc.o.GitBaseURL, tc.o.Registry, tc.o.WorkDir = git.URL, reg.Host+"/builds", t.TempDir()
		b, err := build.New(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Build(context.Background(), build.Request{ID: "enc_1", Repo: tc.repo, Branch: "main"}, nil)
		if !provider.IsPermanent(err) || !strings.Contains(err.Error(), tc.setting) {
			t.Errorf("%s: want a permanent refusal naming %s, got %v", tc.repo, tc.setting, err)
		}
	}
}
