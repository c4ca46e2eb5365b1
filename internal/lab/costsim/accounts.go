package costsim

import "time"

// AccountResult is what one account's sessions billed and what its users
// waited, in one scenario (Result.Accounts).
type AccountResult struct {
	// Billed is the running time of the account's sandboxes.
	Billed time.Duration
	// Pauses counts the account's pauses.
	Pauses int
	// Returns and ResumeLeads are Result's, for the account's sessions.
	Returns     int
	ResumeLeads []time.Duration
	// PreResumes and PreResumeHits are Result's, for the account.
	PreResumes, PreResumeHits int
}

// Waited is Result.Waited for the account's returns.
func (a AccountResult) Waited(p ProviderProfile) (sum, p95 time.Duration, waited int) {
	return Result{Returns: a.Returns, ResumeLeads: a.ResumeLeads}.Waited(p)
}

// accountOf names the account of a session; the i.i.d. trace has one, "-".
func accountOf(st *SessionTrace) string {
	if st.Account == "" {
		return "-"
	}
	return st.Account
}

// account returns s's account's result, creating it.
func (m *sim) account(s *simSession) *AccountResult {
	if m.res.Accounts == nil {
		m.res.Accounts = map[string]*AccountResult{}
	}
	name := accountOf(s.tr)
	a := m.res.Accounts[name]
	if a == nil {
		a = &AccountResult{}
		m.res.Accounts[name] = a
	}
	return a
}

// bill adds d of running time to s's bill.
func (m *sim) bill(s *simSession, d time.Duration) {
	m.billed += d
	m.account(s).Billed += d
}

// userReturns records a user's return to s: met says it met a resume
// that started lead before it (0: the request found the sandbox paused);
// a return that met none waited for nothing.
func (m *sim) userReturns(s *simSession, lead time.Duration, met bool) {
	a := m.account(s)
	m.res.Returns++
	a.Returns++
	if met {
		m.res.ResumeLeads = append(m.res.ResumeLeads, lead)
		a.ResumeLeads = append(a.ResumeLeads, lead)
	}
}
