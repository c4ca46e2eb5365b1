package vercel

// SetPartSize makes an import's parts n bytes long until the returned
// function restores the size (tests of several parts without megabytes).
func SetPartSize(n int) (restore func()) {
	old := partSize
	partSize = n
	return func() { partSize = old }
}
