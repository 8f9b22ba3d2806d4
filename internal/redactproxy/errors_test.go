package redactproxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"conduit/internal/errs"
)

func TestUpstreamErrorsMapToTheChatShape(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		kind   errs.Kind
		msg    string
	}{
		{401, `{"error":{"message":"Incorrect API key provided: sk-live-123"}}`, errs.Upstream, "[upstream key]"},
		{429, `{"error":{"message":"slow down"}}`, errs.TooManyRequests, "slow down"},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens too big"}}`, errs.Invalid, "max_tokens too big"},
		{404, `{"error":{"code":"DeploymentNotFound","message":"no deployment"}}`, errs.Invalid, "no deployment"},
		{503, `not json`, errs.Upstream, "Service Unavailable"},
	} {
		resp := &http.Response{StatusCode: c.status, Body: io.NopCloser(strings.NewReader(c.body))}
		e := upstreamStatus(resp, "sk-live-123")
		if e.Kind != c.kind || !strings.Contains(e.Msg, c.msg) || strings.Contains(e.Msg, "sk-live-123") || e.Extra["upstreamStatus"] != c.status {
			t.Fatalf("%d: %+v", c.status, e)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if e := upstreamFailure(ctx, ctx.Err(), time.Second); e.Kind != errs.Upstream || e.Code != "upstream_timeout" {
		t.Fatalf("%+v", e)
	}
	if e := upstreamFailure(context.Background(), errors.New("connection refused"), time.Second); e.Code != "upstream_unreachable" {
		t.Fatalf("%+v", e)
	}
}
