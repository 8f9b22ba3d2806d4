package frontend

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
)

// router builds a bare engine with the real middleware and the given routes.
func testRouter(log *slog.Logger, routes func(r *gin.Engine)) *gin.Engine {
	r := gin.New()
	r.Use(requestContext(log), recovery())
	routes(r)
	return r
}

func TestPanicBecomesSpecShapedError(t *testing.T) {
	var logs bytes.Buffer
	r := testRouter(slog.New(slog.NewJSONHandler(&logs, nil)), func(r *gin.Engine) {
		r.GET("/plain", func(*gin.Context) { panic("boom") })
		r.GET("/openai", useShape(shapeOpenAI), func(*gin.Context) { panic("boom") })
	})

	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/plain", nil))
	if w.Code != 500 || strings.TrimSpace(w.Body.String()) != `{"error":"internal error"}` {
		t.Fatalf("plain: %d %s", w.Code, w.Body)
	}

	w = httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/openai", nil))
	var body struct {
		Error struct{ Message, Type string }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != 500 || body.Error.Message != "internal error" || body.Error.Type != "server_error" {
		t.Fatalf("openai: %d %s", w.Code, w.Body)
	}
	if !strings.Contains(logs.String(), "panic in handler") || !strings.Contains(logs.String(), "request_id") {
		t.Fatalf("panic not logged with request id: %s", logs.String())
	}
}

func TestRequestIDIsEchoedOrMinted(t *testing.T) {
	var logs bytes.Buffer
	r := testRouter(slog.New(slog.NewJSONHandler(&logs, nil)), func(r *gin.Engine) {
		r.GET("/x", func(c *gin.Context) { c.Status(204) })
	})
	req := httptest.NewRequest(http.MethodGet, "/x?token=secret-ticket", nil)
	req.Header.Set(RequestIDHeader, "abc-123")
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	if got := w.Header().Get(RequestIDHeader); got != "abc-123" {
		t.Fatalf("caller's id not echoed: %q", got)
	}
	if strings.Contains(logs.String(), "secret-ticket") {
		t.Fatal("the access log must not contain query strings")
	}
	if !strings.Contains(logs.String(), `"request_id":"abc-123"`) {
		t.Fatalf("access log lacks request id: %s", logs.String())
	}

	req = httptest.NewRequest(http.MethodGet, "/x", nil)
	req.Header.Set(RequestIDHeader, "bad id with spaces and way too long ........................................................")
	w = httptest.NewRecorder()
	r.ServeHTTP(w, req)
	if got := w.Header().Get(RequestIDHeader); len(got) != 16 {
		t.Fatalf("unsafe id should be replaced by a minted one, got %q", got)
	}
}

func TestErrorShapesCarryCodeAndExtras(t *testing.T) {
	e := &errs.Error{Kind: errs.PaymentRequired, Msg: "insufficient credits", Code: "INSUFFICIENT_CREDITS", Extra: map[string]any{"balanceUsd": 0.5}}
	r := testRouter(slog.New(slog.DiscardHandler), func(r *gin.Engine) {
		r.GET("/plain", func(c *gin.Context) { fail(c, e) })
		r.GET("/openai", useShape(shapeOpenAI), func(c *gin.Context) { fail(c, e) })
	})
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/plain", nil))
	if w.Code != 402 || strings.TrimSpace(w.Body.String()) != `{"balanceUsd":0.5,"code":"INSUFFICIENT_CREDITS","error":"insufficient credits"}` {
		t.Fatalf("plain: %d %s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/openai", nil))
	if w.Code != 402 || strings.TrimSpace(w.Body.String()) != `{"error":{"balanceUsd":0.5,"code":"INSUFFICIENT_CREDITS","message":"insufficient credits","type":"insufficient_quota"}}` {
		t.Fatalf("openai: %d %s", w.Code, w.Body)
	}
}
