package frontend_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"conduit/activities"
	"conduit/app/apptest"
	"conduit/internal/enclaves"
	"conduit/internal/store"
	"conduit/internal/tasks"
	"conduit/internal/tasks/manager"
	"conduit/workflows"
)

// An API that dies between starting an enclave's lifecycle and writing its
// record leaves nothing half-made: the lifecycle's first step writes the
// record, and the enclave deploys. (The crash is played by starting the
// workflow as the service does and writing nothing.)
func TestEnclaveSurvivesACrashBetweenAdmissionSteps(t *testing.T) {
	ctx := context.Background()
	ref := env.PushEnclaveApp(t, "admission/echo", "v1")
	acct, key := env.NewAccount(t)
	id := store.NewEnclaveID()
	c := enclaves.Create{Name: "crashed", ProviderConfig: &enclaves.ProviderConfig{DockerImage: ref, MemoryMiB: 128}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	n := activities.NewEnclave{ID: id, Account: acct, Create: c, Status: enclaves.PendingDeploy}
	_, err := env.Platform.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.EnclaveWorkflowID(id), TaskQueue: workflows.EnclaveQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: workflows.EnclaveSearchAttributes(id, acct, n.Status, time.Now()),
	}, workflows.WfEnclave, workflows.EnclaveInput{ID: id, Account: acct, Ref: ref, Source: c.SourceType, Provider: c.ProviderID, Admit: &n})
	if err != nil {
		t.Fatal(err)
	}
	// The record comes with the lifecycle's first step.
	apptest.Eventually(t, 30*time.Second, "the record the lifecycle writes", func() error {
		if r := do(t, "GET", "/api/enclaves/"+id, key, nil); r.Status != http.StatusOK {
			return fmt.Errorf("%d %s", r.Status, r.Body)
		}
		return nil
	})
	rec := waitEnclave(t, key, id, "DEPLOYED", 2*time.Minute)
	if rec["name"] != "crashed" {
		t.Fatalf("the record the lifecycle wrote: %v", rec)
	}
	wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK)
}

// A task whose API died after starting its admission (nobody waits on the
// update) still gets its record and its schedule, together.
func TestTaskSurvivesACrashBetweenAdmissionSteps(t *testing.T) {
	ctx := context.Background()
	key, enc := sharedEnclave(t)
	e, err := env.Platform.Store.Enclave(ctx, enc)
	if err != nil {
		t.Fatal(err)
	}
	var c tasks.Create
	c.EnclaveID, c.Name, c.Schedule = enc, "crashed", "@hourly"
	c.Request = &tasks.Request{Method: "GET", Path: "/crashed", TimeoutSeconds: 5}
	task, err := manager.New(env.Platform.Store, env.Platform.Temporal).Schedules.New(ctx, e.AccountID, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Platform.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.TaskAdmitWorkflowID(task.ID), TaskQueue: workflows.TaskQueue,
	}, workflows.WfTaskAdmit, workflows.TaskAdmission{Task: task, AskedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { do(t, "DELETE", "/api/tasks/"+task.ID, key, nil) })
	// The schedule is made after the record: once it exists, both do.
	apptest.Eventually(t, 30*time.Second, "the task's schedule", func() error {
		_, err := env.Platform.Temporal.ScheduleClient().GetHandle(ctx, tasks.ScheduleID(task.ID)).Describe(ctx)
		return err
	})
	if g := getTask(t, key, task.ID); g["status"] != "running" {
		t.Fatalf("the task after its admission: %v", g)
	}
	if d := describe(t, task.ID); d.Schedule.State.Paused {
		t.Fatalf("the schedule of a running task is paused: %+v", d.Schedule.State)
	}
}
