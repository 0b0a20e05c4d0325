// Package permitpb holds the permit service's protocol buffers and their
// generated Go code (messages and the gRPC service). Regenerate with
// `go generate ./permit/permitpb` after installing protoc and the plugins:
//
//	apt-get install protobuf-compiler
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
package permitpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative permit.proto
