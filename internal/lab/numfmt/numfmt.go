// Package numfmt formats numbers for Sandman's reports (internal/lab/bench,
// internal/lab/costsim). Standard library only.
package numfmt

import "strconv"

// Thousands renders n with comma thousands separators: 100000 → "100,000",
// -1234567 → "-1,234,567".
func Thousands[T ~int | ~int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return sign + string(out)
}
