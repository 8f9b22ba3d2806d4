package x402

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/gagliardetto/solana-go"
)

// Slot timing and the blockhash validity window of a Solana validator: a
// slot every 400 ms, and a transaction is accepted while its blockhash is
// one of the last 151 (MAX_PROCESSING_AGE 150 plus the current one), about
// 60 seconds.
const (
	SVMSlotDuration    = 400 * time.Millisecond
	SVMBlockhashWindow = 150
)

// svmGenesis is the embedded network's slot 0. Slots are a pure function of
// the wall clock, so they keep advancing across restarts of the dev command
// and a settled transfer's slot follows from its settlement time.
var svmGenesis = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// SVMClock is the embedded Solana network's slot clock. Every slot has one
// blockhash, derived from the network's seed and the slot number, so
// nothing is stored and any process with the same seed agrees; a blockhash
// is recognised by recomputing the window.
type SVMClock struct {
	Seed []byte
	Now  func() time.Time
}

func (c *SVMClock) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// SlotAt is the slot current at t.
func (c *SVMClock) SlotAt(t time.Time) uint64 {
	if t.Before(svmGenesis) {
		return 0
	}
	return uint64(t.Sub(svmGenesis) / SVMSlotDuration)
}

// Slot is the current slot. Every slot produces a block, so the block
// height equals the slot.
func (c *SVMClock) Slot() uint64 { return c.SlotAt(c.now()) }

// Blockhash is the hash of the block at slot.
func (c *SVMClock) Blockhash(slot uint64) solana.Hash {
	h := sha256.New()
	h.Write([]byte("conduit/svm/blockhash/"))
	h.Write(c.Seed)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], slot)
	h.Write(b[:])
	return solana.Hash(h.Sum(nil))
}

// Latest is the current slot's blockhash and the last block height at
// which a transaction using it is still accepted.
func (c *SVMClock) Latest() (slot uint64, hash solana.Hash, lastValidBlockHeight uint64) {
	slot = c.Slot()
	return slot, c.Blockhash(slot), slot + SVMBlockhashWindow
}

// Valid reports whether hash is the blockhash of one of the last
// SVMBlockhashWindow+1 slots, as a validator's blockhash queue does, and
// the slot it was issued at.
func (c *SVMClock) Valid(hash solana.Hash) (uint64, bool) {
	cur := c.Slot()
	for i := uint64(0); i <= SVMBlockhashWindow && i <= cur; i++ {
		if c.Blockhash(cur-i) == hash {
			return cur - i, true
		}
	}
	return 0, false
}
