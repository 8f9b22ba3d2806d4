package frontend

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"conduit/internal/codec"
	"conduit/internal/enclaves"
	"conduit/internal/enclaves/lifecycle"
	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/store"
	"conduit/workflows"
)

// The enclave API (docs/enclaves.md). Each enclave's lifecycle is a
// workflow (workflows.Enclave); the record these handlers read is its
// projection, and pause, resume and terminate are its updates, so the
// answer is the real outcome.

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

func (s *Server) mountEnclaves(api *gin.RouterGroup, read, write, logs gin.HandlerFunc) {
	g := api.Group("/enclaves", s.enclavesOn)
	g.POST("", write, s.createEnclave)
	g.GET("", read, s.listEnclaves)
	one := g.Group("/:id", s.loadEnclave)
	one.GET("", read, s.getEnclave)
	one.PATCH("", write, s.patchEnclave)
	one.DELETE("", write, s.deleteEnclave)
	one.POST("/pause", write, s.enclaveUpdate(enclaves.Pause, workflows.EnclavePause))
	one.POST("/resume", write, s.enclaveUpdate(enclaves.Resume, workflows.EnclaveResume))
	one.POST("/terminate", write, s.enclaveUpdate(enclaves.Terminate, workflows.EnclaveTerminate))
	one.POST("/retry", write, s.enclaveUpdate(enclaves.Retry, workflows.EnclaveRetry))
	one.GET("/logs", logs, s.enclaveLogs)
	s.mountEnclaveSigning(one, read, write)
}

func (s *Server) enclavesOn(c *gin.Context) {
	if !s.deps.Enclaves.Enabled {
		fail(c, &APIError{Status: http.StatusServiceUnavailable, Message: "enclaves are not enabled on this deployment (enclaves.enabled)"})
		return
	}
	c.Next()
}

// loadEnclave resolves :id; another account's enclave is 404.
func (s *Server) loadEnclave(c *gin.Context) {
	id := c.Param("id")
	e, err := s.deps.Store.Enclave(c.Request.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		err = enclaves.NotFound(id)
	}
	if err == nil {
		e, err = enclaves.Owned(e, principal(c).AccountID)
	}
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

// createEnclave: POST /api/enclaves. The record is written, then its
// workflow started; the answer is 202 with the record (PENDING_DEPLOY,
// or PENDING_BUILD for a github source).
func (s *Server) createEnclave(c *gin.Context) {
	ctx := c.Request.Context()
	var body enclaves.Create
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	if err := body.ValidateFor(s.deps.Enclaves.Providers); err != nil {
		fail(c, err)
		return
	}
	id := store.NewEnclaveID()
	var sealed, token []byte
	status := enclaves.PendingDeploy
	if body.SourceType == enclaves.SourceGitHub {
		status = enclaves.PendingBuild
		if !s.deps.Enclaves.Builds {
			fail(c, errs.Invalidf(`sourceType "github" is not available: no registry to push built images to is configured (enclaves.build_registry)`))
			return
		}
		if body.GitHub.Token != "" {
			if s.deps.Enclaves.Secrets == nil {
				fail(c, errs.Invalidf(`githubConnection.token cannot be kept: no key to keep secrets is configured (enclaves.secret_keys); leave it out for a public repository`))
				return
			}
			var err error
			if token, err = s.deps.Enclaves.Secrets.Seal([]byte(body.GitHub.Token), enclaves.GitHubSecretPurpose(id)); err != nil {
				fail(c, err)
				return
			}
		}
	}
	if body.SourceType == enclaves.SourcePrivateRegistry {
		sec := s.deps.Enclaves.Secrets
		if sec == nil {
			fail(c, errs.Invalidf(`sourceType "private-registry" is not available: no key to keep registry credentials is configured (enclaves.secret_keys)`))
			return
		}
		var err error
		if sealed, err = sec.Seal([]byte(body.RegistryPassword), enclaves.SecretPurpose(id)); err != nil {
			fail(c, err)
			return
		}
	}
	account := principal(c).AccountID
	e, err := s.deps.Store.CreateEnclave(ctx, store.NewEnclave{ID: id, AccountID: account, Create: body, RegistrySecret: sealed, GitHubToken: token, Status: status})
	if err != nil {
		fail(c, err)
		return
	}
	_, err = s.deps.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.EnclaveWorkflowID(id), TaskQueue: workflows.EnclaveQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: workflows.EnclaveSearchAttributes(id, account, status, time.Now()),
	}, workflows.WfEnclave, workflows.EnclaveInput{ID: id, Account: account, Ref: body.ProviderConfig.DockerImage, Source: body.SourceType, Provider: body.ProviderID,
		HeartbeatTimeout: s.deps.Enclaves.HeartbeatTimeout, LogEvery: s.deps.Enclaves.LogEvery,
		RetryMax: s.deps.Enclaves.RetryMax, GiveUpAfter: s.deps.Enclaves.GiveUpAfter})
	if err != nil {
		// No lifecycle runs for this record: it says so and can be deleted.
		logging.From(ctx).Error("starting an enclave's workflow failed", "enclave", id, "err", err)
		_ = s.deps.Store.ProjectEnclave(context.WithoutCancel(ctx), store.EnclaveProjection{ID: id, Status: enclaves.Failed,
			ErrorMessage: "the enclave's lifecycle could not be started; delete it and create it again"})
		fail(c, &APIError{Status: http.StatusServiceUnavailable, Message: "the enclave could not be started now; try again shortly", Extra: map[string]any{"id": id}})
		return
	}
	c.Header("Location", s.url("/api/enclaves/"+id))
	c.JSON(http.StatusAccepted, s.enclaveJSON(e))
}

// listEnclaves: GET /api/enclaves.
func (s *Server) listEnclaves(c *gin.Context) {
	es, err := s.deps.Store.Enclaves(c.Request.Context(), principal(c).AccountID)
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
	e := currentEnclave(c)
	var body enclaves.Patch
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	if err := body.ValidateFor(e.SourceType); err != nil {
		fail(c, err)
		return
	}
	var allowed []enclaves.Status
	for st := range enclaves.Transitions {
		if enclaves.Allowed(enclaves.Update, st) == nil {
			allowed = append(allowed, st)
		}
	}
	slices.Sort(allowed)
	e, changed, err := s.deps.Store.PatchEnclave(c.Request.Context(), e.ID, body, allowed)
	if err != nil {
		fail(c, err)
		return
	}
	if !changed {
		fail(c, enclaves.Allowed(enclaves.Update, e.Status))
		return
	}
	c.JSON(http.StatusOK, s.enclaveJSON(e))
}

// deleteEnclave: DELETE /api/enclaves/{id}, only DESTROYED or FAILED.
func (s *Server) deleteEnclave(c *gin.Context) {
	e := currentEnclave(c)
	ok, err := s.deps.Store.DeleteEnclave(c.Request.Context(), e.ID)
	if err != nil {
		fail(c, err)
		return
	}
	if !ok {
		if e, err = s.deps.Store.Enclave(c.Request.Context(), e.ID); err != nil {
			fail(c, err)
			return
		}
		fail(c, enclaves.Allowed(enclaves.Delete, e.Status))
		return
	}
	c.Status(http.StatusNoContent)
}

// enclaveUpdate: POST /api/enclaves/{id}/pause|resume|terminate|retry. The
// workflow's validator decides against the live state: a refusal is a 409
// naming it, and nothing changes.
func (s *Server) enclaveUpdate(a enclaves.Action, update string) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx := c.Request.Context()
		e := currentEnclave(c)
		if e.Status == enclaves.Destroyed || e.Status == enclaves.Failed {
			// The lifecycle has ended: nothing is running to ask.
			fail(c, enclaves.Allowed(a, e.Status))
			return
		}
		waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		_, err := lifecycle.Ask(waitCtx, s.deps.Temporal, e.ID, update)
		switch _, refused := errs.As(err); {
		case err == nil:
		case refused:
			fail(c, err)
			return
		case errors.Is(err, lifecycle.ErrEnded):
			// The workflow ended between the read and the update.
			if e, err = s.deps.Store.Enclave(ctx, e.ID); err == nil {
				err = enclaves.Allowed(a, e.Status)
			}
			fail(c, err)
			return
		default:
			logging.From(ctx).Error("an enclave update failed", "enclave", e.ID, "update", update, "err", err)
			fail(c, &APIError{Status: http.StatusServiceUnavailable, Message: "the enclave could not be reached now; try again shortly"})
			return
		}
		if e, err = s.deps.Store.Enclave(ctx, e.ID); err != nil {
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
	if typ != "all" && !slices.Contains(enclaves.LogTypes, typ) {
		fail(c, errs.Invalidf("logType must be all, application, ecs, stepfunctions, lambda, build or errors"))
		return
	}
	limit := enclaves.DefaultLogLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > enclaves.MaxLogLimit {
			fail(c, errs.Invalidf("limit must be a whole number from 1 to %d", enclaves.MaxLogLimit))
			return
		}
		limit = n
	}
	var logs []enclaves.LogEntry
	var err error
	if typ != "stepfunctions" {
		if logs, err = s.deps.Store.EnclaveLogs(c.Request.Context(), e.ID, typ, limit); err != nil {
			fail(c, err)
			return
		}
	}
	if typ == "stepfunctions" || typ == "all" {
		steps, err := lifecycle.History(c.Request.Context(), s.deps.Temporal, e.ID)
		if err != nil {
			logging.From(c.Request.Context()).Error("reading an enclave's history failed", "enclave", e.ID, "err", err)
			fail(c, errorf(http.StatusServiceUnavailable, "the enclave's lifecycle history could not be read now; try again shortly"))
			return
		}
		logs = enclaves.Newest(append(logs, steps...), limit)
	}
	if logs == nil {
		logs = []enclaves.LogEntry{}
	}
	c.JSON(http.StatusOK, gin.H{"enclaveId": e.ID, "logType": typ, "limit": limit, "logs": logs})
}
