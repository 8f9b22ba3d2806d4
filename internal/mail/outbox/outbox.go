// Package outbox starts the delivery of outbox messages: one workflow per
// message (workflows.Mail, id mail/<message id>), started right after the
// transaction that wrote the message, and a sweep that starts those whose
// start was missed (Temporal was down, or the writer had no Temporal
// client: the `account create` command).
package outbox

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"conduit/internal/store"
	"conduit/workflows"
)

// Dispatcher starts deliveries.
type Dispatcher struct {
	Store    *store.Store
	Temporal client.Client
	Log      *slog.Logger
	// MinAge is how old an untried message must be before Sweep starts
	// it (SweepAge when 0; tests sweep at once).
	MinAge time.Duration
}

// Deliver starts the delivery of each message. A message whose delivery
// exists already is left to it (the id reuse policy refuses a second);
// a start that fails is logged and left to the sweep.
func (d *Dispatcher) Deliver(ctx context.Context, ids ...string) {
	for _, id := range ids {
		if err := d.start(ctx, id); err != nil {
			d.Log.Warn("mail delivery not started; the outbox sweep will start it", "mail_id", id, "err", err)
		}
	}
}

func (d *Dispatcher) start(ctx context.Context, id string) error {
	_, err := d.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.MailWorkflowID(id), TaskQueue: workflows.MailQueue,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
	}, workflows.WfMail, workflows.MailInput{MailID: id})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	return err
}

// SweepAge is how old an untried message must be before the sweep starts
// its delivery: the sign-up that wrote it starts it at once.
const SweepAge = time.Minute

// Sweep starts the delivery of messages never tried that are older than
// MinAge (at most 100 a sweep) and reports how many it started (or found
// started).
func (d *Dispatcher) Sweep(ctx context.Context) (int, error) {
	age := d.MinAge
	if age <= 0 {
		age = SweepAge
	}
	ids, err := d.Store.UnsentMail(ctx, time.Now().Add(-age), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		if err := d.start(ctx, id); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Run sweeps every interval until ctx ends.
func (d *Dispatcher) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := d.Sweep(ctx); err != nil && ctx.Err() == nil {
				d.Log.Warn("outbox sweep failed", "err", err)
			} else if n > 0 {
				d.Log.Info("outbox sweep started deliveries", "count", n)
			}
		}
	}
}
