package local

import (
	"errors"
	"io/fs"
	"os"
)

// A sandbox's folder removed behind the provider's back (a user's rm -rf
// of .sandman/sandboxes/<id>) takes its record with it, and with the
// record the only note of its processes: the sandbox is gone for every
// call from then on (no record), but its process, stopped if it was
// paused, would live on with nobody to end it. The provider keeps the
// last record it read or wrote of each sandbox (remember), and Tick ends
// the processes of a remembered sandbox whose folder is gone
// (endRemoved), as Kill would: the sandbox's process group and its
// background commands, each only while it is still the process recorded
// (its start time), so a reused pid is never signalled. No webhook is
// sent: the sandbox was already gone for Sandman (docs/providers/local.md
// "Faults").

// remember notes rec as the last record seen of its sandbox.
func (p *Provider) remember(rec record) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[rec.ID] = rec
}

// forget drops sandbox id's record: its folder was removed by the provider.
func (p *Provider) forget(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.seen, id)
}

// endRemoved ends the processes of every remembered sandbox whose folder
// no longer exists, closes its preview fronts and forgets it; it returns
// the ids it ended.
func (p *Provider) endRemoved() []string {
	p.mu.Lock()
	var removed []record
	for id, rec := range p.seen {
		if _, err := os.Stat(p.sandboxDir(id)); errors.Is(err, fs.ErrNotExist) {
			removed = append(removed, rec)
			delete(p.seen, id)
		}
	}
	p.mu.Unlock()
	ids := make([]string, 0, len(removed))
	for _, rec := range removed {
		p.closeFronts(rec.ID)
		for _, c := range rec.Commands {
			if commandAlive(c) {
				_ = signalGroup(c.PID, sigKill)
			}
		}
		if _, err := p.liveStat(rec); err == nil {
			if err := signalGroup(rec.PGID, sigKill); err != nil && !errors.Is(err, fs.ErrNotExist) {
				p.log.Warn("end the processes of a removed sandbox", "sandbox_id", rec.ID, "err", err)
			}
		}
		p.log.Warn("sandbox folder removed from outside; its processes ended", "sandbox_id", rec.ID, "pid", rec.PID)
		ids = append(ids, rec.ID)
	}
	return ids
}
