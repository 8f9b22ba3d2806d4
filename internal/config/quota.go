package config

import (
	"fmt"
	"time"

	"conduit/internal/money"
)

// Quota configures the per-account quotas (docs/security.md, "Quotas and
// abuse"): how many of each resource one account may hold (0: no limit,
// a deliberate choice), and the shortest interval a task may fire at.
type Quota struct {
	Enclaves  int64 `mapstructure:"enclaves"`
	Tasks     int64 `mapstructure:"tasks"`
	APIKeys   int64 `mapstructure:"api_keys"`
	Pipelines int64 `mapstructure:"pipelines"`
	// The PII vault's subjects and tokens (deleted subjects count too).
	PIISubjects int64 `mapstructure:"pii_subjects"`
	PIITokens   int64 `mapstructure:"pii_tokens"`
	// MinTaskInterval: a schedule that can fire more often is refused.
	MinTaskInterval time.Duration `mapstructure:"min_task_interval"`
}

// Metering configures what enclave uptime and task firings cost
// (docs/accounts.md, "Metering"). A price of 0 is a configuration choice:
// nothing is metered and no ledger entry is written.
type Metering struct {
	// EnclaveMinuteUSD is the price of one minute of a DEPLOYED enclave,
	// charged per started EnclavePeriod (pro rata, rounded up to a
	// micro-USD).
	EnclaveMinuteUSD string `mapstructure:"enclave_minute_usd"`
	// EnclavePeriod is how often a DEPLOYED enclave is metered.
	EnclavePeriod time.Duration `mapstructure:"enclave_period"`
	// TaskFiringUSD is the price of one firing of a task.
	TaskFiringUSD string `mapstructure:"task_firing_usd"`
}

var quotaDefaults = map[string]any{
	"quota.enclaves":              10,
	"quota.tasks":                 100,
	"quota.api_keys":              50,
	"quota.pipelines":             500,
	"quota.pii_subjects":          10000,
	"quota.pii_tokens":            100000,
	"quota.min_task_interval":     "1m",
	"metering.enclave_minute_usd": "0.0002",
	"metering.enclave_period":     "1m",
	"metering.task_firing_usd":    "0.0001",
}

// Prices are the metering prices in micro-USD.
func (m Metering) Prices() (enclaveMinute, taskFiring money.Micros, err error) {
	if enclaveMinute, err = money.ParseUSD(m.EnclaveMinuteUSD); err != nil || enclaveMinute < 0 {
		return 0, 0, fmt.Errorf("metering.enclave_minute_usd (%s_METERING_ENCLAVE_MINUTE_USD) %q is not a USD amount", EnvPrefix, m.EnclaveMinuteUSD)
	}
	if taskFiring, err = money.ParseUSD(m.TaskFiringUSD); err != nil || taskFiring < 0 {
		return 0, 0, fmt.Errorf("metering.task_firing_usd (%s_METERING_TASK_FIRING_USD) %q is not a USD amount", EnvPrefix, m.TaskFiringUSD)
	}
	return enclaveMinute, taskFiring, nil
}

// EnclaveMeterEvery is how often a DEPLOYED enclave is metered: 0 when
// its uptime is free (nothing to charge, no step in its lifecycle).
func (m Metering) EnclaveMeterEvery() time.Duration {
	if p, _, err := m.Prices(); err != nil || p <= 0 {
		return 0
	}
	return m.EnclavePeriod
}

// checkQuota validates the quota and metering settings.
func (c *Config) checkQuota() []error {
	var errs []error
	for _, q := range []struct {
		key string
		v   int64
	}{{"enclaves", c.Quota.Enclaves}, {"tasks", c.Quota.Tasks}, {"api_keys", c.Quota.APIKeys}, {"pipelines", c.Quota.Pipelines},
		{"pii_subjects", c.Quota.PIISubjects}, {"pii_tokens", c.Quota.PIITokens}} {
		if q.v < 0 {
			errs = append(errs, fmt.Errorf("quota.%s must be 0 (no limit) or more", q.key))
		}
	}
	if c.Quota.MinTaskInterval < time.Second {
		errs = append(errs, fmt.Errorf("quota.min_task_interval (%s_QUOTA_MIN_TASK_INTERVAL) must be at least 1s", EnvPrefix))
	}
	if _, _, err := c.Metering.Prices(); err != nil {
		errs = append(errs, err)
	}
	if c.Metering.EnclavePeriod < time.Second {
		errs = append(errs, fmt.Errorf("metering.enclave_period (%s_METERING_ENCLAVE_PERIOD) must be at least 1s", EnvPrefix))
	}
	return errs
}
