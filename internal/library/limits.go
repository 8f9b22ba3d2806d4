package library

import (
	"context"
	"fmt"

	"conduit/internal/errs"
	"conduit/internal/media"
	"conduit/internal/pricing"
	"conduit/internal/store"
)

// A job's output, predicted from its inputs before any work: its length is
// exact for every operation (what ffmpeg is told to write with -t), its
// size an estimate from the inputs' byte rates and the output format's
// (ffmpeg is stopped at media.library.max_output_bytes all the same, and a
// job whose file reaches it fails).

// Byte rates of the audio the editor writes (its encoder settings in
// internal/media), and the slack for a container's headers.
var audioRate = map[string]int64{"mp3": 192_000 / 8, "wav": 44_100 * 2 * 2, "m4a": 160_000 / 8, "ogg": 128_000 / 8}

const (
	// videoAudioRate is a video's sound track (AAC or Opus, 128 kb/s).
	videoAudioRate = 128_000 / 8
	// webmRate is the WebM encoder's target (1 Mb/s) with its sound.
	webmRate      = 1_000_000/8 + videoAudioRate
	containerSlop = 64 << 10
)

// output is what a job will make: seconds of media and about how many
// bytes.
type output struct {
	seconds float64
	bytes   int64
}

// outputOf predicts the output of spec over items (the checked sources in
// order).
func outputOf(spec media.EditSpec, items []store.MediaItem) output {
	var secs float64
	main := seconds(items[0])
	switch spec.Op {
	case media.OpConcat, media.OpCrossfade:
		for _, it := range items {
			secs += seconds(it)
		}
		secs -= spec.Fade * float64(len(items)-1)
	case media.OpMusicUnder:
		secs = main
	case media.OpNarrate:
		secs = main
		if items[0].Kind != "video" {
			secs = max(main, spec.Delay+seconds(items[1]))
		}
	case media.OpTrim:
		secs = spec.End - spec.Start
	default: // volume, transcode, extract_audio
		secs = main
	}
	video := items[0].Kind == "video" && spec.Op != media.OpExtractAudio
	var rate int64
	switch {
	case video:
		// The picture's rate is its sources' (copied, or re-encoded at a
		// quality setting): the highest of them, with the sound beside.
		for _, it := range items {
			if it.Kind == "video" {
				rate = max(rate, byteRate(it))
			}
		}
		rate += videoAudioRate
		if spec.Format == "webm" {
			rate = max(rate, webmRate)
		}
	default:
		f := spec.Format
		if f == "" {
			f = "mp3"
		}
		rate = audioRate[f]
		if rate == 0 {
			rate = audioRate["wav"]
		}
	}
	return output{seconds: secs, bytes: int64(secs*float64(rate)) + containerSlop}
}

// byteRate is a file's bytes per second.
func byteRate(it store.MediaItem) int64 {
	s := seconds(it)
	if s <= 0 {
		return it.Size
	}
	return int64(float64(it.Size)/s) + 1
}

// checkOutput refuses a job whose output would be over the caps, naming
// the request field that makes it so; nothing is written then.
func (s *Service) checkOutput(field string, out output) error {
	if limit := s.Config.MaxOutputSeconds; limit > 0 && out.seconds > float64(limit)+0.0005 {
		e := errs.Invalidf("%s: the result would last %.1f s; a job's output may last at most %d s (%d min)", field, out.seconds, limit, limit/60)
		e.Code = "MEDIA_OUTPUT_TOO_LONG"
		e.Extra = map[string]any{"field": field, "outputSeconds": out.seconds, "maxOutputSeconds": limit}
		return e
	}
	if limit := s.Config.MaxOutputBytes; limit > 0 && out.bytes > limit {
		e := errs.Invalidf("%s: the result would be about %d MB; a job's output may be at most %d MB", field, mb(out.bytes), limit>>20)
		e.Code = "MEDIA_OUTPUT_TOO_LARGE"
		e.Extra = map[string]any{"field": field, "outputBytes": out.bytes, "maxOutputBytes": limit}
		return e
	}
	return nil
}

// importOutput bounds an import: its length is known only once fetched,
// so it holds and reserves for the longest and largest file it may be.
func (s *Service) importOutput() output {
	return output{seconds: float64(s.Config.MaxOutputSeconds), bytes: s.Config.ImportMaxBytes}
}

// rate is what jobs cost: Rate as configured, or (a service built
// without one) the flat JobPrice as the minimum.
func (s *Service) rate() pricing.JobRate {
	if s.Rate.Zero() {
		return pricing.JobRate{Minimum: s.JobPrice}
	}
	return s.Rate
}

// Usage is how many bytes of files the account's library holds (what
// media.library.quota_bytes bounds; Config.QuotaBytes is the quota).
func (s *Service) Usage(ctx context.Context, account string) (int64, error) {
	if err := s.ready(); err != nil {
		return 0, err
	}
	return s.Store.MediaUsage(ctx, account)
}

// overQuota is the refusal of a job that could overrun the account's
// library quota.
func (s *Service) overQuota(q *store.OverQuota, reserve int64) error {
	e := &errs.Error{Kind: errs.TooManyRequests, Code: "MEDIA_QUOTA_EXCEEDED",
		Msg: fmt.Sprintf("the media library would exceed its quota: %d MB stored, %d MB reserved by running jobs, this job may add %d MB, of %d MB; delete items (DELETE /api/media/{id}) to make room",
			mb(q.Used), mb(q.Reserved), mb(reserve), mb(q.Quota)),
		Extra: map[string]any{"usedBytes": q.Used, "reservedBytes": q.Reserved, "jobBytes": reserve, "quotaBytes": q.Quota}}
	return e
}

func mb(n int64) int64 { return (n + 1<<20 - 1) >> 20 }
