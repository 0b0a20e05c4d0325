//go:build race

package main

// raceEnabled: the tests run with the race detector, so the binary they
// start is built with it too.
const raceEnabled = true
