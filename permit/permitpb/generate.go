// Package permitpb holds the permit service's protocol buffers and their
// generated Go code: the messages, the gRPC service, and the messages'
// reflection-free encoding (permit_vtproto.pb.go) that Codec puts in
// grpc's hands. Regenerate with `go generate ./permit/permitpb` after
// installing protoc and the plugins:
//
//	apt-get install protobuf-compiler
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
//	go install github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto@v0.6.1-0.20240319094008-0393e58bdf10
package permitpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative --go-vtproto_out=. --go-vtproto_opt=paths=source_relative,features=marshal+unmarshal+size permit.proto
