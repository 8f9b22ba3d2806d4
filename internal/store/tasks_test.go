package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"conduit/internal/enclaves"
	"conduit/internal/store"
	"conduit/internal/tasks"
)

func TestTaskRecordAndRuns(t *testing.T) {
	ctx := context.Background()
	acct, err := st.EnsureHumanAccount(ctx, store.NewID("acct"), "tasks", 0)
	if err != nil {
		t.Fatal(err)
	}
	c := enclaves.Create{Name: "a", ProviderConfig: &enclaves.ProviderConfig{DockerImage: "127.0.0.1:1/a:1"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	enc := store.NewEnclaveID()
	if _, err := st.CreateEnclave(ctx, store.NewEnclave{ID: enc, AccountID: acct.ID, Create: c, Status: enclaves.PendingDeploy}); err != nil {
		t.Fatal(err)
	}
	task, err := st.CreateTask(ctx, tasks.Task{ID: store.NewTaskID(), AccountID: acct.ID, EnclaveID: enc, Name: "tick", Schedule: "@every 1s",
		Timezone: "UTC", Request: tasks.Request{Method: "GET", Path: "/", TimeoutSeconds: 5}, Overlap: "skip", CatchupSeconds: 60,
		FailureThreshold: 2, Status: tasks.Pending, StatusReason: "waiting"})
	if err != nil || task.Status != tasks.Pending || task.LastRun != nil || task.Request.Path != "/" {
		t.Fatalf("create: %+v %v", task, err)
	}

	at := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
	record := func(n int, outcome string) (tasks.Task, bool) {
		t.Helper()
		r := tasks.Run{ID: "task-run/" + task.ID + "-" + at.Add(time.Duration(n)*time.Second).Format(time.RFC3339), TaskID: task.ID,
			ScheduledAt: at.Add(time.Duration(n) * time.Second), StartedAt: at.Add(time.Duration(n) * time.Second), DurationMs: 3, Outcome: outcome, HTTPStatus: 500, Result: "r"}
		got, inserted, err := st.RecordTaskRun(ctx, r, enc, store.EnclaveLog{Source: "task/" + task.ID, Stream: "stderr", Message: "run " + r.ID})
		if err != nil {
			t.Fatal(err)
		}
		return got, inserted
	}
	if got, ins := record(1, tasks.Failure); !ins || got.ConsecutiveFailures != 1 || got.LastRun == nil || got.LastRun.Outcome != tasks.Failure {
		t.Fatalf("first failure: %+v %v", got, ins)
	}
	// A retried record step writes nothing twice and counts once.
	if got, ins := record(1, tasks.Failure); ins || got.ConsecutiveFailures != 1 {
		t.Fatalf("the same run again: %+v %v", got, ins)
	}
	if got, _ := record(2, tasks.Skipped); got.ConsecutiveFailures != 1 || got.LastRun.Outcome != tasks.Skipped {
		t.Fatalf("a skipped run: %+v", got)
	}
	if got, _ := record(3, tasks.Timeout); got.ConsecutiveFailures != 2 {
		t.Fatalf("a timeout: %+v", got)
	}
	if got, _ := record(4, tasks.Success); got.ConsecutiveFailures != 0 {
		t.Fatalf("a success: %+v", got)
	}
	runs, err := st.TaskRuns(ctx, task.ID, "", 10)
	if err != nil || len(runs) != 4 || runs[0].Outcome != tasks.Success {
		t.Fatalf("runs: %+v %v", runs, err)
	}
	if f, _ := st.TaskRuns(ctx, task.ID, tasks.Failure, 10); len(f) != 1 {
		t.Fatalf("failures: %+v", f)
	}
	lambda, _ := st.EnclaveLogs(ctx, enc, "lambda", 100)
	errs, _ := st.EnclaveLogs(ctx, enc, "errors", 100)
	if len(lambda) != 4 || len(errs) != 2 || !strings.Contains(lambda[0].Message, task.ID) || lambda[0].LogGroup != "/conduit/enclaves/"+enc+"/lambda" {
		t.Fatalf("lambda %+v errors %+v", lambda, errs)
	}

	// Moves are conditional on the status.
	if _, ok, err := st.MoveTask(ctx, task.ID, []tasks.Status{tasks.Running}, tasks.Failed, "x", false); ok || err != nil {
		t.Fatalf("moved from the wrong status: %v %v", ok, err)
	}
	if m, ok, err := st.MoveTask(ctx, task.ID, []tasks.Status{tasks.Pending}, tasks.Running, "", true); !ok || err != nil || m.Status != tasks.Running {
		t.Fatalf("move: %+v %v %v", m, ok, err)
	}
	if l, _ := st.EnclaveTasks(ctx, enc); len(l) != 1 {
		t.Fatalf("enclave tasks: %+v", l)
	}
	// Deleted: gone from lists, its runs kept.
	if ok, err := st.DeleteTask(ctx, task.ID); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if l, _ := st.Tasks(ctx, acct.ID, store.TaskFilter{}); len(l) != 0 {
		t.Fatalf("a deleted task is listed: %+v", l)
	}
	if got, err := st.Task(ctx, task.ID); err != nil || !got.Deleted {
		t.Fatalf("deleted: %+v %v", got, err)
	}
	if runs, _ := st.TaskRuns(ctx, task.ID, "", 10); len(runs) != 4 {
		t.Fatalf("runs after delete: %d", len(runs))
	}
}
