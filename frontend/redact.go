package frontend

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/apikey"
	"conduit/internal/errs"
	"conduit/internal/paging"
	"conduit/internal/redactlog"
	"conduit/internal/redactproxy"
	"conduit/internal/vault"
)

// The redaction proxies, the redacting chat endpoint, the audit log, the
// attestation answer and the PII vault (docs/redaction-proxies.md): thin —
// the rules live in internal/redactproxy, internal/redactlog and
// internal/vault.

// Redaction is what these routes need (nil: they answer 503).
type Redaction struct {
	Proxies *redactproxy.Service
	Log     *redactlog.Service
	Vault   *vault.Service
	// MaxBodyBytes bounds a chat request.
	MaxBodyBytes int64
}

// Paths of the redaction routes.
const (
	ProxiesPath      = "/api/proxies"
	RedactChatPath   = "/api/redact/chat/completions"
	RedactLogPath    = "/api/redact/log"
	RedactAttestPath = "/api/redact/attest"
)

func (s *Server) mountRedaction(r *gin.Engine, api *gin.RouterGroup) {
	on := func(c *gin.Context) {
		if s.deps.Redaction == nil || s.deps.Redaction.Proxies == nil {
			fail(c, errs.Unavailablef("redaction proxies are not configured on this deployment"))
			return
		}
		c.Next()
	}
	px := api.Group("/proxies", on, requireScope(apikey.RedactProxy))
	px.POST("", s.createProxy)
	px.GET("", s.listProxies)
	px.GET("/:id", s.getProxy)
	px.PUT("/:id", s.putProxy)
	px.PATCH("/:id", s.patchProxy)
	px.DELETE("/:id", s.deleteProxy)

	api.GET("/redact/log", on, requireScope(apikey.RedactLog), s.redactLog)
	api.GET("/redact/log/verify", on, requireScope(apikey.RedactLog), s.verifyRedactLog)
	api.GET("/redact/attest", s.redactAttest)

	pii := api.Group("/pii", on)
	pii.POST("/tokens", requireScope(apikey.PIIIngest), s.piiIngest)
	pii.GET("/tokens/:token", requireScope(apikey.PIIRead), s.piiRead)
	pii.PUT("/tokens/:token", requireScope(apikey.PIIWrite), s.piiUpdate)
	pii.DELETE("/subjects/:id", requireScope(apikey.PIIDelete), s.piiDeleteSubject)
	pii.POST("/consents", requireScope(apikey.PIIConsent), s.piiAddConsent)
	pii.GET("/consents", requireScope(apikey.PIIConsent), s.piiConsents)
	pii.GET("/audit", requireScope(apikey.PIIAudit), s.piiAudit)

	// The chat endpoint speaks OpenAI's error shape from the first check on.
	r.POST(RedactChatPath, useShape(shapeOpenAI), checkInput, s.authenticate, on, requireScope(apikey.RedactProxy), s.redactChat)
}

func limitParam(c *gin.Context, max int) (int, error) {
	l := c.Query("limit")
	if l == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 || n > max {
		return 0, errs.Invalidf("limit must be 1 to %d", max)
	}
	return n, nil
}

func (s *Server) createProxy(c *gin.Context) {
	var in redactproxy.ProxyArgs
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	out, err := s.deps.Redaction.Proxies.Create(c.Request.Context(), principal(c).AccountID, in)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Location", s.deps.Config.BaseURL()+ProxiesPath+"/"+out.ID)
	c.JSON(http.StatusCreated, out)
}

func (s *Server) listProxies(c *gin.Context) {
	tok, err := paging.From(c.Query("after"), c.Query("cursor"))
	if err != nil {
		fail(c, err)
		return
	}
	limit, err := limitParam(c, 100)
	if err != nil {
		fail(c, err)
		return
	}
	out, err := s.deps.Redaction.Proxies.List(c.Request.Context(), principal(c).AccountID, tok, limit)
	if err != nil {
		fail(c, err)
		return
	}
	body := gin.H{"proxies": out.Proxies}
	if out.NextAfter != "" {
		body["nextAfter"] = out.NextAfter
		body["nextUrl"] = paging.NextURL(s.deps.Config.BaseURL(), ProxiesPath, c.Request.URL.Query(), out.NextAfter)
	}
	c.JSON(http.StatusOK, body)
}

func (s *Server) getProxy(c *gin.Context) {
	out, err := s.deps.Redaction.Proxies.Get(c.Request.Context(), principal(c).AccountID, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// putProxy replaces the settings; an absent upstreamKey keeps the key.
func (s *Server) putProxy(c *gin.Context) {
	var in redactproxy.ProxyArgs
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	s.updateProxy(c, in)
}

// patchProxy changes the fields sent and keeps the others.
func (s *Server) patchProxy(c *gin.Context) {
	cur, err := s.deps.Redaction.Proxies.Get(c.Request.Context(), principal(c).AccountID, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	pol := cur.Policy
	audit := cur.Audit
	in := redactproxy.ProxyArgs{Name: cur.Name, Style: cur.Style, BaseURL: cur.BaseURL, APIVersion: cur.APIVersion, Models: cur.Models,
		DefaultModel: cur.DefaultModel, Policy: &pol, Output: cur.Output, Audit: &audit}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	s.updateProxy(c, in)
}

func (s *Server) updateProxy(c *gin.Context, in redactproxy.ProxyArgs) {
	out, err := s.deps.Redaction.Proxies.Update(c.Request.Context(), principal(c).AccountID, c.Param("id"), in)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) deleteProxy(c *gin.Context) {
	if err := s.deps.Redaction.Proxies.Delete(c.Request.Context(), principal(c).AccountID, c.Param("id")); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// redactChat: POST /api/redact/chat/completions with x-svc-proxy and an
// optional x-model-key (used for this call only).
func (s *Server) redactChat(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, s.deps.Redaction.MaxBodyBytes))
	if err != nil {
		fail(c, badJSON(err))
		return
	}
	p := principal(c)
	w := &chatOut{c: c, sse: &sseWriter{c: c}}
	err = s.deps.Redaction.Proxies.Chat(c.Request.Context(), redactproxy.ChatArgs{AccountID: p.AccountID, KeyID: p.KeyID,
		Proxy: strings.TrimSpace(c.GetHeader(redactproxy.HeaderProxy)), ModelKey: strings.TrimSpace(c.GetHeader(redactproxy.HeaderModelKey)), Body: body}, w)
	if err != nil {
		fail(c, err)
	}
}

// chatOut writes the chat answer for redactproxy.
type chatOut struct {
	c   *gin.Context
	sse *sseWriter
}

func (w *chatOut) Header(name, value string) { w.c.Header(name, value) }
func (w *chatOut) JSON(status int, v any)    { w.c.JSON(status, v) }
func (w *chatOut) StartStream(trailers ...string) {
	h := w.c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if len(trailers) > 0 {
		h.Set("Trailer", strings.Join(trailers, ", "))
	}
	w.c.Status(http.StatusOK)
	w.c.Writer.WriteHeaderNow()
	w.c.Writer.Flush()
}
func (w *chatOut) Event(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.sse.write("data: " + string(b) + "\n\n")
	return w.c.Request.Context().Err()
}
func (w *chatOut) Done()                      { w.sse.done() }
func (w *chatOut) Trailer(name, value string) { w.c.Writer.Header().Set(name, value) }
func (w *chatOut) InBandError(e *errs.Error) {
	w.sse.data(inBandError(e))
	w.sse.done()
}

// redactLog: GET /api/redact/log?limit&after&proxy&source&since&until
func (s *Server) redactLog(c *gin.Context) {
	tok, err := paging.From(c.Query("after"), c.Query("cursor"))
	if err != nil {
		fail(c, err)
		return
	}
	limit, err := limitParam(c, 500)
	if err != nil {
		fail(c, err)
		return
	}
	a := redactlog.ListArgs{ProxyID: c.Query("proxy"), Source: c.Query("source"), Limit: limit, After: tok}
	for name, dst := range map[string]*time.Time{"since": &a.Since, "until": &a.Until} {
		if v := c.Query(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				fail(c, errs.Invalidf("%s must be an RFC 3339 time", name))
				return
			}
			*dst = t
		}
	}
	out, err := s.deps.Redaction.Log.List(c.Request.Context(), principal(c).AccountID, a)
	if err != nil {
		fail(c, err)
		return
	}
	if out.NextAfter != "" {
		out.NextURL = paging.NextURL(s.deps.Config.BaseURL(), RedactLogPath, c.Request.URL.Query(), out.NextAfter)
	}
	c.JSON(http.StatusOK, out)
}

// verifyRedactLog: GET /api/redact/log/verify recomputes the caller's
// chain (always 200; valid says whether it holds).
func (s *Server) verifyRedactLog(c *gin.Context) {
	out, err := s.deps.Redaction.Log.Verify(c.Request.Context(), principal(c).AccountID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// redactAttest: GET /api/redact/attest. The redactor runs inside this API
// process, not in an enclave, so there is no attestation to give: the
// answer says so, in the shape an attesting deployment fills in.
func (s *Server) redactAttest(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{
		"attested":          false,
		"runtime":           "api-process",
		"enclaveId":         nil,
		"pcr0":              nil,
		"document":          nil,
		"verification":      nil,
		"recognizerVersion": "internal/redact",
		"reason":            "this deployment runs the redactor inside the API process, not in an enclave, so it has no attestation document to give",
		"howToEnable":       "run the redactor as an enclave (the enclave family: POST /api/enclaves, a Nitro or local provider) on a plan that includes attested redaction; this endpoint then returns the enclave's attestation document and its verification (GET /api/enclaves/{id}/attestation/verify)",
		"docs":              s.deps.Config.BaseURL() + "/docs/redaction-proxies.md#attestation",
	})
}

func caller(c *gin.Context) vault.Caller {
	p := principal(c)
	return vault.Caller{AccountID: p.AccountID, KeyID: p.KeyID}
}

func (s *Server) piiIngest(c *gin.Context) {
	var in vault.IngestArgs
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	out, err := s.deps.Redaction.Vault.Ingest(c.Request.Context(), caller(c), in)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, out)
}

func (s *Server) piiRead(c *gin.Context) {
	out, err := s.deps.Redaction.Vault.Read(c.Request.Context(), caller(c), c.Param("token"))
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, out)
}

func (s *Server) piiUpdate(c *gin.Context) {
	var in struct {
		Value string `json:"value"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	out, err := s.deps.Redaction.Vault.Update(c.Request.Context(), caller(c), c.Param("token"), in.Value)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) piiDeleteSubject(c *gin.Context) {
	out, err := s.deps.Redaction.Vault.DeleteSubject(c.Request.Context(), caller(c), c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) piiAddConsent(c *gin.Context) {
	var in vault.ConsentArgs
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	out, err := s.deps.Redaction.Vault.AddConsent(c.Request.Context(), caller(c), in)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, out)
}

func (s *Server) piiConsents(c *gin.Context) {
	out, err := s.deps.Redaction.Vault.ListConsents(c.Request.Context(), caller(c), c.Query("subjectId"), c.Query("purpose"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) piiAudit(c *gin.Context) {
	tok, err := paging.From(c.Query("after"), c.Query("cursor"))
	if err != nil {
		fail(c, err)
		return
	}
	limit, err := limitParam(c, 500)
	if err != nil {
		fail(c, err)
		return
	}
	out, err := s.deps.Redaction.Vault.Audit(c.Request.Context(), caller(c), c.Query("subjectId"), tok, limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}
