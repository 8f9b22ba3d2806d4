package frontend

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/store"
	"conduit/internal/tasks"
	"conduit/internal/tasks/schedules"
	"conduit/workflows"
)

// The scheduled-task API (docs/tasks.md). Each task is the Temporal
// Schedule task/<id>; every firing is a TaskRun workflow. These handlers
// validate, call the schedules service and answer from the record.

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
		fail(c, &APIError{Status: http.StatusServiceUnavailable, Message: "scheduled tasks run on enclaves, which are not enabled on this deployment (enclaves.enabled)"})
		return
	}
	c.Next()
}

func (s *Server) schedules() *schedules.Service {
	return &schedules.Service{Store: s.deps.Store, Temporal: s.deps.Temporal, Workflow: workflows.WfTaskRun, Queue: workflows.TaskQueue}
}

// loadTask resolves :id; another account's task is 404, a deleted one too
// unless deleted is allowed.
func (s *Server) loadTask(deleted bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.Param("id")
		t, err := s.deps.Store.Task(c.Request.Context(), id)
		if errors.Is(err, store.ErrNotFound) || err == nil && (t.AccountID != principal(c).AccountID || t.Deleted && !deleted) {
			err = tasks.NotFound(id)
		}
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
	next, err := s.schedules().NextRuns(c.Request.Context(), t)
	if err != nil {
		// The record still answers; its next runs are unknown for now.
		logging.From(c.Request.Context()).Warn("a task's schedule could not be read", "task", t.ID, "err", err)
	}
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

// createTask: POST /api/tasks. The record and its schedule exist when it
// answers 201: running on a DEPLOYED enclave, pending (schedule paused)
// on one that is not yet.
func (s *Server) createTask(c *gin.Context) {
	var body tasks.Create
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	t, err := s.schedules().Create(c.Request.Context(), principal(c).AccountID, body)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Location", s.url("/api/tasks/"+t.ID))
	c.JSON(http.StatusCreated, s.taskJSON(c, t))
}

// listTasks: GET /api/tasks?enclaveId=&status=.
func (s *Server) listTasks(c *gin.Context) {
	f := store.TaskFilter{EnclaveID: c.Query("enclaveId"), Status: tasks.Status(c.Query("status"))}
	if f.Status != "" && !slices.Contains(tasks.Statuses, f.Status) {
		fail(c, errs.Invalidf("status must be running, stopped, failed or pending"))
		return
	}
	ts, err := s.deps.Store.Tasks(c.Request.Context(), principal(c).AccountID, f)
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
	t, err := s.schedules().Update(c.Request.Context(), currentTask(c), body)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.taskJSON(c, t))
}

// deleteTask: DELETE /api/tasks/{id}: the schedule goes; the runs stay.
func (s *Server) deleteTask(c *gin.Context) {
	if err := s.schedules().Delete(c.Request.Context(), currentTask(c).ID); err != nil {
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
	if t.Status == tasks.Pending {
		e := errs.Conflictf("the task cannot run now: %s", t.StatusReason)
		e.Extra = map[string]any{"status": string(t.Status)}
		fail(c, e)
		return
	}
	if err := s.schedules().Trigger(c.Request.Context(), t, ""); err != nil {
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
		if err != nil || n < 1 || n > 500 {
			fail(c, errs.Invalidf("limit must be a whole number from 1 to 500"))
			return
		}
		limit = n
	}
	outcome := c.Query("outcome")
	if outcome != "" && !slices.Contains(tasks.Outcomes, outcome) {
		fail(c, errs.Invalidf("outcome must be success, failure, timeout or skipped"))
		return
	}
	runs, err := s.deps.Store.TaskRuns(c.Request.Context(), t.ID, outcome, limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"taskId": t.ID, "deleted": t.Deleted, "runs": runs})
}
