//go:build !race

package rawsock

func raceWrote([]byte)         {}
func raceRead([]byte)          {}
func raceAcquire(uintptr)      {}
func raceReleaseMerge(uintptr) {}
