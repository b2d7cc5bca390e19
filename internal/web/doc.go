// Package web lets people and machines see a build while foreman runs it:
// /healthz for probes, /metrics for Prometheus, /api/view as JSON (for the
// board and `foreman status`), and / itself, a live board of the dependency
// graph and the room's recent lines, updated over Server-Sent Events, served
// with the board inside it so that the first paint shows the build. An
// operator signed in with foreman board-login decides on it (decide.go):
// the decision is said in the room by that operator's own board-login,
// never by the board, which holds no key (docs/BOARD.md).
//
// The server learns what happens in two ways. The bot calls its hooks
// (Observe, Handled, Named) from the bot's own goroutine, so they only
// record and never wait. Everything else (the View, health, the room's
// counters) is asked of the Source when a page, a scrape or a stream needs
// it, so the board never shows a copy that went stale. A View is asked for
// once per change however many watch (a snapshot, shared), the graph is
// laid out again only when it changed, and live viewers are sent only the
// components that changed.
//
// Wiring:
//
//	board := web.New(web.Options{Logger: log})
//	b, _ := bot.New(bot.Options{..., Observe: board.Observe, Handled: board.Handled, Named: board.Named})
//	board.Attach(b)
//	go board.Serve(ctx, ln)
//	b.Run(ctx)
package web
