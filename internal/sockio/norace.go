//go:build linux && !race

package sockio

func beforeWrite()         {}
func afterRead(fd uintptr) {}
