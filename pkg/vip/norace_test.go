//go:build !race

package vip_test

const raceEnabled = false
