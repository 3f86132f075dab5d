package config

// Suggest returns the candidate closest to typed by edit distance (case
// ignored, '-' and '_' the same), or "" when none is close enough to be the
// likely intent: at most one edit per four characters of typed, and never
// more than three. Ties go to the earlier candidate. It is how a mistyped
// flag, environment variable or annotation key gets a "did you mean".
func Suggest(typed string, candidates []string) string {
	norm := func(s string) []rune {
		r := []rune(s)
		for i, c := range r {
			switch {
			case c >= 'A' && c <= 'Z':
				r[i] = c + 'a' - 'A'
			case c == '_':
				r[i] = '-'
			}
		}
		return r
	}
	t := norm(typed)
	limit := min(1+len(t)/4, 3)
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := editDistance(t, norm(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in two rows.
func editDistance(a, b []rune) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// didYouMean is Suggest's answer as the tail of an error message: "" or
// " (did you mean X?)" with X written as format writes a key.
func didYouMean(typed string, keys []string, format func(string) string) string {
	s := Suggest(typed, keys)
	if s == "" {
		return ""
	}
	return " (did you mean " + format(s) + "?)"
}
