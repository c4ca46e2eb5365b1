package lifecycle

// The Service's own provider wrappers, for the wrapper tests of package
// lifecycle_test (wrap_test.go), which wrap the real adapters.
var (
	Measure    = measure
	ForAccount = forAccount
)
