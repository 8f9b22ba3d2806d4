package frontend

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
	"conduit/internal/runs"
	"conduit/workflows"
)

// The invoke API (spec §4.1, §4.2) and run history. Admission, the run
// record and history pages are internal/runs' rules, which the tool
// server calls too.

// invoke: POST /api/pipelines/{id}/invoke {inputs}.
func (s *Server) invoke(c *gin.Context) {
	p := currentPipeline(c)
	target, err := s.runs.Callable(c.Request.Context(), p)
	if err != nil {
		fail(c, err)
		return
	}
	var body struct {
		Inputs json.RawMessage `json:"inputs"`
	}
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	inputs, err := runs.CheckInputs(target.Graph, body.Inputs)
	if err != nil {
		fail(c, err)
		return
	}
	key := strings.TrimSpace(c.GetHeader("Idempotency-Key"))
	if len(key) > 200 {
		fail(c, errs.Invalidf("Idempotency-Key must be at most 200 characters"))
		return
	}
	if err := storable("the Idempotency-Key header", key); err != nil {
		fail(c, err)
		return
	}
	run, existing, err := s.runs.Start(c.Request.Context(), principal(c).AccountID, target, runs.Request{Kind: "invoke", Inputs: inputs, IdempotencyKey: key})
	if err != nil {
		fail(c, err)
		return
	}
	if existing {
		c.Header("Idempotent-Replayed", "true")
	}
	c.JSON(http.StatusAccepted, gin.H{
		"runId": run.RunID, "status": run.Status, "version": run.Version, "statusUrl": s.runs.StatusURL(p.ID, run.RunID),
	})
}

// pollRun: GET /api/pipelines/{id}/invoke?runId=… (spec §4.2), answered
// from the run history projection, with live per-node progress from the
// workflow while the run is open.
func (s *Server) pollRun(c *gin.Context) {
	p := currentPipeline(c)
	runID := c.Query("runId")
	if runID == "" {
		fail(c, errs.Invalidf("query parameter runId is required (URL-encode its # as %%23)"))
		return
	}
	if err := runs.CheckRunID(runID); err != nil {
		fail(c, err)
		return
	}
	r, err := s.runs.Owned(c.Request.Context(), p, runID)
	if err != nil {
		fail(c, err)
		return
	}
	out := s.runs.Record(r)
	if r.Status == workflows.StatusRunning {
		out.Nodes, _ = s.runs.Live(c.Request.Context(), r.WorkflowID)
	}
	c.JSON(http.StatusOK, out)
}

// listRuns: GET /api/pipelines/{id}/runs?status=&limit=&after= — run
// history, newest first (docs/paging.md).
func (s *Server) listRuns(c *gin.Context) {
	p := currentPipeline(c)
	q := runs.PageQuery{Status: c.Query("status"), After: c.Query("after"), Cursor: c.Query("cursor"), Limit: 20}
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			n = 0 // not a number: refused like any limit out of range
		}
		q.Limit = n
	}
	page, err := s.runs.History(c.Request.Context(), p.ID, q)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, page)
}
