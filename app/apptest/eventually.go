package apptest

import (
	"testing"
	"time"

	"conduit/app/apptest/wait"
)

// Eventually polls cond until it returns nil and fails the test after within
// with what it was waiting for and cond's last error. It is wait.Eventually,
// offered here beside Env so integration tests find it where they look.
func Eventually(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	wait.Eventually(t, within, what, cond)
}
