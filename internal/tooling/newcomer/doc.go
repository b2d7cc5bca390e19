// Package newcomer walks the README's path from nothing to a real build
// with the foreman binary, as a new user would: make install, foreman init
// in an empty directory, foreman serve, foreman run, a scripted builder
// that gives up a component, and the operator settling it from foreman
// agent --role chat. Every line it types is checked to be in the README.
// It has only tests.
package newcomer
