package fakekit

import "time"

// Window counts a fake's requests per bucket in whole minutes of its clock,
// for a provider whose rate limits are so many requests a minute per bucket
// (Daytona's). The zero Window is empty; it is not safe for concurrent use
// (the fake's lock guards it).
type Window struct {
	start time.Time
	used  map[string]int
}

// Take counts one request of bucket at now and returns how many requests
// the bucket holds in now's minute, this one included, and the whole
// seconds until that minute ends (at least 1).
func (w *Window) Take(bucket string, now time.Time) (used, reset int) {
	if start := now.Truncate(time.Minute); w.used == nil || !start.Equal(w.start) {
		w.start, w.used = start, map[string]int{}
	}
	w.used[bucket]++
	return w.used[bucket], max(int(w.start.Add(time.Minute).Sub(now).Seconds()+0.999), 1)
}

// PageNumber reads a page of a list paged by numbers (page from 1, the
// default; limit from 1 to hi, default def) over n records, and returns
// the bounds of its records, [from, to), and how many pages there are (at
// least 1). ok is false when page or limit is not valid.
func PageNumber(n int, page, limit string, def, hi int) (from, to, pages int, ok bool) {
	p, okPage := Limit(page, 1, 1, 1<<30)
	l, okLimit := Limit(limit, def, 1, hi)
	if !okPage || !okLimit {
		return 0, 0, 0, false
	}
	from = min((p-1)*l, n)
	return from, min(from+l, n), max((n+l-1)/l, 1), true
}
