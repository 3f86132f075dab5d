package catalog

import (
	"bytes"
	"path"
	"strings"
	"unicode/utf8"
)

// MIMEDirectory is the MIME type of a directory entry (SEP-2640).
const MIMEDirectory = "inode/directory"

// MIMEMarkdown is the MIME type SKILL.md is always served with (SEP-2640).
const MIMEMarkdown = "text/markdown"

// mimeByExt is the fixed table of types the catalog knows. It is written out
// rather than taken from mime.TypeByExtension, whose answer depends on the
// machine's /etc/mime.types: the same plugin must get the same types and
// digests everywhere. Unknown extensions are application/octet-stream.
func mimeByExt(ext string) (mimeType string, textLike bool) {
	switch ext {
	case ".md", ".markdown":
		return MIMEMarkdown, true
	case ".txt", ".text", ".log", ".ini", ".cfg", ".conf":
		return "text/plain", true
	case ".csv":
		return "text/csv", true
	case ".tsv":
		return "text/tab-separated-values", true
	case ".html", ".htm":
		return "text/html", true
	case ".css":
		return "text/css", true
	case ".xml":
		return "application/xml", true
	case ".json":
		return "application/json", true
	case ".jsonl", ".ndjson":
		return "application/jsonl", true
	case ".yaml", ".yml":
		return "application/yaml", true
	case ".toml":
		return "application/toml", true
	case ".py":
		return "text/x-python", true
	case ".sh", ".bash":
		return "text/x-shellscript", true
	case ".js", ".mjs", ".cjs":
		return "text/javascript", true
	case ".ts", ".mts", ".cts":
		return "text/x-typescript", true
	case ".go":
		return "text/x-go", true
	case ".rb":
		return "text/x-ruby", true
	case ".rs":
		return "text/x-rust", true
	case ".java":
		return "text/x-java", true
	case ".c", ".h":
		return "text/x-c", true
	case ".sql":
		return "application/sql", true
	case ".svg":
		return "image/svg+xml", true
	case ".png":
		return "image/png", false
	case ".jpg", ".jpeg":
		return "image/jpeg", false
	case ".gif":
		return "image/gif", false
	case ".webp":
		return "image/webp", false
	case ".ico":
		return "image/vnd.microsoft.icon", false
	case ".pdf":
		return "application/pdf", false
	case ".zip":
		return "application/zip", false
	case ".gz", ".tgz":
		return "application/gzip", false
	case ".wasm":
		return "application/wasm", false
	}
	return "application/octet-stream", false
}

// classify returns the MIME type of a file and whether it is served as text:
// a text-like type and valid UTF-8 bytes (SEP-2640: a file that is not valid
// UTF-8 must be a blob). Files with no extension whose bytes are UTF-8 (a
// LICENSE, a Makefile) are text/plain.
func classify(name string, data []byte) (mimeType string, text bool) {
	if name == "SKILL.md" {
		return MIMEMarkdown, utf8.Valid(data)
	}
	ext := strings.ToLower(path.Ext(name))
	if ext == "" {
		if utf8.Valid(data) && bytes.IndexByte(data, 0) < 0 {
			return "text/plain", true
		}
		return "application/octet-stream", false
	}
	mt, textLike := mimeByExt(ext)
	return mt, textLike && utf8.Valid(data)
}
