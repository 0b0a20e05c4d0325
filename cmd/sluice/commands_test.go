package main

// commands names every command "sluice help" lists, help included, for the
// tests that walk the list (main_test.go). The list itself is program's.
var commands = func() (named []struct{ name string }) {
	for _, c := range program.Listed() {
		named = append(named, struct{ name string }{c.Name})
	}
	return named
}()
