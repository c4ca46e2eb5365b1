package localstack

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"

	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/dynamo"
)

// MigrateCommand is `sandman migrate <what>`, the one-off backfills of an
// upgrade (docs/DEPLOY.md "Upgrade notes"). What there is: tiers
// (MigrateTiers).
func MigrateCommand(ctx context.Context, args []string, w io.Writer) error {
	if len(args) == 0 || args[0] != "tiers" {
		return errors.New("usage: sandman migrate tiers [-cursor C] [-page N] [-rate N]")
	}
	return migrateTiersCommand(ctx, args[1:], w)
}

// migrateTiersCommand is `sandman migrate tiers [-cursor C] [-page N]
// [-rate N]` on the table the configuration points at (MigrateTiers).
func migrateTiersCommand(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("migrate tiers", flag.ContinueOnError)
	cursor := fs.String("cursor", "", "resume from this cursor (the last one an interrupted run printed)")
	page := fs.Int("page", 100, "items read per page, 1 to 1000")
	perSecond := fs.Float64("rate", 100, "items read per second at most (0: no limit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return onTable(ctx, func(a *app.App, where string) error {
		fmt.Fprintf(w, "table %s (%s): rekeying the paused index\n", a.Config.Table, where)
		total, err := MigrateTiers(ctx, a.Store, *cursor, *page, *perSecond, w)
		fmt.Fprintf(w, "%d items of the tier range read, %d rekeyed, %d rewritten meanwhile by a session write\n",
			total.Read, total.Rekeyed, total.Raced)
		return err
	})
}

// Rekeyer is the store side of MigrateTiers (dynamo.Store).
type Rekeyer interface {
	RekeyPausedIndex(ctx context.Context, cursor string, limit int) (dynamo.RekeyResult, error)
}

// MigrateTiers is the backfill that goes with the tier deadlines' move
// into the paused index: it runs st.RekeyPausedIndex page after page of
// page items from cursor ("" to start) until every shard is done, at most
// perSecond items read per second (0: no limit), and prints on w the
// cursor after each page ("cursor …": pass it back as -cursor to resume an
// interrupted run) and "done" at the end. It returns the sums. Errors: the
// store's (what was done until then is summed), ctx's.
func MigrateTiers(ctx context.Context, st Rekeyer, cursor string, page int, perSecond float64, w io.Writer) (dynamo.RekeyResult, error) {
	limit := rate.NewLimiter(rate.Inf, 0)
	if perSecond > 0 {
		limit = rate.NewLimiter(rate.Limit(perSecond), max(page, int(math.Ceil(perSecond))))
	}
	var total dynamo.RekeyResult
	for {
		if err := limit.WaitN(ctx, page); err != nil {
			return total, err
		}
		res, err := st.RekeyPausedIndex(ctx, cursor, page)
		total.Read, total.Rekeyed, total.Raced = total.Read+res.Read, total.Rekeyed+res.Rekeyed, total.Raced+res.Raced
		if err != nil {
			return total, fmt.Errorf("rekey the paused index from cursor %q (resume with -cursor %q): %w", cursor, cursor, err)
		}
		if cursor = res.Cursor; cursor == "" {
			fmt.Fprintln(w, "done")
			return total, nil
		}
		fmt.Fprintf(w, "cursor %s\n", cursor)
	}
}
