package config

import (
	"strings"
	"testing"
	"time"
)

func TestQuotaAndMeteringSettings(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Quota.Enclaves <= 0 || c.Quota.Tasks <= 0 || c.Quota.APIKeys <= 0 || c.Quota.Pipelines <= 0 || c.Quota.MinTaskInterval != time.Minute {
		t.Fatalf("defaults: %+v", c.Quota)
	}
	if enc, firing, err := c.Metering.Prices(); err != nil || enc != 200 || firing != 100 || c.Metering.EnclaveMeterEvery() != time.Minute {
		t.Fatalf("prices %d %d %v, every %s", enc, firing, err, c.Metering.EnclaveMeterEvery())
	}
	for _, bad := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.Quota.Tasks = -1 }, "quota.tasks"},
		{func(c *Config) { c.Quota.MinTaskInterval = 0 }, "quota.min_task_interval"},
		{func(c *Config) { c.Metering.TaskFiringUSD = "a lot" }, "metering.task_firing_usd"},
		{func(c *Config) { c.Metering.EnclaveMinuteUSD = "-1" }, "metering.enclave_minute_usd"},
		{func(c *Config) { c.Metering.EnclavePeriod = time.Millisecond }, "metering.enclave_period"},
	} {
		c, _ := Load("")
		bad.set(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("want a refusal naming %s, got %v", bad.want, err)
		}
	}
	// A zero price is a choice: valid, and nothing to meter.
	t.Setenv("CONDUIT_METERING_ENCLAVE_MINUTE_USD", "0")
	c, _ = Load("")
	if err := c.Validate(); err != nil || c.Metering.EnclaveMeterEvery() != 0 {
		t.Fatalf("a zero price: %v, every %s", err, c.Metering.EnclaveMeterEvery())
	}
}
