package synth

// metallic are the TR-808's six hi-hat square-wave frequencies: summed,
// their inharmonic beating is the cymbal's shimmer.
var metallic = [6]float64{205.3, 304.4, 369.6, 522.7, 540, 800}

// drum renders one drum hit.
func (v *voicer) drum(n Note, r *rng) []float32 {
	sr := v.sr
	vel := n.Velocity
	var out []float32
	switch n.Pitch {
	case Kick:
		// A sine sweeping down from ~160 Hz to ~45 Hz: the pitch drop is
		// the punch; a short click is the beater.
		dec := 0.2
		if v.bpm >= 150 {
			dec = 0.14
		}
		out = v.buffer(int((0.05 + 4*dec) * sr))
		ph := 0.0
		sweep, amp, click := newDecay(0.03, sr), newDecay(dec, sr), newDecay(0.0012, sr)
		for i := range out {
			ph += (45 + 115*sweep.next()) / sr
			s := sinp(ph)*amp.next() + 0.3*r.noise()*click.next()
			out[i] = float32(vel * softClip(1.4*s) * ramp(i, 0.0008*sr))
		}
	case Snare, Rim:
		tone, noise, tail := 0.5, 0.75, 0.11
		f1, f2 := 185.0, 330.0
		length := 0.3
		if n.Pitch == Rim {
			tone, noise, tail, f1, f2, length = 0.4, 0.35, 0.012, 1700, 820, 0.08
		}
		out = v.buffer(int(length * sr))
		var hp svf
		hp.set(1800, 0.7, sr)
		o1, o2 := newResonator(f1, sr), newResonator(f2, sr)
		d1, d2, dn := newDecay(tail*0.5, sr), newDecay(tail*0.35, sr), newDecay(tail, sr)
		for i := range out {
			_, _, h := hp.tick(r.noise())
			s := tone*(o1.next()*d1.next()+0.5*o2.next()*d2.next()) + noise*h*dn.next()
			out[i] = float32(0.8 * vel * s)
		}
	case Clap:
		// Three quick bursts (hands not quite together) and a tail.
		out = v.buffer(int(0.3 * sr))
		var bp svf
		bp.set(1300, 1.2, sr)
		burst := newDecay(0.004, sr)
		tail := newDecay(0.1, sr)
		starts := [3]int{0, int(0.009 * sr), int(0.018 * sr)}
		tailAt := int(0.024 * sr)
		for i := range out {
			if i == starts[1] || i == starts[2] {
				burst.v = 1
			}
			e := burst.next()
			if i >= tailAt {
				e = max(e, 0.7*tail.next())
			}
			_, b, _ := bp.tick(r.noise())
			out[i] = float32(1.6 * vel * b * e)
		}
	case ClosedHat, OpenHat, Ride, Crash:
		dec, length, cut, gain, spread := 0.028, 0.12, 7500.0, 0.5, 1.0
		switch n.Pitch {
		case OpenHat:
			dec, length = 0.2, 0.6
		case Ride:
			dec, length, cut, gain, spread = 0.45, 1.3, 5000, 0.5, 1.45
		case Crash:
			dec, length, cut, gain, spread = 0.7, 2.2, 4000, 0.55, 1.2
		}
		out = v.buffer(int(length * sr))
		var hp svf
		hp.set(cut, 0.8, sr)
		var ph, inc [6]float64
		for k := range ph {
			inc[k] = metallic[k] * spread / sr
		}
		d := newDecay(dec, sr)
		for i := range out {
			m := 0.0
			for k := range ph {
				ph[k] = advance(ph[k], inc[k])
				if ph[k] < 0.5 {
					m++
				} else {
					m--
				}
			}
			_, _, h := hp.tick(0.18*m + 0.6*r.noise())
			out[i] = float32(gain * vel * h * d.next() * ramp(i, 0.0005*sr))
		}
	case Shaker:
		out = v.buffer(int(0.12 * sr))
		var bp svf
		bp.set(7000, 1, sr)
		d := newDecay(0.04, sr)
		for i := range out {
			_, b, _ := bp.tick(r.noise())
			out[i] = float32(0.8 * vel * b * ramp(i, 0.008*sr) * d.next())
		}
	default:
		out = v.buffer(1)
	}
	declick(out)
	return out
}
