// Package benchlib holds the tests of scripts/lib, the shell library the
// benchmark scripts (scripts/bench-*.sh, tools/seatmapload/run.sh) share:
// what they start must stay apart from the development stack and go away
// when they end.
package benchlib
