package frontend

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
	"conduit/internal/tasks"
	"conduit/internal/tasks/manager"
)

// The scheduled-task API (docs/tasks.md). Each task is the Temporal
// Schedule task/<id>; every firing is a TaskRun workflow. These handlers
// decode, call the task service (internal/tasks/manager) and encode.

const taskKey = "conduit.task"

func (s *Server) mountTasks(api *gin.RouterGroup, read, write gin.HandlerFunc) {
	g := api.Group("/tasks", s.tasksOn)
	g.POST("", write, s.createTask)
	g.GET("", read, s.listTasks)
	one := g.Group("/:id")
	one.GET("", read, s.loadTask(false), s.getTask)
	one.PATCH("", write, s.loadTask(false), s.patchTask)
	one.DELETE("", write, s.loadTask(false), s.deleteTask)
	one.POST("/run", write, s.loadTask(false), s.runTask)
	// A deleted task's runs stay readable.
	one.GET("/runs", read, s.loadTask(true), s.taskRuns)
}

// tasksOn: tasks run on enclaves, so they are on where enclaves are.
func (s *Server) tasksOn(c *gin.Context) {
	if !s.deps.Enclaves.Enabled {
		fail(c, errs.Unavailablef("scheduled tasks run on enclaves, which are not enabled on this deployment (enclaves.enabled)"))
		return
	}
	c.Next()
}

// taskService is the task domain service on this server's dependencies.
func (s *Server) taskService() *manager.Service {
	m := manager.New(s.deps.Store, s.deps.Temporal)
	m.Limit, m.MinInterval = s.deps.Config.Quota.Tasks, s.deps.Config.Quota.MinTaskInterval
	return m
}

// loadTask resolves :id; another account's task is 404, a deleted one too
// unless deleted is allowed.
func (s *Server) loadTask(deleted bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		t, err := s.taskService().Load(c.Request.Context(), principal(c).AccountID, c.Param("id"), deleted)
		if err != nil {
			fail(c, err)
			return
		}
		c.Set(taskKey, t)
		c.Next()
	}
}

func currentTask(c *gin.Context) tasks.Task {
	t, _ := c.Get(taskKey)
	return t.(tasks.Task)
}

func (s *Server) taskJSON(c *gin.Context, t tasks.Task) gin.H {
	next := s.taskService().NextRuns(c.Request.Context(), t)
	nextRuns := make([]string, len(next))
	for i, n := range next {
		nextRuns[i] = n.UTC().Format(time.RFC3339)
	}
	var last any
	if t.LastRun != nil {
		last = t.LastRun
	}
	return gin.H{
		"id": t.ID, "name": t.Name, "description": t.Description, "enclaveId": t.EnclaveID,
		"schedule": t.Schedule, "timezone": t.Timezone, "request": t.Request,
		"overlap": t.Overlap, "catchupWindowSeconds": t.CatchupSeconds, "jitterSeconds": t.JitterSeconds,
		"failureThreshold": t.FailureThreshold, "consecutiveFailures": t.ConsecutiveFailures,
		"walletAddress": nilIfEmpty(t.WalletAddress), "status": t.Status, "statusReason": nilIfEmpty(t.StatusReason),
		"lastRun": last, "nextRuns": nextRuns, "scheduleId": tasks.ScheduleID(t.ID),
		"createdAt": t.CreatedAt.UTC().Format(time.RFC3339Nano), "updatedAt": t.UpdatedAt.UTC().Format(time.RFC3339Nano),
		"url": s.url("/api/tasks/" + t.ID), "runsUrl": s.url("/api/tasks/" + t.ID + "/runs"),
	}
}

// createTask: POST /api/tasks. The task admits itself (its record, then
// its schedule); both exist when it answers 201: running on a DEPLOYED
// enclave, pending (schedule paused) on one that is not yet.
func (s *Server) createTask(c *gin.Context) {
	var body tasks.Create
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	t, err := s.taskService().Create(c.Request.Context(), principal(c).AccountID, body)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Location", s.url("/api/tasks/"+t.ID))
	c.JSON(http.StatusCreated, s.taskJSON(c, t))
}

// listTasks: GET /api/tasks?enclaveId=&status=.
func (s *Server) listTasks(c *gin.Context) {
	ts, err := s.taskService().List(c.Request.Context(), principal(c).AccountID, c.Query("enclaveId"), c.Query("status"))
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]gin.H, len(ts))
	for i, t := range ts {
		out[i] = s.taskJSON(c, t)
	}
	c.JSON(http.StatusOK, gin.H{"tasks": out})
}

// getTask: GET /api/tasks/{id}.
func (s *Server) getTask(c *gin.Context) { c.JSON(http.StatusOK, s.taskJSON(c, currentTask(c))) }

// patchTask: PATCH /api/tasks/{id}: any field of the spec (the schedule
// changes in place) and status stopped (pause) or running (resume).
func (s *Server) patchTask(c *gin.Context) {
	var body tasks.Patch
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	t, err := s.taskService().Update(c.Request.Context(), currentTask(c), body)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.taskJSON(c, t))
}

// deleteTask: DELETE /api/tasks/{id}: the schedule goes; the runs stay.
func (s *Server) deleteTask(c *gin.Context) {
	if err := s.taskService().Delete(c.Request.Context(), currentTask(c)); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// runTask: POST /api/tasks/{id}/run: fire once now, whatever the status
// (a stopped or failed task too, to try a fix), except while the enclave
// is not DEPLOYED.
func (s *Server) runTask(c *gin.Context) {
	t := currentTask(c)
	if err := s.taskService().Run(c.Request.Context(), t); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"taskId": t.ID, "triggered": true, "runsUrl": s.url("/api/tasks/" + t.ID + "/runs")})
}

// taskRuns: GET /api/tasks/{id}/runs?limit=&outcome=, newest first.
func (s *Server) taskRuns(c *gin.Context) {
	t := currentTask(c)
	limit := 50
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			n = 0 // refused by the service with the limit's range
		}
		limit = n
	}
	runs, err := s.taskService().Runs(c.Request.Context(), t, c.Query("outcome"), limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"taskId": t.ID, "deleted": t.Deleted, "runs": runs})
}
