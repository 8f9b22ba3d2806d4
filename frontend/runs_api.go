package frontend

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"conduit/internal/runs"
)

// The account's runs over every pipeline (docs/accounts.md, "Runs"): the
// dashboard's run history and run pages.

// accountRuns: GET /api/runs?pipelineId=&status=&limit=&after= (cursor,
// the older name of after, still accepted; docs/paging.md).
func (s *Server) accountRuns(c *gin.Context) {
	q := runs.AccountQuery{PipelineID: c.Query("pipelineId"), Status: c.Query("status"), After: c.Query("after"), Cursor: c.Query("cursor"), Limit: 20}
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			n = 0 // refused like any limit out of range
		}
		q.Limit = n
	}
	page, err := s.runs.AccountHistory(c.Request.Context(), principal(c).AccountID, q)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, page)
}

// runDetail is a run with its per-node trace, the pipeline it ran and its
// workflow in the Temporal UI (when temporal.ui_url is set).
type runDetail struct {
	runs.Record
	PipelineID  string `json:"pipelineId"`
	WorkflowID  string `json:"workflowId"`
	WorkflowURL string `json:"workflowUrl,omitempty"`
}

// accountRun: GET /api/runs/{runId} (URL-encode its # as %23). Another
// account's run is a 404 like a missing one.
func (s *Server) accountRun(c *gin.Context) {
	runID := c.Param("runId")
	if err := runs.CheckRunID(runID); err != nil {
		fail(c, err)
		return
	}
	r, err := s.runs.ForAccount(c.Request.Context(), principal(c).AccountID, runID)
	if err != nil {
		fail(c, err)
		return
	}
	rec := s.runs.Detailed(c.Request.Context(), r)
	rec.Kind = r.Kind
	c.JSON(http.StatusOK, runDetail{Record: rec, PipelineID: r.PipelineID, WorkflowID: r.WorkflowID, WorkflowURL: s.workflowURL(r.WorkflowID)})
}

// workflowURL is the workflow's page in the Temporal Web UI, or "".
func (s *Server) workflowURL(workflowID string) string {
	t := s.deps.Config.Temporal
	if t.UIURL == "" || workflowID == "" {
		return ""
	}
	return strings.TrimRight(t.UIURL, "/") + "/namespaces/" + url.PathEscape(t.Namespace) + "/workflows/" + url.PathEscape(workflowID)
}
