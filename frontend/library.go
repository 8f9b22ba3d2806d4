package frontend

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
	"conduit/internal/library"
)

// The media library's routes (docs/media.md): thin — every rule is in
// internal/library, which the tool server calls too.

// MediaPath is the library's collection.
const MediaPath = "/api/media"

// listMedia: GET /api/media?kind=&limit=&after=
func (s *Server) listMedia(c *gin.Context) {
	in := library.ListMediaArgs{Kind: c.Query("kind"), Origin: c.Query("origin"), After: c.Query("after")}
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			fail(c, errs.Invalidf("limit must be 1 to 100"))
			return
		}
		in.Limit = n
	}
	out, err := s.deps.Library.ListMedia(c.Request.Context(), principal(c).AccountID, in)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// getMediaItem: GET /api/media/{id}
func (s *Server) getMediaItem(c *gin.Context) {
	out, err := s.deps.Library.GetMedia(c.Request.Context(), principal(c).AccountID, library.MediaRef{ID: c.Param("id")})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// deleteMediaItem: DELETE /api/media/{id} → 204
func (s *Server) deleteMediaItem(c *gin.Context) {
	if err := s.deps.Library.DeleteMedia(c.Request.Context(), principal(c).AccountID, library.MediaRef{ID: c.Param("id")}); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// getMediaJob: GET /api/media/jobs/{id}
func (s *Server) getMediaJob(c *gin.Context) {
	out, err := s.deps.Library.GetMediaJob(c.Request.Context(), principal(c).AccountID, library.JobRef{ID: c.Param("id")})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// importMedia: POST /api/media/import {url, waitSeconds?}
func (s *Server) importMedia(c *gin.Context) {
	var in library.ImportMediaArgs
	startJob(c, &in, func(key string) (library.Job, error) {
		return s.deps.Library.Import(c.Request.Context(), principal(c).AccountID, in, key)
	})
}

// assembleMedia: POST /api/media/assemble {operation, items, …}
func (s *Server) assembleMedia(c *gin.Context) {
	var in library.AssembleMediaArgs
	startJob(c, &in, func(key string) (library.Job, error) {
		return s.deps.Library.Assemble(c.Request.Context(), principal(c).AccountID, in, key)
	})
}

// editMedia: POST /api/media/edit {item, operation, …}
func (s *Server) editMedia(c *gin.Context) {
	var in library.EditMediaArgs
	startJob(c, &in, func(key string) (library.Job, error) {
		return s.deps.Library.Edit(c.Request.Context(), principal(c).AccountID, in, key)
	})
}

// startJob reads the body into in and starts the job with the request's
// Idempotency-Key: 202 with the running job (Location: its statusUrl), or
// 200 with the finished one when waitSeconds let it finish.
func startJob(c *gin.Context, in any, start func(key string) (library.Job, error)) {
	if err := decodeJSON(c, in); err != nil {
		fail(c, err)
		return
	}
	key := strings.TrimSpace(c.GetHeader("Idempotency-Key"))
	if err := storable("the Idempotency-Key header", key); err != nil {
		fail(c, err)
		return
	}
	job, err := start(key)
	if err != nil {
		fail(c, err)
		return
	}
	status := http.StatusOK
	if job.Status == "running" {
		status = http.StatusAccepted
		c.Header("Location", job.StatusURL)
		c.Header("Retry-After", strconv.Itoa(int(pollAfter.Seconds())))
	}
	c.JSON(status, job)
}
