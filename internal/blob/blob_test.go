package blob

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func TestValidKey(t *testing.T) {
	good := []string{"video/2026-11-22T10-00-00.000Z-0a1b2c3d.mp4", "a", "images/ab_c-1.png"}
	bad := []string{"", "../x", "/abs", "a//b", "a/./b", "a/../b", ".hidden", "a/.put-1", "vidéo.mp4", "a b", "a?c=1",
		strings.Repeat("a", 513), "x.mp4.meta", `a\b`}
	for _, k := range good {
		if err := ValidKey(k); err != nil {
			t.Errorf("ValidKey(%q) = %v, want ok", k, err)
		}
	}
	for _, k := range bad {
		if ValidKey(k) == nil {
			t.Errorf("ValidKey(%q) accepted", k)
		}
	}
}

// roundTrip is the behaviour every backend must have.
func roundTrip(t *testing.T, s Store) {
	ctx := context.Background()
	if _, _, err := s.Get(ctx, "video/none.mp4"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
	}
	if _, err := s.Stat(ctx, "video/none.mp4"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Stat of a missing key: %v, want ErrNotFound", err)
	}
	data := bytes.Repeat([]byte("frame"), 100_000)
	obj, err := s.Put(ctx, "video/a.mp4", "video/mp4", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if obj.Size != int64(len(data)) || obj.ContentType != "video/mp4" {
		t.Errorf("Put answered %+v", obj)
	}
	rc, got, err := s.Get(ctx, "video/a.mp4")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(b, data) || got.ContentType != "video/mp4" || got.Size != int64(len(data)) {
		t.Errorf("Get returned %d bytes, %+v", len(b), got)
	}
	if _, err := s.Put(ctx, "video/a.mp4", "audio/mpeg", strings.NewReader("second")); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stat(ctx, "video/a.mp4")
	if err != nil || st.Size != 6 || st.ContentType != "audio/mpeg" {
		t.Errorf("after overwrite Stat = %+v, %v", st, err)
	}
	// A body that fails midway leaves the key as it was.
	if _, err := s.Put(ctx, "video/b.mp4", "video/mp4", io.MultiReader(strings.NewReader("half"), failing{})); err == nil {
		t.Error("a failing body was stored")
	}
	if _, err := s.Stat(ctx, "video/b.mp4"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a failed Put left an object: %v", err)
	}
	if _, err := s.Put(ctx, "../escape", "text/plain", strings.NewReader("x")); err == nil {
		t.Error("an invalid key was accepted")
	}
	// Delete removes the file; deleting it again is not an error.
	if _, err := s.Put(ctx, "video/c.mp4", "video/mp4", strings.NewReader("gone soon")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Delete(ctx, "video/c.mp4"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	if _, err := s.Stat(ctx, "video/c.mp4"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a deleted key still answers: %v", err)
	}
}

type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestLocal(t *testing.T) {
	dir := t.TempDir()
	s, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, s)
	if _, ok, _ := s.Presign(context.Background(), "video/a.mp4", 0); ok {
		t.Error("the local store offered a presigned URL")
	}
	entries, _ := os.ReadDir(dir + "/video")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".put-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// TestS3 runs the same behaviour against an in-process S3 server, through
// the real aws-sdk-go-v2 client.
func TestS3(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("media"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	s, err := NewS3(context.Background(), S3Config{Bucket: "media", Prefix: "conduit/", Region: "us-east-1",
		Endpoint: srv.URL, PathStyle: true, AccessKeyID: "test", SecretAccessKey: "test-secret"})
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, s)
	if _, err := backend.HeadObject("media", "conduit/video/a.mp4"); err != nil {
		t.Errorf("the object is not under the prefix: %v", err)
	}
	u, ok, err := s.Presign(context.Background(), "video/a.mp4", 60e9)
	if err != nil || !ok {
		t.Fatalf("Presign: %v %v", ok, err)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "second" {
		t.Errorf("presigned GET: %d %q", resp.StatusCode, b)
	}
}

func TestSigner(t *testing.T) {
	s, err := NewSigner([]byte("0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Sign("video/a.mp4")
	if !s.Verify("video/a.mp4", c) {
		t.Fatal("own signature refused")
	}
	other, _ := NewSigner([]byte("fedcba9876543210"))
	for name, ok := range map[string]bool{
		"other key":    s.Verify("video/b.mp4", c),
		"tampered":     s.Verify("video/a.mp4", c[:len(c)-1]+"A"),
		"empty":        s.Verify("video/a.mp4", ""),
		"other secret": other.Verify("video/a.mp4", c),
		"zero signer":  Signer{}.Verify("video/a.mp4", c),
	} {
		if ok {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := NewSigner([]byte("short")); err == nil {
		t.Error("a short secret was accepted")
	}
}
