package permitpb_test

import (
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/sluicehq/sluice/permit/permitpb"
)

// messages are a value of every message of permit.proto.
func messages() []proto.Message {
	fd := permitpb.File_permit_proto
	var ms []proto.Message
	for i := range fd.Messages().Len() {
		mt, err := protoregistryType(fd.Messages().Get(i))
		if err != nil {
			panic(err)
		}
		ms = append(ms, mt.New().Interface())
	}
	return ms
}

func protoregistryType(md protoreflect.MessageDescriptor) (protoreflect.MessageType, error) {
	return protoregistry.GlobalTypes.FindMessageByName(md.FullName())
}

func encode(t testing.TB, m proto.Message) ([]byte, error) {
	t.Helper()
	bs, err := permitpb.Codec{}.Marshal(m)
	if err != nil {
		return nil, err
	}
	return bs.Materialize(), nil
}

func decode(b []byte, m proto.Message) error {
	return permitpb.Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, m)
}

// stringPaths returns the paths from md to each string field it holds,
// directly or in the messages it holds.
func stringPaths(md protoreflect.MessageDescriptor) [][]protoreflect.FieldDescriptor {
	var out [][]protoreflect.FieldDescriptor
	for i := range md.Fields().Len() {
		f := md.Fields().Get(i)
		switch f.Kind() {
		case protoreflect.StringKind:
			out = append(out, []protoreflect.FieldDescriptor{f})
		case protoreflect.MessageKind:
			for _, p := range stringPaths(f.Message()) {
				out = append(out, append([]protoreflect.FieldDescriptor{f}, p...))
			}
		}
	}
	return out
}

// protoWire is the encoding of a message whose only field is s at path.
func protoWire(t testing.TB, path []protoreflect.FieldDescriptor, s string) []byte {
	t.Helper()
	last := path[len(path)-1]
	b := protowire.AppendString(protowire.AppendTag(nil, last.Number(), protowire.BytesType), s)
	for i := len(path) - 2; i >= 0; i-- {
		b = protowire.AppendBytes(protowire.AppendTag(nil, path[i].Number(), protowire.BytesType), b)
	}
	return b
}

// withString sets s at path in m.
func withString(m protoreflect.Message, path []protoreflect.FieldDescriptor, s string) {
	for _, f := range path[:len(path)-1] {
		m = m.Mutable(f).Message()
	}
	m.Set(path[len(path)-1], protoreflect.ValueOfString(s))
}

// TestCodecUTF8: every string field of every message, at any depth, is
// refused when it is not UTF-8, encoding and decoding, as proto refuses it;
// valid, it goes both ways and reads as proto reads it.
func TestCodecUTF8(t *testing.T) {
	n := 0
	for _, m := range messages() {
		md := m.ProtoReflect().Descriptor()
		for _, path := range stringPaths(md) {
			n++
			name := string(md.Name())
			for _, f := range path {
				name += "." + string(f.Name())
			}
			t.Run(name, func(t *testing.T) {
				for _, s := range []string{"\xff", "ok"} {
					valid := s == "ok"
					src := m.ProtoReflect().New()
					withString(src, path, s)
					if _, err := encode(t, src.Interface()); (err == nil) != valid {
						t.Errorf("Marshal with %q: err %v", s, err)
					}
					b := protoWire(t, path, s)
					got, want := m.ProtoReflect().New().Interface(), m.ProtoReflect().New().Interface()
					errGot, errWant := decode(b, got), proto.Unmarshal(b, want)
					if (errWant == nil) != valid {
						t.Fatalf("proto.Unmarshal with %q: err %v", s, errWant)
					}
					if (errGot == nil) != valid {
						t.Errorf("Unmarshal with %q: err %v", s, errGot)
					}
					if valid && !proto.Equal(got, want) || valid && !proto.Equal(got, src.Interface()) {
						t.Errorf("Unmarshal: %v, proto reads %v, sent %v", got, want, src.Interface())
					}
				}
			})
		}
	}
	if n < 10 {
		t.Fatalf("only %d string fields found", n)
	}
}

// FuzzCodec holds Codec to grpc's proto codec on any input, as each
// message of permit.proto: what Codec decodes, proto.Unmarshal decodes
// alike (but for unknown fields); what proto.Unmarshal decodes, in its
// canonical encoding, Codec decodes alike; and what Codec encodes, proto.Unmarshal reads back. (On
// a malformed input Codec may be stricter: a known field sent with another
// wire type is an error to it, an unknown field to proto.)
func FuzzCodec(f *testing.F) {
	ms := messages()
	lat := 1.5
	for _, m := range []proto.Message{
		&permitpb.SessionRequest{Call: &permitpb.SessionRequest_Acquire{Acquire: &permitpb.AcquireRequest{Group: "jobs", Key: "tenant", Priority: "critical", Cost: 3, WaitMs: 100}}},
		&permitpb.SessionRequest{Call: &permitpb.SessionRequest_Release{Release: &permitpb.ReleaseRequest{Id: 1 << 40, Outcome: permitpb.Outcome_DROPPED, LatencyMs: &lat}}},
		&permitpb.SessionResponse{Answer: &permitpb.SessionResponse_Acquire{Acquire: &permitpb.AcquireResponse{Result: &permitpb.AcquireResponse_Refusal{Refusal: &permitpb.Refusal{Reason: "rate", Status: 429, RetryAfterS: 2, RatelimitPolicy: `"jobs";q=10;w=1`, Ratelimit: `"jobs";r=0;t=1`, Group: "jobs"}}}}},
		&permitpb.SessionResponse{Answer: &permitpb.SessionResponse_Error{Error: &permitpb.Error{Code: 5, Message: "permit: no such group"}}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		for i, mm := range ms {
			if mm.ProtoReflect().Descriptor() == m.ProtoReflect().Descriptor() {
				f.Add(uint8(i), b)
			}
		}
	}
	f.Add(uint8(0), []byte{0x0a, 0x01, 0xff})
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		m := ms[int(which)%len(ms)]
		got, want := m.ProtoReflect().New().Interface(), m.ProtoReflect().New().Interface()
		errGot, errWant := decode(b, got), proto.Unmarshal(b, want)
		if errGot == nil && errWant != nil {
			t.Fatalf("Codec decodes %x as %v; proto refuses it: %v", b, got, errWant)
		}
		if errWant != nil {
			return
		}
		// Unknown fields are not compared: proto re-encodes their tags,
		// vtproto keeps their bytes, and nothing of sluice reads them. (A
		// known field sent with another wire type is one to proto.)
		dropUnknown(want.ProtoReflect())
		if errGot == nil {
			dropUnknown(got.ProtoReflect())
			if !proto.Equal(got, want) {
				t.Fatalf("Codec decodes %x as %v; proto as %v", b, got, want)
			}
		}
		canon, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		again := m.ProtoReflect().New().Interface()
		if err := decode(canon, again); err != nil || !proto.Equal(again, want) {
			t.Fatalf("Codec decodes proto's encoding %x as %v (err %v); proto as %v", canon, again, err, want)
		}
		enc, err := encode(t, again)
		if err != nil {
			t.Fatalf("Codec cannot encode %v: %v", again, err)
		}
		back := m.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(enc, back); err != nil || !proto.Equal(back, again) {
			t.Fatalf("proto reads Codec's encoding %x of %v as %v (err %v)", enc, again, back, err)
		}
	})
}

// dropUnknown clears the unknown fields of m and of the messages it holds.
func dropUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if f.Kind() == protoreflect.MessageKind {
			dropUnknown(v.Message())
		}
		return true
	})
}
