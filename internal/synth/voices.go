package synth

import "math"

// voicer renders single notes into a reused scratch buffer.
type voicer struct {
	sr      float64
	bpm     float64
	scratch []float32
}

// buffer is a zeroed scratch buffer of n samples (valid until the next
// call).
func (v *voicer) buffer(n int) []float32 {
	n = max(n, 1)
	if cap(v.scratch) < n {
		v.scratch = make([]float32, n, n+n/2)
	}
	b := v.scratch[:n]
	clear(b)
	return b
}

// note renders one note of a timbre, mono, from its start; the result
// includes the release tail and ends at zero.
func (v *voicer) note(tb Timbre, role Role, n Note, r *rng) []float32 {
	if tb == Drums {
		return v.drum(n, r)
	}
	f := freq(float64(n.Pitch))
	var out []float32
	switch tb {
	case Piano:
		out = v.piano(n, f, r)
	case ElectricPiano:
		out = v.epiano(n, f)
	case Organ:
		out = v.organ(n, f, r)
	case Pad:
		out = v.pad(n, f, r)
	case Strings:
		out = v.strings(n, f, r)
	case Bass:
		out = v.bass(n, f)
	case SynthBass:
		out = v.synthBass(n, f)
	case Sub808:
		out = v.sub808(n, f)
	case Brass:
		out = v.brass(n, f, r)
	case Pluck:
		out = v.pluck(n, f, r)
	case Bell:
		out = v.bell(n, f)
	case Flute:
		out = v.flute(n, f, r)
	case Chip:
		out = v.chip(n, f, role)
	default:
		out = v.lead(n, f, r)
	}
	declick(out)
	return out
}

func (v *voicer) gate(n Note) int { return max(1, int(n.Dur*v.sr)) }

// piano: six inharmonic partials (stretched like a real string's), each
// with a quick initial drop and a slower ring, the upper ones dying
// faster; brighter when struck harder; a felt thump at the start; the
// damper stops it when the key is released.
func (v *voicer) piano(n Note, f float64, r *rng) []float32 {
	sr := v.sr
	gate := v.gate(n)
	ring := clamp(2.4*math.Pow(2, -float64(n.Pitch-48)/18), 0.35, 4)
	const damp = 0.09
	length := min(gate+releaseSamples(damp, sr), gate+int(3*ring*sr))
	length = min(length, int(5*ring*sr))
	out := v.buffer(length)
	B := 0.00012 * math.Pow(2, float64(n.Pitch-60)/12)
	bright := 0.3 + 0.6*n.Velocity
	var osc [6]resonator
	var fast, slow, fmul, smul [6]float64
	parts := 0
	for k := 1; k <= 6; k++ {
		fk := float64(k) * f * math.Sqrt(1+B*float64(k*k))
		if fk > min(0.45*sr, 12000) {
			break
		}
		amp := math.Pow(float64(k), -1.1) * math.Pow(bright, float64(k-1))
		tk := ring / (1 + 0.7*float64(k-1))
		osc[parts] = newResonator(fk, sr)
		fast[parts], slow[parts] = 0.55*amp, 0.45*amp
		fmul[parts] = math.Exp(-1 / (0.12 * tk * sr))
		smul[parts] = math.Exp(-1 / (tk * sr))
		parts++
	}
	dmul := math.Exp(-1 / (damp * sr))
	d := 1.0
	thump, lp := 0.12*n.Velocity, 0.0
	tmul := math.Exp(-1 / (0.002 * sr))
	for i := range out {
		s := 0.0
		for k := range parts {
			s += (fast[k] + slow[k]) * osc[k].next()
			fast[k] *= fmul[k]
			slow[k] *= smul[k]
		}
		if thump > 1e-4 {
			lp += 0.2 * (r.noise() - lp)
			s += thump * lp
			thump *= tmul
		}
		if i >= gate {
			d *= dmul
		}
		// A 2 ms attack ramp keeps the start from clicking.
		out[i] = float32(s * d * ramp(i, 0.002*sr) * 0.6)
	}
	return out
}

// epiano: two-operator FM at ratio 1 (the tine's bark fading to a round
// tone) plus a short high "tine" partial; decays like a struck note.
func (v *voicer) epiano(n Note, f float64) []float32 {
	sr := v.sr
	gate := v.gate(n)
	const rel = 0.12
	ring := clamp(1.8*math.Pow(2, -float64(n.Pitch-60)/24), 0.5, 3)
	length := min(gate, int(4*ring*sr)) + releaseSamples(rel, sr)
	out := v.buffer(length)
	dt := f / sr
	ph := 0.0
	index := 0.4 + 1.6*n.Velocity
	imul := math.Exp(-1 / (0.3 * sr))
	tine := 0.15 * n.Velocity
	tmul := math.Exp(-1 / (0.025 * sr))
	amp := 1.0
	amul := math.Exp(-1 / (ring * sr))
	rmul := math.Exp(-1 / (rel * sr))
	for i := range out {
		m := (index + 0.2) * sinp(ph)
		s := sinp(ph+m/(2*math.Pi)) + tine*sinp(ph*7)
		ph = advance(ph, dt)
		index *= imul
		tine *= tmul
		amp *= amul
		if i >= gate {
			amp *= rmul
		}
		out[i] = float32(0.5 * s * amp * ramp(i, 0.0015*sr))
	}
	return out
}

// organ: drawbar partials (16', 8', 5⅓', 4', 2⅔', 2'), a key click, a
// gentle rotary-speaker tremolo.
func (v *voicer) organ(n Note, f float64, r *rng) []float32 {
	sr := v.sr
	gate := v.gate(n)
	const rel = 0.05
	out := v.buffer(gate + releaseSamples(rel, sr))
	ratios := [6]float64{0.5, 1, 1.5, 2, 3, 4}
	gains := [6]float64{0.45, 1, 0.4, 0.45, 0.2, 0.2}
	var osc [6]resonator
	var g [6]float64
	parts := 0
	for k, ra := range ratios {
		if ra*f < 0.45*sr {
			osc[parts], g[parts] = newResonator(ra*f, sr), gains[k]
			parts++
		}
	}
	e := newEnv(sr, 0.006, 1, 1, rel, gate)
	trem := r.float()
	click := 0.15
	cmul := math.Exp(-1 / (0.0015 * sr))
	for i := range out {
		s := 0.0
		for k := range parts {
			s += g[k] * osc[k].next()
		}
		s += click * r.noise()
		click *= cmul
		trem += 6 / sr
		out[i] = float32(0.3 * s * e.next() * (1 - 0.08*sinp(trem)))
	}
	return out
}

// pad: two detuned saws and a saw an octave down, through a low-pass
// that breathes with a slow LFO; slow attack and release.
func (v *voicer) pad(n Note, f float64, r *rng) []float32 {
	sr := v.sr
	gate := v.gate(n)
	const rel = 0.45
	out := v.buffer(gate + releaseSamples(rel, sr))
	atk := min(0.6, 0.3*n.Dur) + 0.03
	e := newEnv(sr, atk, 1, 1, rel, gate)
	d1, d2, d3 := f*math.Pow(2, 7/1200.0)/sr, f*math.Pow(2, -7/1200.0)/sr, f/2/sr
	p1, p2, p3 := r.float(), r.float(), r.float()
	lfo := r.float()
	var flt svf
	for i := range out {
		if i%32 == 0 {
			flt.set(f*2.5+700+450*sinp(lfo), 0.8, sr)
			lfo += 32 * 0.15 / sr
		}
		s := saw(p1, d1) + saw(p2, d2) + 0.5*saw(p3, d3)
		p1 = advance(p1, d1)
		p2 = advance(p2, d2)
		p3 = advance(p3, d3)
		lp, _, _ := flt.tick(s)
		out[i] = float32(0.3 * lp * e.next())
	}
	return out
}

// strings: detuned saws with a vibrato that fades in, through a fixed
// low-pass; a bowed attack.
func (v *voicer) strings(n Note, f float64, r *rng) []float32 {
	sr := v.sr
	gate := v.gate(n)
	const rel = 0.3
	out := v.buffer(gate + releaseSamples(rel, sr))
	atk := min(0.2, 0.35*n.Dur) + 0.02
	e := newEnv(sr, atk, 1, 1, rel, gate)
	var flt svf
	flt.set(min(f*5+1500, 8000), 0.7, sr)
	p1, p2 := r.float(), r.float()
	vib := r.float()
	d1, d2 := f*math.Pow(2, 6/1200.0)/sr, f*math.Pow(2, -6/1200.0)/sr
	for i := range out {
		t := float64(i) / sr
		depth := 0.003 * min(1, t/0.4)
		m := 1 + depth*sinp(vib)
		vib += 5.3 / sr
		s := saw(p1, d1*m) + saw(p2, d2*m)
		p1 = advance(p1, d1*m)
		p2 = advance(p2, d2*m)
		lp, _, _ := flt.tick(s)
		out[i] = float32(0.4 * lp * e.next())
	}
	return out
}

// bass: a round fundamental with second and third harmonics that fade
// faster (a plucked attack), lightly saturated.
func (v *voicer) bass(n Note, f float64) []float32 {
	sr := v.sr
	gate := v.gate(n)
	const rel = 0.05
	out := v.buffer(gate + releaseSamples(rel, sr))
	o1, o2, o3 := newResonator(f, sr), newResonator(2*f, sr), newResonator(3*f, sr)
	h := 0.5 + 0.3*n.Velocity
	hmul := math.Exp(-1 / (0.15 * sr))
	e := newEnv(sr, 0.004, 0.5, 0.55, rel, gate)
	for i := range out {
		s := o1.next() + h*(0.5*o2.next()+0.2*o3.next())
		h *= hmul
		h = max(h, 0.12)
		out[i] = float32(0.8 * softClip(1.2*s) * e.next())
	}
	return out
}

// synthBass: a saw and a square an octave below through a resonant
// low-pass whose cutoff snaps down after each note's start.
func (v *voicer) synthBass(n Note, f float64) []float32 {
	sr := v.sr
	gate := v.gate(n)
	const rel = 0.04
	out := v.buffer(gate + releaseSamples(rel, sr))
	e := newEnv(sr, 0.003, 0.3, 0.7, rel, gate)
	d1, d2 := f/sr, f/2/sr
	p1, p2 := 0.0, 0.0
	var flt svf
	sweep := 2800 * n.Velocity
	smul := math.Exp(-16 / (0.09 * sr))
	for i := range out {
		if i%16 == 0 {
			flt.set(f*1.5+220+sweep, 2.2, sr)
			sweep *= smul
		}
		s := saw(p1, d1) + 0.5*pulse(p2, d2, 0.5)
		p1 = advance(p1, d1)
		p2 = advance(p2, d2)
		lp, _, _ := flt.tick(s)
		out[i] = float32(0.45 * softClip(lp) * e.next())
	}
	return out
}

// sub808: a sine that drops into pitch from above, with a long decay and
// saturation (the trap bass).
func (v *voicer) sub808(n Note, f float64) []float32 {
	sr := v.sr
	gate := v.gate(n)
	const rel = 0.08
	out := v.buffer(min(gate, int(2.5*sr)) + releaseSamples(rel, sr))
	ph := 0.0
	bend := 0.8
	bmul := math.Exp(-1 / (0.04 * sr))
	amp := 1.0
	amul := math.Exp(-1 / (0.9 * sr))
	rmul := math.Exp(-1 / (rel * sr))
	for i := range out {
		s := sinp(ph)
		ph += f * (1 + bend) / sr
		bend *= bmul
		amp *= amul
		if i >= gate {
			amp *= rmul
		}
		out[i] = float32(0.8 * softClip(1.8*s) * amp * ramp(i, 0.002*sr))
	}
	return out
}

// lead: two detuned saws with delayed vibrato through a low-pass with a
// bright attack.
func (v *voicer) lead(n Note, f float64, r *rng) []float32 {
	sr := v.sr
	gate := v.gate(n)
	const rel = 0.09
	out := v.buffer(gate + releaseSamples(rel, sr))
	e := newEnv(sr, 0.008, 0.25, 0.75, rel, gate)
	d1, d2 := f*math.Pow(2, 8/1200.0)/sr, f*math.Pow(2, -8/1200.0)/sr
	p1, p2 := r.float(), r.float()
	vib := 0.0
	var flt svf
	sweep := 2500 * n.Velocity
	smul := math.Exp(-16 / (0.15 * sr))
	for i := range out {
		if i%16 == 0 {
			flt.set(f*4+1400+sweep, 1.3, sr)
			sweep *= smul
		}
		t := float64(i) / sr
		m := 1 + 0.004*clamp((t-0.2)/0.3, 0, 1)*sinp(vib)
		vib += 5.5 / sr
		s := saw(p1, d1*m) + saw(p2, d2*m)
		p1 = advance(p1, d1*m)
		p2 = advance(p2, d2*m)
		lp, _, _ := flt.tick(s)
		out[i] = float32(0.35 * lp * e.next())
	}
	return out
}

// brass: a saw whose low-pass opens as the note swells in, with a late
// vibrato.
func (v *voicer) brass(n Note, f float64, r *rng) []float32 {
	sr := v.sr
	gate := v.gate(n)
	const rel = 0.08
	out := v.buffer(gate + releaseSamples(rel, sr))
	e := newEnv(sr, 0.035, 0.4, 0.8, rel, gate)
	d1, d2 := f/sr, f*math.Pow(2, 4/1200.0)/sr
	p1, p2 := r.float(), r.float()
	vib := 0.0
	var flt svf
	for i := range out {
		t := float64(i) / sr
		if i%16 == 0 {
			open := 1 - math.Exp(-t/0.06)
			flt.set(min(f*(1.3+4.5*n.Velocity*open)*(0.8+0.2*math.Exp(-t/0.5)), 9000), 0.9, sr)
		}
		m := 1 + 0.003*clamp((t-0.3)/0.3, 0, 1)*sinp(vib)
		vib += 5 / sr
		s := saw(p1, d1*m) + 0.6*saw(p2, d2*m)
		p1 = advance(p1, d1*m)
		p2 = advance(p2, d2*m)
		lp, _, _ := flt.tick(s)
		out[i] = float32(0.4 * lp * e.next())
	}
	return out
}

// pluck: a Karplus-Strong string. A burst of filtered noise circulates in
// a delay line one period long; averaging adjacent samples each pass
// damps the highs first, as a real string does; a first-order all-pass
// supplies the fractional delay that tunes it exactly. Releasing the
// note mutes the string.
func (v *voicer) pluck(n Note, f float64, r *rng) []float32 {
	sr := v.sr
	f = min(f, sr/6)
	gate := v.gate(n)
	t60 := clamp(3.5*math.Pow(2, -float64(n.Pitch-48)/18), 0.5, 4)
	const mute = 0.06
	held := min(gate, int(1.1*t60*sr))
	out := v.buffer(held + releaseSamples(mute, sr))
	period := sr/f - 0.5 // the averaging filter delays half a sample
	L := int(period)
	frac := period - float64(L)
	if frac < 0.1 { // keep the all-pass away from its unstable corner
		L--
		frac++
	}
	c := (1 - frac) / (1 + frac)
	line := make([]float64, L)
	bright := 0.25 + 0.6*n.Velocity
	lp, mean := 0.0, 0.0
	for i := range line {
		lp += bright * (r.noise() - lp)
		line[i] = lp
		mean += lp
	}
	mean /= float64(L)
	for i := range line {
		line[i] -= mean
	}
	rho := math.Pow(10, -3/(t60*f))
	rhoMute := math.Pow(10, -3/(mute*f))
	last, apx, apy := 0.0, 0.0, 0.0
	idx := 0
	for i := range out {
		y := line[idx]
		g := rho
		if i >= held {
			g = rhoMute
		}
		avg := g * 0.5 * (y + last)
		last = y
		ap := c*avg + apx - c*apy
		apx, apy = avg, ap
		line[idx] = ap
		idx++
		if idx == L {
			idx = 0
		}
		out[i] = float32(0.9 * y)
	}
	return out
}

// bell: FM with an inharmonic modulator (ratio 3.5) whose brightness
// fades, plus a hum partial; rings on after the note is released.
func (v *voicer) bell(n Note, f float64) []float32 {
	sr := v.sr
	gate := v.gate(n)
	ring := clamp(2.2*math.Pow(2, -float64(n.Pitch-72)/24), 0.6, 4)
	const rel = 0.5
	length := min(gate+releaseSamples(rel, sr), int(5*ring*sr))
	out := v.buffer(length)
	ph, pm := 0.0, 0.0
	dt, dm := f/sr, 3.5*f/sr
	index := 0.6 + 2.2*n.Velocity
	imul := math.Exp(-1 / (0.8 * sr))
	amp, amul := 1.0, math.Exp(-1/(ring*sr))
	rmul := math.Exp(-1 / (rel * sr))
	hum := newResonator(f/2, sr)
	for i := range out {
		s := sinp(ph+index*sinp(pm)/(2*math.Pi)) + 0.15*hum.next()
		ph, pm = advance(ph, dt), advance(pm, dm)
		index *= imul
		amp *= amul
		if i >= gate {
			amp *= rmul
		}
		out[i] = float32(0.45 * s * amp * ramp(i, 0.001*sr))
	}
	return out
}

// flute: a nearly pure tone with weak second and third harmonics, delayed
// vibrato, breath noise tuned to the note and a chiff at the start.
func (v *voicer) flute(n Note, f float64, r *rng) []float32 {
	sr := v.sr
	gate := v.gate(n)
	const rel = 0.08
	out := v.buffer(gate + releaseSamples(rel, sr))
	e := newEnv(sr, 0.05, 0.3, 0.85, rel, gate)
	var breath svf
	breath.set(f*1.5, 3, sr)
	ph, vib := 0.0, r.float()
	chiff := 0.3
	cmul := math.Exp(-1 / (0.03 * sr))
	for i := range out {
		t := float64(i) / sr
		m := 1 + 0.005*clamp((t-0.15)/0.3, 0, 1)*sinp(vib)
		vib += 5 / sr
		s := sinp(ph) + 0.2*sinp(2*ph) + 0.06*sinp(3*ph)
		ph = advance(ph, f*m/sr)
		_, bp, _ := breath.tick(r.noise())
		s += (0.1 + chiff) * bp
		chiff *= cmul
		out[i] = float32(0.45 * s * e.next())
	}
	return out
}

// chip: the 8-bit sound: a 25% pulse for tunes, a square for chords, a
// stepped triangle for bass.
func (v *voicer) chip(n Note, f float64, role Role) []float32 {
	sr := v.sr
	gate := v.gate(n)
	const rel = 0.03
	out := v.buffer(gate + releaseSamples(rel, sr))
	e := newEnv(sr, 0.002, 0.1, 0.8, rel, gate)
	ph, dt := 0.0, f/sr
	duty := 0.25
	if role == RoleChords || role == RoleArp {
		duty = 0.5
	}
	for i := range out {
		var s float64
		if role == RoleBass {
			tri := 4*math.Abs(ph-0.5) - 1
			s = math.Round(tri*8) / 8 // the NES triangle's 4-bit steps
		} else {
			s = pulse(ph, dt, duty)
		}
		ph = advance(ph, dt)
		out[i] = float32(0.35 * s * e.next())
	}
	return out
}
