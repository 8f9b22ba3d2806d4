// Package gittest serves real git repositories over smart HTTP for tests:
// the system's git http-backend behind net/http/cgi, the way a git host
// serves clones. Nothing about git is mocked; a test can make the host
// fail (an HTTP status for every request) or require credentials.
package gittest

import (
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

	mu         sync.Mutex
	fail       int
	user, pass string
	requests   int
}

// Start serves an empty git host until the test ends. It fails the test
// when git (and its http-backend) is missing: the build's tests need it.
func Start(t testing.TB) *Server {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is required by these tests (apt-get install git)")
	}
	out, err := exec.Command(gitBin, "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git http-backend is required by these tests: %v", err)
	}
	dir := t.TempDir()
	s := &Server{root: filepath.Join(dir, "repos"), work: filepath.Join(dir, "work")}
	for _, d := range []string{s.root, s.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + s.root, "GIT_HTTP_EXPORT_ALL=1"}, Stderr: io.Discard}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests++
		fail, user, pass := s.fail, s.user, s.pass
		s.mu.Unlock()
		if fail != 0 {
			http.Error(w, "the git host is failing", fail)
			return
		}
		if user != "" || pass != "" {
			u, p, ok := r.BasicAuth()
			if !ok {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "credentials required", http.StatusUnauthorized)
				return
			}
			if u != user || p != pass {
				http.Error(w, "credentials refused", http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	return s
}

// Fail makes every request answer status (0: serve again).
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = status
}

// RequireAuth makes every request need basic credentials user:pass
// (missing: 401, wrong: 403); empty both: open again.
func (s *Server) RequireAuth(user, pass string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user, s.pass = user, pass
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
