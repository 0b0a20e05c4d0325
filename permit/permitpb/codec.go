package permitpb

import (
	"errors"
	"unicode/utf8"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	// Registers grpc's proto codec, which Codec hands other messages to.
	_ "google.golang.org/grpc/encoding/proto"
)

// Codec is grpc's "proto" codec for this package's messages: the same wire
// format, encoded and decoded by the code that protoc-gen-go-vtproto
// generates (permit_vtproto.pb.go) instead of protobuf's reflection (an
// eighth of a Session round trip's CPU, both sides together; a third of that
// this way). As protobuf does for proto3, it refuses a string field that is
// not valid UTF-8 both ways (and a field number beyond 2^29-1), and decoding
// replaces what the message held. It is never laxer than grpc's codec: an
// encoding it accepts, proto.Unmarshal accepts and reads the same, unknown
// fields aside (the fuzz target FuzzCodec holds it to that). A message of
// another package goes to grpc's proto codec. The permit server and
// permitclient force it (grpc.ForceServerCodecV2, grpc.ForceCodecV2); a
// client in another language sees no difference. It is safe for concurrent
// use.
type Codec struct{}

// message is what protoc-gen-go and protoc-gen-go-vtproto generate for
// each message of this package.
type message interface {
	Reset()
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
	UnmarshalVT([]byte) error
	ProtoReflect() protoreflect.Message
}

var protoCodec = encoding.GetCodecV2("proto")

// Name is "proto": the content-subtype stays application/grpc+proto.
func (Codec) Name() string { return "proto" }

// Marshal encodes v.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(message)
	if !ok {
		return protoCodec.Marshal(v)
	}
	l := layouts[m.ProtoReflect().Descriptor().FullName()]
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if _, err := m.MarshalToSizedBufferVT(buf); err != nil {
			return nil, err
		}
		if err := checkWire(buf, l); err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	_, err := m.MarshalToSizedBufferVT(*buf)
	if err == nil {
		err = checkWire(*buf, l)
	}
	if err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// Unmarshal decodes data into v, replacing what v held.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(message)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	if err := checkWire(b, layouts[m.ProtoReflect().Descriptor().FullName()]); err != nil {
		return err
	}
	m.Reset()
	return m.UnmarshalVT(b)
}

// errUTF8 is the error of a string field that is not valid UTF-8.
var errUTF8 = errors.New("proto: string field contains invalid UTF-8")

// errFieldNumber is the error of a field number beyond
// protowire.MaxValidNumber.
var errFieldNumber = errors.New("proto: invalid field number")

// layout is what checkWire needs of a message: the kind of each of
// its field numbers that carries a string or a message.
type layout struct {
	kind []protoreflect.Kind // by field number; 0 for neither
	msg  []*layout           // by field number, for a message field
}

// layouts holds the layout of every message of permit.proto, built once;
// read-only after init.
var layouts = map[protoreflect.FullName]*layout{}

func init() {
	file_permit_proto_init() // this file's init may run first: it is idempotent
	msgs := File_permit_proto.Messages()
	for i := range msgs.Len() {
		layoutOf(msgs.Get(i))
	}
}

func layoutOf(md protoreflect.MessageDescriptor) *layout {
	if l, ok := layouts[md.FullName()]; ok {
		return l
	}
	l := &layout{}
	layouts[md.FullName()] = l
	fields := md.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		k := f.Kind()
		if k != protoreflect.StringKind && k != protoreflect.MessageKind {
			continue
		}
		n := int(f.Number())
		for len(l.kind) <= n {
			l.kind, l.msg = append(l.kind, 0), append(l.msg, nil)
		}
		l.kind[n] = k
		if k == protoreflect.MessageKind {
			l.msg[n] = layoutOf(f.Message())
		}
	}
	return l
}

// checkWire refuses in the encoded message b what protobuf refuses and
// UnmarshalVT lets through: a field number beyond protowire.MaxValidNumber,
// and a string field, at any depth, that is not valid UTF-8 (errUTF8):
// every occurrence of the field, as protobuf checks each while it decodes
// (a field sent twice keeps its last value; an invalid first one is still
// an error). A field sent with another wire type than its own is not
// checked: it is unknown to protobuf, and an error to UnmarshalVT.
func checkWire(b []byte, l *layout) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if num > protowire.MaxValidNumber {
			return errFieldNumber
		}
		b = b[n:]
		if typ == protowire.BytesType && int(num) < len(l.kind) && l.kind[num] != 0 {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			if l.kind[num] == protoreflect.StringKind {
				if !utf8.Valid(v) {
					return errUTF8
				}
			} else if err := checkWire(v, l.msg[num]); err != nil {
				return err
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
	}
	return nil
}
