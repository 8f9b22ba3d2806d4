package workflows

import (
	"errors"

	"go.temporal.io/sdk/temporal"
)

// failureText is an activity's failure in its own words, without
// Temporal's wrapping; a timeout reads as timedOut, said the way the
// caller knows the step (the model, the provider, the job).
func failureText(err error, timedOut string) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return timedOut
	}
	return err.Error()
}
