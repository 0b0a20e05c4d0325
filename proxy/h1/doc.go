// Package h1 is sluice's HTTP/1.1 wire code, shared by the proxy's own server
// and its upstream client (package proxy) and by the guard listener in front
// of net/http's server:
//
//   - the request parser (HeadEnd, RequestHead.Parse): the one
//     place where a request head is read and its framing decided, net/http's
//     server's rules made stricter where a proxy must not be lax (RFC 9112 §6
//     and §11; request.go says where and how);
//   - the response head and trailer parser (Scratch.ReadResponseHead,
//     Scratch.ReadFields), never laxer than net/http's Transport, which the
//     fuzz targets and the proxy's differential tests hold it to;
//   - chunk lines (ParseChunkSize, AppendChunkHeader) and the field rules
//     (tokens, hop-by-hop fields, what may travel as a trailer, valid names
//     and values);
//   - the pool of upstream connections (Pool, Conn), which looks at an idle
//     connection before handing it out and sends a request's last write from
//     inside the read that waits for its response.
//
// A parsed request's fields are Spans: offsets into the head's bytes, which
// the caller keeps; nothing is copied. Parsing is not safe for concurrent use
// of one RequestHead or Scratch; a Pool is.
package h1
