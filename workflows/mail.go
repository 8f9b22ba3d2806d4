package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
)

// MailQueue carries the outbox's deliveries.
const MailQueue = "mail"

// MailWorkflowID derives from the outbox message, so each message has one
// delivery however often it is dispatched (the sweep and the sign-up
// that wrote it both may).
func MailWorkflowID(mailID string) string { return "mail/" + mailID }

// MailInput names the outbox message to deliver.
type MailInput struct {
	MailID string
}

// MailRetry spaces delivery attempts out from 5 s to 30 min and gives up
// after about half a day; the message keeps its last error.
var MailRetry = &temporal.RetryPolicy{InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Minute,
	MaximumAttempts: 30, NonRetryableErrorTypes: []string{activities.ErrPermanent}}

// Mail delivers one outbox message: one activity, retried with backoff.
// Its RunStatus says whether the message left.
func Mail(ctx workflow.Context, in MailInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 2 * time.Minute, RetryPolicy: MailRetry})
	if err := workflow.ExecuteActivity(ctx, ActSendMail, activities.MailInput{MailID: in.MailID}).Get(ctx, nil); err != nil {
		_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(StatusError))
		return err
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(StatusSuccess))
	return nil
}
