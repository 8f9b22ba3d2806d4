package config

import "time"

// Proofs configures the zkVerify relay and KYC proofs (docs/proofs.md).
type Proofs struct {
	// RelayerURL is a zkVerify relayer's API base (Kurier-style, ending in
	// /api/v1) and RelayerAPIKey its key: proof types we cannot verify
	// here (risc0, sp1, ultraplonk, ultrahonk, ezkl) go to it. Without a
	// URL they are refused with a 400 naming proofs.relayer_url.
	RelayerURL    string `mapstructure:"relayer_url"`
	RelayerAPIKey string `mapstructure:"relayer_api_key"`
	// RelayerPoll is how often a relayed job's status is read.
	RelayerPoll time.Duration `mapstructure:"relayer_poll"`
	// AggregationDomain is the aggregation domain jobs with a chainId join;
	// AggregationWait how long a job waits for its aggregation to be
	// published before it fails.
	AggregationDomain uint64        `mapstructure:"aggregation_domain"`
	AggregationWait   time.Duration `mapstructure:"aggregation_wait"`
	// MaxOpenJobs bounds one account's proof jobs not yet closed, MaxKeys
	// the verification keys it registers (0: no bound, deliberately).
	MaxOpenJobs int64 `mapstructure:"max_open_jobs"`
	MaxKeys     int64 `mapstructure:"max_keys"`
	// ChainKey is the hex private key of the account that records proofs
	// on the embedded chain when x402's local chain is not running (empty:
	// a fresh key each start; the embedded chain is in memory anyway).
	ChainKey string `mapstructure:"chain_key"`
	// KYCMaxProofs bounds one account's KYC proofs not yet expired.
	KYCMaxProofs int64 `mapstructure:"kyc_max_proofs"`
}

var proofsDefaults = map[string]any{
	"proofs.relayer_url":        "",
	"proofs.relayer_api_key":    "",
	"proofs.relayer_poll":       "5s",
	"proofs.aggregation_domain": 1,
	"proofs.aggregation_wait":   "1h",
	"proofs.max_open_jobs":      100,
	"proofs.max_keys":           50,
	"proofs.chain_key":          "",
	"proofs.kyc_max_proofs":     1000,
}
