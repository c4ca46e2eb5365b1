package lifecycle

import (
	"encoding/binary"
	"time"
)

// The idle histogram's shape: 1-minute bins up to 4 hours, as the hybrid
// histogram policy of "Serverless in the Wild" (Shahrad et al., USENIX ATC
// 2020, section 4.2). Bin i counts returns after a gap of i to i+1
// minutes; a gap of 4 h or more is counted once, out of bounds.
const (
	IdleBin  = time.Minute
	IdleBins = 240
)

// MinReturnGap is the shortest silence that counts as a return: twice the
// browser client's 30 s heartbeat, so a heartbeat missed or coalesced is
// never taken for a gap. Shorter silences are activity.
const MinReturnGap = time.Minute

// idleDecayAt is the count at which a histogram halves every bin: it holds
// the last 128 to 256 returns, so it follows a user who changes habits.
const idleDecayAt = 256

// IdleHistogram is one key's record of idle gaps (docs/COST.md "The
// learned idle policy"): how long users came back after, in 1-minute bins,
// and how the last pre-resume predictions fared. It is small (at most
// 1 KB encoded, MarshalBinary) and kept per (account, user key) in the
// table. The zero value is an empty histogram.
type IdleHistogram struct {
	// Counts[i] counts returns after a gap in [i, i+1) minutes; bin 0
	// stays empty (MinReturnGap).
	Counts [IdleBins]uint16
	// Over counts returns after 4 h or more.
	Over uint16
	// Outcomes holds the last eight prediction outcomes, newest in bit 0:
	// 1 a miss, 0 a hit; Predictions how many of its bits are set so far
	// (at most 8).
	Outcomes    uint8
	Predictions uint8
	// Ends counts pauses for idleness or absence that no return has
	// followed yet: sessions their users may have left for good
	// (RecordPause, RecordBack). Only a user key's histogram counts them.
	Ends uint16
}

// RecordPause records a pause for idleness or absence of a session of
// the key: an end until a return follows it (RecordBack).
func (h *IdleHistogram) RecordPause() {
	if h.Ends < 1<<16-1 {
		h.Ends++
	}
}

// RecordBack records a return that followed a pause (RecordPause).
func (h *IdleHistogram) RecordBack() {
	if h.Ends > 0 {
		h.Ends--
	}
}

// Observe records a return after gap; a gap shorter than MinReturnGap is
// not a return and is ignored. It reports whether the gap was recorded.
// When the count reaches 256 every bin is halved (rounding down), so old
// returns fade.
func (h *IdleHistogram) Observe(gap time.Duration) bool {
	if gap < MinReturnGap {
		return false
	}
	if i := int(gap / IdleBin); i < IdleBins {
		h.Counts[i]++
	} else {
		h.Over++
	}
	if h.Returns() >= idleDecayAt {
		for i := range h.Counts {
			h.Counts[i] /= 2
		}
		h.Over /= 2
		h.Ends /= 2
	}
	return true
}

// Returns is how many returns the histogram holds, out of bounds included.
func (h *IdleHistogram) Returns() int {
	n := int(h.Over)
	for _, c := range h.Counts {
		n += int(c)
	}
	return n
}

// RecordOutcome records one pre-resume prediction: hit or miss.
func (h *IdleHistogram) RecordOutcome(hit bool) {
	h.Outcomes <<= 1
	if !hit {
		h.Outcomes |= 1
	}
	if h.Predictions < 8 {
		h.Predictions++
	}
}

// RecentMisses counts the misses among the last n (at most 8) predictions.
func (h *IdleHistogram) RecentMisses(n int) int {
	n = min(n, int(h.Predictions), 8)
	misses := 0
	for i := range n {
		misses += int(h.Outcomes>>i) & 1
	}
	return misses
}

// idleHistogramVersion is the first byte of an encoded histogram: 2 since
// Ends; version 1 (no Ends) still decodes.
const idleHistogramVersion = 2

// MarshalBinary encodes h compactly: a version byte, the outcomes, then
// Over, Ends and each non-empty bin as (index delta, count) unsigned
// varints. An encoding is at most 1 + 2 + 3 + 3 + 240 × 4 = 969 bytes.
func (h *IdleHistogram) MarshalBinary() ([]byte, error) {
	b := []byte{idleHistogramVersion, h.Outcomes, h.Predictions}
	b = binary.AppendUvarint(b, uint64(h.Over))
	b = binary.AppendUvarint(b, uint64(h.Ends))
	last := -1
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		b = binary.AppendUvarint(b, uint64(i-last))
		b = binary.AppendUvarint(b, uint64(c))
		last = i
	}
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded into h.
// Errors: invalid for an encoding it did not make.
func (h *IdleHistogram) UnmarshalBinary(b []byte) error {
	bad := Errorf(CodeInvalid, "idle histogram encoding is malformed")
	if len(b) < 3 || (b[0] != 1 && b[0] != idleHistogramVersion) {
		return bad
	}
	version := b[0]
	var out IdleHistogram
	out.Outcomes, out.Predictions = b[1], min(b[2], 8)
	b = b[3:]
	next := func(limit uint64) (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > limit {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	over, ok := next(1<<16 - 1)
	if !ok {
		return bad
	}
	out.Over = uint16(over)
	if version >= 2 {
		ends, ok := next(1<<16 - 1)
		if !ok {
			return bad
		}
		out.Ends = uint16(ends)
	}
	i := -1
	for len(b) > 0 {
		d, ok1 := next(IdleBins)
		c, ok2 := next(1<<16 - 1)
		if !ok1 || !ok2 || d == 0 || i+int(d) >= IdleBins {
			return bad
		}
		i += int(d)
		out.Counts[i] = uint16(c)
	}
	*h = out
	return nil
}
