// Package e2e holds Forge's end-to-end tests: whole models chained the way
// users chain them (say → listen), checked by what a listener would notice —
// the words that come back.
package e2e
