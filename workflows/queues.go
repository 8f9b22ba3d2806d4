// Package workflows holds deterministic workflow code only: no I/O, no
// wall-clock time, no map iteration for order. Each file is one family.
package workflows

// Task queues, one per workflow family, so each family's workers can be
// scaled and deployed on their own.
const (
	// SystemQueue carries the platform's housekeeping workflows.
	SystemQueue = "system"
	// LibraryWorkQueue carries the media library's jobs' work (imports,
	// assemblies, edits: ffmpeg), on slots of their own
	// (media.library.concurrency), so no number of jobs can hold a slot
	// a pay-per-call or pipeline render waits for on RenderWorkQueue.
	LibraryWorkQueue = "library-work"
)
