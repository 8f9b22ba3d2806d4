package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"conduit/activities"
)

// The mail workflow retries a passing failure with backoff (time skipped),
// ends on a permanent one at once, and gives up after MailRetry's
// attempts.
func TestMailRetriesWithBackoffAndEnds(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions((&activities.Mail{}).Send, activity.RegisterOptions{Name: ActSendMail})
	calls := 0
	env.OnActivity(ActSendMail, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.MailInput) error {
		calls++
		if in.MailID != "mail_1" {
			t.Errorf("activity input %+v", in)
		}
		if calls < 4 {
			return errors.New("connection refused")
		}
		return nil
	})
	env.ExecuteWorkflow(Mail, MailInput{MailID: "mail_1"})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil || calls != 4 {
		t.Fatalf("calls %d: %v", calls, env.GetWorkflowError())
	}

	env = s.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions((&activities.Mail{}).Send, activity.RegisterOptions{Name: ActSendMail})
	env.OnActivity(ActSendMail, mock.Anything, mock.Anything).Return(
		temporal.NewNonRetryableApplicationError("550 mailbox unavailable", activities.ErrPermanent, nil)).Once()
	env.ExecuteWorkflow(Mail, MailInput{MailID: "mail_2"})
	if env.GetWorkflowError() == nil {
		t.Fatal("a permanent failure did not end the workflow")
	}

	env = s.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions((&activities.Mail{}).Send, activity.RegisterOptions{Name: ActSendMail})
	calls = 0
	env.OnActivity(ActSendMail, mock.Anything, mock.Anything).Return(func(context.Context, activities.MailInput) error {
		calls++
		return errors.New("connection refused")
	})
	start := env.Now()
	env.ExecuteWorkflow(Mail, MailInput{MailID: "mail_3"})
	if env.GetWorkflowError() == nil || calls != int(MailRetry.MaximumAttempts) {
		t.Fatalf("gave up after %d attempts: %v", calls, env.GetWorkflowError())
	}
	if took := env.Now().Sub(start); took < 6*time.Hour || took > 24*time.Hour {
		t.Fatalf("the retries spanned %s, want about half a day", took)
	}
	if MailWorkflowID("mail_3") != "mail/mail_3" {
		t.Fatal("workflow id")
	}
}
