// Package verify implements the `skills-sidecar verify` subcommand: a client
// that connects to any MCP server URL and checks it the way a strict host
// does under SEP-2640 (the Skills extension) and the agents extension draft.
// It negotiates the era (server/discover with a fallback to initialize, as
// clients do), checks the declarations, follows every skills/list page,
// checks each entry's shape, name, manifest and limits, reads every listed
// file back with resources/read to check size, then digest, compares the
// frontmatter of the served SKILL.md field by field with the entry, compares
// skills/get with the listing, walks resources/directory/read when declared,
// and resolves every agent's tools against tools/list. It reads replies as
// go-sdk's and a TypeScript client read them (member names exact, the last
// of duplicates), and fails a reply that clients could read two ways.
//
// It owns its own wire client, SKILL.md frontmatter parser and rules, and
// must not import the sidecar's serving packages (internal/proxy,
// internal/methods, internal/catalog; only internal/flagargs, which reads a
// command line and knows nothing of MCP): it has to judge other servers, and
// the sidecar itself, fairly. Every read is bounded (--max-bytes,
// --max-skills, a page cap and --timeout). It writes only to the writers it
// is given.
//
// Exit codes of Run:
//
//	0  every check passed (warnings allowed)
//	1  the server is nonconformant: at least one check failed
//	2  usage error (bad flags or arguments)
//	3  authorization required: the server answered 401 or 403
//	4  unreachable: no HTTP response (refused, reset, timed out)
package verify
