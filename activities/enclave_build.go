package activities

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"conduit/internal/enclaves"
	"conduit/internal/enclaves/build"
	"conduit/internal/enclaves/provider"
	"conduit/internal/store"
)

// Built is a github source's pushed image (no secret in it: it is written
// to workflow history).
type Built struct {
	Image   string
	Commit  string
	Binary  string
	Package string
}

// Build clones the enclave's repository, builds its Go program into an
// image and pushes it (internal/enclaves/build), records the image on the
// enclave (the prepare step pulls it) and writes the build's output as
// build log entries as it goes. The token is opened here, from the record:
// it never travels through workflow history. Building the same commit
// again pushes the same image, so a retried or repeated build leaves one.
func (e *Enclaves) Build(ctx context.Context, id string) (Built, error) {
	rec, err := e.Store.Enclave(ctx, id)
	if err != nil {
		return Built{}, err
	}
	if rec.SourceType != enclaves.SourceGitHub {
		return Built{}, provider.Errorf(provider.Permanent, "build", id, "the enclave's source is %q, not github: there is nothing to build", rec.SourceType)
	}
	if e.Builder == nil {
		return Built{}, provider.Errorf(provider.Permanent, "build", id, "this worker cannot build: no build registry is configured (enclaves.build_registry)")
	}
	req := build.Request{ID: id, Repo: rec.GitHub.SelectedRepo, Branch: rec.GitHub.SelectedBranch, Username: rec.GitHub.Username}
	sealed, err := e.Store.EnclaveGitHubToken(ctx, id)
	if err != nil {
		return Built{}, err
	}
	if len(sealed) > 0 {
		if e.Secrets == nil {
			return Built{}, provider.Errorf(provider.Permanent, "build", id, "the github token cannot be opened: no secret key is configured")
		}
		tok, err := e.Secrets.Open(sealed, enclaves.GitHubSecretPurpose(id))
		if err != nil {
			return Built{}, provider.Wrap(provider.Permanent, "build", id, err)
		}
		req.Token = string(tok)
	}

	out := &buildLog{store: e.Store, id: id, source: "build/" + rec.GitHub.SelectedRepo, done: make(chan struct{})}
	if n := activity.GetInfo(ctx).Attempt; n > 1 {
		out.add("build", fmt.Sprintf("attempt %d", n))
	}
	stop := heartbeat(ctx)
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				out.flush(ctx)
			case <-out.done:
				return
			}
		}
	}()
	res, err := e.Builder.Build(ctx, req, out.add)
	if err != nil {
		out.add("stderr", "the build failed: "+err.Error())
	}
	close(out.done)
	<-flushed
	stop()
	out.flush(context.WithoutCancel(ctx))
	if err != nil {
		return Built{}, e.noteFailure(ctx, id, interrupted(ctx, err))
	}
	if err := e.Store.SetEnclaveBuild(ctx, id, res.Image, res.Commit); err != nil {
		return Built{}, err
	}
	return Built{Image: res.Image, Commit: res.Commit, Binary: res.Binary, Package: res.Package}, nil
}

// buildLog buffers build output and appends it as build log entries.
type buildLog struct {
	store  *store.Store
	id     string
	source string
	done   chan struct{}

	mu      sync.Mutex
	pending []store.EnclaveLog
}

// add is a build.Log: the stream is the entry's stream ("git", "stdout",
// "stderr"; none for the builder's own steps).
func (b *buildLog) add(stream, line string) {
	if stream == "build" {
		stream = ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append(b.pending, store.EnclaveLog{Type: "build", Source: b.source, Stream: stream, Message: line, At: time.Now()})
}

// flush appends what is buffered; entries that cannot be written now are
// kept for the next flush.
func (b *buildLog) flush(ctx context.Context) {
	b.mu.Lock()
	batch := b.pending
	b.pending = nil
	b.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if err := b.store.AppendEnclaveLogs(ctx, b.id, batch); err != nil {
		b.mu.Lock()
		b.pending = append(batch, b.pending...)
		b.mu.Unlock()
	}
}
