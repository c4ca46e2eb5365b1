package dynamo

// SetBeforeRekey makes st run f between RekeyPausedIndex's read of a
// session and its conditional write (the race tests' seam).
func SetBeforeRekey(st *Store, f func(id string)) { st.beforeRekey = f }
