package stats

import (
	"math"
	"time"
)

// persistVersion is the Persisted.Version this package writes and reads.
const persistVersion = 1

// maxAge caps the ages read from a Persisted, so that sums of them cannot
// overflow a time.Duration (about 292 years).
const maxAge = 100 * 365 * 24 * time.Hour

// Persisted is the state of one Stats for the state file
// (docs/ARCHITECTURE.md, "Warm restart"), JSON-serialisable. Ages are
// relative to SavedAtUnixMs, the wall-clock reading of the now given to
// Export; wall time serves only to tell, at Restore, how long the state
// sat on disk.
type Persisted struct {
	// Version is the format version, 1. Restore ignores any other.
	Version int `json:"version"`
	// SavedAtUnixMs is the wall time of Export, Unix milliseconds.
	SavedAtUnixMs int64 `json:"saved_at_unix_ms"`
	// BucketMs is the width of a time bucket (Window/12) when saved;
	// Restore aligns its buckets exactly when its own width is the same.
	BucketMs int64 `json:"bucket_ms"`
	// Buckets are the non-empty time buckets of the window, oldest first.
	Buckets []PersistedBucket `json:"buckets,omitempty"`
	// LatencyEMANs is Snapshot.LatencyEMA in nanoseconds, unrounded; 0 means
	// no data.
	LatencyEMANs float64 `json:"latency_ema_ns,omitempty"`
	// SinceSuccessMs is Snapshot.SinceSuccess at save time, milliseconds;
	// -1 means never.
	SinceSuccessMs int64 `json:"since_success_ms"`
}

// PersistedBucket is one time bucket of the window.
type PersistedBucket struct {
	// StartAgoMs is how long before SavedAtUnixMs the bucket began.
	StartAgoMs int64 `json:"start_ago_ms"`
	// Successes and Failures are the counted outcomes in the bucket.
	Successes int64 `json:"successes"`
	Failures  int64 `json:"failures"`
	// Latencies is the bucket's latency histogram, non-empty bins only.
	Latencies []PersistedBin `json:"latencies,omitempty"`
}

// PersistedBin is one histogram bin: Count latencies of about Us
// microseconds (the bin's middle). Restore sorts each into its own bin
// again, so a change of bin layout between versions degrades gracefully.
type PersistedBin struct {
	Us    int64  `json:"us"`
	Count uint32 `json:"n"`
}

// Export returns the state as of now (buckets that left the window by now
// are dropped first), for Restore after a restart.
func (s *Stats) Export(now time.Time) Persisted {
	p := Persisted{
		Version:        persistVersion,
		SavedAtUnixMs:  now.UnixMilli(),
		BucketMs:       s.width.Milliseconds(),
		SinceSuccessMs: -1,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return p
	}
	s.advanceLocked(now)
	for e := s.head - nSlots + 1; e <= s.head; e++ {
		sl := &s.slots[slotOf(e)]
		if sl.ok == 0 && sl.fail == 0 && sl.n == 0 {
			continue
		}
		start := s.origin.Add(time.Duration(e) * s.width)
		b := PersistedBucket{
			StartAgoMs: now.Sub(start).Milliseconds(),
			Successes:  sl.ok,
			Failures:   sl.fail,
		}
		if sl.n > 0 {
			for i, c := range sl.hist {
				if c > 0 {
					b.Latencies = append(b.Latencies, PersistedBin{Us: binValue(i).Microseconds(), Count: c})
				}
			}
		}
		p.Buckets = append(p.Buckets, b)
	}
	if s.hasEMA {
		p.LatencyEMANs = s.ema
	}
	if s.hasSuccess {
		p.SinceSuccessMs = max(now.Sub(s.lastSuccess), 0).Milliseconds()
	}
	return p
}

// Restore replaces the whole state with p, aged by the time p spent saved:
// the wall-clock gap between p.SavedAtUnixMs and now (none if the clock
// went backwards). A Snapshot at now then reads as a Snapshot would have
// read that much after Export, to the millisecond: buckets that have left
// the window by now are dropped, SinceSuccess has grown by the gap, and
// LatencyEMA is unchanged. When the bucket width changed since Export,
// each bucket lands in the new bucket holding its start, so it may leave
// the window up to one bucket early. Invalid entries (negative counts or
// latencies) are skipped; a p of another Version restores empty state.
func (s *Stats) Restore(now time.Time, p Persisted) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slots = [nSlots]slot{}
	s.hist = histogram{}
	s.ok, s.fail = 0, 0
	s.ema, s.hasEMA = 0, false
	s.lastSuccess, s.hasSuccess = time.Time{}, false
	s.started, s.origin, s.head = true, now, 0
	if p.Version != persistVersion {
		return
	}

	gap := msDuration(now.UnixMilli() - p.SavedAtUnixMs)
	if p.LatencyEMANs > 0 && !math.IsInf(p.LatencyEMANs, 1) {
		s.ema, s.hasEMA = p.LatencyEMANs, true
	}
	if p.SinceSuccessMs >= 0 {
		s.lastSuccess, s.hasSuccess = now.Add(-gap-msDuration(p.SinceSuccessMs)), true
	}

	buckets := p.Buckets[:0:0]
	for _, b := range p.Buckets {
		if b.Successes >= 0 && b.Failures >= 0 {
			buckets = append(buckets, b)
		}
	}
	if len(buckets) == 0 {
		return
	}
	// Same width: put the newest bucket's start at an epoch boundary, so
	// every bucket keeps its own boundaries, shifted by the gap.
	aligned := p.BucketMs == s.width.Milliseconds()
	newest := msDuration(buckets[0].StartAgoMs)
	for _, b := range buckets[1:] {
		newest = min(newest, msDuration(b.StartAgoMs))
	}
	if aligned {
		s.origin = now.Add(-gap - newest)
		s.head = floorDiv(int64(gap+newest), int64(s.width))
	}
	for _, b := range buckets {
		ago := msDuration(b.StartAgoMs)
		var e int64
		if aligned {
			e = -int64(math.Round(float64(ago-newest) / float64(s.width)))
		} else {
			e = floorDiv(-int64(gap+ago), int64(s.width))
		}
		if e <= s.head-nSlots || e > s.head {
			continue
		}
		s.addLocked(e, b)
	}
}

// addLocked adds a persisted bucket's counts to the slot of epoch e.
func (s *Stats) addLocked(e int64, b PersistedBucket) {
	sl := &s.slots[slotOf(e)]
	sl.ok += b.Successes
	sl.fail += b.Failures
	s.ok += b.Successes
	s.fail += b.Failures
	for _, l := range b.Latencies {
		if l.Us <= 0 || l.Count == 0 || l.Us > maxAge.Microseconds() {
			continue
		}
		i := binOf(time.Duration(l.Us) * time.Microsecond)
		sl.hist[i] += l.Count
		sl.n += l.Count
		s.hist.add(i, uint64(l.Count))
	}
}

// msDuration turns milliseconds into a Duration in [0, maxAge].
func msDuration(ms int64) time.Duration {
	return min(max(time.Duration(ms), 0), maxAge/time.Millisecond) * time.Millisecond
}
