package frontend

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"conduit/internal/pipelines"
)

// The management API of pipelines (docs/pipelines.md). The rules live in
// internal/pipelines, which the tool server calls too; these handlers
// parse the request and write the answer.

const pipelineKey = "conduit.pipeline"

// loadPipeline resolves :id and checks the caller owns it: 404 when it
// does not exist, 403 when another account owns it (spec §5).
func (s *Server) loadPipeline(c *gin.Context) {
	p, err := s.pipes.Owned(c.Request.Context(), principal(c).AccountID, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.Set(pipelineKey, p)
	c.Next()
}

func currentPipeline(c *gin.Context) pipelines.Row {
	p, _ := c.Get(pipelineKey)
	return p.(pipelines.Row)
}

func (s *Server) respondPipeline(c *gin.Context, status int, p pipelines.Row) {
	out, err := s.pipes.Detail(c.Request.Context(), p)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(status, out)
}

// respondChanged answers a change with the pipeline as it now is.
func (s *Server) respondChanged(c *gin.Context, p pipelines.Row, err error) {
	if err != nil {
		fail(c, err)
		return
	}
	s.respondPipeline(c, http.StatusOK, p)
}

// pipelineBody is what create and draft updates send.
type pipelineBody struct {
	Name  string          `json:"name"`
	Draft json.RawMessage `json:"draft"`
}

// createPipeline: POST /api/pipelines {name, draft?}.
func (s *Server) createPipeline(c *gin.Context) {
	var body pipelineBody
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	p, err := s.pipes.Create(c.Request.Context(), principal(c).AccountID, body.Name, body.Draft)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Location", s.url("/api/pipelines/"+p.ID))
	s.respondPipeline(c, http.StatusCreated, p)
}

// listPipelines: GET /api/pipelines.
func (s *Server) listPipelines(c *gin.Context) {
	ps, err := s.pipes.List(c.Request.Context(), principal(c).AccountID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"pipelines": ps})
}

// getPipeline: GET /api/pipelines/{id}.
func (s *Server) getPipeline(c *gin.Context) {
	s.respondPipeline(c, http.StatusOK, currentPipeline(c))
}

// putDraft: PUT /api/pipelines/{id}/draft {draft, name?}.
func (s *Server) putDraft(c *gin.Context) {
	var body pipelineBody
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	p, err := s.pipes.SaveDraft(c.Request.Context(), currentPipeline(c), body.Name, body.Draft)
	s.respondChanged(c, p, err)
}

// publish: POST /api/pipelines/{id}/publish.
func (s *Server) publish(c *gin.Context) {
	// The body is optional: {note} says what the version changes.
	var body struct {
		Note string `json:"note"`
	}
	if c.Request.ContentLength != 0 {
		if err := decodeJSON(c, &body); err != nil {
			fail(c, err)
			return
		}
	}
	p, err := s.pipes.Publish(c.Request.Context(), currentPipeline(c), body.Note)
	s.respondChanged(c, p, err)
}

// rollback: POST /api/pipelines/{id}/rollback {version}.
func (s *Server) rollback(c *gin.Context) {
	var body struct {
		Version *int `json:"version"`
	}
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	p, err := s.pipes.Rollback(c.Request.Context(), currentPipeline(c), body.Version)
	s.respondChanged(c, p, err)
}

// listVersions: GET /api/pipelines/{id}/versions.
func (s *Server) listVersions(c *gin.Context) {
	out, err := s.pipes.Detail(c.Request.Context(), currentPipeline(c))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"versions": out.Versions})
}

// getVersion: GET /api/pipelines/{id}/versions/{n}.
func (s *Server) getVersion(c *gin.Context) {
	n, err := strconv.Atoi(c.Param("n"))
	if err != nil {
		n = 0 // not a number: refused as a version that cannot exist
	}
	v, err := s.pipes.Version(c.Request.Context(), currentPipeline(c), n)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}
