package localstack_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/localstack"
)

// pagedRekeyer is a store of three pages ("" → "c1" → "c2" → done) that
// fails once on the page at failAt.
type pagedRekeyer struct {
	failAt string
	failed bool
	seen   []string
}

func (p *pagedRekeyer) RekeyPausedIndex(_ context.Context, cursor string, _ int) (dynamo.RekeyResult, error) {
	p.seen = append(p.seen, cursor)
	if cursor == p.failAt && !p.failed {
		p.failed = true
		return dynamo.RekeyResult{}, errors.New("throttled")
	}
	next := map[string]string{"": "c1", "c1": "c2", "c2": ""}[cursor]
	return dynamo.RekeyResult{Read: 2, Rekeyed: 1, Cursor: next}, nil
}

// TestMigrateTiersResumes: the backfill goes page after page to the end,
// printing each cursor; a run that fails names the cursor to resume from,
// and a second run from it finishes.
func TestMigrateTiersResumes(t *testing.T) {
	st := &pagedRekeyer{failAt: "c2"}
	var out strings.Builder
	total, err := localstack.MigrateTiers(t.Context(), st, "", 10, 0, &out)
	if err == nil || !strings.Contains(err.Error(), `-cursor "c2"`) {
		t.Fatalf("first run: %v, want an error naming cursor c2", err)
	}
	if total.Read != 4 || total.Rekeyed != 2 || !strings.Contains(out.String(), "cursor c2\n") {
		t.Errorf("first run: %+v, printed %q", total, out.String())
	}
	out.Reset()
	total, err = localstack.MigrateTiers(t.Context(), st, "c2", 10, 1000, &out)
	if err != nil || total.Read != 2 || out.String() != "done\n" {
		t.Errorf("resumed run: %+v, %v, printed %q; want one page, then done", total, err, out.String())
	}
	if got := strings.Join(st.seen, ","); got != ",c1,c2,c2" {
		t.Errorf("pages read from %q, want \",c1,c2,c2\"", got)
	}
}
