// Package enclaveops asks enclave lifecycles things from outside: an update
// (pause, resume, terminate, retry) answered with its real outcome, and the
// operator's question "which enclaves are stuck building or deploying, and
// why". Both read Temporal, where the lifecycle lives (workflows.Enclave);
// the API, the CLI and the admin routes share them.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/enclaves"
	"conduit/internal/errs"
	"conduit/workflows"
)

// ErrEnded: the enclave's lifecycle workflow is not running (it ended
// between reading the record and asking); the record has the final state.
var ErrEnded = errors.New("the enclave's lifecycle has ended")

// Ask sends an update to the enclave's lifecycle and waits for its answer.
// A refusal is an errs Conflict naming the current state (Extra
// "status"); it changed nothing.
func Ask(ctx context.Context, c client.Client, id, update string) (workflows.EnclaveState, error) {
	var st workflows.EnclaveState
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.EnclaveWorkflowID(id), UpdateName: update, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &st)
	}
	var app *temporal.ApplicationError
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return st, nil
	case errors.As(err, &app) && app.Type() == workflows.ErrEnclaveConflict:
		var cur string
		_ = app.Details(&cur)
		e := errs.Conflictf("%s", app.Message())
		e.Extra = map[string]any{"status": cur}
		return st, e
	case errors.As(err, &nf):
		return st, ErrEnded
	default:
		return st, fmt.Errorf("asking enclave %s to %s: %w", id, update, err)
	}
}

// Provisioning are the states a stuck enclave is in: its build or its
// deployment has not finished.
var Provisioning = []enclaves.Status{enclaves.PendingBuild, enclaves.Building, enclaves.PendingDeploy, enclaves.Deploying}

// Stuck is an enclave that has been building or deploying too long, with
// what its lifecycle is waiting for.
type Stuck struct {
	ID      string          `json:"id"`
	Account string          `json:"account"`
	Status  enclaves.Status `json:"status"`
	Since   time.Time       `json:"since"`
	// Step is the activity under way or waiting to be retried, with its
	// attempt count, last failure and next attempt (when waiting).
	Step        string    `json:"step,omitempty"`
	Attempt     int32     `json:"attempt,omitempty"`
	LastFailure string    `json:"lastFailure,omitempty"`
	NextAttempt time.Time `json:"nextAttempt,omitzero"`
}

// Query is the visibility query for enclaves in a provisioning state since
// before t.
func Query(t time.Time) string {
	in := ""
	for i, s := range Provisioning {
		if i > 0 {
			in += ", "
		}
		in += "'" + string(s) + "'"
	}
	return fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s IN (%s) AND %s < '%s'",
		workflows.WfEnclave, workflows.AttrEnclaveStatus.GetName(), in,
		workflows.AttrEnclaveStatusSince.GetName(), t.UTC().Format(time.RFC3339Nano))
}

// ListStuck finds the enclaves that have been in a provisioning state for
// longer than d, oldest first, each with its pending step.
func ListStuck(ctx context.Context, c client.Client, namespace string, d time.Duration) ([]Stuck, error) {
	var out []Stuck
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: namespace, Query: Query(time.Now().Add(-d)), NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("listing enclave lifecycles: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			f := e.GetSearchAttributes().GetIndexedFields()
			s := Stuck{}
			var st string
			attr(f, workflows.AttrEnclaveID.GetName(), &s.ID)
			attr(f, workflows.AttrAccount.GetName(), &s.Account)
			attr(f, workflows.AttrEnclaveStatus.GetName(), &st)
			attr(f, workflows.AttrEnclaveStatusSince.GetName(), &s.Since)
			s.Status = enclaves.Status(st)
			d, err := c.DescribeWorkflowExecution(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId())
			if err == nil {
				for _, pa := range d.GetPendingActivities() {
					s.Step = pa.GetActivityType().GetName()
					s.Attempt = pa.GetAttempt()
					s.LastFailure = pa.GetLastFailure().GetMessage()
					if t := pa.GetNextAttemptScheduleTime(); t != nil {
						s.NextAttempt = t.AsTime()
					}
				}
			}
			out = append(out, s)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	sortBySince(out)
	return out, nil
}

// attr decodes a search attribute (they are stored unsealed, with the
// default converter).
func attr(f map[string]*commonpb.Payload, name string, v any) {
	if p, ok := f[name]; ok {
		_ = converter.GetDefaultDataConverter().FromPayload(p, v)
	}
}

func sortBySince(s []Stuck) {
	slices.SortFunc(s, func(a, b Stuck) int { return a.Since.Compare(b.Since) })
}
