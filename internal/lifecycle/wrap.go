package lifecycle

// WithOptional returns base extended with the optional provider interfaces
// given (nil: not offered), so that a wrapper of a provider (measure, or
// internal/calllimit's limiter) offers exactly what the wrapped provider
// offers and the Service's type checks (TimeoutReporter, TemplateChecker, CommandRunner)
// see no more and no less. tr and cr are the wrapper's own versions; tc is
// passed through (asking whether a template exists is no provider call).
func WithOptional(base Provider, tr TimeoutReporter, tc TemplateChecker, cr CommandRunner) Provider {
	type (
		p  = Provider
		r  = TimeoutReporter
		c  = TemplateChecker
		rn = CommandRunner
	)
	switch {
	case tr != nil && tc != nil && cr != nil:
		return struct {
			p
			r
			c
			rn
		}{base, tr, tc, cr}
	case tr != nil && tc != nil:
		return struct {
			p
			r
			c
		}{base, tr, tc}
	case tr != nil && cr != nil:
		return struct {
			p
			r
			rn
		}{base, tr, cr}
	case tc != nil && cr != nil:
		return struct {
			p
			c
			rn
		}{base, tc, cr}
	case tr != nil:
		return struct {
			p
			r
		}{base, tr}
	case tc != nil:
		return struct {
			p
			c
		}{base, tc}
	case cr != nil:
		return struct {
			p
			rn
		}{base, cr}
	}
	return base
}
