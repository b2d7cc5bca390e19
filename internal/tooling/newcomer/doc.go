// Package newcomer walks the README's path from nothing to a real build
// with the foreman binary, as a new user would: make install, foreman init
// in an empty directory, foreman serve, foreman run, a scripted builder
// that gives up a component, and the operator settling it from foreman
// agent --role chat. Every line it types is checked to be in the README.
// With a foreman built from this source it also walks what issue 21 asked
// of the operator's day: finding a builder with /who and ASSIGNing it a
// component by name from the chat client, and a second foreman run with
// the same key that is refused while the first completes the build. It
// has only tests.
package newcomer
