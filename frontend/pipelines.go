package frontend

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/pipeline"
	"conduit/internal/store"
)

const pipelineKey = "conduit.pipeline"

// emptyGraph is the draft of a pipeline created without one.
var emptyGraph = json.RawMessage(`{"nodes":[],"edges":[]}`)

// loadPipeline resolves :id and checks the caller owns it: 404 when it
// does not exist, 403 when another account owns it (spec §5).
func (s *Server) loadPipeline(c *gin.Context) {
	p, err := s.deps.Store.Pipeline(c.Request.Context(), c.Param("id"))
	if errors.Is(err, store.ErrNotFound) {
		fail(c, errorf(http.StatusNotFound, "pipeline %q not found", c.Param("id")))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	if p.AccountID != principal(c).AccountID {
		fail(c, errorf(http.StatusForbidden, "this API key's account does not own pipeline %q", p.ID))
		return
	}
	c.Set(pipelineKey, p)
	c.Next()
}

func currentPipeline(c *gin.Context) store.Pipeline {
	p, _ := c.Get(pipelineKey)
	return p.(store.Pipeline)
}

type problemJSON struct {
	Node    string `json:"node,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

type validationJSON struct {
	Valid    bool          `json:"valid"`
	Problems []problemJSON `json:"problems"`
}

type inputSpecJSON struct {
	Key         string `json:"key"`
	Required    bool   `json:"required"`
	Description string `json:"description,omitempty"`
}

type contractJSON struct {
	Inputs  []inputSpecJSON `json:"inputs"`
	Outputs []string        `json:"outputs"`
}

type versionJSON struct {
	Version   int             `json:"version"`
	CreatedAt time.Time       `json:"createdAt"`
	Serving   bool            `json:"serving"`
	Graph     json.RawMessage `json:"graph,omitempty"`
	Contract  *contractJSON   `json:"contract,omitempty"`
}

type pipelineJSON struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	ServingVersion  *int            `json:"servingVersion"`
	CreatedAt       time.Time       `json:"createdAt"`
	UpdatedAt       time.Time       `json:"updatedAt"`
	Draft           json.RawMessage `json:"draft,omitempty"`
	DraftValidation *validationJSON `json:"draftValidation,omitempty"`
	Contract        *contractJSON   `json:"contract,omitempty"`
	Versions        []versionJSON   `json:"versions,omitempty"`
}

func toContractJSON(c pipeline.Contract) *contractJSON {
	out := &contractJSON{Inputs: []inputSpecJSON{}, Outputs: c.Outputs}
	if out.Outputs == nil {
		out.Outputs = []string{}
	}
	for _, in := range c.Inputs {
		out.Inputs = append(out.Inputs, inputSpecJSON{Key: in.Key, Required: in.Required, Description: in.Description})
	}
	return out
}

// validate checks a graph against the model catalog and the media menus.
func (s *Server) validate(g *pipeline.Graph) *validationJSON {
	v := &validationJSON{Valid: true, Problems: []problemJSON{}}
	err := g.Validate(s.deps.Catalog.Known, s.deps.Library.CheckNode)
	if err == nil {
		return v
	}
	v.Valid = false
	var ve *pipeline.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			v.Problems = append(v.Problems, problemJSON{Node: p.NodeID, Field: p.Field, Message: p.Message})
		}
	} else {
		v.Problems = append(v.Problems, problemJSON{Message: err.Error()})
	}
	return v
}

// parseGraph reads a graph from a request, as a 400 when it is malformed.
func parseGraph(raw json.RawMessage) (*pipeline.Graph, error) {
	g, err := pipeline.Parse(raw)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "draft is not a pipeline graph: %v", err)
	}
	return g, nil
}

// pipelineDetail is the full record: draft with its validation, serving
// version's contract, versions.
func (s *Server) pipelineDetail(c *gin.Context, p store.Pipeline) (pipelineJSON, error) {
	out := pipelineJSON{ID: p.ID, Name: p.Name, ServingVersion: p.ServingVersion, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, Draft: p.Draft}
	if g, err := pipeline.Parse(p.Draft); err == nil {
		out.DraftValidation = s.validate(g)
	}
	versions, err := s.deps.Store.Versions(c.Request.Context(), p.ID)
	if err != nil {
		return out, err
	}
	out.Versions = []versionJSON{}
	for _, v := range versions {
		out.Versions = append(out.Versions, versionJSON{Version: v.Version, CreatedAt: v.CreatedAt, Serving: p.ServingVersion != nil && *p.ServingVersion == v.Version})
	}
	if p.ServingVersion != nil {
		v, err := s.deps.Store.Version(c.Request.Context(), p.ID, *p.ServingVersion)
		if err != nil {
			return out, err
		}
		if g, err := pipeline.Parse(v.Graph); err == nil {
			out.Contract = toContractJSON(g.Contract())
		}
	}
	return out, nil
}

func (s *Server) respondPipeline(c *gin.Context, status int, p store.Pipeline) {
	out, err := s.pipelineDetail(c, p)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(status, out)
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
	name, err := checkName(body.Name)
	if err != nil {
		fail(c, err)
		return
	}
	draft := emptyGraph
	if len(body.Draft) > 0 && string(body.Draft) != "null" {
		if _, err := parseGraph(body.Draft); err != nil {
			fail(c, err)
			return
		}
		draft = body.Draft
	}
	p, err := s.deps.Store.CreatePipeline(c.Request.Context(), principal(c).AccountID, name, draft)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Location", s.url("/api/pipelines/"+p.ID))
	s.respondPipeline(c, http.StatusCreated, p)
}

// listPipelines: GET /api/pipelines.
func (s *Server) listPipelines(c *gin.Context) {
	ps, err := s.deps.Store.Pipelines(c.Request.Context(), principal(c).AccountID)
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]pipelineJSON, len(ps))
	for i, p := range ps {
		out[i] = pipelineJSON{ID: p.ID, Name: p.Name, ServingVersion: p.ServingVersion, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	}
	c.JSON(http.StatusOK, gin.H{"pipelines": out})
}

// getPipeline: GET /api/pipelines/{id}.
func (s *Server) getPipeline(c *gin.Context) {
	s.respondPipeline(c, http.StatusOK, currentPipeline(c))
}

// putDraft: PUT /api/pipelines/{id}/draft {draft, name?}. A draft that
// parses is saved even when invalid (draftValidation says what to fix);
// what serves never changes.
func (s *Server) putDraft(c *gin.Context) {
	var body pipelineBody
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	if len(body.Draft) == 0 || string(body.Draft) == "null" {
		fail(c, errorf(http.StatusBadRequest, "draft is required"))
		return
	}
	if body.Name != "" {
		if _, err := checkName(body.Name); err != nil {
			fail(c, err)
			return
		}
	}
	if _, err := parseGraph(body.Draft); err != nil {
		fail(c, err)
		return
	}
	p, err := s.deps.Store.SaveDraft(c.Request.Context(), currentPipeline(c).ID, body.Name, body.Draft)
	if err != nil {
		fail(c, err)
		return
	}
	s.respondPipeline(c, http.StatusOK, p)
}

// publish: POST /api/pipelines/{id}/publish. The draft must validate; its
// snapshot becomes version N+1 and serves.
func (s *Server) publish(c *gin.Context) {
	p := currentPipeline(c)
	g, err := parseGraph(p.Draft)
	if err != nil {
		fail(c, err)
		return
	}
	if v := s.validate(g); !v.Valid {
		fail(c, &APIError{Status: http.StatusBadRequest, Message: "the draft is not valid; nothing was published", Extra: map[string]any{"problems": v.Problems}})
		return
	}
	if _, err := s.deps.Store.Publish(c.Request.Context(), p.ID, p.Draft); err != nil {
		fail(c, err)
		return
	}
	s.respondReloaded(c, p.ID)
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
	if body.Version == nil {
		fail(c, errorf(http.StatusBadRequest, "version is required and must be a published version number"))
		return
	}
	if err := checkVersion(*body.Version); err != nil {
		fail(c, err)
		return
	}
	p := currentPipeline(c)
	if err := s.deps.Store.Rollback(c.Request.Context(), p.ID, *body.Version); errors.Is(err, store.ErrNotFound) {
		fail(c, errorf(http.StatusNotFound, "pipeline %q has no version %d", p.ID, *body.Version))
		return
	} else if err != nil {
		fail(c, err)
		return
	}
	s.respondReloaded(c, p.ID)
}

// respondReloaded answers with the pipeline as it now is.
func (s *Server) respondReloaded(c *gin.Context, id string) {
	p, err := s.deps.Store.Pipeline(c.Request.Context(), id)
	if err != nil {
		fail(c, err)
		return
	}
	s.respondPipeline(c, http.StatusOK, p)
}

// listVersions: GET /api/pipelines/{id}/versions.
func (s *Server) listVersions(c *gin.Context) {
	out, err := s.pipelineDetail(c, currentPipeline(c))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"versions": out.Versions})
}

// getVersion: GET /api/pipelines/{id}/versions/{n}.
func (s *Server) getVersion(c *gin.Context) {
	p := currentPipeline(c)
	n, err := strconv.Atoi(c.Param("n"))
	if err == nil {
		err = checkVersion(n)
	}
	if err != nil {
		fail(c, errorf(http.StatusBadRequest, "version must be a published version number (1 to %d)", MaxVersion))
		return
	}
	v, err := s.deps.Store.Version(c.Request.Context(), p.ID, n)
	if errors.Is(err, store.ErrNotFound) {
		fail(c, errorf(http.StatusNotFound, "pipeline %q has no version %d", p.ID, n))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	out := versionJSON{Version: v.Version, CreatedAt: v.CreatedAt, Serving: p.ServingVersion != nil && *p.ServingVersion == v.Version, Graph: v.Graph}
	if g, err := pipeline.Parse(v.Graph); err == nil {
		out.Contract = toContractJSON(g.Contract())
	}
	c.JSON(http.StatusOK, out)
}

func checkName(name string) (string, error) {
	if name == "" {
		return "", errorf(http.StatusBadRequest, "name is required")
	}
	if len([]rune(name)) > 200 {
		return "", errorf(http.StatusBadRequest, "name must be at most 200 characters")
	}
	return name, nil
}
