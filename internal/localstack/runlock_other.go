//go:build !unix

package localstack

// lockStateDir is a no-op off Unix, where the local provider does not run.
func lockStateDir(string) (func(), error) { return func() {}, nil }
