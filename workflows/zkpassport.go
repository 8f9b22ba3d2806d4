package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
)

// A zkPassport verification request's life (zkpassport-request/<id>,
// docs/proofs.md): admitted by its first step (the row, within the
// account's bound of open requests), then open until a verification
// closes it (SignalZKPassportClosed) or its validity ends, when it is
// expired.
const (
	WfZKPassportRequest = "ZKPassportRequest"
	// ZKPassportQueue runs the requests and their activities.
	ZKPassportQueue = "zkpassport"
	// UpdateZKPassportAdmit answers the admission (the request, or the
	// refusal of its account's bound).
	UpdateZKPassportAdmit = "admit"
	// SignalZKPassportClosed says a verification closed the request.
	SignalZKPassportClosed = "closed"
	ActZKPassportOpen      = "OpenZKPassportRequest"
	ActZKPassportExpire    = "ExpireZKPassportRequest"
)

// ZKPassportRequestWorkflowID names a request's workflow.
func ZKPassportRequestWorkflowID(id string) string { return "zkpassport-request/" + id }

// ZKPassportAdmitted is UpdateZKPassportAdmit's answer.
type ZKPassportAdmitted struct {
	RequestID string    `json:"requestId"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// ZKPassportRequest is the request's workflow.
func ZKPassportRequest(ctx workflow.Context, in activities.ZKPassportOpen) error {
	answer, err := answerUpdate[ZKPassportAdmitted](ctx, UpdateZKPassportAdmit)
	if err != nil {
		return err
	}
	short := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 20},
	})
	if err := workflow.ExecuteActivity(short, ActZKPassportOpen, in).Get(ctx, nil); err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Type() == activities.ErrZKPassportRefused {
			var used, limit int64
			_ = app.Details(&used, &limit)
			answer.refuse(temporal.NewNonRetryableApplicationError(app.Message(), activities.ErrZKPassportRefused, nil, used, limit))
		} else {
			answer.refuse(temporal.NewNonRetryableApplicationError("the request could not be recorded", "zkpassport_unrecorded", nil))
		}
		// The refusal is the answer; nothing was written.
		return workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	}
	answer.give(ZKPassportAdmitted{RequestID: in.ID, ExpiresAt: in.ExpiresAt})

	closed := false
	workflow.Go(ctx, func(ctx workflow.Context) {
		workflow.GetSignalChannel(ctx, SignalZKPassportClosed).Receive(ctx, nil)
		closed = true
	})
	closedFirst, err := workflow.AwaitWithTimeout(ctx, in.ExpiresAt.Sub(workflow.Now(ctx)), func() bool { return closed })
	if err != nil {
		return err
	}
	if !closedFirst {
		if err := workflow.ExecuteActivity(short, ActZKPassportExpire, in.ID).Get(ctx, nil); err != nil {
			return err
		}
	}
	return workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
}
