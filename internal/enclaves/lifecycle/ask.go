// Package lifecycle drives enclaves from outside their workflow
// (workflows.Enclave, where each lifecycle lives): creating one (the
// workflow admits itself and writes the record), the caller's updates
// (pause, resume, terminate, retry) answered with their real outcome,
// attestation and signing (the agent lives with the provider in the
// worker, so both are updates too), the logs, and the operator's question
// "which enclaves are stuck building or deploying, and why". The API, the
// CLI and the admin routes share it; Service is its front door.
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
	"conduit/internal/signer"
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
	return st, ask(ctx, c, id, update, nil, &st)
}

// ask is every question put to a lifecycle, with its answer decoded into
// out, and the one place Temporal's answers become the domain's: the
// lifecycle's refusal is a Conflict naming the state (Extra "status"), a
// signing request the worker refused is Invalid, a lifecycle that has
// ended is ErrEnded; anything else is returned wrapped (the caller
// decides what an unreachable lifecycle means for it).
func ask(ctx context.Context, c client.Client, id, update string, arg, out any) error {
	opts := client.UpdateWorkflowOptions{WorkflowID: workflows.EnclaveWorkflowID(id), UpdateName: update, WaitForStage: client.WorkflowUpdateStageCompleted}
	if arg != nil {
		opts.Args = []any{arg}
	}
	h, err := c.UpdateWorkflow(ctx, opts)
	if err == nil {
		err = h.Get(ctx, out)
	}
	var app *temporal.ApplicationError
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return nil
	case errors.As(err, &app) && app.Type() == workflows.ErrEnclaveConflict:
		var cur string
		_ = app.Details(&cur)
		e := errs.Conflictf("%s", app.Message())
		e.Extra = map[string]any{"status": cur}
		return e
	case errors.As(err, &app) && app.Type() == signer.ErrTypeInvalid:
		return errs.Invalidf("%s", app.Message())
	case errors.As(err, &nf):
		return ErrEnded
	default:
		return fmt.Errorf("asking enclave %s to %s: %w", id, update, err)
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
