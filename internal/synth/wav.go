package synth

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// WriteWAV writes interleaved float samples as a 16-bit PCM WAV file.
// Samples are clamped to [-1, 1] and rounded (NaN is written as 0).
func WriteWAV(w io.Writer, samples []float32, sampleRate, channels int) error {
	if channels < 1 || channels > 8 {
		return fmt.Errorf("synth: %d channels (want 1..8)", channels)
	}
	if sampleRate < 1 || sampleRate > 1_000_000 {
		return fmt.Errorf("synth: sample rate %d is not valid", sampleRate)
	}
	if len(samples)%channels != 0 {
		return fmt.Errorf("synth: %d samples do not divide into %d channels", len(samples), channels)
	}
	data := uint64(len(samples)) * 2
	if data > math.MaxUint32-36 {
		return fmt.Errorf("synth: %d samples are too many for a WAV file", len(samples))
	}
	var h [44]byte
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], uint32(36+data))
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // PCM
	binary.LittleEndian.PutUint16(h[22:], uint16(channels))
	binary.LittleEndian.PutUint32(h[24:], uint32(sampleRate))
	binary.LittleEndian.PutUint32(h[28:], uint32(sampleRate*channels*2))
	binary.LittleEndian.PutUint16(h[32:], uint16(channels*2))
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], uint32(data))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	buf := make([]byte, 0, 32<<10)
	for _, x := range samples {
		v := float64(x)
		switch {
		case math.IsNaN(v):
			v = 0
		case v > 1:
			v = 1
		case v < -1:
			v = -1
		}
		buf = binary.LittleEndian.AppendUint16(buf, uint16(int16(math.Round(v*32767))))
		if len(buf) == cap(buf) {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if len(buf) > 0 {
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}
