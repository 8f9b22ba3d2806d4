package frontend

// The machinery every pay-per-call kind (video, speech, music) shares:
// taking the payment, starting the render workflow, claim tickets, the
// run record, and the streamed answer with keep-alive bytes.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/blob"
	"conduit/internal/imagefetch"
	"conduit/internal/logging"
	"conduit/internal/money"
	"conduit/internal/payments"
	"conduit/internal/pricing"
	"conduit/internal/runs"
	"conduit/internal/store"
	"conduit/internal/temporalx"
	"conduit/internal/ticket"
	"conduit/internal/x402"
	"conduit/workflows"
)

// Media is what the pay-per-call endpoints need beyond payments.
type Media struct {
	// Err says why pay-per-call is off (nil when it is on).
	Err     error
	Video   *pricing.VideoCatalog
	Speech  *pricing.SpeechCatalog
	Music   *pricing.MusicCatalog
	Tickets *ticket.Signer
	Files   blob.Signer
	// Links sign the media library's expiring file URLs.
	Links  *blob.Links
	Blob   blob.Store
	Images *imagefetch.Fetcher
	// HeartbeatTimeout and KeepAlive come from media config.
	HeartbeatTimeout time.Duration
	KeepAlive        time.Duration
}

// FilesPath prefixes the signed file URLs.
const FilesPath = "/files/"

// pollAfter is what a running run suggests between polls.
const pollAfter = 5 * time.Second

// mediaKind is what differs between the pay-per-call kinds.
type mediaKind struct {
	name string // video, speech, music
	path string // the endpoint
	// fileField names the record's file URL field (video, audio).
	fileField string
	// wait is the default wait for a run of this kind.
	wait func(store.MediaRequest) time.Duration
	// fields adds the kind's own fields to a record.
	fields func(rec gin.H, r store.MediaRun)
	// deadline is the render deadline of a request.
	deadline func(store.MediaRequest) time.Duration
	// textField is the request field a retry may change (prompt or
	// text), at most maxText() characters; setText puts it in a request.
	// maxText is read per request: the catalogs are nil while media is off.
	textField string
	maxText   func() int
	setText   func(*store.MediaRequest, string)
	// reprice prices a changed request (nil: the price stays).
	reprice func(store.MediaRequest) money.Micros
	// outputs and failedStep say whether the record carries them (video).
	outputs, failedStep bool
	// menu is the answer of GET without a query; order reads and checks
	// a POST's body and prices it.
	menu  func() any
	order func(*gin.Context) (order, error)
}

// mediaKinds are the kinds on sale.
func (s *Server) mediaKinds() []mediaKind {
	return []mediaKind{s.videoKind(), s.speechKind(), s.musicKind()}
}

// getMedia: GET <kind endpoint> — the menu without a query, else the run
// its claim ticket opens. Only the menu (selling) depends on pay-per-call
// being on: a ticket already issued opens its run whatever the switches
// say now.
func (s *Server) getMedia(k mediaKind) gin.HandlerFunc {
	return func(c *gin.Context) {
		if len(c.Request.URL.Query()) == 0 {
			if s.payPerCallReady(c) {
				c.JSON(http.StatusOK, k.menu())
			}
			return
		}
		if s.claimsReady(c) {
			s.pollMediaRun(c, k)
		}
	}
}

// postMedia: POST <kind endpoint>. Everything that can refuse the request
// is checked before the payment is even looked at.
func (s *Server) postMedia(k mediaKind) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !s.payPerCallReady(c) {
			return
		}
		o, err := k.order(c)
		if err != nil {
			fail(c, err)
			return
		}
		s.sell(c, o)
	}
}

// payPerCallReady answers 503 unless payments and media are configured.
func (s *Server) payPerCallReady(c *gin.Context) bool {
	if !s.deps.Payments.Enabled() {
		fail(c, errorf(http.StatusServiceUnavailable, notConfigured))
		return false
	}
	if s.deps.Media.Err != nil {
		fail(c, errorf(http.StatusServiceUnavailable, "pay-per-call is not available on this deployment"))
		return false
	}
	return true
}

// claimsReady answers 503 unless claim tickets and file links can be
// checked: they need the signing secret (media.secret), not payments. The
// ticket and file signers are made from that secret together, so a
// missing ticket signer means the file signer has no key either.
func (s *Server) claimsReady(c *gin.Context) bool {
	if s.deps.Media.Tickets == nil {
		fail(c, errorf(http.StatusServiceUnavailable, "claim tickets and file links cannot be checked on this deployment (media.secret is not set)"))
		return false
	}
	return true
}

// order is a validated pay-per-call request, priced.
type order struct {
	kind    mediaKind
	request store.MediaRequest
	price   money.Micros
	// description is the challenge's resource description.
	description string
	// image is the fetched first frame to store before settling.
	image *imagefetch.Image
	async bool
}

// requestHash identifies "the same request" for alreadyPaid: every field
// the buyer chose, nothing derived.
func requestHash(kind string, r store.MediaRequest) string {
	r.ImageKey, r.Characters = "", 0
	b, _ := json.Marshal(struct {
		Kind string             `json:"kind"`
		Req  store.MediaRequest `json:"req"`
	}{kind, r})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// sell takes the payment for a validated order and answers with the run:
// 402 with the challenge without a payment, 409 for a payment already
// redeemed, the undelivered earlier file for the same request, or a new
// run started as the workflow render/<runId>.
func (s *Server) sell(c *gin.Context, o order) {
	pay := s.deps.Payments
	ctx := c.Request.Context()
	challenge := x402.Challenge(x402.ResourceInfo{URL: s.url(o.kind.path), Description: o.description, MimeType: "application/json"}, o.price, pay.Offers(), "")
	runID := runs.NewRunID(time.Now())
	pp, err := pay.Take(ctx, c.GetHeader(x402.HeaderPaymentSignature), challenge,
		payments.Purchase{Amount: o.price, Resource: o.kind.path, Purpose: workflows.RenderWorkflowID(runID)})
	var refused *payments.Refused
	var redeemed *payments.Redeemed
	switch {
	case errors.As(err, &refused):
		s.paymentRequired(c, challenge, refused.Msg)
		return
	case errors.As(err, &redeemed):
		alreadyRedeemed(c, redeemed.Transaction)
		return
	case err != nil:
		fail(c, err)
		return
	}
	// Counted per wallet only now that the wallet signed: forged headers
	// naming a wallet cannot spend its budget.
	if !s.walletAllowed(c, pp.Network, pp.Payer) {
		return
	}
	hash := requestHash(o.kind.name, o.request)
	if s.answerAlreadyPaid(c, o, pp, hash) {
		return
	}
	if o.image != nil {
		key := "images/" + sha256Hex(o.image.Bytes) + "." + o.image.Ext
		if _, err := s.deps.Media.Blob.Put(ctx, key, o.image.ContentType, strings.NewReader(string(o.image.Bytes))); err != nil {
			logging.From(ctx).Error("storing the first frame failed", "err", err)
			fail(c, &APIError{Status: http.StatusServiceUnavailable, Code: "IMAGE_STORE_FAILED", Message: "the image could not be stored; nothing was charged, try again"})
			return
		}
		o.request.ImageKey = key
	}
	in := workflows.RenderInput{
		Run: store.NewMediaRun{
			RunID: runID, Kind: o.kind.name, Request: o.request, RequestHash: hash, Network: pp.Network,
			Payer: pp.Payer, Price: o.price, StartedAt: time.Now().UTC(),
		},
		Payment: &pp.Payload, Requirements: pp.Requirements, Resource: o.kind.path,
	}
	adm, ok := s.startRender(c, in, o.kind)
	if !ok {
		return
	}
	switch {
	case adm.AlreadyRedeemed:
		alreadyRedeemed(c, adm.Transaction) // a concurrent call claimed it first
		return
	case adm.Failed != "":
		fail(c, errorf(http.StatusServiceUnavailable, "%s", adm.Failed))
		return
	case !adm.Accepted:
		s.paymentRequired(c, challenge, adm.PaymentMessage)
		return
	}
	if h, err := x402.EncodeHeader(x402.SettleResponse{Success: true, Transaction: adm.Run.Transaction, Network: pp.Network,
		Payer: x402.DisplayAddress(pp.Network, pp.Payer)}); err == nil {
		c.Header(x402.HeaderPaymentResponse, h)
	}
	s.answer(c, o.kind, runID, s.waitFor(c, o.kind, adm.Run.Request, o.async), nil)
}

// alreadyRedeemed answers 409 PAYMENT_ALREADY_REDEEMED: the payment was
// claimed by another purchase (transaction is its settlement, once there
// is one).
func alreadyRedeemed(c *gin.Context, transaction string) {
	extra := map[string]any{}
	if transaction != "" {
		extra["transaction"] = transaction
	}
	fail(c, &APIError{Status: http.StatusConflict, Code: "PAYMENT_ALREADY_REDEEMED",
		Message: "this payment was already redeemed; sign a new payment for a new request", Extra: extra})
}

// answerAlreadyPaid answers with the wallet's earlier run of the same
// request when its finished file never reached the caller (no complete
// answer carrying the file URL was written and the file was never
// downloaded). The payment must verify — it proves the caller holds the
// wallet — but it is not settled.
func (s *Server) answerAlreadyPaid(c *gin.Context, o order, pp payments.Presented, hash string) bool {
	ctx := c.Request.Context()
	prev, err := s.deps.Store.UndeliveredPurchase(ctx, pp.Network, pp.Payer, o.kind.name, hash)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	if err != nil {
		fail(c, err)
		return true
	}
	v, err := s.deps.Payments.Facilitator.Verify(ctx, pp.Payload, pp.Requirements)
	if err != nil || !v.IsValid {
		return false // settlement will refuse it with the facilitator's words
	}
	c.Header("X-Status-Url", s.mediaStatusURL(o.kind, prev.RunID))
	rec := s.record(o.kind, prev)
	rec["paidUsd"] = money.Micros(0)
	rec["alreadyPaid"] = gin.H{"runId": prev.RunID, "boughtAt": prev.StartedAt.UTC().Format(time.RFC3339Nano)}
	s.writeRecord(c, rec, prev)
	return true
}

// startRender starts the run's workflow and waits for its admission (the
// payment settled or refused, the retry accepted or refused).
func (s *Server) startRender(c *gin.Context, in workflows.RenderInput, k mediaKind) (workflows.Admission, bool) {
	ctx := c.Request.Context()
	in.Deadline = k.deadline(in.Run.Request)
	in.Collect = 2 * in.Deadline
	in.HeartbeatTimeout = s.deps.Media.HeartbeatTimeout
	tc := s.deps.Temporal
	attrs := []temporal.SearchAttributeUpdate{
		workflows.AttrKind.ValueSet(k.name), workflows.AttrModel.ValueSet(in.Run.Request.Model), workflows.AttrRunStatus.ValueSet(workflows.StatusRunning),
	}
	if in.Run.Network != "" { // a paid run; a retry learns its wallet on admission
		attrs = append(attrs, workflows.AttrNetwork.ValueSet(in.Run.Network), workflows.AttrPayer.ValueSet(x402.DisplayAddress(in.Run.Network, in.Run.Payer)))
	}
	start := tc.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: workflows.RenderWorkflowID(in.Run.RunID), TaskQueue: workflows.RenderQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(attrs...),
	}, workflows.WfRender, in)
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	h, err := tc.UpdateWithStartWorkflow(waitCtx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions:          client.UpdateWorkflowOptions{UpdateName: workflows.AdmissionUpdate, WaitForStage: client.WorkflowUpdateStageCompleted},
	})
	var adm workflows.Admission
	if err == nil {
		err = h.Get(waitCtx, &adm)
	}
	if err != nil {
		logging.From(ctx).Error("starting a render failed", "run", in.Run.RunID, "err", err)
		fail(c, &APIError{Status: http.StatusServiceUnavailable, Message: "the request could not be processed now; if a payment was taken the run finishes on its own at statusUrl",
			Extra: map[string]any{"statusUrl": s.mediaStatusURL(k, in.Run.RunID)}})
		return adm, false
	}
	return adm, true
}

// waitFor is how long an answer waits: Prefer respond-async or async:true
// → not at all, Prefer wait=N → N seconds (at most 720), else the kind's
// default. It sets Preference-Applied for what it honoured.
func (s *Server) waitFor(c *gin.Context, k mediaKind, r store.MediaRequest, async bool) time.Duration {
	pref := parsePrefer(c.Request.Header.Values("Prefer"))
	switch {
	case pref.async:
		c.Header("Preference-Applied", "respond-async")
		return 0
	case async:
		return 0
	case pref.wait >= 0:
		c.Header("Preference-Applied", "wait="+strconv.Itoa(int(pref.wait/time.Second)))
		return pref.wait
	}
	return k.wait(r)
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
func (s *Server) answer(c *gin.Context, k mediaKind, runID string, wait time.Duration, extra gin.H) {
	ctx := c.Request.Context()
	status := s.mediaStatusURL(k, runID)
	c.Header("X-Status-Url", status)
	run, err := s.deps.Store.MediaRun(ctx, runID)
	if err != nil {
		fail(c, err)
		return
	}
	if wait <= 0 || run.Finished() {
		if !run.Finished() {
			c.Header("Location", status)
			c.Header("Retry-After", strconv.Itoa(int(pollAfter/time.Second)))
		}
		s.writeRecord(c, s.withExtra(s.record(k, run), extra), run)
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
		_ = s.deps.Temporal.GetWorkflow(waitCtx, workflows.RenderWorkflowID(runID), "").Get(waitCtx, nil)
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
	if run, err = s.deps.Store.MediaRun(ctx, runID); err != nil {
		// The 200 is out: the error goes in the body, with the run to poll.
		b, _ := json.Marshal(gin.H{"error": toAPIError(c, err).Message, "runId": runID, "statusUrl": status})
		_, _ = c.Writer.Write(b)
		return
	}
	s.writeRecord(c, s.withExtra(s.record(k, run), extra), run)
}

func (s *Server) withExtra(rec, extra gin.H) gin.H {
	for k, v := range extra {
		rec[k] = v
	}
	return rec
}

// writeRecord writes the record and, when it carried a finished file and
// was written whole, records that the file reached the caller.
func (s *Server) writeRecord(c *gin.Context, rec gin.H, run store.MediaRun) {
	if run.Status == "running" {
		if st, ok := s.renderStage(c.Request.Context(), run.RunID); ok {
			rec["stage"] = st
		}
	}
	b, err := json.Marshal(rec)
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
	if run.Status == "success" && run.DeliveredAt == nil {
		s.deliveries.record(context.WithoutCancel(c.Request.Context()), delivery{runID: run.RunID})
	}
}

// renderStage asks an open render's workflow where it is (settling,
// rendering, collecting, recording); closed runs are answered from
// PostgreSQL alone, and polling never waits more than a second on Temporal.
func (s *Server) renderStage(ctx context.Context, runID string) (string, bool) {
	var stage string
	ok := s.askOpen(ctx, workflows.RenderWorkflowID(runID), workflows.StageQuery, &stage)
	return stage, ok
}

// askOpen answers an open workflow's query into out, giving up after a
// second: polling answers from PostgreSQL rather than wait on Temporal.
func (s *Server) askOpen(ctx context.Context, workflowID, query string, out any) bool {
	return temporalx.AskOpen(ctx, s.deps.Temporal, workflowID, query, out)
}

// record is the run record of spec §2.3 (§2.4 for speech).
func (s *Server) record(k mediaKind, r store.MediaRun) gin.H {
	rec := gin.H{
		"runId": r.RunID, "status": r.Status, "startedAt": r.StartedAt.UTC().Format(time.RFC3339Nano),
		"statusUrl": s.mediaStatusURL(k, r.RunID), "model": r.Request.Model,
		"network": r.Network, "payer": x402.DisplayAddress(r.Network, r.Payer), "paidUsd": r.Paid,
	}
	if r.Transaction != "" {
		rec["transaction"] = r.Transaction
	}
	if r.RetryOf != "" {
		rec["retryOf"] = r.RetryOf
	}
	if k.fields != nil {
		k.fields(rec, r)
	}
	if r.FinishedAt != nil {
		rec["finishedAt"] = r.FinishedAt.UTC().Format(time.RFC3339Nano)
		rec["durationMs"] = r.FinishedAt.Sub(r.StartedAt).Milliseconds()
	}
	switch {
	case r.Status == "success":
		u := s.fileURL(r.FileKey)
		rec[k.fileField] = u
		if k.outputs {
			rec["outputs"] = gin.H{k.fileField: u}
		}
	case r.Status == "running":
		rec["pollAfterMs"] = pollAfter.Milliseconds()
		rec["balanceUsd"] = r.Balance
		if r.Note != "" {
			rec["note"] = r.Note
		}
	case r.Failed():
		rec["reason"], rec["error"], rec["message"], rec["balanceUsd"] = r.Reason, r.Error, r.Message, r.Balance
		if k.failedStep && r.FailedStep != "" {
			rec["failedStep"] = r.FailedStep
		}
		rec["retryable"] = r.RetriedBy == ""
		if r.RetriedBy == "" {
			rec["retryUrl"] = s.mediaRetryURL(k, r.RunID)
		} else {
			rec["retriedBy"] = gin.H{"runId": r.RetriedBy, "statusUrl": s.mediaStatusURL(k, r.RetriedBy)}
			rec["retriedByRunId"] = r.RetriedBy
		}
	}
	return rec
}

func (s *Server) mediaStatusURL(k mediaKind, runID string) string {
	return s.url(k.path) + "?" + s.ticketQuery(k, runID)
}

func (s *Server) mediaRetryURL(k mediaKind, runID string) string {
	return s.url(k.path) + "/retry?" + s.ticketQuery(k, runID)
}

func (s *Server) ticketQuery(k mediaKind, runID string) string {
	return "runId=" + url.QueryEscape(runID) + "&token=" + url.QueryEscape(s.deps.Media.Tickets.Issue(k.name, runID))
}

func (s *Server) fileURL(key string) string {
	return s.url(FilesPath+key) + "?c=" + s.deps.Media.Files.Sign(key)
}

// claimedRun reads the run a claim ticket opens: 404 with how to encode
// '#' for a runId without one, 400 unless both runId and token are
// present, 403 for a bad, expired or mismatched ticket, 404 for an unknown
// run (or one of another kind).
func (s *Server) claimedRun(c *gin.Context, k mediaKind) (store.MediaRun, bool) {
	runID, token := c.Query("runId"), c.Query("token")
	if runID != "" {
		// Before the token: a raw '#' cut the token off with the id's tail.
		if err := truncatedRunID(runID); err != nil {
			fail(c, err)
			return store.MediaRun{}, false
		}
	}
	if runID == "" || token == "" {
		fail(c, errorf(http.StatusBadRequest, "runId and token are both required (statusUrl and retryUrl carry them)"))
		return store.MediaRun{}, false
	}
	if err := s.deps.Media.Tickets.Verify(k.name, runID, token); err != nil {
		fail(c, errorf(http.StatusForbidden, "the claim token is invalid, expired or not for this run"))
		return store.MediaRun{}, false
	}
	run, err := s.deps.Store.MediaRun(c.Request.Context(), runID)
	if err == nil && run.Kind != k.name {
		err = store.ErrNotFound
	}
	if errors.Is(err, store.ErrNotFound) {
		fail(c, errorf(http.StatusNotFound, "run %s not found", runID))
		return store.MediaRun{}, false
	}
	if err != nil {
		fail(c, err)
		return store.MediaRun{}, false
	}
	return run, true
}

// pollRun: GET <kind endpoint>?runId=&token= answers the run record,
// holding it up to Prefer: wait=N seconds.
func (s *Server) pollMediaRun(c *gin.Context, k mediaKind) {
	run, ok := s.claimedRun(c, k)
	if !ok {
		return
	}
	wait := time.Duration(0)
	if pref := parsePrefer(c.Request.Header.Values("Prefer")); pref.wait > 0 && !pref.async {
		c.Header("Preference-Applied", "wait="+strconv.Itoa(int(pref.wait/time.Second)))
		wait = pref.wait
	}
	s.answer(c, k, run.RunID, wait, nil)
}

// retryRequest is the optional body of a retry: a new prompt or text
// (whichever the kind renders from) and async.
type retryRequest struct {
	Prompt *string `json:"prompt"`
	Text   *string `json:"text"`
	Async  *bool   `json:"async"`
}

// retryMediaRun: POST <kind endpoint>/retry?runId=&token= renders a
// failed run again, as sold but for an optional new prompt or text, on
// the paying wallet's balance.
func (s *Server) retryMediaRun(c *gin.Context, k mediaKind) {
	if !s.payPerCallReady(c) {
		return
	}
	var body retryRequest
	if c.Request.ContentLength != 0 {
		if err := decodeJSON(c, &body); err != nil {
			fail(c, err)
			return
		}
	}
	text, other := body.Prompt, body.Text
	if k.textField == "text" {
		text, other = body.Text, body.Prompt
	}
	if other != nil {
		fail(c, errorf(http.StatusBadRequest, "this retry takes %s, not %s", k.textField, map[bool]string{true: "prompt", false: "text"}[k.textField == "text"]))
		return
	}
	if _, err := checkText(k.textField, text, false, k.maxText()); err != nil {
		fail(c, err)
		return
	}
	old, ok := s.claimedRun(c, k)
	if !ok {
		return
	}
	if why := store.RetryBlocked(old); why != "" {
		s.retryRefused(c, k, old, &store.RetryRefusal{Why: why, RetriedBy: old.RetriedBy})
		return
	}
	req, price := old.Request, old.Price
	if text != nil {
		k.setText(&req, *text)
		if k.reprice != nil {
			price = k.reprice(req)
		}
	}
	runID := runs.NewRunID(time.Now())
	in := workflows.RenderInput{
		Run: store.NewMediaRun{
			RunID: runID, Kind: k.name, Request: req, RequestHash: requestHash(k.name, req),
			Price: price, StartedAt: time.Now().UTC(),
		},
		RetryOf: old.RunID,
	}
	adm, ok := s.startRender(c, in, k)
	if !ok {
		return
	}
	if !adm.Accepted {
		s.retryRefused(c, k, old, adm.Retry)
		return
	}
	s.answer(c, k, runID, s.waitFor(c, k, req, body.Async != nil && *body.Async), nil)
}

func (s *Server) retryRefused(c *gin.Context, k mediaKind, old store.MediaRun, r *store.RetryRefusal) {
	switch r.Why {
	case "insufficient":
		fail(c, &APIError{Status: http.StatusPaymentRequired, Message: "the wallet's balance no longer covers this retry; top up and try again",
			Extra: map[string]any{"balanceUsd": r.Balance, "priceUsd": r.Price, "payUrl": s.url("/api/billing/credits/x402")}})
	case "retried":
		fail(c, &APIError{Status: http.StatusConflict, Message: "this run was already retried; each failed run can be retried once",
			Extra: map[string]any{"retriedBy": gin.H{"runId": r.RetriedBy, "statusUrl": s.mediaStatusURL(k, r.RetriedBy)}}})
	case "succeeded":
		fail(c, errorf(http.StatusConflict, "this run succeeded; there is nothing to retry"))
	case "collecting":
		fail(c, errorf(http.StatusConflict, "this run outlasted its deadline and is still being collected; retry is not possible meanwhile"))
	default:
		fail(c, errorf(http.StatusConflict, "this run is still rendering; poll statusUrl"))
	}
}

// serveFile: GET /files/<key>?c=<signature> serves a stored file to whoever
// holds its signed URL, and records the delivery; GET /files/<key>?t=<link>
// serves a media library file while its expiring link lasts.
func (s *Server) serveFile(c *gin.Context) {
	if !s.claimsReady(c) {
		return
	}
	key := strings.TrimPrefix(c.Param("key"), "/")
	library := c.Query("c") == "" && c.Query("t") != ""
	switch {
	case blob.ValidKey(key) != nil:
		fail(c, errorf(http.StatusForbidden, "this file link is not valid"))
		return
	case library && !s.deps.Media.Links.Verify(key, c.Query("t")):
		fail(c, errorf(http.StatusForbidden, "this file link is not valid or has expired; GET /api/media/{id} gives a fresh one"))
		return
	case !library && !s.deps.Media.Files.Verify(key, c.Query("c")):
		fail(c, errorf(http.StatusForbidden, "this file link is not valid"))
		return
	}
	ctx := c.Request.Context()
	if u, ok, err := s.deps.Media.Blob.Presign(ctx, key, 15*time.Minute); err != nil {
		fail(c, err)
		return
	} else if ok {
		if !library {
			s.markFileDelivered(c, key)
		}
		c.Redirect(http.StatusFound, u)
		return
	}
	rc, obj, err := s.deps.Media.Blob.Get(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		fail(c, errorf(http.StatusNotFound, "file not found"))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	defer rc.Close()
	c.Header("Content-Type", obj.ContentType)
	c.Header("Cache-Control", "private, max-age=86400")
	if rs, ok := rc.(interface {
		Read([]byte) (int, error)
		Seek(int64, int) (int64, error)
	}); ok {
		http.ServeContent(c.Writer, c.Request, "", time.Time{}, rs)
	} else {
		c.DataFromReader(http.StatusOK, obj.Size, obj.ContentType, rc, nil)
	}
	// Deliveries matter to purchases (alreadyPaid), not to library files.
	if c.Writer.Status() < 300 && c.Request.Method == http.MethodGet && !library {
		s.markFileDelivered(c, key)
	}
}

func (s *Server) markFileDelivered(c *gin.Context, key string) {
	s.deliveries.record(context.WithoutCancel(c.Request.Context()), delivery{fileKey: key})
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
