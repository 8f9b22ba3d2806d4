package workflows

import "go.temporal.io/sdk/workflow"

// updateAnswer is what a workflow's admission update answers: given once, by
// the workflow's first step, and read by every caller of the update, who
// waits for it. One place for the shape several workflows share (a
// proof job, a KYC proof, a task, a zkPassport request).
type updateAnswer[T any] struct {
	v   *T
	err error
}

// answerUpdate registers the update name on ctx; its callers wait until
// the workflow gives its answer or refuses.
func answerUpdate[T any](ctx workflow.Context, name string) (*updateAnswer[T], error) {
	a := &updateAnswer[T]{}
	err := workflow.SetUpdateHandler(ctx, name, func(ctx workflow.Context) (T, error) {
		var zero T
		if err := workflow.Await(ctx, a.settled); err != nil {
			return zero, err
		}
		if a.err != nil {
			return zero, a.err
		}
		return *a.v, nil
	})
	return a, err
}

// give answers v; refuse answers err.
func (a *updateAnswer[T]) give(v T)         { a.v = &v }
func (a *updateAnswer[T]) refuse(err error) { a.err = err }

// settled says the answer is given or refused.
func (a *updateAnswer[T]) settled() bool { return a.v != nil || a.err != nil }
