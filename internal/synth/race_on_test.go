//go:build race

package synth

// The race detector slows rendering by an order of magnitude.
const raceEnabled = true
