// Package audiotest measures rendered audio for tests: where a track's
// beats fall and how fast they come. It reads samples only, so a test can
// judge a file the way a listener would, whatever rendered it.
package audiotest

import (
	"math"
	"slices"
)

// hopsPerSecond is the onset envelope's resolution (2.5 ms).
const hopsPerSecond = 400

// OnsetEnvelope is the low band's onset strength, one value per hop of
// sr/400 samples: the signal is low-passed (two one-pole stages at 150 Hz,
// the kick's band, so hats and shakers on the off-beats do not count), its
// power smoothed over 5 ms (longer than a period of the kick's tone, so
// the envelope does not ripple), log-compressed with a floor (silence
// before the first kick is no bigger a step than a kick's own tail), and
// its rise over the last 10 ms kept (positive flux).
func OnsetEnvelope(x []float32, sr int) []float64 {
	hop := sr / hopsPerSecond
	a := 1 - math.Exp(-2*math.Pi*150/float64(sr))
	sm := 1 - math.Exp(-1/(0.005*float64(sr)))
	var l1, l2, p, mean float64
	var power []float64
	for i, v := range x {
		l1 += a * (float64(v) - l1)
		l2 += a * (l1 - l2)
		p += sm * (l2*l2 - p)
		if (i+1)%hop == 0 {
			power = append(power, p)
			mean += p
		}
	}
	mean /= float64(max(len(power), 1))
	c := make([]float64, len(power))
	for i, v := range power {
		c[i] = math.Log(math.Max(v, 0.02*mean) + 1e-20)
	}
	back := max(1, int(0.01*float64(sr)/float64(hop)))
	flux := make([]float64, len(c))
	for i := back; i < len(c); i++ {
		flux[i] = math.Max(0, c[i]-c[i-back])
	}
	return flux
}

// BeatPeriod estimates the beat period in seconds (0 when it finds none):
// the autocorrelation of the onset envelope over lags for 40–240 BPM; of
// the peaks within 80% of the highest, the shortest lag (a pulse on every
// beat also correlates at two and four beats), refined to a fraction of a
// hop with a parabola through the peak.
func BeatPeriod(x []float32, sr int) float64 {
	flux := OnsetEnvelope(x, sr)
	if len(flux) == 0 {
		return 0
	}
	mean := 0.0
	for _, v := range flux {
		mean += v
	}
	mean /= float64(len(flux))
	for i := range flux {
		flux[i] -= mean
	}
	hopSec := float64(sr/hopsPerSecond) / float64(sr)
	minLag, maxLag := int(60/240.0/hopSec), int(60/40.0/hopSec)
	if maxLag+1 >= len(flux) {
		return 0
	}
	ac := make([]float64, maxLag+2)
	for lag := minLag - 1; lag <= maxLag+1; lag++ {
		for i := lag; i < len(flux); i++ {
			ac[lag] += flux[i] * flux[i-lag]
		}
	}
	best := slices.Max(ac[minLag : maxLag+1])
	for lag := minLag; lag <= maxLag; lag++ {
		if ac[lag] >= 0.8*best && ac[lag] >= ac[lag-1] && ac[lag] >= ac[lag+1] {
			d := 0.0
			if den := ac[lag-1] - 2*ac[lag] + ac[lag+1]; den != 0 {
				d = 0.5 * (ac[lag-1] - ac[lag+1]) / den
			}
			return (float64(lag) + d) * hopSec
		}
	}
	return 0
}

// Onsets are the times (seconds) where the onset envelope peaks above half
// its 99.5th percentile, at most one per 100 ms.
func Onsets(x []float32, sr int) []float64 {
	flux := OnsetEnvelope(x, sr)
	if len(flux) < 3 {
		return nil
	}
	hop := sr / hopsPerSecond
	sorted := slices.Clone(flux)
	slices.Sort(sorted)
	peak := 1.5 * sorted[len(sorted)*995/1000]
	var out []float64
	last := -1.0
	for i := 1; i+1 < len(flux); i++ {
		t := float64(i*hop) / float64(sr)
		if flux[i] > peak/3 && flux[i] >= flux[i-1] && flux[i] >= flux[i+1] && t-last > 0.1 {
			out = append(out, t)
			last = t
		}
	}
	return out
}
