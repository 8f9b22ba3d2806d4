// Package gittest serves real git repositories over smart HTTP for tests:
// the system's git http-backend behind net/http/cgi, the way a git host
// serves clones. Nothing about git is mocked; a test can make the host
// fail (an HTTP status for every request) or require credentials.
package gittest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Server is a git host on loopback: URL/owner/name.git clones.
type Server struct {
	URL  string
	root string // bare repositories
	work string // their working copies
	srv  *httptest.Server

	mu       sync.Mutex
	fail     int
	auth     map[string][2]string // repository → user, password
	requests int
}

// Start serves an empty git host until the test ends. It fails the test
// when git (and its http-backend) is missing: the build's tests need it.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// New serves an empty git host keeping its repositories in dir, until
// Close. It fails when git (and its http-backend) is missing.
func New(dir string) (*Server, error) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, errors.New("git is required (apt-get install git)")
	}
	out, err := exec.Command(gitBin, "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		return nil, fmt.Errorf("git http-backend is required: %v", err)
	}
	s := &Server{root: filepath.Join(dir, "repos"), work: filepath.Join(dir, "work")}
	for _, d := range []string{s.root, s.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + s.root, "GIT_HTTP_EXPORT_ALL=1"}, Stderr: io.Discard}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests++
		fail := s.fail
		owner, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		name, _, _ := strings.Cut(rest, "/")
		creds, private := s.auth[owner+"/"+strings.TrimSuffix(name, ".git")]
		s.mu.Unlock()
		if fail != 0 {
			http.Error(w, "the git host is failing", fail)
			return
		}
		if private {
			u, p, ok := r.BasicAuth()
			if !ok {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "credentials required", http.StatusUnauthorized)
				return
			}
			if u != creds[0] || p != creds[1] {
				http.Error(w, "credentials refused", http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	s.URL = s.srv.URL
	return s, nil
}

// Close stops serving.
func (s *Server) Close() { s.srv.Close() }

// Fail makes every request answer status (0: serve again).
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = status
}

// RequireAuth makes repository "owner/name" private: every request for
// it needs basic credentials user:pass (missing: 401, wrong: 403).
func (s *Server) RequireAuth(repo, user, pass string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.auth == nil {
		s.auth = map[string][2]string{}
	}
	s.auth[repo] = [2]string{user, pass}
}

// Path is the bare repository of "owner/name" on disk (a test may push
// to it with the git command directly).
func (s *Server) Path(repo string) string { return filepath.Join(s.root, repo+".git") }

// Requests is how many requests the host has answered.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Commit writes files (path → content; an empty content removes the
// file) on branch of repo "owner/name", commits and pushes it to the
// host, creating the repository when new, and answers the commit hash.
func (s *Server) Commit(t testing.TB, repo, branch string, files map[string]string) string {
	t.Helper()
	work := filepath.Join(s.work, repo)
	bare := filepath.Join(s.root, repo+".git")
	if _, err := os.Stat(bare); err != nil {
		s.git(t, "", "init", "--bare", "--initial-branch="+branch, bare)
		s.git(t, "", "init", "--initial-branch="+branch, work)
		s.git(t, work, "remote", "add", "origin", bare)
	}
	if s.git(t, work, "branch", "--list", branch) != "" {
		s.git(t, work, "checkout", "-q", branch)
	} else if s.git(t, work, "symbolic-ref", "--short", "HEAD") != branch {
		s.git(t, work, "checkout", "-q", "-b", branch)
	}
	for p, content := range files {
		full := filepath.Join(work, p)
		if content == "" {
			_ = os.Remove(full)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.git(t, work, "add", "-A")
	s.git(t, work, "commit", "-q", "--allow-empty", "-m", "commit on "+branch)
	s.git(t, work, "push", "-q", "origin", branch)
	return s.git(t, work, "rev-parse", "HEAD")
}

func (s *Server) git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+s.work)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
