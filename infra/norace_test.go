//go:build !race

package infra

// raceEnabled reports whether the test binary was built with -race.
const raceEnabled = false
