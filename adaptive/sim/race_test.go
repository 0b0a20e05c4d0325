//go:build race

package sim

// raceDetector: the simulator is single-threaded, so under the race detector
// (10x slower) the every-law sweep runs each scenario for a shorter time; the
// full-length sweep runs without -race.
const raceDetector = true
