#!/bin/sh
# Builds the sluice binary as the container image ships it, from the
# repository's root: a static binary (no cgo, so no libc to load), paths
# trimmed from it, symbol tables stripped, the version stamped in (the VCS
# revision is stamped by go build itself when .git is there), and without
# `sluice demo` (-tags nodemo: the demo links the lab, about 1 MB, which a
# deployed daemon never runs). The
# Dockerfile's build stage runs this script, and so does the deploy module's
# test that checks the result is static: one definition of the build.
#
#     VERSION=v1.2.3 deploy/build.sh OUTPUT
set -eu
out=${1:?usage: deploy/build.sh OUTPUT}
CGO_ENABLED=0 exec go build -tags nodemo -trimpath -buildvcs=auto -ldflags "-s -w -X main.version=${VERSION:-dev}" -o "$out" ./cmd/sluice
