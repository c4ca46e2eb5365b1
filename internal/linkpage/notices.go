package linkpage

// The notices of the stable link, one constructor each, so that the edge
// that picks one (internal/apigw) and the tests that show them all say the
// same words. retry is the link to open again (the link as opened, without
// reopen: a person's open wakes the session).

// adviceNewSession and adviceAskAgain send the person back to the app
// that gave them the link.
const (
	adviceNewSession = "To keep working, start a new session from the app that gave you this link."
	adviceAskAgain   = "Open the preview again from the app that gave you this link: it hands out a fresh link."
)

// AppFailed is the notice of a running session whose app failed (409
// app_failed): why, as a sentence ("the start command exited with code 3
// before the preview answered"), the exit code ("" for none) and the last
// output lines ("" for none).
func AppFailed(why, exitCode, output, retry string) Notice {
	return Notice{Kind: KindFailed, Title: "The app didn't start", Sentence: Sentence(why),
		Advice: "Try again; if it keeps failing, tell whoever shared this link that the app needs a fix.",
		Action: retry, ActionLabel: "Try again", ExitCode: exitCode, Output: output}
}

// NoPreview is the notice of a running session whose sandbox gave no
// preview URL (409 no_preview).
func NoPreview(retry string) Notice {
	return Notice{Kind: KindFailed, Title: "There's nothing to show",
		Sentence: "The sandbox is running but gave no preview address to open.",
		Advice:   "Try again; if it keeps happening, tell whoever shared this link.", Action: retry, ActionLabel: "Try again"}
}

// Unrecoverable is the notice of a session nothing could be recovered
// of (410: expired, the provider lost its sandbox; failed, it never
// started).
func Unrecoverable(expired bool, retry string) Notice {
	n := Notice{Kind: KindFailed, Title: "This preview can't be recovered", Sentence: "Its sandbox could not be started.",
		Advice: adviceNewSession, Action: retry, ActionLabel: "Try again"}
	if expired {
		n.Sentence = "Its sandbox is gone: the provider no longer has it."
	}
	return n
}

// Ended is the notice of a deleted session (410 killed): nothing to retry.
func Ended() Notice {
	return Notice{Kind: KindEnded, Title: "This session has ended",
		Sentence: "It was closed, so this link no longer opens anything.", Advice: adviceNewSession}
}

// NotSignedIn is the notice of a link without a valid client token (401).
func NotSignedIn() Notice {
	return Notice{Kind: KindSignIn, Title: "You're not signed in to this preview",
		Sentence: "This link carries no access token, or its token has expired.", Advice: adviceAskAgain}
}

// OtherSession is the notice of a link whose token is another session's
// (403).
func OtherSession() Notice {
	return Notice{Kind: KindSignIn, Title: "This link is for another preview",
		Sentence: "Its access token belongs to a different session than the one it opens.", Advice: adviceAskAgain}
}

// NotFound is the notice of a link to no session (404).
func NotFound() Notice {
	return Notice{Kind: KindNotFound, Title: "There's no preview at this link",
		Sentence: "The session this link names does not exist.", Advice: adviceAskAgain}
}

// Asleep is the notice of a session the waking page's own re-open found
// paused (409 sandbox_paused): it wakes on the person's click.
func Asleep(retry string) Notice {
	return Notice{Kind: KindPaused, Title: "This preview is asleep",
		Sentence: "It went to sleep while this page waited, so that it costs nothing while nobody uses it.",
		Advice:   "Wake it up to go on where you left off.", Action: retry, ActionLabel: "Wake it up"}
}

// CannotWake is the notice of an open refused for now (429, 503, 500):
// why, as a sentence, and a retry.
func CannotWake(why, retry string) Notice {
	return Notice{Kind: KindRetryable, Title: "The preview can't wake right now", Sentence: Sentence(why),
		Advice: "Try again in a few seconds.", Action: retry, ActionLabel: "Try again"}
}

// The reasons CannotWake is given for the refusals the edge knows.
const (
	WhyQuota    = "too many previews of this account are running at once"
	WhyProvider = "the sandbox's provider did not answer in time"
	WhyInternal = "something went wrong on our side"
)
