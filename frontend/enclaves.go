package frontend

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/codec"
	"conduit/internal/enclaves"
	"conduit/internal/enclaves/lifecycle"
	"conduit/internal/errs"
)

// The enclave API (docs/enclaves.md). Each handler decodes, calls the
// enclave service (internal/enclaves/lifecycle) and encodes; each
// enclave's lifecycle is a workflow (workflows.Enclave), the record these
// handlers answer is its projection, and pause, resume and terminate are
// its updates, so the answer is the real outcome.

// Enclaves is what the enclave routes need.
type Enclaves struct {
	Enabled bool
	// Secrets seals registry credentials and github tokens; nil refuses
	// private registries and github tokens.
	Secrets *codec.Codec
	// Builds says github sources can be built (enclaves.build_registry).
	Builds           bool
	LogEvery         time.Duration
	HeartbeatTimeout time.Duration
	RetryMax         time.Duration
	GiveUpAfter      time.Duration
	// Providers are the providerIds (and regions) enclaves may be created
	// with; nil means the local provider alone.
	Providers enclaves.Offered
}

const enclaveKey = "conduit.enclave"

// enclaveService is the enclave domain service on this server's
// dependencies.
func (s *Server) enclaveService() *lifecycle.Service {
	d := s.deps.Enclaves
	return &lifecycle.Service{Store: s.deps.Store, Temporal: s.deps.Temporal, Namespace: s.deps.Config.Temporal.Namespace,
		Secrets: d.Secrets, Builds: d.Builds, Providers: d.Providers,
		LogEvery: d.LogEvery, HeartbeatTimeout: d.HeartbeatTimeout, RetryMax: d.RetryMax, GiveUpAfter: d.GiveUpAfter,
		Limit: s.deps.Config.Quota.Enclaves, MeterEvery: s.deps.Config.Metering.EnclaveMeterEvery()}
}

func (s *Server) mountEnclaves(api *gin.RouterGroup, read, write, logs gin.HandlerFunc) {
	g := api.Group("/enclaves", s.enclavesOn)
	g.POST("", write, s.createEnclave)
	g.GET("", read, s.listEnclaves)
	one := g.Group("/:id", s.loadEnclave)
	one.GET("", read, s.getEnclave)
	one.PATCH("", write, s.patchEnclave)
	one.DELETE("", write, s.deleteEnclave)
	one.POST("/pause", write, s.enclaveUpdate(enclaves.Pause))
	one.POST("/resume", write, s.enclaveUpdate(enclaves.Resume))
	one.POST("/terminate", write, s.enclaveUpdate(enclaves.Terminate))
	one.POST("/retry", write, s.enclaveUpdate(enclaves.Retry))
	one.GET("/logs", logs, s.enclaveLogs)
	s.mountEnclaveSigning(one, read, write)
}

func (s *Server) enclavesOn(c *gin.Context) {
	if !s.deps.Enclaves.Enabled {
		fail(c, errs.Unavailablef("enclaves are not enabled on this deployment (enclaves.enabled)"))
		return
	}
	c.Next()
}

// loadEnclave resolves :id; another account's enclave is 404.
func (s *Server) loadEnclave(c *gin.Context) {
	e, err := s.enclaveService().Load(c.Request.Context(), principal(c).AccountID, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.Set(enclaveKey, e)
	c.Next()
}

func currentEnclave(c *gin.Context) enclaves.Enclave {
	e, _ := c.Get(enclaveKey)
	return e.(enclaves.Enclave)
}

func (s *Server) enclaveJSON(e enclaves.Enclave) gin.H {
	out := gin.H{
		"id": e.ID, "name": e.Name, "description": e.Description, "providerId": e.ProviderID, "region": e.Region,
		"providerConfig": e.ProviderConfig, "sourceType": e.SourceType, "status": e.Status,
		"error_message": nilIfEmpty(e.ErrorMessage), "walletAddress": nilIfEmpty(e.WalletAddress),
		"pcrs": e.PCRs, "endpoint": nilIfEmpty(e.Endpoint),
		"lastFailure": lastFailure(e.LastFailure),
		"createdAt":   e.CreatedAt.UTC().Format(time.RFC3339Nano), "updatedAt": e.UpdatedAt.UTC().Format(time.RFC3339Nano),
		"url": s.url("/api/enclaves/" + e.ID),
	}
	if e.SourceType == enclaves.SourceGitHub {
		// The token is never returned; dockerImage is what the build
		// pushed (empty until it has).
		out["githubConnection"] = e.GitHub
		pc := e.ProviderConfig
		pc.DockerImage = e.BuiltImage
		out["providerConfig"] = pc
	}
	if e.RegistryUsername != "" {
		out["registryUsername"] = e.RegistryUsername
	}
	return out
}

// lastFailure is the record's view of a step being retried (null when none).
func lastFailure(f enclaves.Failure) any {
	if f.Message == "" {
		return nil
	}
	return gin.H{"message": f.Message, "attempt": f.Attempt, "at": f.At.UTC().Format(time.RFC3339Nano)}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// createEnclave: POST /api/enclaves. The enclave's lifecycle admits
// itself (its first step writes the record); the answer is 202 with the
// record (PENDING_DEPLOY, or PENDING_BUILD for a github source).
func (s *Server) createEnclave(c *gin.Context) {
	var body enclaves.Create
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	e, err := s.enclaveService().Create(c.Request.Context(), principal(c).AccountID, body)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Location", s.url("/api/enclaves/"+e.ID))
	c.JSON(http.StatusAccepted, s.enclaveJSON(e))
}

// listEnclaves: GET /api/enclaves.
func (s *Server) listEnclaves(c *gin.Context) {
	es, err := s.enclaveService().List(c.Request.Context(), principal(c).AccountID)
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]gin.H, len(es))
	for i, e := range es {
		out[i] = s.enclaveJSON(e)
	}
	c.JSON(http.StatusOK, gin.H{"enclaves": out})
}

// getEnclave: GET /api/enclaves/{id}.
func (s *Server) getEnclave(c *gin.Context) { c.JSON(http.StatusOK, s.enclaveJSON(currentEnclave(c))) }

// patchEnclave: PATCH /api/enclaves/{id} {name?, description?,
// providerConfig?}, only before deployment.
func (s *Server) patchEnclave(c *gin.Context) {
	var body enclaves.Patch
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	e, err := s.enclaveService().Patch(c.Request.Context(), currentEnclave(c), body)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.enclaveJSON(e))
}

// deleteEnclave: DELETE /api/enclaves/{id}, only DESTROYED or FAILED.
func (s *Server) deleteEnclave(c *gin.Context) {
	if err := s.enclaveService().Delete(c.Request.Context(), currentEnclave(c)); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// enclaveUpdate: POST /api/enclaves/{id}/pause|resume|terminate|retry,
// answered with the record after the lifecycle's update (409 naming the
// state when it refused; nothing changed).
func (s *Server) enclaveUpdate(a enclaves.Action) gin.HandlerFunc {
	return func(c *gin.Context) {
		e, err := s.enclaveService().Act(c.Request.Context(), currentEnclave(c), a)
		if err != nil {
			fail(c, err)
			return
		}
		c.JSON(http.StatusOK, s.enclaveJSON(e))
	}
}

// enclaveLogs: GET /api/enclaves/{id}/logs?logType=&limit=.
func (s *Server) enclaveLogs(c *gin.Context) {
	e := currentEnclave(c)
	typ := c.DefaultQuery("logType", "all")
	limit := enclaves.DefaultLogLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			n = 0 // refused by the service with the limit's range
		}
		limit = n
	}
	logs, err := s.enclaveService().Logs(c.Request.Context(), e, typ, limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"enclaveId": e.ID, "logType": typ, "limit": limit, "logs": logs})
}
