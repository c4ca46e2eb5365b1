package lifecycle

import (
	"context"
	"fmt"
)

// drainPageSize is how many sandboxes DrainRemovedPools reads per List call.
const drainPageSize = 100

// DrainRemovedPools kills, across every provider of the service, the
// sandboxes made for a warm pool that is no longer configured (Config.Pools):
// a making or ready spare's item is deleted and its sandbox killed; a claimed
// one is left to the live session its marker names; one with no item is
// killed unless a live session holds it (reapPoolSandbox, without waiting a
// lease: no filler of this deployment makes spares for a pool it does not
// configure). It is meant for a single process's boot, the local stack's, so
// a pool taken out of SANDMAN_POOLS stops costing at the next start instead
// of at the sweep's reconcile. It returns how many sandboxes it killed.
// Errors: the first List or kill that failed (the drain goes on past a
// failed kill; the sweep's reconcile retries it).
func (s *Service) DrainRemovedPools(ctx context.Context) (int, error) {
	configured := map[string]bool{}
	for _, p := range s.cfg.Pools {
		configured[p.ID] = true
	}
	killed := 0
	var first error
	for _, name := range s.ProviderNames() {
		token := ""
		for {
			page, err := s.ListSandboxes(ctx, name, token, drainPageSize)
			if err != nil {
				return killed, fmt.Errorf("drain removed pools: list the sandboxes of %s: %w", name, err)
			}
			for _, sb := range page.Sandboxes {
				pool := sb.Metadata[MetadataPool]
				if pool == "" || sb.Metadata[MetadataSessionID] != "" || configured[pool] {
					continue
				}
				if s.cfg.Deployment != "" && sb.Metadata[MetadataDeployment] != s.cfg.Deployment {
					continue
				}
				ok, err := s.reapPoolSandbox(ctx, sb, pool, false)
				if err != nil && first == nil {
					first = fmt.Errorf("drain removed pools: %w", err)
				}
				if ok {
					killed++
				}
			}
			if page.NextToken == "" {
				break
			}
			token = page.NextToken
		}
	}
	return killed, first
}
