package workflows

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"conduit/activities"
	"conduit/internal/money"
)

// The pack workflow grants through its one activity with the checkout's
// own account and price, retries a passing failure, and ends on a
// permanent one.
func TestPackPurchaseGrantsThroughTheActivity(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions((&activities.Packs{}).Record, activity.RegisterOptions{Name: ActRecordPack})
	calls := 0
	env.OnActivity(ActRecordPack, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.PackInput) (activities.PackOutcome, error) {
		calls++
		if in != (activities.PackInput{SessionID: "cs_test_1", AccountID: "acct_1", Paid: 50 * money.USD}) {
			t.Errorf("activity input %+v", in)
		}
		if calls == 1 {
			return activities.PackOutcome{}, errors.New("database restarting")
		}
		return activities.PackOutcome{Credit: 52*money.USD + money.Cents(50), Balance: 57*money.USD + money.Cents(50)}, nil
	})
	env.ExecuteWorkflow(PackPurchase, PackInput{SessionID: "cs_test_1", AccountID: "acct_1", Paid: 50 * money.USD})
	var res PackResult
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil || env.GetWorkflowResult(&res) != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	if calls != 2 || res.Credit != 52*money.USD+money.Cents(50) || res.Duplicate {
		t.Fatalf("calls %d, result %+v", calls, res)
	}

	env = s.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions((&activities.Packs{}).Record, activity.RegisterOptions{Name: ActRecordPack})
	env.OnActivity(ActRecordPack, mock.Anything, mock.Anything).Return(activities.PackOutcome{},
		temporal.NewNonRetryableApplicationError("no credit pack costs 30 USD", activities.ErrPermanent, nil)).Once()
	env.ExecuteWorkflow(PackPurchase, PackInput{SessionID: "cs_test_2", AccountID: "acct_1", Paid: 30 * money.USD})
	if err := env.GetWorkflowError(); err == nil {
		t.Fatal("a permanent failure did not end the workflow")
	}
	if PackWorkflowID("cs_test_2") != "pack/cs_test_2" {
		t.Fatal("workflow id")
	}
}
