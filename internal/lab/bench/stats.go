package bench

import (
	"math"
	"slices"
	"time"
)

// Latency summarizes a set of measured durations. Times are milliseconds
// (float, three decimals are meaningful: microseconds).
type Latency struct {
	N      int     `json:"n"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
	P90MS  float64 `json:"p90_ms"`
	P99MS  float64 `json:"p99_ms"`
	MaxMS  float64 `json:"max_ms"`
}

// Summarize returns the summary of ds; ds is not modified. Percentiles are
// nearest-rank: the smallest value with at least p% of the values at or
// below it. An empty ds gives the zero Latency.
func Summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	var total time.Duration
	for _, d := range sorted {
		total += d
	}
	return Latency{
		N:      len(sorted),
		MeanMS: ms(total / time.Duration(len(sorted))),
		P50MS:  ms(Percentile(sorted, 50)),
		P90MS:  ms(Percentile(sorted, 90)),
		P99MS:  ms(Percentile(sorted, 99)),
		MaxMS:  ms(sorted[len(sorted)-1]),
	}
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted, which must be sorted ascending; 0 for an empty slice.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Median returns the median of ds (the lower middle value for an even
// count, so it is always a measured value); 0 for an empty slice.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return sorted[(len(sorted)-1)/2]
}

// ms converts d to milliseconds, rounded to microseconds.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// seconds converts d to seconds, rounded to milliseconds.
func seconds(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)) / 1000
}

// ratio returns a/b rounded to two decimals, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*100) / 100
}
