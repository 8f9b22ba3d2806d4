package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// hostedAPI is the HTTP side the hosted adapters share: one provider
// origin, the header its key travels in, and the client.
type hostedAPI struct {
	client  *http.Client
	baseURL string
	// header and value present the key ("Authorization", "Key abc"); an
	// empty value sends nothing.
	header, value string
}

// authorize adds the key when req goes to the provider's own origin, never
// to a CDN a file is downloaded from.
func (a hostedAPI) authorize(req *http.Request) {
	base, err := url.Parse(a.baseURL)
	if err != nil || a.value == "" {
		return
	}
	if strings.EqualFold(base.Scheme, req.URL.Scheme) && strings.EqualFold(base.Host, req.URL.Host) {
		req.Header.Set(a.header, a.value)
	}
}

// call makes one JSON request and reads up to 1 MiB of the answer.
func (a hostedAPI) call(ctx context.Context, method, target string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	a.authorize(req)
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}

// fileSpec is what a finished render's file must be.
type fileSpec struct {
	noun        string // "video", "audio": in messages
	ext         string // "mp4"
	contentType string
	max         int64 // bytes
	// size is the length the provider announced (0: not announced); a
	// shorter download is a retryable failure.
	size int64
	// headLen bytes are read back for check; is names what check accepts
	// ("an MP4 video").
	headLen int64
	check   func(head []byte) bool
	is      string
}

// download streams fileURL to stem.<ext> (via a .part file, so a failed
// download leaves nothing that looks finished), capped at spec.max, and
// checks what arrived against spec.
func (a hostedAPI) download(ctx context.Context, fileURL, stem string, spec fileSpec) (Output, error) {
	u, err := url.Parse(fileURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Output{}, &FailedError{Step: "download", Message: fmt.Sprintf("the provider's %s URL %q is not an http(s) URL", spec.noun, fileURL)}
	}
	tooBig := func(n int64) error {
		return &FailedError{Step: "download", Message: fmt.Sprintf("the %s is %d bytes, over the %d MB limit", spec.noun, n, spec.max>>20)}
	}
	if spec.size > spec.max {
		return Output{}, tooBig(spec.size)
	}
	// No overall timeout (a big file on a slow link takes what it takes);
	// a stall of downloadIdle aborts instead.
	client := *a.client
	client.Timeout = 0
	dctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(dctx, http.MethodGet, fileURL, nil)
	if err != nil {
		return Output{}, &FailedError{Step: "download", Message: err.Error()}
	}
	a.authorize(req)
	resp, err := client.Do(req)
	if err != nil {
		return Output{}, netFailure(ctx, "download", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return Output{}, httpFailure("download", resp.StatusCode, body)
	}
	if resp.ContentLength > spec.max {
		return Output{}, tooBig(resp.ContentLength)
	}
	part, final := stem+".part."+spec.ext, stem+"."+spec.ext
	f, err := os.Create(part)
	if err != nil {
		return Output{}, &FailedError{Step: "download", Message: err.Error(), Retryable: true}
	}
	fail := func(e error) (Output, error) {
		f.Close()
		os.Remove(part)
		return Output{}, e
	}
	watchdog := time.AfterFunc(downloadIdle, func() { cancel(errors.New("the download stalled")) })
	defer watchdog.Stop()
	n, err := io.Copy(f, &idleReader{r: io.LimitReader(resp.Body, spec.max+1), t: watchdog})
	if err != nil {
		if cause := context.Cause(dctx); cause != nil && ctx.Err() == nil {
			err = cause
		}
		return fail(netFailure(ctx, "download", err))
	}
	if n > spec.max {
		return fail(&FailedError{Step: "download", Message: fmt.Sprintf("the %s is over the %d MB limit", spec.noun, spec.max>>20)})
	}
	if spec.size > 0 && n != spec.size {
		return fail(&FailedError{Step: "download", Message: fmt.Sprintf("the download ended after %d of %d bytes", n, spec.size), Retryable: true})
	}
	head := make([]byte, min(n, spec.headLen))
	if _, err := f.ReadAt(head, 0); err != nil || !spec.check(head) {
		return fail(&FailedError{Step: "download", Message: fmt.Sprintf("the provider's file (%s, %d bytes) is not %s", resp.Header.Get("Content-Type"), n, spec.is)})
	}
	if err := f.Close(); err != nil {
		os.Remove(part)
		return Output{}, &FailedError{Step: "download", Message: err.Error(), Retryable: true}
	}
	if err := os.Rename(part, final); err != nil {
		os.Remove(part)
		return Output{}, &FailedError{Step: "download", Message: err.Error(), Retryable: true}
	}
	return Output{Path: final, ContentType: spec.contentType, Ext: spec.ext}, nil
}

// idleReader pushes the stall watchdog back on every read that delivers.
type idleReader struct {
	r io.Reader
	t *time.Timer
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.t.Reset(downloadIdle)
	}
	return n, err
}
