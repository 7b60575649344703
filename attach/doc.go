// Package attach runs a program with iket attached.
package attach
