package ui_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"conduit/ui"
	"conduit/ui/uitest"
)

// TestCommittedBuildIsCurrent rebuilds the dashboard from its source with
// the locked dependencies (npm ci, then the type check and the same Vite
// build into a temporary folder) and fails when the committed dist/ — what
// the Go binary embeds — differs from it by a byte or a file: the source
// changed without `go tool task ui`.
func TestCommittedBuildIsCurrent(t *testing.T) {
	uitest.Deps(t)
	out := t.TempDir()
	uitest.NPM(t, "run", "typecheck", "--silent")
	uitest.NPM(t, "exec", "--", "vite", "build", "--logLevel", "error", "--outDir", out, "--emptyOutDir")

	want := map[string][]byte{}
	if err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		b, err := os.ReadFile(p)
		want[filepath.ToSlash(rel)] = b
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	if err := fs.WalkDir(ui.Dist(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(ui.Dist(), p)
		got[p] = b
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for name, b := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("dist/%s is missing from the committed build: run `go tool task ui` and commit ui/dist", name)
		case !bytes.Equal(g, b):
			t.Errorf("the committed dist/%s differs from a fresh build: run `go tool task ui` and commit ui/dist", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("the committed dist/%s is not part of a fresh build: run `go tool task ui` and commit ui/dist", name)
		}
	}
	if len(want) < 3 {
		t.Fatalf("a fresh build made only %d files", len(want))
	}
}
