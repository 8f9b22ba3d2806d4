package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"conduit/internal/money"
	"conduit/internal/pricing"
	"conduit/internal/store"
	"conduit/internal/tasks/schedules"
)

// Metering charges metered use into the ledger (docs/accounts.md,
// "Metering"): each task firing is held before its call and captured
// after it, like a run; each started period of a DEPLOYED enclave's
// uptime is held and captured at once. Every movement is keyed by what it
// pays for (the firing's workflow id, the enclave and its period's
// start), so a retried step never charges twice. A zero price writes
// nothing.
type Metering struct {
	Store     *store.Store
	Schedules *schedules.Service
	Prices    pricing.Metering
}

// FiringHold is a firing to hold the price of.
type FiringHold struct {
	TaskID string
	RunID  string
}

// FiringHeld is its hold: none when the price is zero, Refused (the
// reason) when the balance cannot cover it.
type FiringHeld struct {
	HoldID  string       `json:",omitempty"`
	Amount  money.Micros `json:",omitempty"`
	Refused string       `json:",omitempty"`
}

// HoldFiring holds one firing's price on the task's account under the
// firing's id. A balance that cannot cover it refuses the firing: nothing
// is called or charged, and a running task moves to failed (its schedule
// paused) with the reason, until its owner tops up and sets it running.
func (m *Metering) HoldFiring(ctx context.Context, in FiringHold) (FiringHeld, error) {
	price := m.Prices.TaskFiring
	if price <= 0 {
		return FiringHeld{}, nil
	}
	t, err := m.Store.Task(ctx, in.TaskID)
	if errors.Is(err, store.ErrNotFound) {
		return FiringHeld{}, nil // the call skips it: nothing to charge
	}
	if err != nil {
		return FiringHeld{}, err
	}
	hold, err := m.Store.Hold(ctx, t.AccountID, price, in.RunID)
	if errors.Is(err, store.ErrInsufficientCredit) {
		reason := fmt.Sprintf("the account's balance cannot cover a firing (%s USD); top up, then set the task's status to running", price)
		if _, moved, err := m.Schedules.Fail(ctx, t.ID, "paused: "+reason); err != nil {
			return FiringHeld{}, err
		} else if moved {
			activity.GetLogger(ctx).Warn("a task was paused: its account cannot pay for its firings", "task", t.ID)
		}
		return FiringHeld{Refused: "not called: " + reason}, nil
	}
	if err != nil {
		return FiringHeld{}, err
	}
	return FiringHeld{HoldID: hold, Amount: price}, nil
}

// FiringSettle settles a firing's hold: captured when the call was made
// (whatever the application answered), released when it was skipped.
type FiringSettle struct {
	HoldID string
	Amount money.Micros
	Charge bool
}

// SettleFiring captures or releases the hold (again: a no-op).
func (m *Metering) SettleFiring(ctx context.Context, in FiringSettle) error {
	if in.HoldID == "" {
		return nil
	}
	if in.Charge {
		return m.Store.Capture(ctx, in.HoldID, in.Amount, nil)
	}
	return m.Store.Release(ctx, in.HoldID, nil)
}

// UptimeMeter is one period of an enclave's uptime, starting at From.
type UptimeMeter struct {
	EnclaveID string
	Account   string
	From      time.Time
	Period    time.Duration
}

// UptimeMetered is what the period cost, or why it could not be charged.
type UptimeMetered struct {
	Amount  money.Micros `json:",omitempty"`
	Refused string       `json:",omitempty"`
}

// UptimeKey is the ledger key of an enclave's period of uptime.
func UptimeKey(enclaveID string, from time.Time) string {
	return "enclave-uptime/" + enclaveID + "/" + from.UTC().Format(time.RFC3339Nano)
}

// MeterEnclave charges one started period of uptime (held and captured
// under the enclave and the period's start). A balance that cannot cover
// it answers Refused: the lifecycle pauses the enclave with the reason.
func (m *Metering) MeterEnclave(ctx context.Context, in UptimeMeter) (UptimeMetered, error) {
	price := m.Prices.EnclavePeriod(in.Period)
	if price <= 0 {
		return UptimeMetered{}, nil
	}
	hold, err := m.Store.Hold(ctx, in.Account, price, UptimeKey(in.EnclaveID, in.From))
	if errors.Is(err, store.ErrInsufficientCredit) {
		return UptimeMetered{Refused: fmt.Sprintf("the account's balance cannot cover its uptime (%s USD for %s); top up, then resume it", price, in.Period)}, nil
	}
	if err != nil {
		return UptimeMetered{}, err
	}
	if err := m.Store.Capture(ctx, hold, price, nil); err != nil {
		return UptimeMetered{}, err
	}
	return UptimeMetered{Amount: price}, nil
}
