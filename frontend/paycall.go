package frontend

// Pay-per-call over HTTP (spec §4.6–4.13): decoding, headers and the
// streamed answer with keep-alive bytes. Every rule — selling, the
// already-paid rule, starting the render, retries, claim tickets, the run
// record — is internal/paycall's.

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/paycall"
	"conduit/internal/pricing"
	"conduit/internal/x402"
)

// The pay-per-call endpoints and the signed file URLs.
const (
	VideoPath     = paycall.VideoPath
	SpeechPath    = paycall.SpeechPath
	MusicPath     = paycall.MusicPath
	PurchasesPath = paycall.PurchasesPath
	FilesPath     = paycall.FilesPath
)

// pollAfter is what a running run or job suggests between polls.
const pollAfter = paycall.PollAfter

// getMedia: GET <kind endpoint> — the menu without a query, else the run
// its claim ticket opens (held up to Prefer: wait=N seconds).
func (s *Server) getMedia(kind string) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx := c.Request.Context()
		if len(c.Request.URL.Query()) == 0 {
			menu, err := s.payPerCall.Menu(kind)
			if err != nil {
				fail(c, err)
				return
			}
			c.JSON(http.StatusOK, menu)
			return
		}
		a, err := s.payPerCall.Claim(ctx, kind, c.Query("runId"), c.Query("token"))
		if err != nil {
			fail(c, err)
			return
		}
		wait := time.Duration(0)
		if pref := parsePrefer(c.Request.Header.Values("Prefer")); pref.wait > 0 && !pref.async {
			c.Header("Preference-Applied", "wait="+strconv.Itoa(int(pref.wait/time.Second)))
			wait = pref.wait
		}
		s.answer(c, a, wait)
	}
}

// postMedia: POST <kind endpoint>, paid with the payment-signature header.
func (s *Server) postMedia(kind string) gin.HandlerFunc {
	return func(c *gin.Context) {
		sold, err := s.payPerCall.Sell(c.Request.Context(), paycall.Purchase{
			Kind: kind, Decode: func(v any) error { return decodeJSON(c, v) },
			Payment:     c.GetHeader(x402.HeaderPaymentSignature),
			Limit:       func(network, payer string) error { return s.walletLimit(c, network, payer) },
			UnpaidFetch: func() error { return s.unpaidFetch(c) },
		})
		s.sold(c, sold, err)
	}
}

// retryMedia: POST <kind endpoint>/retry?runId=&token= with an optional
// body (a new prompt or text, async).
func (s *Server) retryMedia(kind string) gin.HandlerFunc {
	return func(c *gin.Context) {
		in := paycall.RetryArgs{Kind: kind, RunID: c.Query("runId"), Token: c.Query("token")}
		if c.Request.ContentLength != 0 {
			in.Decode = func(v any) error { return decodeJSON(c, v) }
		}
		sold, err := s.payPerCall.Retry(c.Request.Context(), in)
		s.sold(c, sold, err)
	}
}

// sold answers a sale or retry: PAYMENT-RESPONSE for a settled payment,
// then the run, waited for as the caller prefers.
func (s *Server) sold(c *gin.Context, sold paycall.Sold, err error) {
	if err != nil {
		fail(c, err)
		return
	}
	if sold.Settlement != nil {
		if h, err := x402.EncodeHeader(*sold.Settlement); err == nil {
			c.Header(x402.HeaderPaymentResponse, h)
		}
	}
	s.answer(c, sold.Answer, waitFor(c, sold))
}

// waitFor is how long an answer waits: Prefer respond-async or async:true
// → not at all, Prefer wait=N → N seconds (at most 720), else the kind's
// default. It sets Preference-Applied for what it honoured.
func waitFor(c *gin.Context, sold paycall.Sold) time.Duration {
	pref := parsePrefer(c.Request.Header.Values("Prefer"))
	switch {
	case pref.async:
		c.Header("Preference-Applied", "respond-async")
		return 0
	case sold.Async:
		return 0
	case pref.wait >= 0:
		c.Header("Preference-Applied", "wait="+strconv.Itoa(int(pref.wait/time.Second)))
		return pref.wait
	}
	return sold.Wait
}

type preference struct {
	async bool
	wait  time.Duration // -1: not asked
}

// parsePrefer reads RFC 7240 preferences: respond-async and wait=N
// (seconds, capped at 720).
func parsePrefer(values []string) preference {
	p := preference{wait: -1}
	for _, v := range values {
		for _, tok := range strings.Split(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(tok), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "respond-async":
				p.async = true
			case "wait":
				if n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(val), `"`)); err == nil && n >= 0 {
					p.wait = min(time.Duration(n)*time.Second, pricing.MaxWait)
				}
			}
		}
	}
	return p
}

// answer writes the run record: at once when wait is 0 or the run has
// finished, else a 200 whose body is a whitespace byte every keep-alive
// interval until the run finishes or the wait ends, then the record.
func (s *Server) answer(c *gin.Context, a paycall.Answer, wait time.Duration) {
	ctx := c.Request.Context()
	c.Header("X-Status-Url", a.StatusURL)
	if a.Finished || wait <= 0 {
		if a.Record == nil {
			var err error
			if a, err = s.payPerCall.Look(ctx, a.Kind, a.RunID); err != nil {
				fail(c, err)
				return
			}
		}
		if !a.Finished {
			c.Header("Location", a.StatusURL)
			c.Header("Retry-After", strconv.Itoa(int(pollAfter/time.Second)))
		}
		s.writeRecord(c, a)
		return
	}
	c.Header("Content-Type", "application/json; charset=utf-8")
	c.Header("Cache-Control", "no-store")
	c.Header("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	c.Writer.WriteHeaderNow()
	c.Writer.Flush()

	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.payPerCall.Await(waitCtx, a.RunID)
	}()
	tick := time.NewTicker(s.deps.Media.KeepAlive)
	defer tick.Stop()
wait:
	for {
		select {
		case <-done:
			break wait
		case <-tick.C:
			if _, err := c.Writer.Write([]byte(" ")); err != nil {
				return // the caller left; the run goes on
			}
			c.Writer.Flush()
		}
	}
	if ctx.Err() != nil {
		return
	}
	now, err := s.payPerCall.Look(ctx, a.Kind, a.RunID)
	if err != nil {
		// The 200 is out: the error goes in the body, with the run to poll.
		b, _ := json.Marshal(gin.H{"error": toError(c, err).Msg, "runId": a.RunID, "statusUrl": a.StatusURL})
		_, _ = c.Writer.Write(b)
		return
	}
	s.writeRecord(c, now)
}

// writeRecord writes the record and, when it was written whole, tells the
// service the file it carried reached the caller.
func (s *Server) writeRecord(c *gin.Context, a paycall.Answer) {
	b, err := json.Marshal(a.Record)
	if err != nil {
		fail(c, err)
		return
	}
	if !c.Writer.Written() {
		c.Header("Content-Type", "application/json; charset=utf-8")
		c.Header("Cache-Control", "no-store")
		c.Status(http.StatusOK)
	}
	if _, err := c.Writer.Write(append(b, '\n')); err != nil {
		return
	}
	c.Writer.Flush()
	s.payPerCall.Delivered(c.Request.Context(), a)
}
