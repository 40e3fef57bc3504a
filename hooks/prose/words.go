package prose

import "unicode"

// CountWords counts the words of s, in any script:
//   - text is split at white space (Unicode: also no-break and ideographic
//     spaces) into tokens;
//   - within a token every ideograph, hiragana or katakana character is a
//     word of its own (Chinese and Japanese write no spaces between words,
//     so a character is the closest count a proxy can make without a
//     dictionary), and each run of other characters between them is one
//     word if it holds a letter or a digit.
//
// So "don't" and "src/main.go" are one word each, "—" and "*" none,
// "我用Go写代码" six (我, 用, Go, 写, 代, 码), "Привет, мир" two.
func CountWords(s string) int {
	n := 0
	inRun, runCounts := false, false
	endRun := func() {
		if inRun && runCounts {
			n++
		}
		inRun, runCounts = false, false
	}
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			endRun()
		case ideographic(r):
			endRun()
			n++
		default:
			inRun = true
			if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r) {
				runCounts = true
			}
		}
	}
	endRun()
	return n
}

// ideographic reports a character that is a word of its own: Han
// ideographs, hiragana and katakana.
func ideographic(r rune) bool {
	return r >= 0x2E80 && (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r))
}
