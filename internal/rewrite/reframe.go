package rewrite

import "bytes"

// Reframe returns ev with its data lines replaced by data, split into lines
// at "\n" (and at "\r\n" or "\r", which a client would split at too). The
// new data lines stand where the first data line stood, or before the blank
// line when ev had none; id:, event:, retry:, comments and unknown fields
// keep their place, order and bytes, and so does a BOM or line-ending
// prefix of Raw. New lines end like the event's first data line (else its
// first line; "\n" when it has no line ending at all) and keep its
// "data: " or "data:" spelling, except that a value starting with a space
// always gets "data: " so the client does not eat that space. A partial
// event (no blank line) stays partial, but every line it has is ended.
// Nil or empty data writes one empty data line.
func Reframe(ev Event, data []byte) []byte {
	body := ev.Raw[ev.prefix:]
	eol, space := frameStyle(body)
	out := make([]byte, 0, len(ev.Raw)+len(data)+8*(bytes.Count(data, []byte("\n"))+1))
	out = append(out, ev.Raw[:ev.prefix]...)
	wrote := false
	var blank []byte
	for i := 0; i < len(body); {
		line, le, next := nextLine(body, i)
		if len(line) == 0 { // the blank line ends the event
			blank = body[i:]
			break
		}
		i = next
		if isDataLine(line) {
			if !wrote {
				out, wrote = appendData(out, data, eol, space), true
			}
			continue
		}
		if len(le) == 0 {
			le = eol
		}
		out = append(append(out, line...), le...)
	}
	if !wrote {
		out = appendData(out, data, eol, space)
	}
	return append(out, blank...)
}

// frameStyle returns the line ending and data-prefix spelling new data
// lines should copy.
func frameStyle(body []byte) (eol []byte, space bool) {
	space = true
	for i := 0; i < len(body); {
		line, le, next := nextLine(body, i)
		if eol == nil && len(le) > 0 {
			eol = le
		}
		if isDataLine(line) {
			if len(le) > 0 {
				eol = le
			}
			space = bytes.HasPrefix(line, []byte("data: "))
			break
		}
		if len(line) == 0 {
			break
		}
		i = next
	}
	if eol == nil {
		eol = []byte("\n")
	}
	return eol, space
}

func isDataLine(line []byte) bool {
	return bytes.HasPrefix(line, []byte("data")) && (len(line) == 4 || line[4] == ':')
}

// appendData appends data as data lines.
func appendData(out, data, eol []byte, space bool) []byte {
	for {
		k := indexEOL(data)
		part := data
		if k >= 0 {
			part = data[:k]
		}
		out = append(out, "data:"...)
		if space || (len(part) > 0 && part[0] == ' ') {
			out = append(out, ' ')
		}
		out = append(append(out, part...), eol...)
		if k < 0 {
			return out
		}
		if data[k] == '\r' && k+1 < len(data) && data[k+1] == '\n' {
			k++
		}
		data = data[k+1:]
	}
}
