//go:build !linux

package hog

import "errors"

// setNice sets the nice level of the calling thread, which only Linux does
// per thread: elsewhere only nice 0 (no change) runs. No thread id either.
func setNice(n int) (int, error) {
	if n != 0 {
		return 0, errors.New("hog: a nice level per thread needs Linux")
	}
	return 0, nil
}
