// Package worker builds the activity structs from their dependencies and
// registers every workflow and activity on its task queue, in one place.
package worker

import (
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"

	"conduit/activities"
	"conduit/internal/models"
	"conduit/internal/store"
	"conduit/internal/x402"
	"conduit/workflows"
)

// Deps are what the activities need.
type Deps struct {
	Store   *store.Store
	Catalog *models.Catalog
	Deltas  activities.DeltaSink
	// Facilitator settles x402 payments (nil when payments are off).
	Facilitator x402.Facilitator
	// Renders renders pay-per-call files (nil when pay-per-call is off).
	Renders *activities.Renders
	Log     *slog.Logger
	// Pollers, RenderConcurrency and StopTimeout come from temporal.*.
	Pollers           int
	RenderConcurrency int
	StopTimeout       time.Duration
}

// Worker polls every task queue of the platform.
type Worker struct {
	workers []sdkworker.Worker
}

// New registers everything; call Start to begin polling.
func New(c client.Client, d Deps) *Worker {
	system := &activities.System{Store: d.Store}
	// Every worker sorts activity errors the same way and drains what it
	// runs on stop.
	opts := sdkworker.Options{
		Interceptors:                     []interceptor.WorkerInterceptor{activities.Interceptor()},
		WorkerStopTimeout:                d.StopTimeout,
		MaxConcurrentWorkflowTaskPollers: max(2, d.Pollers),
		MaxConcurrentActivityTaskPollers: max(1, d.Pollers),
	}

	sys := sdkworker.New(c, workflows.SystemQueue, opts)
	sys.RegisterWorkflow(workflows.Ping)
	sys.RegisterWorkflow(workflows.Nop)
	sys.RegisterActivity(system)

	pipes := sdkworker.New(c, workflows.PipelineQueue, opts)
	pipes.RegisterWorkflow(workflows.PipelineRun)
	pipes.RegisterActivity(&activities.Models{Catalog: d.Catalog, Deltas: d.Deltas})
	pipes.RegisterActivity(&activities.Runs{Store: d.Store})

	pay := sdkworker.New(c, workflows.PaymentsQueue, opts)
	pay.RegisterWorkflow(workflows.TopUp)
	pay.RegisterActivity(&activities.Payments{Store: d.Store, Facilitator: d.Facilitator})

	workers := []sdkworker.Worker{sys, pipes, pay}
	if d.Renders != nil {
		// Renders settle payments too, so the settlement activity is on
		// their queue as well.
		rw := sdkworker.New(c, workflows.RenderQueue, opts)
		rw.RegisterWorkflow(workflows.Render)
		rw.RegisterActivity(d.Renders)
		rw.RegisterActivity(&activities.Payments{Store: d.Store, Facilitator: d.Facilitator})
		// The render activity itself is CPU-heavy (ffmpeg, the
		// synthesizer): its own queue, at most RenderConcurrency at once,
		// so settlements and bookkeeping never wait behind renders.
		ro := opts
		ro.MaxConcurrentActivityExecutionSize = max(1, d.RenderConcurrency)
		ro.DisableWorkflowWorker = true
		heavy := sdkworker.New(c, workflows.RenderWorkQueue, ro)
		heavy.RegisterActivity(d.Renders)
		workers = append(workers, rw, heavy)
	}
	return &Worker{workers: workers}
}

// Start begins polling on every queue.
func (w *Worker) Start() error {
	for i, wk := range w.workers {
		if err := wk.Start(); err != nil {
			for _, started := range w.workers[:i] {
				started.Stop()
			}
			return errors.Join(errors.New("worker could not start"), err)
		}
	}
	return nil
}

// Stop drains in-flight tasks and stops polling.
func (w *Worker) Stop() {
	for _, wk := range w.workers {
		wk.Stop()
	}
}
