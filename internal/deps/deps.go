//go:build tools

// Package deps pins the module's dependencies so that parallel work on
// different packages never has to edit go.mod.
package deps

import (
	_ "github.com/NVIDIA/go-nvml/pkg/nvml"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/tools/txtar"
	_ "google.golang.org/protobuf/proto"
	_ "google.golang.org/protobuf/testing/protocmp"
	_ "gopkg.in/yaml.v3"
)
