package rewrite

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type messageCase struct {
	in      string
	want    Message // Raw is checked separately: it is in trimmed of whitespace
	wantErr error
}

// messageCases is the ParseMessage table; FuzzParseBody is seeded from it.
func messageCases() map[string]messageCase {
	return map[string]messageCase{
		"tools/call": {
			in:   `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"s":"hi"}}}`,
			want: Message{Kind: KindRequest, ID: raw(`7`), Method: "tools/call", Params: raw(`{"name":"echo","arguments":{"s":"hi"}}`)},
		},
		"string id kept raw": {
			in:   ` {"id": "a\u0062" , "method":"ping","jsonrpc":"2.0"} `,
			want: Message{Kind: KindRequest, ID: raw(`"a\u0062"`), Method: "ping"},
		},
		"float id kept raw": {
			in:   `{"jsonrpc":"2.0","id":1.0e0,"method":"ping"}`,
			want: Message{Kind: KindRequest, ID: raw(`1.0e0`), Method: "ping"},
		},
		"escaped method and keys": {
			in:   `{"\u006aSONrpc":"x","jsonrpc":"2\u002e0","\u006dethod":"notifications/initi\u0061lized"}`,
			want: Message{Kind: KindNotification, Method: "notifications/initialized"},
		},
		"notification": {
			in:   `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
			want: Message{Kind: KindNotification, Method: "notifications/progress", Params: raw(`{"progress":1}`)},
		},
		"null params tolerated": {
			in:   `{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`,
			want: Message{Kind: KindRequest, ID: raw(`1`), Method: "ping", Params: raw(`null`)},
		},
		"response": {
			in:   `{"jsonrpc":"2.0","id":"x","result":{"tools":[]}}`,
			want: Message{Kind: KindResponse, ID: raw(`"x"`), Result: raw(`{"tools":[]}`)},
		},
		"error": {
			in:   `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}`,
			want: Message{Kind: KindError, ID: raw(`3`), Error: raw(`{"code":-32601,"message":"no"}`)},
		},
		"error null id": {
			in:   `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`,
			want: Message{Kind: KindError, ID: raw(`null`), Error: raw(`{"code":-32700,"message":"parse"}`)},
		},
		"last duplicate wins": {
			in:   `{"jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}`,
			want: Message{Kind: KindRequest, ID: raw(`2`), Method: "b"},
		},
		"not json":           {in: `{"jsonrpc":"2.0",`, wantErr: ErrParse},
		"empty":              {in: ``, wantErr: ErrParse},
		"two values":         {in: `{} {}`, wantErr: ErrParse},
		"array in message":   {in: `[]`, want: Message{}, wantErr: ErrInvalidRequest},
		"scalar":             {in: `1`, wantErr: ErrInvalidRequest},
		"no version":         {in: `{"id":1,"method":"ping"}`, want: Message{ID: raw(`1`)}, wantErr: ErrInvalidRequest},
		"wrong version":      {in: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, want: Message{ID: raw(`1`)}, wantErr: ErrInvalidRequest},
		"method not string":  {in: `{"jsonrpc":"2.0","id":1,"method":1}`, want: Message{ID: raw(`1`)}, wantErr: ErrInvalidRequest},
		"null id request":    {in: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, wantErr: ErrInvalidRequest},
		"object id":          {in: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, wantErr: ErrInvalidRequest},
		"scalar params":      {in: `{"jsonrpc":"2.0","id":1,"method":"x","params":3}`, want: Message{ID: raw(`1`)}, wantErr: ErrInvalidRequest},
		"method and result":  {in: `{"jsonrpc":"2.0","id":1,"method":"x","result":{}}`, want: Message{ID: raw(`1`)}, wantErr: ErrInvalidRequest},
		"result and error":   {in: `{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, want: Message{ID: raw(`1`)}, wantErr: ErrInvalidRequest},
		"result without id":  {in: `{"jsonrpc":"2.0","result":{}}`, wantErr: ErrInvalidRequest},
		"error not object":   {in: `{"jsonrpc":"2.0","id":1,"error":"bad"}`, want: Message{ID: raw(`1`)}, wantErr: ErrInvalidRequest},
		"nothing to do":      {in: `{"jsonrpc":"2.0","id":1}`, want: Message{ID: raw(`1`)}, wantErr: ErrInvalidRequest},
		"bool id unreported": {in: `{"jsonrpc":"2.0","id":true,"result":{}}`, wantErr: ErrInvalidRequest},
	}
}

func raw(s string) []byte { return []byte(s) }

func TestParseMessage(t *testing.T) {
	t.Parallel()
	for name, tc := range messageCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseMessage([]byte(tc.in))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("ParseMessage(%q) error = %v, want %v", tc.in, err, tc.wantErr)
			}
			if errors.Is(err, ErrParse) {
				return
			}
			if string(got.Raw) != string(trimWS([]byte(tc.in))) {
				t.Errorf("ParseMessage(%q).Raw = %q, want the message without outer whitespace", tc.in, got.Raw)
			}
			got.Raw = nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseMessage(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestParseBody(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in        string
		wantKinds []Kind
		wantBatch bool
		wantErr   error
	}{
		"single":        {in: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, wantKinds: []Kind{KindRequest}},
		"single bad":    {in: `{"id":1}`, wantKinds: []Kind{KindInvalid}, wantErr: ErrInvalidRequest},
		"batch":         {in: ` [ {"jsonrpc":"2.0","id":1,"method":"ping"} ,{"jsonrpc":"2.0","method":"n"}]`, wantKinds: []Kind{KindRequest, KindNotification}, wantBatch: true},
		"batch one bad": {in: `[{"jsonrpc":"2.0","id":1,"method":"ping"},1,{"jsonrpc":"2.0","id":2,"result":{}}]`, wantKinds: []Kind{KindRequest, KindInvalid, KindResponse}, wantBatch: true, wantErr: ErrInvalidRequest},
		"empty batch":   {in: `[ ]`, wantBatch: true, wantErr: ErrInvalidRequest},
		"not json":      {in: `[{"jsonrpc":"2.0"}`, wantErr: ErrParse},
		"scalar":        {in: `"x"`, wantKinds: []Kind{KindInvalid}, wantErr: ErrInvalidRequest},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			msgs, batch, err := ParseBody([]byte(tc.in))
			if !errors.Is(err, tc.wantErr) || batch != tc.wantBatch {
				t.Fatalf("ParseBody(%q) batch, error = %v, %v, want %v, %v", tc.in, batch, err, tc.wantBatch, tc.wantErr)
			}
			var kinds []Kind
			for _, m := range msgs {
				kinds = append(kinds, m.Kind)
			}
			if diff := cmp.Diff(tc.wantKinds, kinds); diff != "" {
				t.Errorf("ParseBody(%q) kinds mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestMaxDepth(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   string
		want int
	}{
		"scalar":             {in: `1`, want: 0},
		"empty object":       {in: `{}`, want: 1},
		"nested":             {in: `{"a":[{"b":[]}],"c":{}}`, want: 4},
		"brackets in string": {in: `{"a":"[[[{{{\"]]]"}`, want: 1},
		"unclosed string":    {in: `["abc`, want: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := MaxDepth([]byte(tc.in)); got != tc.want {
				t.Errorf("MaxDepth(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

func TestCheckDepth(t *testing.T) {
	t.Parallel()
	deep := []byte(`{"a":{"b":{"c":[1]}}}`)
	if err := CheckDepth(deep, 4); err != nil {
		t.Errorf("CheckDepth(%s, 4) = %v, want nil", deep, err)
	}
	if err := CheckDepth(deep, 3); !errors.Is(err, ErrTooDeep) {
		t.Errorf("CheckDepth(%s, 3) = %v, want ErrTooDeep", deep, err)
	}
}

type knows struct {
	m  Message
	ok bool
}

func (k knows) ParsedMessage() (Message, bool) { return k.m, k.ok }

// MessageOf gives the message of a body that knows it, and nothing for a
// body that declines or does not know (Parsed).
func TestMessageOf(t *testing.T) {
	m, _ := ParseMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if got, ok := MessageOf(knows{m, true}); !ok || got.Method != "ping" || string(got.ID) != "1" {
		t.Errorf("MessageOf a body that knows its message = %+v, %v", got, ok)
	}
	for name, body := range map[string]any{"declines": knows{m, false}, "does not know": strings.NewReader("{}"), "nil": nil} {
		if _, ok := MessageOf(body); ok {
			t.Errorf("MessageOf a body that %s: ok, want none", name)
		}
	}
}
