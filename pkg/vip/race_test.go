//go:build race

package vip_test

// raceEnabled makes TestMain build vipd with -race, so that the namespace tests also check
// the daemon for data races.
const raceEnabled = true
